//! The values panel (issue 4): under the selected tensor, "Read values" hands the `File`
//! and the tensor's entry to a Web Worker ([`super::worker`]) that reads exactly the
//! tensor's byte range in 8 MiB chunks and sends back progress and the [`Stats`]. The UI
//! thread never touches the bytes. Cancel terminates the worker at once (its reads stop);
//! the next read starts a fresh one.
//!
//! Results go into the page state by (file id, tensor index) through `on_stats`, so they
//! survive re-selection and are merged into the exported report ([`merge_stats`]).

use super::msg::{get, get_u64, kind, set};
use super::state::Tensors;
use super::util::{now_ms, CopyButton};
use crate::fmt;
use crate::report::{FileReport, Format, TensorEntry};
use crate::stats::{Histogram, Preview, Stats};
use js_sys::Object;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{MessageEvent, Worker};
use yew::prelude::*;

/// The worker's loader script, written by Trunk next to index.html (`data-type="worker"`
/// with `data-loader-shim`). Relative, so the page works from any sub-path.
pub const WORKER_URL: &str = "./tensorpeek-worker_loader.js";

/// Stats read so far for one file, by tensor index.
pub type FileValues = Rc<BTreeMap<usize, Stats>>;

/// One file's stats out of the page-wide map.
pub fn for_file(id: u32, all: &BTreeMap<(u32, usize), Stats>) -> BTreeMap<usize, Stats> {
    all.range((id, 0)..=(id, usize::MAX))
        .map(|((_, i), s)| (*i, s.clone()))
        .collect()
}

/// The report with the stats read so far put into its tensors' `stats`.
pub fn merge_stats(r: &FileReport, values: &BTreeMap<usize, Stats>) -> FileReport {
    let mut r = r.clone();
    for (i, s) in values {
        if let Some(t) = r.tensors.get_mut(*i) {
            t.stats = Some(s.clone());
        }
    }
    r
}

/// [`merge_stats`] over the page-wide map.
pub fn with_stats(r: &FileReport, id: u32, all: &BTreeMap<(u32, usize), Stats>) -> FileReport {
    merge_stats(r, &for_file(id, all))
}

#[derive(Clone, Debug, PartialEq)]
enum Run {
    Idle,
    /// The worker is loading.
    Starting,
    Reading {
        done: u64,
        total: u64,
        started: f64,
        now: f64,
    },
    Cancelled {
        done: u64,
        total: u64,
    },
    Failed {
        code: String,
        message: String,
        offset: Option<u64>,
        error: bool,
    },
}

/// What the last read in this panel cost.
#[derive(Clone, Debug, PartialEq)]
struct Timing {
    bytes_read: u64,
    ms: f64,
    wasm_memory: u64,
    sha256: bool,
    /// Where the SHA-256 ran (the worker's `hashing`).
    hashing: String,
}

/// A running worker and its handlers (kept alive as long as the worker may call them).
struct Job {
    worker: Worker,
    _onmessage: Closure<dyn FnMut(MessageEvent)>,
    _onerror: Closure<dyn FnMut(web_sys::Event)>,
}

impl Drop for Job {
    fn drop(&mut self) {
        self.worker.terminate();
    }
}


fn failed(code: &str, message: impl Into<String>) -> Run {
    Run::Failed {
        code: code.to_string(),
        message: message.into(),
        offset: None,
        error: true,
    }
}

struct Handles {
    run: UseStateHandle<Run>,
    timing: UseStateHandle<Option<Timing>>,
    on_stats: Callback<(usize, Stats)>,
    index: usize,
    sha256: bool,
}

/// Starts a worker for one tensor. Errors are JS errors from the Worker constructor
/// (e.g. a Content-Security-Policy refusing it).
fn spawn(blob: &web_sys::Blob, format: Format, entry: &TensorEntry, h: Handles) -> Result<Job, JsValue> {
    let request = Object::new();
    set(&request, "file", blob.clone());
    set(&request, "format", format.name());
    let entry = serde_wasm_bindgen::to_value(entry).map_err(|e| JsValue::from_str(&e.to_string()))?;
    set(&request, "entry", entry);
    set(&request, "sha256", h.sha256);
    set(&request, "chunk", 0);

    let worker = Worker::new(WORKER_URL)?;
    let w = worker.clone();
    let run_err = h.run.clone();
    let started = Rc::new(std::cell::Cell::new(now_ms()));
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
        let data = e.data();
        match kind(&data).as_deref() {
            Some("ready") => {
                started.set(now_ms());
                if let Err(e) = w.post_message(&request) {
                    h.run.set(failed("ReadFailed", format!("could not hand the file to the worker: {e:?}")));
                }
            }
            Some("progress") => {
                let (Some(done), Some(total)) = (get_u64(&data, "done"), get_u64(&data, "total")) else {
                    return;
                };
                h.run.set(Run::Reading {
                    done,
                    total,
                    started: started.get(),
                    now: now_ms(),
                });
            }
            Some("done") => {
                w.terminate();
                match serde_wasm_bindgen::from_value::<Stats>(get(&data, "stats")) {
                    Ok(stats) => {
                        h.timing.set(Some(Timing {
                            bytes_read: get_u64(&data, "bytesRead").unwrap_or(0),
                            ms: get(&data, "ms").as_f64().unwrap_or(0.0),
                            wasm_memory: get_u64(&data, "wasmMemory").unwrap_or(0),
                            sha256: h.sha256,
                            hashing: get(&data, "hashing").as_string().unwrap_or_default(),
                        }));
                        h.on_stats.emit((h.index, stats));
                        h.run.set(Run::Idle);
                    }
                    Err(e) => h.run.set(failed("ReadFailed", format!("the worker's answer was not understood: {e}"))),
                }
            }
            Some("error") => {
                w.terminate();
                h.run.set(Run::Failed {
                    code: get(&data, "code").as_string().unwrap_or_default(),
                    message: get(&data, "message").as_string().unwrap_or_default(),
                    offset: get_u64(&data, "offset"),
                    error: get(&data, "error").as_bool().unwrap_or(true),
                });
            }
            _ => {}
        }
    });
    worker.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    let w2 = worker.clone();
    let onerror = Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
        w2.terminate();
        let detail = e
            .dyn_ref::<web_sys::ErrorEvent>()
            .map(|e| e.message())
            .unwrap_or_else(|| "it could not be loaded".to_string());
        run_err.set(failed("ReadFailed", format!("the values worker failed: {detail}")));
    });
    worker.set_onerror(Some(onerror.as_ref().unchecked_ref()));
    Ok(Job {
        worker,
        _onmessage: onmessage,
        _onerror: onerror,
    })
}

#[derive(Properties, PartialEq)]
pub struct ValuesProps {
    pub tensors: Tensors,
    pub index: usize,
    pub format: Format,
    /// The file to read from (`None` if it is no longer available).
    pub blob: Option<web_sys::Blob>,
    /// Stats already read for this tensor.
    pub stats: Option<Stats>,
    pub on_stats: Callback<(usize, Stats)>,
}

/// Values of the selected tensor: read on request in a worker, with progress and cancel.
#[function_component(ValuesPanel)]
pub fn values_panel(p: &ValuesProps) -> Html {
    let run = use_state(|| Run::Idle);
    let timing = use_state(|| None::<Timing>);
    let sha = use_state(|| true);
    let job: Rc<RefCell<Option<Job>>> = use_mut_ref(|| None);
    {
        // Leaving the panel (another tensor, another file, closing) stops the worker.
        let job = job.clone();
        use_effect_with((), move |_| move || drop(job.borrow_mut().take()));
    }
    let Some(t) = p.tensors.0.get(p.index).cloned() else {
        return html! {};
    };
    let start = {
        let (run, timing, sha, job) = (run.clone(), timing.clone(), sha.clone(), job.clone());
        let (blob, format, on_stats, index) = (p.blob.clone(), p.format, p.on_stats.clone(), p.index);
        let t = t.clone();
        Callback::from(move |_: MouseEvent| {
            drop(job.borrow_mut().take());
            let Some(blob) = &blob else {
                run.set(failed("ReadFailed", "the file is no longer available to this page; open it again"));
                return;
            };
            let h = Handles {
                run: run.clone(),
                timing: timing.clone(),
                on_stats: on_stats.clone(),
                index,
                sha256: *sha,
            };
            match spawn(blob, format, &t, h) {
                Ok(j) => {
                    *job.borrow_mut() = Some(j);
                    run.set(Run::Starting);
                }
                Err(e) => run.set(failed("ReadFailed", format!("the values worker could not start: {e:?}"))),
            }
        })
    };
    let cancel = {
        let (run, job) = (run.clone(), job.clone());
        Callback::from(move |_: MouseEvent| {
            drop(job.borrow_mut().take());
            let (done, total) = match &*run {
                Run::Reading { done, total, .. } => (*done, *total),
                _ => (0, 0),
            };
            run.set(Run::Cancelled { done, total });
        })
    };
    let toggle_sha = {
        let sha = sha.clone();
        Callback::from(move |_: Event| sha.set(!*sha))
    };
    let busy = matches!(*run, Run::Starting | Run::Reading { .. });
    let bytes = t.bytes.unwrap_or(0);

    let controls = html! {
        <div class="values-controls">
            <button type="button" class="primary" onclick={start} disabled={busy} data-testid="read-values"
                title="Read this tensor's bytes (only its range) and compute statistics">
                { if p.stats.is_some() { "Read values again" } else { "Read values" } }
            </button>
            <label class="values-sha" title="wasm has no SHA instruction: the hash runs in software in a second worker and takes about 4 times as long as the statistics">
                <input type="checkbox" checked={*sha} onchange={toggle_sha} disabled={busy} data-testid="values-sha" />
                { " SHA-256 of the raw bytes (costs speed)" }
            </label>
            <span class="dim">{ format!("reads {} bytes", fmt::thousands(bytes)) }</span>
        </div>
    };

    let status = match &*run {
        Run::Idle => html! {},
        Run::Starting => html! {
            <div class="values-progress" data-testid="values-progress" role="status">
                <div class="progress indeterminate" aria-label="Starting the values worker"><div></div></div>
                <span class="dim">{ "starting the worker…" }</span>
                <button type="button" onclick={cancel} data-testid="values-cancel">{ "Cancel" }</button>
            </div>
        },
        Run::Reading { done, total, started, now } => {
            let pct = if *total == 0 { 100.0 } else { *done as f64 / *total as f64 * 100.0 };
            let secs = ((now - started) / 1000.0).max(0.0);
            let rate = if secs > 0.0 { *done as f64 / secs } else { 0.0 };
            let eta = if rate > 0.0 { total.saturating_sub(*done) as f64 / rate } else { f64::NAN };
            html! {
                <div class="values-progress" data-testid="values-progress" role="status">
                    <div class="progress" role="progressbar" aria-label="Reading values"
                        aria-valuemin="0" aria-valuemax="100" aria-valuenow={format!("{pct:.0}")}>
                        <div class="bar" style={format!("width: {pct:.2}%")}></div>
                    </div>
                    <span class="mono" data-testid="values-done">{ format!("{} of {} bytes", fmt::thousands(*done), fmt::thousands(*total)) }</span>
                    <span class="dim">{ format!(" · {}", rate_text(rate)) }</span>
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
        Run::Failed { code, message, offset, error } => {
            let sev = if *error { "error" } else { "warning" };
            html! {
                <ul class="values-findings">
                    <li class={classes!("finding", sev)} data-testid="values-finding" data-code={code.clone()}>
                        <span class="sev">{ sev }</span>
                        <code class="code">{ code.clone() }</code>
                        <span class="msg">{ message.clone() }</span>
                        if let Some(o) = offset { <span class="where dim">{ format!("at byte {}", fmt::thousands(*o)) }</span> }
                    </li>
                </ul>
            }
        }
    };

    html! {
        <section class="card panel values" aria-label="Tensor values" data-testid="values-panel">
            <h3>{ "Values" }</h3>
            { controls }
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

/// A rate in bytes per second, for reading.
fn rate_text(bytes_per_s: f64) -> String {
    if bytes_per_s >= 1e9 {
        format!("{:.2} GB/s", bytes_per_s / 1e9)
    } else if bytes_per_s >= 1e6 {
        format!("{:.0} MB/s", bytes_per_s / 1e6)
    } else {
        format!("{:.0} kB/s", bytes_per_s / 1e3)
    }
}

fn timing_line(t: &Timing) -> Html {
    let rate = if t.ms > 0.0 { rate_text(t.bytes_read as f64 / (t.ms / 1000.0)) } else { String::new() };
    html! {
        <p class="dim values-timing" data-testid="values-timing" data-bytes-read={t.bytes_read.to_string()}
            data-ms={format!("{:.1}", t.ms)} data-wasm-memory={t.wasm_memory.to_string()}
            data-hashing={t.hashing.clone()}>
            { format!("read {} bytes in the worker in {:.0} ms ({rate}{}) · worker memory {}",
                fmt::thousands(t.bytes_read), t.ms,
                if t.sha256 { format!(", SHA-256 in the {}", t.hashing) } else { ", no SHA-256".to_string() },
                fmt::human_bytes(t.wasm_memory)) }
        </p>
    }
}

/// A value for reading: up to 6 significant digits, exponent form outside 1e-3..1e7.
pub fn short(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf".into() } else { "−Inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let a = v.abs();
    if (1e-3..1e7).contains(&a) {
        let int_digits = a.log10().floor() as i32 + 1;
        let prec = usize::try_from((6 - int_digits).clamp(0, 9)).unwrap_or(0);
        let s = format!("{v:.prec$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    } else {
        format!("{v:.5e}")
    }
}

/// The exact value (shortest text that reads back to the same f64).
pub fn exact(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "Infinity".into() } else { "-Infinity".into() }
    } else {
        format!("{v:?}")
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
