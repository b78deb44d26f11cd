//! The values panel: under the selected tensor, "Read values" hands the file and the
//! tensor's entry to the values Web Worker ([`crate::web::hooks::use_worker_job`]), which
//! reads exactly the tensor's byte range and sends back progress and the [`Stats`]; the
//! UI thread never touches the bytes. The result goes into the page state by (file id,
//! tensor index) through `on_stats`, so it survives re-selection and is merged into the
//! exported report.

use super::components::{CopyButton, FindingList};
use crate::web::hooks::{use_worker_job, JobRequest, Run, ValuesRead};
use crate::web::sources::use_sources;
use crate::web::state::Tensors;
use crate::fmt::{self, exact, short};
use crate::stats::{Histogram, Preview, Stats};
use crate::values::StridedView;
use std::rc::Rc;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct ValuesProps {
    /// The file's tab id (its source is looked up in the page's registry).
    pub file: u32,
    /// The file's length as inspected.
    pub file_len: u64,
    pub tensors: Tensors,
    pub index: usize,
    /// Stats already read for this tensor.
    pub stats: Option<Stats>,
    pub on_stats: Callback<Stats>,
    /// Whether to hash the raw bytes too (a page-wide choice, off by default: in wasm the
    /// hash is several times slower than the statistics).
    pub sha256: bool,
    pub on_sha256: Callback<bool>,
    /// A strided view of its storage (pickle-based files): its elements are gathered
    /// through the strides.
    #[prop_or_default]
    pub strided: Option<StridedView>,
}

/// What the last read cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    pub bytes_read: u64,
    pub ms: f64,
    pub wasm_memory: u64,
    pub sha256: bool,
    /// Where the SHA-256 ran (the worker's `hashing`).
    pub hashing: String,
    /// HTTP requests made (a file opened by URL).
    pub requests: u64,
}

/// Values of the selected tensor: read on request in a worker, with progress and cancel.
#[function_component(ValuesPanel)]
pub fn values_panel(p: &ValuesProps) -> Html {
    let worker = use_worker_job();
    let sources = use_sources();
    let timing = use_state(|| None::<Timing>);
    let unavailable = use_state(|| false);
    let Some(t) = p.tensors.get(p.index).cloned() else {
        return html! {};
    };
    let start = {
        let (start, on_stats, file, file_len, sha256, strided) = (worker.start.clone(), p.on_stats.clone(), p.file, p.file_len, p.sha256, p.strided.clone());
        let (timing, unavailable) = (timing.clone(), unavailable.clone());
        let t = t.clone();
        Callback::from(move |_: MouseEvent| {
            let Some(src) = sources.get(file) else {
                unavailable.set(true);
                return;
            };
            unavailable.set(false);
            let (timing, on_stats) = (timing.clone(), on_stats.clone());
            let on_done = Callback::from(move |r: ValuesRead| {
                let ValuesRead { stats, bytes_read, ms, wasm_memory, hashing, requests } = r;
                timing.set(Some(Timing { bytes_read, ms, wasm_memory, sha256, hashing, requests }));
                on_stats.emit(stats);
            });
            start.emit(JobRequest::Values { source: src, len: file_len, entry: t.clone(), sha256, strided: strided.clone(), on_done });
        })
    };
    let cancel = worker.cancel.reform(|_: MouseEvent| ());
    let toggle_sha = {
        let (on, now) = (p.on_sha256.clone(), p.sha256);
        Callback::from(move |_: Event| on.emit(!now))
    };
    let run = &worker.run;
    let busy = matches!(run, Run::Starting | Run::Reading { .. });
    let bytes = t.bytes.unwrap_or(0);

    let controls = html! {
        <div class="values-controls">
            <button type="button" class="primary" onclick={start} disabled={busy} data-testid="read-values"
                title="Read this tensor's bytes (only its range) and compute statistics">
                { if p.stats.is_some() { "Read values again" } else { "Read values" } }
            </button>
            <label class="values-sha" title="wasm has no SHA instruction: the hash runs in software in a second worker and takes about 4 times as long as the statistics">
                <input type="checkbox" checked={p.sha256} onchange={toggle_sha} disabled={busy} data-testid="values-sha" />
                { " SHA-256 of the raw bytes (costs speed)" }
            </label>
            <span class="dim">{ format!("reads {} bytes", fmt::thousands(bytes)) }</span>
        </div>
    };
    let strided_note = p.strided.as_ref().map(|v| html! {
        <p class="values-note" data-testid="values-strided">
            { format!("A strided view (stride {}): not stored contiguously. Its elements are gathered through the strides in row-major order from the {} bytes it spans (views up to {} are read); the SHA-256 is then of the gathered bytes.",
                fmt::shape(&v.stride), fmt::thousands(bytes), fmt::human_bytes(crate::values::MAX_STRIDED_BYTES)) }
        </p>
    });

    let status = match run {
        Run::Idle => html! {},
        Run::Starting => html! {
            <div class="values-progress" data-testid="values-progress" role="status">
                <div class="progress indeterminate" aria-label="Starting the values worker"><div></div></div>
                <span class="dim">{ "starting the worker…" }</span>
                <button type="button" onclick={cancel} data-testid="values-cancel">{ "Cancel" }</button>
            </div>
        },
        Run::Reading { done, total, started, now } => {
            let super::components::Progress { pct, rate, eta } = super::components::Progress::of(*done, *total, *started, *now, 100.0);
            html! {
                <div class="values-progress" data-testid="values-progress" role="status">
                    <div class="progress" role="progressbar" aria-label="Reading values"
                        aria-valuemin="0" aria-valuemax="100" aria-valuenow={format!("{pct:.0}")}>
                        <div class="bar" style={format!("width: {pct:.2}%")}></div>
                    </div>
                    <span class="mono" data-testid="values-done">{ format!("{} of {} bytes", fmt::thousands(*done), fmt::thousands(*total)) }</span>
                    <span class="dim">{ format!(" · {}", fmt::rate(rate)) }</span>
                    <span class="dim">{ if eta.is_finite() { format!(" · ETA {eta:.1} s") } else { String::new() } }</span>
                    <button type="button" onclick={cancel} data-testid="values-cancel">{ "Cancel" }</button>
                </div>
            }
        }
        Run::Cancelled { done, total } => html! {
            <p class="dim" data-testid="values-cancelled" role="status">
                { format!("Cancelled after {} of {} bytes; no values are shown for a partial read.", fmt::thousands(*done), fmt::thousands(*total)) }
            </p>
        },
        Run::Failed(f) => html! {
            <FindingList findings={Rc::new(vec![f.clone()])} testid="values-findings" item_testid="values-finding" title="Reading the values" />
        },
    };

    html! {
        <section class="card panel values" aria-label="Tensor values" data-testid="values-panel">
            <h3>{ "Values" }</h3>
            { strided_note.unwrap_or_default() }
            { controls }
            if *unavailable {
                <p class="bad">{ "The file is no longer available to this page; open it again." }</p>
            }
            { status }
            if let (Some(s), false) = (&p.stats, busy) {
                <StatsView stats={s.clone()} />
                if let Some(tm) = &*timing {
                    { timing_line(tm) }
                }
            }
        </section>
    }
}

fn timing_line(t: &Timing) -> Html {
    let rate = if t.ms > 0.0 { fmt::rate(t.bytes_read as f64 / (t.ms / 1000.0)) } else { String::new() };
    html! {
        <p class="dim values-timing" data-testid="values-timing" data-bytes-read={t.bytes_read.to_string()}
            data-ms={format!("{:.1}", t.ms)} data-wasm-memory={t.wasm_memory.to_string()}
            data-hashing={t.hashing.clone()} data-requests={t.requests.to_string()}>
            { format!("read {} bytes{} in the worker in {:.0} ms ({rate}{}) · worker memory {}",
                fmt::thousands(t.bytes_read),
                if t.requests > 0 { format!(" with {} HTTP range request{}", t.requests, if t.requests == 1 { "" } else { "s" }) } else { String::new() },
                t.ms,
                if t.sha256 { format!(", SHA-256 in the {}", t.hashing) } else { ", no SHA-256".to_string() },
                fmt::human_bytes(t.wasm_memory)) }
        </p>
    }
}

fn float_cell(label: &str, testid: &str, v: Option<f64>) -> Html {
    let (text, data) = match v {
        Some(v) => (short(v), exact(v)),
        None => ("—".to_string(), String::new()),
    };
    html! {
        <>
            <dt>{ label.to_string() }</dt>
            <dd class="mono" data-testid={testid.to_string()} data-value={data.clone()} title={data}>{ text }</dd>
        </>
    }
}

fn count_cell(label: &str, testid: &str, n: u64) -> Html {
    html! {
        <>
            <dt>{ label.to_string() }</dt>
            <dd class="mono" data-testid={testid.to_string()} data-value={n.to_string()}>{ fmt::thousands(n) }</dd>
        </>
    }
}

/// Preview as TSV: a header of column numbers, then one line per row led by its flat index.
pub fn preview_tsv(p: &Preview) -> String {
    let cols = usize::try_from(p.cols).unwrap_or(0).max(1);
    let mut out = String::from("index");
    for c in 0..p.cols {
        out.push_str(&format!("\t+{c}"));
    }
    out.push('\n');
    for (r, row) in p.values.chunks(cols).enumerate() {
        out.push_str(&(r as u64).saturating_mul(p.row_len).to_string());
        for v in row {
            out.push('\t');
            out.push_str(&exact(*v));
        }
        out.push('\n');
    }
    out
}

#[derive(Properties, PartialEq)]
struct StatsProps {
    stats: Stats,
}

#[function_component(StatsView)]
fn stats_view(p: &StatsProps) -> Html {
    let s = &p.stats;
    let json = serde_json::to_string_pretty(s).unwrap_or_default();
    html! {
        <div class="values-result" data-testid="values-result">
            if let Some(n) = &s.note {
                <p class="values-note" data-testid="values-note">{ n.clone() }</p>
            }
            <div class="values-grid">
                <dl class="values-stats">
                    { count_cell("Elements", "v-count", s.count) }
                    { float_cell("Min", "v-min", s.min) }
                    { float_cell("Max", "v-max", s.max) }
                    { float_cell("Mean", "v-mean", s.mean) }
                    { float_cell("Std", "v-std", s.std) }
                </dl>
                <dl class="values-stats">
                    { count_cell("NaN", "v-nan", s.nan) }
                    { count_cell("+Inf", "v-pos-inf", s.pos_inf) }
                    { count_cell("−Inf", "v-neg-inf", s.neg_inf) }
                    { count_cell("Zeros", "v-zeros", s.zeros) }
                    { count_cell("Subnormals", "v-subnormals", s.subnormals) }
                </dl>
            </div>
            <p class="values-sha256">
                <span>{ "SHA-256 of the raw bytes: " }</span>
                if s.sha256.is_empty() {
                    <span class="dim" data-testid="v-sha256" data-value="">{ "not computed (hashing was off)" }</span>
                } else {
                    <code class="hash" data-testid="v-sha256" data-value={s.sha256.clone()}>{ s.sha256.clone() }</code>
                    { " " }<CopyButton text={AttrValue::from(s.sha256.clone())} label="Copy" testid="copy-sha256" />
                }
            </p>
            if let Some(h) = &s.histogram {
                <HistogramView hist={h.clone()} />
            }
            if let Some(pv) = &s.preview {
                { preview_table(pv) }
            }
            <div class="actions">
                <CopyButton text={AttrValue::from(json)} label="Copy stats (JSON)" testid="copy-stats" />
                if let Some(pv) = &s.preview {
                    <CopyButton text={AttrValue::from(preview_tsv(pv))} label="Copy preview (TSV)" testid="copy-preview" />
                }
            </div>
        </div>
    }
}

fn preview_table(p: &Preview) -> Html {
    let cols = usize::try_from(p.cols).unwrap_or(0).max(1);
    html! {
        <div class="values-preview">
            <h4>{ format!("First {} × {} (row-major flat indices)", p.rows, p.cols) }</h4>
            <div class="scroll">
                <table class="mini preview" data-testid="values-preview">
                    <thead><tr>
                        <th scope="col" class="dim">{ "index" }</th>
                        { for (0..p.cols).map(|c| html! { <th scope="col" class="n">{ format!("+{c}") }</th> }) }
                    </tr></thead>
                    <tbody>
                        { for p.values.chunks(cols).enumerate().map(|(r, row)| {
                            let base = (r as u64).saturating_mul(p.row_len);
                            html! {
                                <tr>
                                    <th scope="row" class="n mono">{ fmt::thousands(base) }</th>
                                    { for row.iter().enumerate().map(|(c, v)| html! {
                                        <td class="n mono" title={format!("[{}] = {}", base.saturating_add(c as u64), exact(*v))}>{ short(*v) }</td>
                                    }) }
                                </tr>
                            }
                        }) }
                    </tbody>
                </table>
            </div>
        </div>
    }
}

#[derive(Properties, PartialEq)]
struct HistProps {
    hist: Histogram,
}

/// Width and height of the histogram's SVG coordinate system.
const HIST_W: f64 = 640.0;
const HIST_H: f64 = 160.0;

#[function_component(HistogramView)]
fn histogram_view(p: &HistProps) -> Html {
    let log = use_state(|| false);
    let h = &p.hist;
    let n = h.counts.len().max(1);
    let max = h.counts.iter().copied().max().unwrap_or(0);
    let scale = |c: u64| -> f64 {
        if max == 0 {
            0.0
        } else if *log {
            (c as f64).ln_1p() / (max as f64).ln_1p()
        } else {
            c as f64 / max as f64
        }
    };
    let bw = HIST_W / n as f64;
    let width = (h.hi - h.lo) / n as f64;
    let set_linear = {
        let log = log.clone();
        Callback::from(move |_: MouseEvent| log.set(false))
    };
    let set_log = {
        let log = log.clone();
        Callback::from(move |_: MouseEvent| log.set(true))
    };
    html! {
        <figure class="values-hist" data-testid="histogram" data-bins={n.to_string()}>
            <figcaption>
                <span>{ format!("Histogram of the finite values ({n} bins)") }</span>
                <span class="seg-toggle" role="group" aria-label="Count scale">
                    <button type="button" class={classes!((!*log).then_some("on"))} aria-pressed={(!*log).to_string()} onclick={set_linear} data-testid="hist-linear">{ "linear" }</button>
                    <button type="button" class={classes!((*log).then_some("on"))} aria-pressed={(*log).to_string()} onclick={set_log} data-testid="hist-log">{ "log" }</button>
                </span>
            </figcaption>
            <div class="hist-plot">
                <span class="hist-max dim mono">{ format!("{}{}", fmt::thousands(max), if *log { " (log)" } else { "" }) }</span>
                <svg viewBox={format!("0 0 {HIST_W} {HIST_H}")} preserveAspectRatio="none" role="img"
                    aria-label={format!("Histogram from {} to {}", short(h.lo), short(h.hi))}>
                    { for h.counts.iter().enumerate().map(|(i, &c)| {
                        let y = scale(c) * HIST_H;
                        let lo = h.lo + width * i as f64;
                        let hi = lo + width;
                        html! {
                            <rect x={format!("{:.3}", bw * i as f64)} y={format!("{:.3}", HIST_H - y)}
                                width={format!("{:.3}", (bw - if n <= 64 { 1.0 } else { 0.0 }).max(0.5))}
                                height={format!("{y:.3}")} data-count={c.to_string()}>
                                <title>{ format!("[{}, {}): {}", short(lo), short(hi), fmt::thousands(c)) }</title>
                            </rect>
                        }
                    }) }
                </svg>
            </div>
            <div class="hist-axis mono dim">
                <span data-testid="hist-lo" title={exact(h.lo)}>{ short(h.lo) }</span>
                <span data-testid="hist-hi" title={exact(h.hi)}>{ short(h.hi) }</span>
            </div>
        </figure>
    }
}
