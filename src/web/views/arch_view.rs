//! The architecture card: one typed description of the model
//! ([`crate::model::description`], read from the GGUF header or from config.json) as a
//! picture and a few lines — the layers drawn as a strip (attention kind per layer: full,
//! sliding, chunked, MLA, recurrent, none; the feed-forward part under it: dense or MoE;
//! multi-token-prediction layers marked), then experts (N, k used, shared), leading dense
//! layers, active of total parameters, the sliding window, MLA's ranks and the recurrent
//! state. The CLI prints the same (`inspect`, "layers" and "experts" lines).

use super::components::dl_item;
use super::format::{num_html, params};
use crate::fmt;
use crate::model::description::{Attention, Description, Ffn, Layer};
use std::rc::Rc;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct ArchCardProps {
    pub desc: Rc<Description>,
    /// (active, total) parameters, for a mixture of experts.
    pub active: Option<(u64, u64)>,
    pub testid: AttrValue,
}

fn attention_name(a: Attention) -> &'static str {
    match a {
        Attention::Full => "full",
        Attention::Sliding => "sliding",
        Attention::Chunked => "chunked",
        Attention::Mla => "MLA",
        Attention::Recurrent => "recurrent",
        Attention::None => "none",
    }
}

fn attention_class(a: Attention) -> &'static str {
    match a {
        Attention::Full => "att-full",
        Attention::Sliding => "att-sliding",
        Attention::Chunked => "att-chunked",
        Attention::Mla => "att-mla",
        Attention::Recurrent => "att-recurrent",
        Attention::None => "att-none",
    }
}

/// One layer in words, for its tooltip and its accessible name.
fn layer_text(i: usize, l: &Layer) -> String {
    let mut s = format!("layer {i}: {} attention", attention_name(l.attention));
    if !matches!(l.attention, Attention::Recurrent | Attention::None) {
        s.push_str(&format!(", {} heads / {} KV heads, head {}", l.n_head, l.n_head_kv, l.head_k));
        if l.head_v != l.head_k {
            s.push_str(&format!(" (V {})", l.head_v));
        }
    }
    if l.recurrent && l.attention != Attention::Recurrent {
        s.push_str(", with a recurrent state");
    }
    match l.ffn {
        Ffn::Dense { n_ff } => s.push_str(&format!("; dense feed-forward {}", fmt::thousands(n_ff))),
        Ffn::Moe { experts, used, n_ff_exp, shared, .. } => {
            s.push_str(&format!("; {experts} experts of {}, {used} used", fmt::thousands(n_ff_exp)));
            if shared > 0 {
                s.push_str(&format!(", {shared} shared"));
            }
        }
        Ffn::None => s.push_str("; no feed-forward"),
    }
    if l.nextn {
        s.push_str(" — a multi-token-prediction layer, not run by the main model");
    }
    s
}

/// The strip: one cell a layer, coloured by attention, its feed-forward kind under it.
fn strip(d: &Description) -> Html {
    html! {
        <div class="arch-strip" role="list" aria-label="Layers" data-testid="arch-strip" data-pattern={d.pattern()}>
            { for d.layers.iter().enumerate().map(|(i, l)| {
                let text = layer_text(i, l);
                let ffn = match l.ffn { Ffn::Moe { .. } => "ffn-moe", Ffn::Dense { .. } => "ffn-dense", Ffn::None => "ffn-none" };
                html! {
                    <span role="listitem" tabindex="0" class={classes!("arch-layer", attention_class(l.attention), ffn, l.nextn.then_some("nextn"))}
                        title={text.clone()} aria-label={text}>
                        <span class="att"></span><span class="ffn"></span>
                    </span>
                }
            }) }
        </div>
    }
}

/// The legend: only the kinds that occur.
fn legend(d: &Description) -> Html {
    let kinds = [Attention::Full, Attention::Sliding, Attention::Chunked, Attention::Mla, Attention::Recurrent, Attention::None];
    let has_moe = d.is_moe();
    let has_dense = d.layers.iter().any(|l| matches!(l.ffn, Ffn::Dense { .. }));
    html! {
        <p class="arch-legend dim">
            { for kinds.iter().filter(|k| d.layers.iter().any(|l| l.attention == **k)).map(|k| html! {
                <span class="key"><span class={classes!("swatch", attention_class(*k))}></span>{ attention_name(*k) }</span>
            }) }
            if has_moe && has_dense {
                <span class="key"><span class="swatch ffn-moe"></span>{ "MoE feed-forward" }</span>
                <span class="key"><span class="swatch ffn-dense"></span>{ "dense feed-forward" }</span>
            }
            if d.n_layer_nextn > 0 {
                <span class="key"><span class="swatch nextn"></span>{ "multi-token prediction" }</span>
            }
        </p>
    }
}

#[function_component(ArchCard)]
pub fn arch_card(p: &ArchCardProps) -> Html {
    let d = &*p.desc;
    let counts = |a: Attention| d.layers.iter().filter(|l| l.attention == a).count();
    let mut pattern: Vec<String> = Vec::new();
    for a in [Attention::Full, Attention::Sliding, Attention::Chunked, Attention::Mla, Attention::Recurrent, Attention::None] {
        let n = counts(a);
        if n > 0 {
            pattern.push(format!("{n} {}", attention_name(a)));
        }
    }
    let experts = d.experts().map(|(n, k)| {
        let shared = d.layers.iter().find_map(|l| match l.ffn {
            Ffn::Moe { shared, .. } => Some(shared),
            _ => None,
        });
        let mut s = format!("{n} experts, {k} used per token");
        if let Some(sh) = shared.filter(|s| *s > 0) {
            s.push_str(&format!(", {sh} shared"));
        }
        if d.leading_dense > 0 {
            s.push_str(&format!("; {} leading dense layer{}", d.leading_dense, if d.leading_dense == 1 { "" } else { "s" }));
        }
        s
    });
    html! {
        <section class="card arch" aria-label="Architecture" data-testid={p.testid.clone()}
            data-active={p.active.map(|a| a.0.to_string())} data-total={p.active.map(|a| a.1.to_string())}>
            <h3>{ "Architecture" }<span class="dim">{ format!(" — {}", d.arch) }</span></h3>
            { strip(d) }
            { legend(d) }
            <dl>
                { dl_item("Layers", "arch-layer-count", html! { <>{ num_html(d.n_layer()) }<span class="dim">{ format!(" ({})", pattern.join(", ")) }</span></> }) }
                if d.n_layer_nextn > 0 {
                    { dl_item("Multi-token prediction", "arch-nextn", html! { format!("{} trailing layer(s), not run by the main model", d.n_layer_nextn) }) }
                }
                if let Some(e) = experts {
                    { dl_item("Experts", "arch-experts", html! { e }) }
                }
                if let Some((active, total)) = p.active {
                    { dl_item("Active parameters", "arch-active", html! { <>{ params(active) }<span class="dim">{ format!(" used per token, of {} in all", fmt::human_count(total)) }</span></> }) }
                }
                if let Some(w) = d.swa {
                    { dl_item("Sliding window", "arch-swa", html! { format!("{} tokens{}", fmt::thousands(w.window), if matches!(w.kind, crate::model::description::SwaKind::Chunked) { " (chunked)" } else { "" }) }) }
                }
                if let Some(m) = d.mla {
                    { dl_item("MLA", "arch-mla", html! { format!("KV rank {}, RoPE part {}, Q rank {}; heads K {} / V {}", m.kv_lora_rank, m.rope_dim, m.q_lora_rank, m.head_k_mla, m.head_v_mla) }) }
                }
                if let Some(r) = d.recurrent {
                    { dl_item("Recurrent state", "arch-recurrent", html! { format!("{} + {} values per layer and sequence (conv + SSM state)", fmt::thousands(r.r), fmt::thousands(r.s)) }) }
                }
                { dl_item("Width / vocabulary", "arch-width", html! { format!("{} / {}", fmt::thousands(d.n_embd), fmt::thousands(d.n_vocab)) }) }
            </dl>
            if !d.gaps.is_empty() {
                <ul class="dim arch-gaps">{ for d.gaps.iter().map(|g| html! { <li>{ g.clone() }</li> }) }</ul>
            }
        </section>
    }
}
