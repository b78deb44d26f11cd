//! The "Model" tab of a safetensors checkpoint (a dropped folder, or shards given with
//! their JSON files): the merged model of `model::checkpoint::build_model` — verdict and
//! findings, shards, the size reconciliation over all shards, the architecture from
//! config.json and the inventory check against it, the tokenizer, the files given, and
//! one tensor table across shards with a File column. Each shard keeps its own tab.
//!
//! Everything from a file is rendered as text (Yew escapes it); chat templates are shown
//! in a `<pre>` as text and never run.

use super::arch_view::ArchCard;
use super::components::{dl_item, equation, export_name, ExportButton, FindingList, LayoutBar, Term, TotalsCard, VerdictBanner};
use super::file_view::TensorPanel;
use super::format::{bytes_html, mono, num_html, opt_num};
use crate::web::state::{CheckpointData, CheckpointTab};
use super::table::TensorTable;
use super::tokenizer_view::TokenizerCard;
use crate::error::Finding;
use crate::fmt;
use crate::formats::pickle::Verdict as SafetyVerdict;
use crate::formats::Verdict;
use crate::report::safety_meaning;
use crate::model::architecture::{Architecture, Family, InventoryCheck};
use crate::model::checkpoint::CheckpointModel;
use crate::model::description::Description;
use crate::report::{FileReport, ModelSection, Report};
use serde_json::Value;
use std::collections::BTreeMap;
use std::rc::Rc;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct ModelViewProps {
    pub checkpoint: CheckpointTab,
    #[prop_or_default]
    pub on_close: Callback<()>,
    /// The tensor table's name filter (kept in the page state, for links).
    #[prop_or_default]
    pub filter: AttrValue,
    #[prop_or_default]
    pub on_filter: Callback<String>,
}

/// The JSON report: the shards as `files`, the merged model as `model`.
fn report(d: &CheckpointData) -> Report {
    let mut r = Report::new(d.files.iter().map(|f| FileReport::of(f, &BTreeMap::new())).collect());
    r.model = Some(ModelSection::Checkpoint(Box::new(d.whole_model())));
    r
}

#[function_component(ModelView)]
pub fn model_view(p: &ModelViewProps) -> Html {
    let c = &p.checkpoint;
    let selected = use_state(|| None::<usize>);
    let close = p.on_close.reform(|_: MouseEvent| ());
    // The description read from config.json, as the converter would see it.
    let arch = use_memo(c.model.clone(), |m| {
        let data = &m.as_ref()?.0;
        let config = serde_json::Value::Object(data.model.architecture.as_ref()?.raw.clone());
        let d = Description::from_config(&config)?;
        // The merged tensors are in `data.tensors` (the model's own list was moved there).
        let active = d.active_params(data.tensors.iter().map(|t| (t.name.as_str(), t.params.unwrap_or(0))));
        Some((Rc::new(d), active))
    });
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
    let export = {
        let data = data.clone();
        Callback::from(move |_: ()| report(&data.0).to_json_pretty())
    };
    // The model's findings, then each shard's own (named by their file).
    let findings: Vec<Finding> = m
        .findings()
        .cloned()
        .chain(d.files.iter().flat_map(|f| f.findings().map(|x| x.clone().file(f.name.clone()))))
        .collect();
    let verdict = Verdict::of(findings.iter());
    let (errors, warnings) = (findings.iter().filter(|f| f.is_error()).count(), findings.iter().filter(|f| !f.is_error()).count());
    let text = match verdict {
        Verdict::Errors => format!("Errors: {errors} error(s) — this checkpoint would not load as is."),
        Verdict::Warnings => format!("Sound with warnings: {warnings} finding(s) deserve a look."),
        Verdict::Sound => "Sound: the shards agree with the index and the tensors with the config.".to_string(),
    };
    html! {
        <article class="file model" data-testid="model-view" data-state="done">
            <header class="file-head">
                <h2 class="fname" title={c.name.clone()}>{ c.name.clone() }</h2>
                <span class="pill" data-testid="model-format">{ m.format }</span>
                <ExportButton file_name={export_name(&format!("{}.model", c.name.replace('/', "_")))} json={export} testid="model-export"
                    title="Download the report with the merged model (the same JSON as tensorpeek inspect FOLDER --json)" />
                <button type="button" class="ghost" onclick={close} title="Close the model view (the shards' tabs stay)">{ "Close" }</button>
            </header>
            if let Some(v) = m.safety {
                <section class={classes!("card", "safety", match v { SafetyVerdict::Safe => "ok", SafetyVerdict::Suspicious => "warn", _ => "err" })}
                    role={if matches!(v, SafetyVerdict::Dangerous | SafetyVerdict::Error) { "alert" } else { "status" }}
                    aria-label="Safety verdict of the shards" data-testid="model-safety" data-verdict={v.name()}>
                    <h3 class="safety-head"><span>{ "Safety of the shards: " }</span><span class="safety-verdict">{ v.name().to_uppercase() }</span></h3>
                    <p class="safety-meaning">{ format!("The worst verdict of the PyTorch shards: {}. Each shard's tab lists its imports.", safety_meaning(v)) }</p>
                </section>
            }
            <VerdictBanner {verdict} {text} bytes_read={c.bytes_read} total={c.given_bytes} took_ms={c.took_ms} testid="model-verdict" read_testid="model-bytes-read" />
            <FindingList findings={Rc::new(findings)} testid="model-findings" item_testid="model-finding" title="Findings"
                tensors={Some(d.tensors.clone())} on_select={on_select.clone()} />
            <div class="grid">
                { summary(m, c) }
                { reconciliation(m) }
            </div>
            { shards(m) }
            if let Some((desc, active)) = &*arch {
                <ArchCard desc={desc.clone()} active={*active} testid="model-arch" />
            }
            <div class="grid">
                if let Some(a) = &m.architecture { { architecture(a) } }
                if let Some(a) = &m.inventory { { inventory(a) } }
            </div>
            <div class="grid">
                if let Some(t) = &m.tokenizer { <TokenizerCard tokenizer={t.clone()} testid="model-tokenizer" /> }
                { files_given(d) }
            </div>
            if let Some(i) = *selected {
                <TensorPanel tensors={d.tensors.clone()} index={i} file={d.tensor_files.get(i).map(|f| AttrValue::from(f.clone()))} />
            }
            if !d.tensors.is_empty() {
                <TensorTable tensors={d.tensors.clone()} files={Some(d.tensor_files.clone())}
                    {on_select} selected={*selected} filter={p.filter.clone()} on_filter={p.on_filter.clone()}
                    export_name={AttrValue::from(format!("{}-tensors", p.checkpoint.name))} />
            }
        </article>
    }
}

fn summary(m: &CheckpointModel, c: &CheckpointTab) -> Html {
    html! {
        <TotalsCard title="Model" totals={m.totals.clone()} prefix="model-" testid="model-summary">
            { dl_item("Shards", "model-shard-count", html!{ <>
                { num_html(m.shards.len() as u64) }
                if !m.missing_shards.is_empty() { <span class="bad">{ format!(" ({} missing)", m.missing_shards.len()) }</span> }
            </> }) }
            { dl_item("Bytes read", "model-read", mono(c.bytes_read)) }
        </TotalsCard>
    }
}

fn reconciliation(m: &CheckpointModel) -> Html {
    let r = &m.reconciliation;
    let mut terms = vec![
        Term::new("tensor bytes", "seg-data", r.tensor_bytes),
        Term::new("headers (sum of N)", "seg-header", r.header_bytes),
        Term::new("8-byte prefixes", "seg-prefix", r.prefix_bytes),
    ];
    if r.container_bytes > 0 {
        // PyTorch shards: zip records and pickles, the tensor data counted once
        terms.push(Term::new("containers (zip records, pickles)", "seg-header", r.container_bytes));
    }
    let (text, rest) = equation(r.file_bytes, &terms);
    let text = if rest > 0 { format!("{text} + {} unaccounted", fmt::thousands(u64::try_from(rest).unwrap_or(0))) } else { text };
    if rest > 0 {
        terms.push(Term::new("unaccounted", "seg-trail", u64::try_from(rest).unwrap_or(0)));
    }
    html! {
        <section class="card recon" aria-label="Size reconciliation over all shards" data-testid="model-reconciliation"
            data-balanced={r.balanced.to_string()}>
            <h3>{ "Size reconciliation" }</h3>
            <p class="dim">{ if r.container_bytes > 0 { "sum of shard sizes = tensor data (shared storages once) + containers (zip records, pickles)" } else { "sum of shard sizes = tensor bytes + headers + 8-byte prefixes" } }</p>
            <p class="equation mono" data-testid="model-equation">{ text }</p>
            if rest < 0 {
                <p class="bad">{ format!("The tensors claim {} bytes more than the files hold.", fmt::thousands(u64::try_from(-rest).unwrap_or(u64::MAX))) }</p>
            }
            <LayoutBar {terms} label="The shards' bytes: tensor data, headers and prefixes, to scale (with a minimum width)" />
        </section>
    }
}

fn shards(m: &CheckpointModel) -> Html {
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
                                <td class="n" data-testid="shard-tensors">{ num_html(s.tensors) }</td>
                                <td class="n">{ num_html(s.params) }</td>
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
                { dl_item("Family", "arch-family", html!{ <code>{ family_name(a.family) }</code> }) }
                { dl_item("model_type", "arch-model-type", html!{ <code>{ a.model_type.clone().unwrap_or_else(|| "—".into()) }</code> }) }
                if !a.architectures.is_empty() { { dl_item("architectures", "arch-architectures", html!{ <code>{ a.architectures.join(", ") }</code> }) } }
                if known {
                    { dl_item("Layers", "arch-layers", opt_num(a.layers)) }
                    { dl_item("Hidden size", "arch-hidden", opt_num(a.hidden_size)) }
                    { dl_item("Intermediate size", "arch-intermediate", opt_num(a.intermediate_size)) }
                    { dl_item("Attention heads", "arch-heads", opt_num(a.attention_heads)) }
                    { dl_item("KV heads", "arch-kv-heads", opt_num(a.kv_heads)) }
                    { dl_item("Head dim", "arch-head-dim", opt_num(a.head_dim)) }
                    { dl_item("Vocab size", "arch-vocab", opt_num(a.vocab_size)) }
                    { dl_item("Tied embeddings", "arch-tied", yes_no(a.tie_word_embeddings)) }
                    { dl_item("Attention / MLP bias", "arch-bias", html!{ <>{ yes_no(a.attention_bias) }{ " / " }{ yes_no(a.mlp_bias) }</> }) }
                    { dl_item("rope_theta", "arch-rope-theta", html!{ <span class="mono">{ a.rope_theta.map_or("—".to_string(), |t| format!("{t}")) }</span> }) }
                    if let Some(s) = &a.rope_scaling { { dl_item("rope_scaling", "arch-rope-scaling", html!{ <code class="wrap">{ json_text(s) }</code> }) } }
                    { dl_item("Max positions", "arch-max-pos", opt_num(a.max_position_embeddings)) }
                    { dl_item("torch_dtype", "arch-dtype", html!{ <code>{ a.torch_dtype.clone().unwrap_or_else(|| "—".into()) }</code> }) }
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

fn inventory(a: &InventoryCheck) -> Html {
    let share = a.embedding_share_percent;
    html! {
        <section class="card audit" aria-label="Tensor inventory check" data-testid="model-audit" data-checked={a.checked.to_string()}>
            <h3>{ "Inventory check" }</h3>
            if !a.checked {
                <p class="dim">{ "The config does not give everything needed to derive the expected tensors." }</p>
            }
            <dl>
                { dl_item("Expected tensors", "audit-expected", html!{ { num_html(a.expected_tensors) } }) }
                { dl_item("Present tensors", "audit-present", html!{ { num_html(a.present_tensors) } }) }
                { dl_item("Matched", "audit-matched", html!{ { num_html(a.matched) } }) }
                { dl_item("Missing", "audit-missing", html!{ <span class={classes!((a.missing > 0).then_some("bad"))}>{ num_html(a.missing) }</span> }) }
                if a.in_missing_shards > 0 {
                    { dl_item("In missing shards", "audit-in-missing", html!{ { num_html(a.in_missing_shards) } }) }
                }
                { dl_item("Unexpected", "audit-unexpected", html!{ { num_html(a.unexpected) } }) }
                { dl_item("Wrong shape", "audit-shape", html!{ <span class={classes!((a.shape_mismatches > 0).then_some("bad"))}>{ num_html(a.shape_mismatches) }</span> }) }
                { dl_item("Tensors per layer", "audit-per-layer", opt_num(a.tensors_per_layer)) }
                { dl_item("Parameters the config implies", "audit-expected-params", opt_num(a.expected_params)) }
                { dl_item("Parameters present", "audit-params", html!{ { num_html(a.total_params) } }) }
                { dl_item("Embedding parameters", "audit-embedding", opt_num(a.embedding_params)) }
                { dl_item("Embedding share", "audit-share", html!{ <span class="mono">{ share.map_or("—".to_string(), |s| format!("{s:.2} %")) }</span> }) }
            </dl>
            if let Some(s) = share {
                <div class="share-bar" role="img" aria-label={format!("Embedding: {s:.2} % of all parameters")}>
                    <div class="share-fill" style={format!("width: {:.3}%", s.clamp(0.0, 100.0))}></div>
                </div>
            }
        </section>
    }
}

fn files_given(d: &CheckpointData) -> Html {
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
                            <td class="n">{ bytes_html(f.size) }</td>
                        </tr>
                    }) }
                    { for d.unread.iter().map(|(name, why)| html! {
                        <tr data-testid="unread-row" data-name={name.clone()} class="bad">
                            <td><code>{ name.clone() }</code></td>
                            <td>{ why.clone() }</td>
                            <td></td>
                        </tr>
                    }) }
                    { for d.ignored.iter().map(|f| html! {
                        <tr data-testid="ignored-row" data-name={f.name.clone()} class="dim">
                            <td><code>{ f.name.clone() }</code></td>
                            <td>{ format!("ignored: {}", f.reason) }</td>
                            <td class="n">{ bytes_html(f.size) }</td>
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
