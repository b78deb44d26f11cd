//! The tokenizer card, one for both sources of a [`TokenizerSummary`]: a GGUF file's
//! `tokenizer.*` metadata and a checkpoint's tokenizer files. Tokens and chat templates
//! are text from the file: shown escaped (Yew text nodes), a template in a `<pre>`, never
//! run, never markup.

use super::components::{dl_item, CopyButton};
use super::format::{num_html, opt_num, sized};
use crate::fmt;
use crate::vocab::{SpecialToken, TokenizerSummary};
use serde_json::Value;
use yew::prelude::*;

/// Special tokens listed before "… and N more" (Llama 3 has 256 reserved ones).
pub const SPECIAL_TOKENS_SHOWN: usize = 40;

#[derive(Properties, PartialEq)]
pub struct TokenizerProps {
    pub tokenizer: TokenizerSummary,
    pub testid: AttrValue,
}

fn text(s: Option<&str>) -> Html {
    match s {
        Some(s) => html! { <code>{ s.to_string() }</code> },
        None => html! { <span class="dim">{ "—" }</span> },
    }
}

/// A special token: its id and its text ("128,000 \"<|begin_of_text|>\"").
fn token(t: &SpecialToken) -> Html {
    html! {
        <>
            { t.id.map_or_else(|| html! { <span class="dim">{ "—" }</span> }, |id| html! { <span class="mono">{ fmt::thousands(id) }</span> }) }
            { " " }
            { t.text.as_ref().map_or_else(|| html!{ <span class="dim">{ "(not in the token list)" }</span> }, |s| html!{ <code class="tok">{ format!("{s:?}") }</code> }) }
        </>
    }
}

#[function_component(TokenizerCard)]
pub fn tokenizer_card(p: &TokenizerProps) -> Html {
    let t = &p.tokenizer;
    let empty = t.model.is_none() && t.tokens.is_none() && t.chat_templates.is_empty() && t.special_tokens.is_empty();
    let roles: Vec<&SpecialToken> = t.special_tokens.iter().filter(|s| s.role.is_some()).collect();
    let others: Vec<&SpecialToken> = t.special_tokens.iter().filter(|s| s.role.is_none()).collect();
    let more = others.len().saturating_sub(SPECIAL_TOKENS_SHOWN);
    html! {
        <section class="card tokenizer" aria-label="Tokenizer" data-testid={p.testid.clone()}>
            <h3>{ "Tokenizer" }</h3>
            if empty {
                <p class="dim">{ "No tokenizer in this file." }</p>
            } else {
                <dl>
                    { dl_item("Model", "t-model", text(t.model.as_deref())) }
                    if t.pre.is_some() { { dl_item("Pre-tokenizer", "t-pre", text(t.pre.as_deref())) } }
                    { dl_item("Tokens", "t-tokens", opt_num(t.tokens)) }
                    { dl_item("Merges", "t-merges", opt_num(t.merges)) }
                    if let Some(n) = t.added_tokens { { dl_item("Added tokens", "t-added", num_html(n)) } }
                    if t.total_tokens != t.tokens { { dl_item("Token ids", "t-total", opt_num(t.total_tokens)) } }
                    { for roles.iter().map(|s| {
                        let role = s.role.clone().unwrap_or_default();
                        dl_item(&role.to_ascii_uppercase(), &format!("t-{role}"), token(s))
                    }) }
                    if let Some(c) = &t.tokenizer_class { { dl_item("tokenizer_class", "t-class", text(Some(c))) } }
                    if let Some(v) = &t.model_max_length {
                        { dl_item("model_max_length", "t-max-len", html!{ <span class="mono">{ match v { Value::String(s) => s.clone(), other => other.to_string() } }</span> }) }
                    }
                    if let Some(n) = t.metadata_bytes { { dl_item("Metadata bytes", "t-bytes", sized(n)) } }
                </dl>
                if !t.token_types.is_empty() {
                    <table class="mini" data-testid="t-types">
                        <thead><tr><th scope="col">{ "Token type" }</th><th scope="col" class="n">{ "Count" }</th></tr></thead>
                        <tbody>
                            { for t.token_types.iter().map(|c| html! {
                                <tr data-type={c.name.to_string()}><td><code>{ c.name.to_string() }</code><span class="dim">{ format!(" ({})", c.id) }</span></td><td class="n">{ num_html(c.count) }</td></tr>
                            }) }
                        </tbody>
                    </table>
                }
                if !others.is_empty() {
                    <h4>{ format!("Special tokens ({})", others.len()) }</h4>
                    <ul class="tokens" data-testid="t-special">
                        { for others.iter().take(SPECIAL_TOKENS_SHOWN).map(|s| html! { <li>{ token(s) }</li> }) }
                        if more > 0 { <li class="dim">{ format!("… and {} more", fmt::thousands(more as u64)) }</li> }
                    </ul>
                }
                { for t.chat_templates.iter().map(|ct| html! {
                    <div class="template" data-testid="chat-template" data-name={ct.name.clone()}>
                        <div class="template-head">
                            <h4>{ format!("Chat template “{}”", ct.name) }<span class="dim">{ format!(" · {} bytes, shown as text, never run", fmt::thousands(ct.template.len() as u64)) }</span></h4>
                            <CopyButton text={AttrValue::from(ct.template.clone())} label="Copy template" testid="copy-template" />
                        </div>
                        <pre class="template-text" data-testid="chat-template-text" tabindex="0">{ ct.template.clone() }</pre>
                    </div>
                }) }
            }
        </section>
    }
}
