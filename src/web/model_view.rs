//! The "Model" tab of a safetensors checkpoint (a dropped folder, or shards given with
//! their JSON files): the merged model of `formats::checkpoint::build_model` — verdict and
//! findings, shards, the size reconciliation over all shards, the architecture from
//! config.json and the inventory check against it, the tokenizer, the files given, and
//! one tensor table across shards with a File column. Each shard keeps its own tab.
//!
//! Everything from a file is rendered as text (Yew escapes it); chat templates are shown
//! in a `<pre>` as text and never run.

use super::state::Tensors;
use super::table::TensorTable;
use super::util;
use super::util::{download, export_name, Bytes, CopyButton, Num};
use super::view::TensorPanel;
use crate::audit::{Architecture, Audit, Family};
use crate::error::Finding;
use crate::fmt;
use crate::formats::checkpoint::{ModelReport, TokenizerSummary};
use crate::report::{FileReport, Report};
use serde_json::Value;
use std::rc::Rc;
use yew::prelude::*;

/// Special tokens listed before "… and N more" (Llama 3 has 256 reserved ones).
pub const SPECIAL_TOKENS_SHOWN: usize = 40;

/// A file that was given with the checkpoint but not read.
#[derive(Clone, Debug, PartialEq)]
pub struct Ignored {
    pub name: String,
    pub size: u64,
    pub reason: String,
}

/// The built model with what its views need, computed once.
#[derive(Debug)]
pub struct ModelData {
    pub model: ModelReport,
    /// The shards' own reports (for the export and their findings).
    pub files: Vec<FileReport>,
    /// The merged tensors for the table, and each one's file.
    pub tensors: Tensors,
    pub tensor_files: Rc<Vec<String>>,
    /// JSON files that could not be read: (name, why).
    pub unread: Vec<(String, String)>,
}

impl ModelData {
    pub fn new(model: ModelReport, files: Vec<FileReport>, unread: Vec<(String, String)>) -> ModelData {
        let tensors = Tensors(Rc::new(model.tensors.iter().map(|t| t.tensor.clone()).collect()));
        let tensor_files = Rc::new(model.tensors.iter().map(|t| t.file.clone()).collect());
        ModelData {
            model,
            files,
            tensors,
            tensor_files,
            unread,
        }
    }

    /// The JSON report: the shards as `files`, the merged model as `model`.
    pub fn report(&self) -> Report {
        let mut r = Report::new(self.files.clone());
        r.model = Some(self.model.to_value());
        r
    }
}

/// Shared model data; equal by identity.
#[derive(Clone, Debug)]
pub struct SharedModel(pub Rc<ModelData>);

impl PartialEq for SharedModel {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

/// A checkpoint open on the page.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    pub id: u32,
    /// The folder's name, or "checkpoint" for loose files.
    pub name: String,
    /// Ids of the shards' own tabs.
    pub shard_ids: Vec<u32>,
    /// JSON companions given: (name, size).
    pub companions: Vec<(String, u64)>,
    pub ignored: Vec<Ignored>,
    /// Bytes of all files given (shards and companions).
    pub given_bytes: u64,
    pub model: Option<SharedModel>,
    pub bytes_read: u64,
    pub started_ms: f64,
    pub took_ms: Option<f64>,
}

impl Checkpoint {
    pub fn loaded(&mut self, data: Rc<ModelData>, bytes_read: u64, now_ms: f64) {
        self.model = Some(SharedModel(data));
        self.bytes_read = bytes_read;
        self.took_ms = Some((now_ms - self.started_ms).max(0.0));
    }
}

#[derive(Properties, PartialEq)]
pub struct ModelViewProps {
    pub checkpoint: Checkpoint,
    #[prop_or_default]
    pub on_close: Callback<()>,
}

#[function_component(ModelView)]
pub fn model_view(p: &ModelViewProps) -> Html {
    let c = &p.checkpoint;
    let selected = use_state(|| None::<usize>);
    let close = {
        let cb = p.on_close.clone();
        Callback::from(move |_: MouseEvent| cb.emit(()))
    };
    let Some(data) = &c.model else {
        return html! {
            <article class="file model reading" data-testid="model-view" data-state="reading" aria-busy="true">
                <header class="file-head">
                    <h2 class="fname">{ c.name.clone() }</h2>
                    <span class="pill">{ "checkpoint" }</span>
                </header>
                <p class="status" role="status">{ format!("Reading {} shard header(s) and {} JSON file(s)…", c.shard_ids.len(), c.companions.len()) }</p>
                <div class="progress indeterminate" role="progressbar" aria-label="Reading the checkpoint"><div></div></div>
                <button type="button" onclick={close}>{ "Cancel" }</button>
            </article>
        };
    };
    let d = &data.0;
    let m = &d.model;
    let on_select = {
        let selected = selected.clone();
        Callback::from(move |i: usize| selected.set(Some(i)))
    };
    html! {
        <article class="file model" data-testid="model-view" data-state="done">
            <header class="file-head">
                <h2 class="fname" title={c.name.clone()}>{ c.name.clone() }</h2>
                <span class="pill">{ "checkpoint" }</span>
                <ExportModel model={data.clone()} name={c.name.clone()} />
                <button type="button" class="ghost" onclick={close} title="Close the model view (the shards' tabs stay)">{ "Close" }</button>
            </header>
            { verdict(c, d) }
            { findings(d) }
            <div class="grid">
                { summary(m, c) }
                { reconciliation(m) }
            </div>
            { shards(m) }
            <div class="grid">
                if let Some(a) = &m.architecture { { architecture(a) } }
                if let Some(a) = &m.audit { { audit(a) } }
            </div>
            <div class="grid">
                if let Some(t) = &m.tokenizer { { tokenizer(t) } }
                { files_given(c, d) }
            </div>
            if !m.tensors.is_empty() {
                <TensorTable tensors={d.tensors.clone()} files={Some(d.tensor_files.clone())}
                    {on_select} selected={*selected} />
            }
            if let Some(i) = *selected {
                <TensorPanel tensors={d.tensors.clone()} index={i} />
                if let Some(f) = d.tensor_files.get(i) {
                    <p class="dim">{ "in " }<code>{ f.clone() }</code></p>
                }
            }
        </article>
    }
}

#[derive(Properties, PartialEq)]
struct ExportProps {
    model: SharedModel,
    name: String,
}

#[function_component(ExportModel)]
fn export_model(p: &ExportProps) -> Html {
    let failed = use_state(|| false);
    let onclick = {
        let model = p.model.clone();
        let name = format!("{}.model", p.name.replace('/', "_"));
        let failed = failed.clone();
        Callback::from(move |_: MouseEvent| {
            let json = model.0.report().to_json_pretty();
            failed.set(download(&export_name(&name), "application/json", &json).is_err());
        })
    };
    html! {
        <>
            <button type="button" class="primary" {onclick} data-testid="model-export"
                title="Download the report with the merged model (the same JSON as tensorpeek inspect FOLDER --json)">{ "Export JSON" }</button>
            if *failed { <span class="bad">{ "download failed" }</span> }
        </>
    }
}

fn verdict(c: &Checkpoint, d: &ModelData) -> Html {
    let m = &d.model;
    let errors = m.errors.len() + d.files.iter().map(|f| f.errors.len()).sum::<usize>();
    let warnings = m.warnings.len() + d.files.iter().map(|f| f.warnings.len()).sum::<usize>();
    let (label, class, icon, text) = if !m.ok_with(&d.files) {
        ("errors", "err", "✗", format!("Errors: {errors} error(s) — this checkpoint would not load as is."))
    } else if warnings > 0 {
        ("warnings", "warn", "!", format!("Sound with warnings: {warnings} finding(s) deserve a look."))
    } else {
        (
            "sound",
            "ok",
            "✓",
            "Sound: the shards agree with the index and the tensors with the config.".to_string(),
        )
    };
    let took = c.took_ms.map(|ms| format!(" · {ms:.0} ms")).unwrap_or_default();
    html! {
        <div class={classes!("verdict", class)} role="status" data-testid="model-verdict" data-verdict={label}>
            <span class="icon" aria-hidden="true">{ icon }</span>
            <span class="text">{ text }</span>
            <span class="dim read" data-testid="model-bytes-read">
                { format!("read {} of {} bytes{took}", fmt::thousands(c.bytes_read), fmt::thousands(c.given_bytes)) }
            </span>
        </div>
    }
}

fn finding_item(f: &Finding, file: Option<&str>) -> Html {
    let sev = if f.is_error() { "error" } else { "warning" };
    html! {
        <li class={classes!("finding", sev)} data-testid="model-finding" data-code={f.code.as_str()}>
            <span class="sev">{ sev }</span>
            <code class="code">{ f.code.as_str() }</code>
            <span class="msg">{ f.message.clone() }</span>
            <span class="where dim">
                if let Some(file) = file { <span>{ "in " }<code>{ file.to_string() }</code></span> }
                if let Some(o) = f.offset { <span>{ format!("at byte {}", fmt::thousands(o)) }</span> }
                if let Some(t) = &f.tensor { <span>{ "tensor " }<code>{ t.clone() }</code></span> }
                if let Some(fl) = &f.field { <span>{ "field " }<code>{ fl.clone() }</code></span> }
            </span>
        </li>
    }
}

fn findings(d: &ModelData) -> Html {
    let own: Vec<&Finding> = d.model.findings().collect();
    let shard: Vec<(&str, &Finding)> = d
        .files
        .iter()
        .flat_map(|f| f.findings().map(move |x| (f.name.as_str(), x)))
        .collect();
    if own.is_empty() && shard.is_empty() {
        return html! {};
    }
    html! {
        <section class="card findings" aria-label="Checkpoint findings" data-testid="model-findings">
            <h3>{ format!("Findings ({})", own.len() + shard.len()) }</h3>
            <ul>
                { for own.iter().map(|f| finding_item(f, None)) }
                { for shard.iter().map(|(n, f)| finding_item(f, Some(n))) }
            </ul>
        </section>
    }
}

fn opt_num(n: Option<u64>) -> Html {
    match n {
        Some(n) => html! { <Num {n} /> },
        None => html! { <span class="dim">{ "—" }</span> },
    }
}

fn summary(m: &ModelReport, c: &Checkpoint) -> Html {
    let t = &m.totals;
    html! {
        <section class="card summary" aria-label="Model summary" data-testid="model-summary">
            <h3>{ "Model" }</h3>
            <dl>
                { util::dl_item("Shards", "model-shard-count", html!{ <>
                    <Num n={m.shards.len() as u64} />
                    if !m.missing_shards.is_empty() { <span class="bad">{ format!(" ({} missing)", m.missing_shards.len()) }</span> }
                </> }) }
                { util::dl_item("Tensors", "model-tensor-count", html!{ <Num n={t.tensors} /> }) }
                { util::dl_item("Parameters", "model-params", html!{ <><Num n={t.params} /><span class="dim">{ format!(" ({})", fmt::human_count(t.params)) }</span></> }) }
                { util::dl_item("Tensor bytes", "model-tensor-bytes", html!{ <><span class="mono">{ fmt::thousands(t.bytes) }</span>{ " " }<span class="dim">{ "(" }<Bytes n={t.bytes} />{ ")" }</span></> }) }
                { util::dl_item("Bytes read", "model-read", html!{ <span class="mono">{ fmt::thousands(c.bytes_read) }</span> }) }
            </dl>
            { util::dtype_table(&t.by_dtype, "model-by-dtype", "Dtype") }
        </section>
    }
}

fn reconciliation(m: &ModelReport) -> Html {
    let r = &m.reconciliation;
    let parts = [
        ("tensor bytes", "seg-data", r.tensor_bytes),
        ("headers (sum of N)", "seg-header", r.header_bytes),
        ("8-byte prefixes", "seg-prefix", r.prefix_bytes),
    ];
    let terms: Vec<String> = parts.iter().map(|(_, _, b)| fmt::thousands(*b)).collect();
    let rest = r.unaccounted_bytes;
    let equation = if rest == 0 {
        format!("{} = {}", fmt::thousands(r.file_bytes), terms.join(" + "))
    } else if rest > 0 {
        format!(
            "{} = {} + {} unaccounted",
            fmt::thousands(r.file_bytes),
            terms.join(" + "),
            fmt::thousands(rest.unsigned_abs())
        )
    } else {
        format!(
            "{} ≠ {} (the tensors claim {} bytes more than the files hold)",
            fmt::thousands(r.file_bytes),
            terms.join(" + "),
            fmt::thousands(rest.unsigned_abs())
        )
    };
    let mut bar: Vec<(&str, &str, u64)> = parts.to_vec();
    if rest > 0 {
        bar.push(("unaccounted", "seg-trail", rest.unsigned_abs()));
    }
    let total: f64 = bar.iter().map(|x| x.2 as f64).sum::<f64>().max(1.0);
    html! {
        <section class="card recon" aria-label="Size reconciliation over all shards" data-testid="model-reconciliation"
            data-balanced={r.balanced.to_string()}>
            <h3>{ "Size reconciliation" }</h3>
            <p class="dim">{ "sum of shard sizes = tensor bytes + headers + 8-byte prefixes" }</p>
            <p class="equation mono" data-testid="model-equation">{ equation }</p>
            <div class="layout" role="img" aria-label="The shards' bytes: tensor data, headers and prefixes, to scale (with a minimum width)">
                { for bar.iter().filter(|x| x.2 > 0).map(|(label, class, bytes)| {
                    let style = format!("flex-grow: {:.6}", *bytes as f64 / total * 1000.0);
                    html! { <div class={classes!("seg", *class)} {style} title={format!("{label}: {} bytes", fmt::thousands(*bytes))}></div> }
                }) }
            </div>
            <ul class="legend">
                <li><span class="dim">{ "sum of shard sizes: " }</span><span class="mono">{ fmt::thousands(r.file_bytes) }</span>
                    { " " }<span class="dim">{ "(" }<Bytes n={r.file_bytes} />{ ")" }</span></li>
                { for bar.iter().map(|(label, class, bytes)| html! {
                    <li><span class={classes!("swatch", *class)} aria-hidden="true"></span>
                        { format!("{label}: ") }<span class="mono">{ fmt::thousands(*bytes) }</span>
                        { " " }<span class="dim">{ "(" }<Bytes n={*bytes} />{ ")" }</span></li>
                }) }
            </ul>
        </section>
    }
}

fn shards(m: &ModelReport) -> Html {
    html! {
        <section class="card shards" aria-label="Shards" data-testid="model-shards">
            <h3>{ format!("Shards ({} given{})", m.shards.len(),
                if m.missing_shards.is_empty() { String::new() } else { format!(", {} missing", m.missing_shards.len()) }) }</h3>
            <div class="table-wrap">
                <table class="mini shard-table">
                    <thead><tr>
                        <th scope="col">{ "Shard" }</th>
                        <th scope="col" class="n">{ "Size" }</th>
                        <th scope="col" class="n" title="N, the JSON header's length">{ "Header N" }</th>
                        <th scope="col" class="n">{ "Tensors" }</th>
                        <th scope="col" class="n">{ "Params" }</th>
                        <th scope="col" class="n">{ "Tensor bytes" }</th>
                        <th scope="col" class="n" title="size − (8 + N) − tensor bytes">{ "Unaccounted" }</th>
                        <th scope="col" class="n" title="Tensors the index places in this shard">{ "In index" }</th>
                    </tr></thead>
                    <tbody>
                        { for m.shards.iter().map(|s| html! {
                            <tr data-testid="shard-row" data-name={s.name.clone()} class={classes!((!s.ok).then_some("bad"))}>
                                <td class="name"><code>{ s.name.clone() }</code>{ if s.ok { "" } else { " ✗" } }</td>
                                <td class="n" data-testid="shard-size"><span class="mono" title={format!("{} bytes", fmt::thousands(s.size))}>{ fmt::thousands(s.size) }</span></td>
                                <td class="n mono" data-testid="shard-header-len">{ s.header_len.map_or("—".to_string(), fmt::thousands) }</td>
                                <td class="n" data-testid="shard-tensors"><Num n={s.tensors} /></td>
                                <td class="n"><Num n={s.params} /></td>
                                <td class="n mono" data-testid="shard-tensor-bytes">{ fmt::thousands(s.tensor_bytes) }</td>
                                <td class="n mono">{ s.unaccounted_bytes.map_or("—".to_string(), |u| if u < 0 { format!("−{}", fmt::thousands(u.unsigned_abs())) } else { fmt::thousands(u.unsigned_abs()) }) }</td>
                                <td class="n">{ opt_num(s.indexed_tensors) }</td>
                            </tr>
                        }) }
                        { for m.missing_shards.iter().map(|n| html! {
                            <tr data-testid="shard-missing" data-name={n.clone()} class="missing">
                                <td class="name"><code>{ n.clone() }</code></td>
                                <td colspan="7" class="bad">{ format!("{n} is referenced by the index but was not provided") }</td>
                            </tr>
                        }) }
                    </tbody>
                </table>
            </div>
        </section>
    }
}

fn family_name(f: Family) -> String {
    match serde_json::to_value(f) {
        Ok(Value::String(s)) => s,
        _ => format!("{f:?}"),
    }
}

fn json_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn yes_no(b: bool) -> Html {
    html! { { if b { "yes" } else { "no" } } }
}

fn architecture(a: &Architecture) -> Html {
    let known = a.family != Family::Unknown;
    html! {
        <section class="card arch" aria-label="Architecture" data-testid="model-architecture" data-family={family_name(a.family)}>
            <h3>{ "Architecture" }<span class="dim">{ " from config.json" }</span></h3>
            if let Some(s) = &a.attention {
                <p data-testid="arch-attention">{ s.clone() }</p>
            }
            <dl>
                { util::dl_item("Family", "arch-family", html!{ <code>{ family_name(a.family) }</code> }) }
                { util::dl_item("model_type", "arch-model-type", html!{ <code>{ a.model_type.clone().unwrap_or_else(|| "—".into()) }</code> }) }
                if !a.architectures.is_empty() { { util::dl_item("architectures", "arch-architectures", html!{ <code>{ a.architectures.join(", ") }</code> }) } }
                if known {
                    { util::dl_item("Layers", "arch-layers", opt_num(a.layers)) }
                    { util::dl_item("Hidden size", "arch-hidden", opt_num(a.hidden_size)) }
                    { util::dl_item("Intermediate size", "arch-intermediate", opt_num(a.intermediate_size)) }
                    { util::dl_item("Attention heads", "arch-heads", opt_num(a.attention_heads)) }
                    { util::dl_item("KV heads", "arch-kv-heads", opt_num(a.kv_heads)) }
                    { util::dl_item("Head dim", "arch-head-dim", opt_num(a.head_dim)) }
                    { util::dl_item("Vocab size", "arch-vocab", opt_num(a.vocab_size)) }
                    { util::dl_item("Tied embeddings", "arch-tied", yes_no(a.tie_word_embeddings)) }
                    { util::dl_item("Attention / MLP bias", "arch-bias", html!{ <>{ yes_no(a.attention_bias) }{ " / " }{ yes_no(a.mlp_bias) }</> }) }
                    { util::dl_item("rope_theta", "arch-rope-theta", html!{ <span class="mono">{ a.rope_theta.map_or("—".to_string(), |t| format!("{t}")) }</span> }) }
                    if let Some(s) = &a.rope_scaling { { util::dl_item("rope_scaling", "arch-rope-scaling", html!{ <code class="wrap">{ json_text(s) }</code> }) } }
                    { util::dl_item("Max positions", "arch-max-pos", opt_num(a.max_position_embeddings)) }
                    { util::dl_item("torch_dtype", "arch-dtype", html!{ <code>{ a.torch_dtype.clone().unwrap_or_else(|| "—".into()) }</code> }) }
                }
            </dl>
            if !known {
                <p class="dim">{ "This family's tensor layout is not known to tensorpeek; the config is shown as given." }</p>
                <dl class="meta" data-testid="arch-raw">
                    { for a.raw.iter().map(|(k, v)| html! {
                        <>
                            <dt><code>{ k.clone() }</code></dt>
                            <dd class="metaval">{ json_text(v) }</dd>
                        </>
                    }) }
                </dl>
            }
        </section>
    }
}

fn audit(a: &Audit) -> Html {
    let share = a.embedding_share_percent;
    html! {
        <section class="card audit" aria-label="Tensor inventory check" data-testid="model-audit" data-checked={a.checked.to_string()}>
            <h3>{ "Inventory check" }</h3>
            if !a.checked {
                <p class="dim">{ "The config does not give everything needed to derive the expected tensors." }</p>
            }
            <dl>
                { util::dl_item("Expected tensors", "audit-expected", html!{ <Num n={a.expected_tensors} /> }) }
                { util::dl_item("Present tensors", "audit-present", html!{ <Num n={a.present_tensors} /> }) }
                { util::dl_item("Matched", "audit-matched", html!{ <Num n={a.matched} /> }) }
                { util::dl_item("Missing", "audit-missing", html!{ <span class={classes!((a.missing > 0).then_some("bad"))}><Num n={a.missing} /></span> }) }
                if a.in_missing_shards > 0 {
                    { util::dl_item("In missing shards", "audit-in-missing", html!{ <Num n={a.in_missing_shards} /> }) }
                }
                { util::dl_item("Unexpected", "audit-unexpected", html!{ <Num n={a.unexpected} /> }) }
                { util::dl_item("Wrong shape", "audit-shape", html!{ <span class={classes!((a.shape_mismatches > 0).then_some("bad"))}><Num n={a.shape_mismatches} /></span> }) }
                { util::dl_item("Tensors per layer", "audit-per-layer", opt_num(a.tensors_per_layer)) }
                { util::dl_item("Parameters the config implies", "audit-expected-params", opt_num(a.expected_params)) }
                { util::dl_item("Parameters present", "audit-params", html!{ <Num n={a.total_params} /> }) }
                { util::dl_item("Embedding parameters", "audit-embedding", opt_num(a.embedding_params)) }
                { util::dl_item("Embedding share", "audit-share", html!{ <span class="mono">{ share.map_or("—".to_string(), |s| format!("{s:.2} %")) }</span> }) }
            </dl>
            if let Some(s) = share {
                <div class="share-bar" role="img" aria-label={format!("Embedding: {s:.2} % of all parameters")}>
                    <div class="share-fill" style={format!("width: {:.3}%", s.clamp(0.0, 100.0))}></div>
                </div>
            }
        </section>
    }
}

fn tokenizer(t: &TokenizerSummary) -> Html {
    let more = t.special_tokens.len().saturating_sub(SPECIAL_TOKENS_SHOWN);
    html! {
        <section class="card tokenizer" aria-label="Tokenizer" data-testid="model-tokenizer">
            <h3>{ "Tokenizer" }</h3>
            <dl>
                { util::dl_item("Model", "tok-model", html!{ <code>{ t.model_type.clone().unwrap_or_else(|| "—".into()) }</code> }) }
                { util::dl_item("Vocabulary", "tok-vocab", opt_num(t.vocab)) }
                { util::dl_item("Merges", "tok-merges", opt_num(t.merges)) }
                { util::dl_item("Added tokens", "tok-added", html!{ <Num n={t.added_tokens} /> }) }
                { util::dl_item("Token ids", "tok-total", opt_num(t.total_tokens)) }
                if let Some(c) = &t.tokenizer_class { { util::dl_item("tokenizer_class", "tok-class", html!{ <code>{ c.clone() }</code> }) } }
                if let Some(v) = &t.model_max_length { { util::dl_item("model_max_length", "tok-max-len", html!{ <span class="mono">{ json_text(v) }</span> }) } }
                { for t.roles.iter().map(|(k, v)| util::dl_item(k, &format!("tok-role-{k}"), html!{ <code>{ v.clone() }</code> })) }
            </dl>
            if !t.special_tokens.is_empty() {
                <h4>{ format!("Special tokens ({})", t.special_tokens.len()) }</h4>
                <ul class="tokens" data-testid="tok-special">
                    { for t.special_tokens.iter().take(SPECIAL_TOKENS_SHOWN).map(|s| html! {
                        <li><code>{ s.content.clone() }</code><span class="dim">{ format!(" {}", fmt::thousands(s.id)) }</span></li>
                    }) }
                    if more > 0 { <li class="dim">{ format!("… and {} more", fmt::thousands(more as u64)) }</li> }
                </ul>
            }
            { for t.chat_templates.iter().map(|ct| html! {
                <div class="template" data-testid="chat-template" data-name={ct.name.clone()}>
                    <div class="template-head">
                        <h4>{ format!("Chat template “{}”", ct.name) }<span class="dim">{ format!(" · {} characters, shown as text, never run", fmt::thousands(ct.template.chars().count() as u64)) }</span></h4>
                        <CopyButton text={AttrValue::from(ct.template.clone())} label="Copy template" testid="copy-template" />
                    </div>
                    <pre class="template-text">{ ct.template.clone() }</pre>
                </div>
            }) }
        </section>
    }
}

fn files_given(c: &Checkpoint, d: &ModelData) -> Html {
    let m = &d.model;
    html! {
        <section class="card files-given" aria-label="Files" data-testid="model-files">
            <h3>{ "Files" }</h3>
            <table class="mini">
                <thead><tr><th scope="col">{ "File" }</th><th scope="col">{ "Read as" }</th><th scope="col" class="n">{ "Size" }</th></tr></thead>
                <tbody>
                    { for m.companions.iter().map(|f| html! {
                        <tr data-testid="companion-row" data-name={f.name.clone()}>
                            <td><code>{ f.name.clone() }</code></td>
                            <td>{ f.kind.name() }{ if f.used { "" } else { " (not used)" } }</td>
                            <td class="n"><Bytes n={f.size} /></td>
                        </tr>
                    }) }
                    { for d.unread.iter().map(|(name, why)| html! {
                        <tr data-testid="unread-row" data-name={name.clone()} class="bad">
                            <td><code>{ name.clone() }</code></td>
                            <td>{ format!("could not be read: {why}") }</td>
                            <td></td>
                        </tr>
                    }) }
                    { for c.ignored.iter().map(|f| html! {
                        <tr data-testid="ignored-row" data-name={f.name.clone()} class="dim">
                            <td><code>{ f.name.clone() }</code></td>
                            <td>{ format!("ignored: {}", f.reason) }</td>
                            <td class="n"><Bytes n={f.size} /></td>
                        </tr>
                    }) }
                </tbody>
            </table>
            if let Some(g) = &m.generation_config {
                <h4>{ "generation_config.json" }</h4>
                <pre class="json-text" data-testid="generation-config">{ serde_json::to_string_pretty(g).unwrap_or_default() }</pre>
            }
        </section>
    }
}
