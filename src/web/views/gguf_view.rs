//! The GGUF part of a file's view: header, model card, tokenizer, layout accounting,
//! grouped metadata (long arrays page on demand), GGUF tensor details and the ggml type
//! table. Plugged into `file_view::format_section` for `Parsed::Gguf`.
//!
//! Everything from the file is rendered as text nodes (the chat template too: it sits in a
//! `<pre>` as text and is never interpreted).

use super::components::dl_item;
use super::format::{bytes_html, num_html, opt_num, params};
use crate::web::sources::use_sources;
use crate::web::state::Shared;
use super::tokenizer_view::TokenizerCard;
use super::arch_view::ArchCard;
use super::fit_view::FitCard;
use crate::model::description::Description;
use crate::dtype::ggml::{GgmlType, GGML_TYPES};
use crate::error::Code;
use crate::fmt;
use crate::formats::gguf::{self, Endian, GgufFile, Kv, KvGroup, Value};
use crate::formats::{Inspection, Parsed};
use crate::source::ByteSource;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use web_sys::HtmlInputElement;
use yew::prelude::*;

/// Array elements shown per "Show more" (and at first): a page renders within a frame,
/// while 128,256 tokens at once would stall the page for seconds.
pub const ARRAY_PAGE: u64 = 200;
/// Rows of the GGUF tensor-details table per page (same reason).
pub const DIMS_PAGE: usize = 200;
/// Longest string value shown in full in the metadata table; longer ones are cut here with
/// a note (the chat template has its own full view in the tokenizer card).
pub const MAX_INLINE_STRING: usize = 4000;

fn gguf_of(insp: &Shared<Inspection>) -> Option<&GgufFile> {
    match &insp.0.parsed {
        Parsed::Gguf(g) => Some(g),
        _ => None,
    }
}

#[derive(Properties, PartialEq)]
pub struct GgufSectionProps {
    pub insp: Shared<Inspection>,
    /// The file's tab id, for reading more of a long array on request.
    pub file: u32,
}

/// All GGUF cards.
#[function_component(GgufSection)]
pub fn gguf_section(p: &GgufSectionProps) -> Html {
    // The file as the "Will it run?" card takes a model (a split model's parts have theirs
    // on the merged view).
    let files = use_memo(p.insp.clone(), |i| Shared(Rc::new(vec![i.0.clone()])));
    let arch = use_memo(p.insp.clone(), |i| {
        gguf_of(i).and_then(|g| {
            let d = Description::from_gguf(g)?;
            let active = d.active_params(g.tensors.iter().map(|t| (t.name.as_str(), t.params.unwrap_or(0))));
            Some((Rc::new(d), active))
        })
    });
    let Some(g) = gguf_of(&p.insp) else {
        return html! {};
    };
    let split_part = g.kv("split.count").and_then(Value::as_u64).is_some_and(|n| n > 1);
    html! {
        <div class="gguf" data-testid="gguf">
            <div class="grid gguf-cards">
                { header_card(g) }
                { model_card(g) }
                <TokenizerCard tokenizer={g.tokenizer.clone()} testid="gguf-tokenizer" />
            </div>
            if let Some((desc, active)) = &*arch {
                <ArchCard desc={desc.clone()} active={*active} testid="gguf-arch" />
            }
            if split_part {
                <p class="dim" data-testid="fit-on-split">{ "Will it run? This file is one part of a split model: the merged view above plans for the whole model." }</p>
            } else {
                <FitCard files={(*files).clone()} />
            }
            { layout_card(g) }
            <Metadata insp={p.insp.clone()} file={p.file} />
            <GgufTensors insp={p.insp.clone()} />
            { type_table(g) }
        </div>
    }
}

fn mono(s: String) -> Html {
    html! { <span class="mono">{ s }</span> }
}

fn opt_text(s: Option<&str>) -> Html {
    s.map_or_else(|| html! { <span class="dim">{ "—" }</span> }, |s| html! { <code>{ s.to_string() }</code> })
}


fn header_card(g: &GgufFile) -> Html {
    let h = &g.header;
    let endian = match h.endian {
        Some(Endian::Little) => "little-endian",
        Some(Endian::Big) => "big-endian",
        None => "unknown",
    };
    let bad_magic = g.findings.iter().any(|f| f.code == Code::BadMagic);
    let magic = if bad_magic {
        html! { <span class="bad">{ "not GGUF (see findings)" }</span> }
    } else {
        html! { <code>{ "GGUF" }</code> }
    };
    html! {
        <section class="card" aria-label="GGUF header" data-testid="gguf-header">
            <h3>{ "GGUF header" }</h3>
            <dl>
                { dl_item("Magic", "g-magic", magic) }
                { dl_item("Version", "g-version", h.version.map_or_else(|| html!{ "—" }, |v| mono(v.to_string()))) }
                { dl_item("Byte order", "g-endian", html!{ endian }) }
                { dl_item("Tensors", "g-tensor-count", opt_num(h.tensor_count)) }
                { dl_item("Metadata entries", "g-kv-count", opt_num(h.kv_count)) }
                { dl_item("Alignment", "g-alignment", mono(fmt::thousands(h.alignment))) }
                { dl_item("Tensor infos start", "g-infos-start", h.tensor_infos_start.map_or_else(|| html!{ "—" }, |v| mono(fmt::thousands(v)))) }
                { dl_item("Data start", "g-data-start", h.data_start.map_or_else(|| html!{ "—" }, |v| mono(fmt::thousands(v)))) }
            </dl>
        </section>
    }
}

fn model_card(g: &GgufFile) -> Html {
    let c = &g.card;
    let file_type = match (&c.file_type_name, c.file_type) {
        (Some(n), Some(id)) => html! { <><code>{ n.clone() }</code><span class="dim">{ format!(" ({id})") }</span></> },
        (None, Some(id)) => mono(id.to_string()),
        _ => html! { <span class="dim">{ "—" }</span> },
    };
    let heads = match (c.head_count, c.head_count_kv) {
        (None, None) => html! { <span class="dim">{ "—" }</span> },
        (h, kv) => mono(format!(
            "{} / {}",
            h.map_or("—".to_string(), fmt::thousands),
            kv.map_or("—".to_string(), fmt::thousands)
        )),
    };
    let mut rope = Vec::new();
    if let Some(b) = c.rope_freq_base {
        rope.push(format!("freq base {}", fmt::float(b)));
    }
    if let Some(d) = c.rope_dimension_count {
        rope.push(format!("dims {}", fmt::thousands(d)));
    }
    if let Some(t) = &c.rope_scaling_type {
        rope.push(format!("scaling {t}"));
    }
    if let Some(f) = c.rope_scaling_factor {
        rope.push(format!("factor {}", fmt::float(f)));
    }
    if let Some(o) = c.rope_original_context_length {
        rope.push(format!("original context {}", fmt::thousands(o)));
    }
    let rope = if rope.is_empty() {
        html! { <span class="dim">{ "—" }</span> }
    } else {
        html! { rope.join(" · ") }
    };
    html! {
        <section class="card" aria-label="Model card" data-testid="gguf-card">
            <h3>{ "Model card" }</h3>
            <dl>
                { dl_item("Architecture", "c-arch", opt_text(c.architecture.as_deref())) }
                { dl_item("Name", "c-name", c.name.as_ref().map_or_else(|| html!{ <span class="dim">{ "—" }</span> }, |n| html!{ n.clone() })) }
                { dl_item("File type", "c-file-type", file_type) }
                { dl_item("Context length", "c-context", opt_num(c.context_length)) }
                { dl_item("Embedding length", "c-embedding", opt_num(c.embedding_length)) }
                { dl_item("Blocks", "c-blocks", opt_num(c.block_count)) }
                { dl_item("Feed-forward length", "c-ffn", opt_num(c.feed_forward_length)) }
                { dl_item("Heads / KV heads", "c-heads", heads) }
                { dl_item("Vocabulary", "c-vocab", opt_num(c.vocab_size)) }
                { dl_item("RoPE", "c-rope", rope) }
                { dl_item("Parameters", "c-params", html!{ <>{ params(c.parameter_count) }</> }) }
                { dl_item("Bits per weight", "c-bpw", c.bits_per_weight.map_or_else(|| html!{ <span class="dim">{ "—" }</span> }, |b| mono(format!("{b:.2}")))) }
            </dl>
        </section>
    }
}

fn term_class(kind: &str, label: &str) -> &'static str {
    match kind {
        "header" => "gs-header",
        "kv" if label.starts_with("tokenizer") => "gs-tok",
        "kv" => "gs-kv",
        "tensor_infos" => "gs-infos",
        "padding" | "tensor_padding" => "gs-pad",
        "tensor_data" => "gs-data",
        _ => "gs-unparsed",
    }
}

fn layout_card(g: &GgufFile) -> Html {
    let l = &g.layout;
    let sum = l.terms.iter().fold(0u64, |a, t| a.saturating_add(t.bytes));
    let total = (sum.max(1)) as f64;
    let ok = l.adds_up && sum == l.file_size;
    html! {
        <section class="card gguf-layout" aria-label="Layout accounting" data-testid="gguf-layout">
            <h3>{ "Layout accounting" }</h3>
            <p class="equation mono" data-testid="layout-equation">
                { if ok {
                    format!("{} terms add up to the file size: {} bytes", l.terms.len(), fmt::thousands(l.file_size))
                } else {
                    format!("the terms add up to {} bytes, the file has {} bytes", fmt::thousands(sum), fmt::thousands(l.file_size))
                } }
            </p>
            <div class="layout" role="img" aria-label="Layout of the file to scale (each part at least a few pixels wide)">
                { for l.terms.iter().filter(|t| t.bytes > 0).map(|t| {
                    let style = format!("flex-grow: {:.6}", t.bytes as f64 / total * 1000.0);
                    html! { <div class={classes!("seg", term_class(&t.kind, &t.label))} {style} title={format!("{}: {} bytes", t.label, fmt::thousands(t.bytes))}></div> }
                }) }
            </div>
            <table class="mini" data-testid="layout-table">
                <thead><tr><th scope="col">{ "Term" }</th><th scope="col">{ "Kind" }</th><th scope="col" class="n">{ "Bytes" }</th><th scope="col" class="n">{ "Size" }</th></tr></thead>
                <tbody>
                    { for l.terms.iter().map(|t| html! {
                        <tr data-testid="layout-term" data-kind={t.kind.to_string()} data-bytes={t.bytes.to_string()}>
                            <td><span class={classes!("swatch", term_class(&t.kind, &t.label))} aria-hidden="true"></span>{ t.label.clone() }</td>
                            <td><code>{ t.kind.to_string() }</code></td>
                            <td class="n mono">{ fmt::thousands(t.bytes) }</td>
                            <td class="n">{ bytes_html(t.bytes) }</td>
                        </tr>
                    }) }
                </tbody>
                <tfoot>
                    <tr class={classes!("sum", (!ok).then_some("bad"))}>
                        <th scope="row" colspan="2">{ if ok { "Sum = file size ✓" } else { "Sum ≠ file size" } }</th>
                        <td class="n mono" data-testid="layout-sum">{ fmt::thousands(sum) }</td>
                        <td class="n">{ bytes_html(sum) }</td>
                    </tr>
                </tfoot>
            </table>
        </section>
    }
}

fn type_label(v: &Value) -> String {
    match v {
        Value::Array(a) => format!("ARRAY of {}", a.elem_type.name()),
        other => other.value_type().name().to_string(),
    }
}

/// A scalar as text (strings unquoted, cut after [`MAX_INLINE_STRING`] bytes).
fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) if s.len() > MAX_INLINE_STRING => {
            let mut end = MAX_INLINE_STRING;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}… ({} bytes in all)", s.get(..end).unwrap_or(""), fmt::thousands(s.len() as u64))
        }
        Value::String(s) => s.clone(),
        other => other.display(),
    }
}

#[derive(Properties, PartialEq)]
struct MetaProps {
    insp: Shared<Inspection>,
    file: u32,
}

const GROUPS: [KvGroup; 4] = [KvGroup::General, KvGroup::Architecture, KvGroup::Tokenizer, KvGroup::Other];

#[function_component(Metadata)]
fn metadata(p: &MetaProps) -> Html {
    let filter = use_state(String::new);
    let Some(g) = gguf_of(&p.insp) else {
        return html! {};
    };
    if g.kvs.is_empty() {
        return html! {
            <section class="card gguf-meta" aria-label="Metadata" data-testid="gguf-metadata">
                <h3>{ "Metadata" }</h3>
                <p class="dim">{ "No metadata entry could be read (see the findings)." }</p>
            </section>
        };
    }
    let arch = g.architecture();
    let on_filter = {
        let filter = filter.clone();
        Callback::from(move |e: InputEvent| {
            if let Some(i) = e.target_dyn_into::<HtmlInputElement>() {
                filter.set(i.value());
            }
        })
    };
    let needle = filter.to_lowercase();
    let shown: Vec<(usize, &Kv)> = g
        .kvs
        .iter()
        .enumerate()
        .filter(|(_, kv)| needle.is_empty() || kv.key.to_lowercase().contains(&needle))
        .collect();
    html! {
        <section class="card gguf-meta" aria-label="Metadata" data-testid="gguf-metadata">
            <div class="table-tools">
                <h3>{ "Metadata" }</h3>
                <label class="filter">
                    <span>{ "Filter keys" }</span>
                    <input type="search" placeholder="e.g. rope, tokenizer.ggml" value={(*filter).clone()}
                        oninput={on_filter} data-testid="kv-filter" />
                </label>
                <span class="dim" data-testid="kv-count">{ format!("{} of {} entries", shown.len(), g.kvs.len()) }</span>
            </div>
            <div class="table-wrap">
                <table class="kv-table" data-testid="kv-table">
                    <thead><tr><th scope="col">{ "Key" }</th><th scope="col">{ "Type" }</th><th scope="col">{ "Value" }</th><th scope="col" class="n">{ "Bytes" }</th></tr></thead>
                    { for GROUPS.iter().map(|grp| {
                        let rows: Vec<&(usize, &Kv)> = shown.iter().filter(|(_, kv)| kv.group == *grp).collect();
                        if rows.is_empty() {
                            return html! {};
                        }
                        let bytes = rows.iter().fold(0u64, |a, (_, kv)| a.saturating_add(kv.bytes));
                        html! {
                            <tbody data-group={format!("{grp:?}").to_lowercase()}>
                                <tr class="group"><th scope="rowgroup" colspan="3">{ format!("{} ({})", grp.label(arch), rows.len()) }</th><td class="n">{ bytes_html(bytes) }</td></tr>
                                { for rows.iter().map(|(i, kv)| html! {
                                    <tr key={kv.key.clone()} data-testid="kv-row" data-key={kv.key.clone()}>
                                        <td class="key"><code>{ kv.key.clone() }</code></td>
                                        <td class="type"><code>{ type_label(&kv.value) }</code></td>
                                        <td class="val">{
                                            match &kv.value {
                                                Value::Array(_) => html! { <ArrayValue insp={p.insp.clone()} index={*i} file={p.file} /> },
                                                v => html! { <div class="metaval">{ scalar_text(v) }</div> },
                                            }
                                        }</td>
                                        <td class="n" title={format!("at byte {}", fmt::thousands(kv.offset))}>{ bytes_html(kv.bytes) }</td>
                                    </tr>
                                }) }
                            </tbody>
                        }
                    }) }
                </table>
            </div>
        </section>
    }
}

#[derive(Properties, PartialEq)]
struct ArrayProps {
    insp: Shared<Inspection>,
    /// Index of the KV in the file's metadata.
    index: usize,
    file: u32,
}

/// Where loading more elements stands.
#[derive(Clone, PartialEq)]
enum Load {
    Idle,
    Busy,
    Failed(String),
}

/// An array value: element type and length; "Show elements" lists the head, "Show more"
/// reads the entry again from the file (once, then kept) and decodes the next page with
/// [`gguf::array_elements`].
#[function_component(ArrayValue)]
fn array_value(p: &ArrayProps) -> Html {
    let open = use_state(|| false);
    // Elements beyond the head, in order.
    let more = use_state(|| Rc::new(Vec::<Value>::new()));
    // Elements shown (a page at a time).
    // Elements shown; `None` = the head the parser kept (a page at a time after that).
    let shown = use_state(|| None::<u64>);
    let entry = use_mut_ref(|| None::<Rc<Vec<u8>>>);
    let load = use_state(|| Load::Idle);
    let sources = use_sources();
    let Some(g) = gguf_of(&p.insp) else {
        return html! {};
    };
    let Some(kv) = g.kvs.get(p.index) else {
        return html! {};
    };
    let Value::Array(a) = &kv.value else {
        return html! {};
    };
    let have = (a.head.len() + more.len()) as u64;
    let toggle = {
        let open = open.clone();
        Callback::from(move |_: MouseEvent| open.set(!*open))
    };
    let summary = format!("{} × {}", fmt::thousands(a.len), a.elem_type.name());
    if !*open {
        return html! {
            <div class="arr">
                <span class="mono" data-testid="arr-len">{ summary }</span>
                if a.len > 0 {
                    { " " }<button type="button" class="small" onclick={toggle} aria-expanded="false" data-testid="arr-open">{ "Show elements" }</button>
                }
            </div>
        };
    }
    let limit = shown.unwrap_or(a.head.len() as u64).min(a.len);
    let on_more = {
        let (insp, index, source) = (p.insp.clone(), p.index, sources.get(p.file));
        let (more, shown, entry, load) = (more.clone(), shown.clone(), entry.clone(), load.clone());
        let head_len = a.head.len() as u64;
        let len = a.len;
        Callback::from(move |_: MouseEvent| {
            let target = limit.saturating_add(ARRAY_PAGE).min(len);
            let have = head_len.saturating_add(more.len() as u64);
            if target <= have {
                shown.set(Some(target));
                return;
            }
            let Some(src) = source.clone() else {
                load.set(Load::Failed("the file is no longer available".into()));
                return;
            };
            let (insp, more, shown, entry, load) = (insp.clone(), more.clone(), shown.clone(), entry.clone(), load.clone());
            load.set(Load::Busy);
            wasm_bindgen_futures::spawn_local(async move {
                let Some(g) = gguf_of(&insp) else { return };
                let Some(kv) = g.kvs.get(index) else { return };
                let cached = entry.borrow().clone();
                let bytes = match cached {
                    Some(b) => b,
                    None => match src.reader(insp.0.size).read_at(kv.offset, kv.bytes).await {
                        Ok(b) => {
                            let b = Rc::new(b);
                            *entry.borrow_mut() = Some(b.clone());
                            b
                        }
                        Err(e) => {
                            load.set(Load::Failed(format!("reading the entry failed: {e}")));
                            return;
                        }
                    },
                };
                match gguf::array_elements(&bytes, kv, &g.header, have, target.saturating_sub(have)) {
                    Some(vals) => {
                        let mut all: Vec<Value> = (**more).clone();
                        all.extend(vals);
                        more.set(Rc::new(all));
                        shown.set(Some(target));
                        load.set(Load::Idle);
                    }
                    None => load.set(Load::Failed("the entry could not be decoded again".into())),
                }
            });
        })
    };
    let elements = a.head.iter().chain(more.iter()).take(usize::try_from(limit).unwrap_or(usize::MAX));
    html! {
        <div class="arr open">
            <span class="mono" data-testid="arr-len">{ summary }</span>{ " " }
            <button type="button" class="small" onclick={toggle} aria-expanded="true">{ "Hide" }</button>
            <ol class="elems" start="0" data-testid="arr-elems">
                { for elements.enumerate().map(|(i, v)| html! {
                    <li><span class="idx dim">{ fmt::thousands(i as u64) }</span><code>{ v.display() }</code></li>
                }) }
            </ol>
            <div class="arr-foot">
                <span class="dim" data-testid="arr-shown">{ format!("showing {} of {}", fmt::thousands(limit.min(have)), fmt::thousands(a.len)) }</span>
                if limit < a.len {
                    { " " }<button type="button" class="small" onclick={on_more} disabled={*load == Load::Busy} data-testid="arr-more">
                        { format!("Show {} more", fmt::thousands(ARRAY_PAGE.min(a.len - limit))) }</button>
                }
                if let Load::Failed(msg) = &*load { { " " }<span class="bad">{ msg.clone() }</span> }
            </div>
        </div>
    }
}

#[derive(Properties, PartialEq)]
struct TensorsProps {
    insp: Shared<Inspection>,
}

/// GGUF-specific tensor facts: dims as stored vs the table's shape, per-block totals, and a
/// paged list of every tensor's ggml type and dims.
#[function_component(GgufTensors)]
fn gguf_tensors(p: &TensorsProps) -> Html {
    let rows = use_state(|| DIMS_PAGE);
    let Some(g) = gguf_of(&p.insp) else {
        return html! {};
    };
    if g.tensors.is_empty() {
        return html! {};
    }
    // (block or None) → (tensors, params, bytes)
    let mut blocks: BTreeMap<Option<u64>, (u64, u64, u64)> = BTreeMap::new();
    for t in &g.tensors {
        let e = blocks.entry(t.block()).or_default();
        e.0 = e.0.saturating_add(1);
        e.1 = e.1.saturating_add(t.params.unwrap_or(0));
        e.2 = e.2.saturating_add(t.bytes.unwrap_or(0));
    }
    let n_blocks = blocks.keys().filter(|k| k.is_some()).count();
    let more = {
        let rows = rows.clone();
        Callback::from(move |_: MouseEvent| rows.set(rows.saturating_add(DIMS_PAGE)))
    };
    html! {
        <section class="card gguf-tensors" aria-label="GGUF tensors" data-testid="gguf-tensors">
            <h3>{ "GGUF tensors" }</h3>
            <p class="note">
                { "GGUF stores each tensor's dims with " }<code>{ "ne[0]" }</code>{ " (the fastest-varying, contiguous one) first. The tensor table below shows the " }
                <strong>{ "shape" }</strong>{ " in row-major (numpy/PyTorch) order, i.e. the stored dims reversed; its Dtype column is the ggml type. Group by name to see the " }
                <code>{ "blk.N." }</code>{ " blocks as a tree." }
            </p>
            <details data-testid="by-block">
                <summary>{ format!("Per block: {} blocks, {} other groups", n_blocks, blocks.len() - n_blocks) }</summary>
                <table class="mini">
                    <thead><tr><th scope="col">{ "Block" }</th><th scope="col" class="n">{ "Tensors" }</th><th scope="col" class="n">{ "Params" }</th><th scope="col" class="n">{ "Bytes" }</th></tr></thead>
                    <tbody>
                        { for blocks.iter().map(|(b, (n, pa, by))| html! {
                            <tr><td>{ b.map_or("outside blocks".to_string(), |b| format!("blk.{b}")) }</td><td class="n">{ num_html(*n) }</td><td class="n">{ num_html(*pa) }</td><td class="n">{ bytes_html(*by) }</td></tr>
                        }) }
                    </tbody>
                </table>
            </details>
            <details data-testid="dims-details">
                <summary>{ format!("ggml type and dims as stored, per tensor ({})", fmt::thousands(g.tensors.len() as u64)) }</summary>
                <div class="table-wrap">
                    <table class="mini" data-testid="dims-table">
                        <thead><tr>
                            <th scope="col">{ "Name" }</th><th scope="col">{ "ggml type (id)" }</th>
                            <th scope="col" title="as stored in the file, ne[0] first">{ "Dims as stored (ne[0] first)" }</th>
                            <th scope="col" title="row-major: the stored dims reversed">{ "Shape (row-major)" }</th>
                            <th scope="col" class="n">{ "Block" }</th>
                            <th scope="col" class="n">{ "Tensor info at" }</th>
                            <th scope="col" class="n">{ "Data at" }</th>
                        </tr></thead>
                        <tbody>
                            { for g.tensors.iter().take(*rows).map(|t| html! {
                                <tr data-testid="dims-row" data-name={t.name.clone()}>
                                    <td><code>{ t.name.clone() }</code></td>
                                    <td><code>{ t.dtype.to_string() }</code><span class="dim">{ match &t.dtype { crate::dtype::TensorDtype::Ggml(id) => format!(" ({id})"), _ => String::new() } }</span></td>
                                    <td class="mono">{ format!("ne = {}", fmt::shape(t.ggml_dims.as_deref().unwrap_or(&[]))) }</td>
                                    <td class="mono">{ fmt::shape(&t.shape) }</td>
                                    <td class="n">{ t.block().map_or(String::new(), |b| b.to_string()) }</td>
                                    <td class="n mono">{ t.header_offset.map_or("—".to_string(), fmt::thousands) }</td>
                                    <td class="n mono">{ t.abs_start.map_or("overflow".to_string(), fmt::thousands) }</td>
                                </tr>
                            }) }
                        </tbody>
                    </table>
                </div>
                if *rows < g.tensors.len() {
                    <button type="button" class="small" onclick={more}>{ format!("Show more ({} left)", fmt::thousands((g.tensors.len() - *rows) as u64)) }</button>
                }
            </details>
        </section>
    }
}

fn type_table(g: &GgufFile) -> Html {
    let mut used: HashMap<u32, (u64, u64)> = HashMap::new();
    for t in &g.tensors {
        let crate::dtype::TensorDtype::Ggml(id) = t.dtype else { continue };
        let e = used.entry(id).or_default();
        e.0 = e.0.saturating_add(1);
        e.1 = e.1.saturating_add(t.bytes.unwrap_or(0));
    }
    let names: Vec<String> = {
        let mut v: Vec<&GgmlType> = GGML_TYPES.iter().filter(|t| used.contains_key(&t.id)).collect();
        v.sort_by_key(|t| t.id);
        v.iter().map(|t| t.name.to_string()).collect()
    };
    html! {
        <details class="card ggml-types" data-testid="ggml-types">
            <summary><h3>{ "ggml types" }</h3><span class="dim">{ format!(" ids 0–{}; this file uses {}", GGML_TYPES.len().saturating_sub(1), if names.is_empty() { "none".to_string() } else { names.join(", ") }) }</span></summary>
            <div class="table-wrap">
                <table class="mini">
                    <thead><tr>
                        <th scope="col" class="n">{ "Id" }</th><th scope="col">{ "Type" }</th>
                        <th scope="col" class="n">{ "Block size" }</th><th scope="col" class="n">{ "Bytes / block" }</th>
                        <th scope="col" class="n">{ "Bits / weight" }</th><th scope="col">{ "Status" }</th>
                        <th scope="col" class="n">{ "Tensors here" }</th><th scope="col" class="n">{ "Bytes here" }</th>
                    </tr></thead>
                    <tbody>
                        { for GGML_TYPES.iter().map(|t| {
                            let u = used.get(&t.id);
                            let bpw = (t.type_size as f64) * 8.0 / (t.block_size.max(1) as f64);
                            html! {
                                <tr class={classes!(u.is_some().then_some("used"), t.is_removed().then_some("removed"))} data-type={t.name} data-used={u.is_some().to_string()}>
                                    <td class="n mono">{ t.id }</td>
                                    <td><code>{ t.name }</code></td>
                                    <td class="n mono">{ fmt::thousands(t.block_size) }</td>
                                    <td class="n mono">{ fmt::thousands(t.type_size) }</td>
                                    <td class="n mono">{ format!("{bpw:.4}").trim_end_matches('0').trim_end_matches('.').to_string() }</td>
                                    <td>{ if t.is_removed() { "removed" } else { "" } }</td>
                                    <td class="n">{ u.map_or(html!{}, |(n, _)| num_html(*n)) }</td>
                                    <td class="n">{ u.map_or(html!{}, |(_, b)| bytes_html(*b)) }</td>
                                </tr>
                            }
                        }) }
                    </tbody>
                </table>
            </div>
        </details>
    }
}
