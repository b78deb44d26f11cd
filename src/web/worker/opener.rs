//! Opening files off the UI thread: each open job (a drop, a pick, a URL) runs in its own
//! Web Worker ([`super::entry`], `Request::Open` → `source::set::read_set`), which hands
//! each inspection back as it is done; the page merges what forms one model
//! (`source::set::merge_set`).
//!
//! A watchdog guards the job: a worker that says nothing for [`STALL_MS`] (a parse that
//! never ends) or that panics is terminated; the file it was reading gets an error panel
//! (its tab is closed, the other tabs stay) and the files after it are read by a fresh
//! worker.

use crate::web::perf::now_ms;
use super::protocol::{from_js, to_js, Fault, OpenInput, Request, Response};
use crate::web::state::{Action, CheckpointData, EarlyRows, Fetch, Ignored, State};
use crate::formats::Inspection;
use crate::model::files::Kind;
use crate::source::set::{merge_set, OpenedSet, Skipped};
use gloo::timers::callback::Interval;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{MessageEvent, Worker};
use yew::UseReducerDispatcher;

/// A worker silent for this long is taken to be stuck in a parse and stopped. Every read,
/// every file started and every inspection finished is a message, so only a parse that
/// loops without reading stays silent: the slowest honest header (a 30 MB tokenizer over
/// a slow network) still reads at least a chunk every few seconds.
pub const STALL_MS: f64 = 20_000.0;

/// How often the watchdog looks.
const WATCH_EVERY_MS: u32 = 250;

/// One file of a job.
#[derive(Clone)]
pub struct JobInput {
    pub name: String,
    pub file: Option<web_sys::File>,
    pub url: Option<String>,
    /// Its tab, when it has one.
    pub id: Option<u32>,
    pub explain: bool,
    pub fault: Option<Fault>,
}

/// What the page does with the job's results.
pub struct JobPlan {
    pub inputs: Vec<JobInput>,
    /// JSON companions read before the job (while resolving URLs): (name, bytes).
    pub companions: Vec<(String, Vec<u8>)>,
    /// The checkpoint's Model tab, when the files form one.
    pub checkpoint: Option<u32>,
    /// Folder entries that were not walked.
    pub notes: Vec<String>,
    /// The watchdog's limit (a test may shorten it).
    pub stall_ms: f64,
    /// Classify a file whose name says nothing by its first bytes (files given by URL,
    /// whose first 64 KiB the opening request brings anyway; never for local files, so
    /// that a folder's README.md is never read).
    pub classify_by_content: bool,
}

struct Running {
    worker: Worker,
    /// The worker has this batch's request: sent on its `Ready`, or posted by www/loader.js
    /// before the app ran (an early job, whose worker may say `Ready` only after the app
    /// has taken it: its request queued while its program loaded). A `Ready` after that
    /// asks for nothing again.
    asked: bool,
    _onmessage: Closure<dyn FnMut(MessageEvent)>,
    _onerror: Closure<dyn FnMut(web_sys::Event)>,
    _watchdog: Interval,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.worker.terminate();
        // done with (or stopped): now the pool starts the next spare
        super::pool::refill();
    }
}

/// Stops the running worker. Its handlers may be the ones running right now (a message,
/// the watchdog's tick), so they are dropped after this task, not during it.
/// How long a worker that finished its job lives on before it is terminated: terminating
/// one blocked the UI thread for ~16 ms (a Chromium profile, with the first GGUF rows just
/// put in the page and not yet painted); later, nobody is waiting.
const TERMINATE_AFTER_MS: u32 = 1000;

/// When a retired worker is terminated.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Terminate {
    /// It stopped answering or failed: at once.
    Now,
    /// It answered everything: [`TERMINATE_AFTER_MS`] later.
    Later,
}

fn retire(j: &mut Job, when: Terminate) {
    if let Some(r) = j.running.take() {
        r.worker.set_onmessage(None);
        r.worker.set_onerror(None);
        if when == Terminate::Now {
            r.worker.terminate();
        } else {
            let w = r.worker.clone();
            gloo::timers::callback::Timeout::new(TERMINATE_AFTER_MS, move || w.terminate()).forget();
        }
        wasm_bindgen_futures::spawn_local(async move { drop(r) });
    }
}

struct Job {
    plan: JobPlan,
    d: UseReducerDispatcher<State>,
    /// Job indices of the inputs the current worker reads, in order.
    batch: Vec<usize>,
    /// Position in `batch` being read.
    current: Option<usize>,
    last_ms: f64,
    set: OpenedSet,
    running: Option<Running>,
    /// The input (job index) whose first rows are on screen ahead of its inspection.
    early_rows: Option<usize>,
}

/// How long the whole view of a file whose first rows were just put on screen waits for
/// them to be painted, at most: a page that paints no frames (a hidden tab, an iframe out of
/// view) still gets it. A painting page paints within a frame or two.
const EARLY_ROWS_PAINT_MS: u32 = 500;

/// Starts a job.
pub fn start(mut plan: JobPlan, d: UseReducerDispatcher<State>) {
    let all: Vec<usize> = (0..plan.inputs.len()).collect();
    let set = OpenedSet { companions: std::mem::take(&mut plan.companions), ..OpenedSet::default() };
    let job = Rc::new(RefCell::new(Job { plan, d, batch: Vec::new(), current: None, last_ms: now_ms(), set, running: None, early_rows: None }));
    run(&job, all);
}

/// Reads the inputs `batch` (job indices) in a fresh worker.
fn run(job: &Rc<RefCell<Job>>, batch: Vec<usize>) {
    crate::web::perf::stand_down();
    if batch.is_empty() {
        finish(job);
        return;
    }
    // The files www/loader.js began to read before the app ran (their first rows are on
    // screen): that worker and its answers so far, replayed below as if they came now.
    let early = early_names(&job.borrow(), &batch).and_then(|names| super::pool::take_early(&names));
    let (worker, ready, asked, replay) = match early {
        Some((worker, answers)) => (worker, false, true, answers),
        None => match super::pool::take_for_open() {
            Ok((w, ready)) => (w, ready, false, Vec::new()),
            Err(e) => {
                let names: Vec<usize> = batch.clone();
                for i in names {
                    fail(job, i, format!("the page could not start its worker: {e}"));
                }
                finish(job);
                return;
            }
        },
    };
    {
        let mut j = job.borrow_mut();
        j.batch = batch;
        j.current = None;
        j.last_ms = now_ms();
    }
    // The handler holds the job (nothing else does while the worker runs); the cycle
    // job → worker handlers → job is broken when the worker is retired.
    let strong = job.clone();
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| on_message(&strong, e.data()));
    let weak = Rc::downgrade(job);
    let onerror = Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
        let detail = e.dyn_ref::<web_sys::ErrorEvent>().map(|e| e.message()).unwrap_or_else(|| "the worker failed".to_string());
        if let Some(job) = weak.upgrade() {
            stopped(&job, format!("the parser stopped: {detail}"));
        }
    });
    let weak = Rc::downgrade(job);
    let watchdog = Interval::new(WATCH_EVERY_MS, move || {
        let Some(job) = weak.upgrade() else { return };
        let (silent, limit) = {
            let j = job.borrow();
            (now_ms() - j.last_ms, j.plan.stall_ms)
        };
        if silent > limit && job.borrow().running.is_some() {
            stopped(&job, format!("this file could not be read in time (parser stopped after {:.0} s)", limit / 1000.0));
        }
    });
    worker.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    worker.set_onerror(Some(onerror.as_ref().unchecked_ref()));
    job.borrow_mut().running = Some(Running { worker, asked, _onmessage: onmessage, _onerror: onerror, _watchdog: watchdog });
    if ready {
        // A warm worker (super::pool) already said Ready.
        send_open(job);
    }
    for answer in replay {
        if job.borrow().running.is_none() {
            break;
        }
        on_message(job, answer);
    }
}

/// The names of the files `batch` reads, when www/loader.js could have begun reading them
/// as this job does (web/hooks.rs: loose local files, each explained, not classified by
/// content, no fault staged, no Model tab): the whole job, in order.
fn early_names(j: &Job, batch: &[usize]) -> Option<Vec<String>> {
    let whole = batch.len() == j.plan.inputs.len() && batch.iter().enumerate().all(|(k, i)| k == *i);
    let loose = j.plan.inputs.iter().all(|i| i.file.is_some() && i.url.is_none() && i.explain && i.fault.is_none());
    (whole && loose && j.plan.checkpoint.is_none() && !j.plan.classify_by_content && !j.plan.inputs.is_empty())
        .then(|| j.plan.inputs.iter().map(|i| i.name.clone()).collect())
}

fn on_message(job: &Rc<RefCell<Job>>, data: JsValue) {
    job.borrow_mut().last_ms = now_ms();
    let msg = match from_js::<Response>(data) {
        Ok(m) => m,
        Err(e) => return stopped(job, format!("the worker's answer was not understood: {e}")),
    };
    match msg {
        Response::Ready if job.borrow().running.as_ref().is_some_and(|r| r.asked) => {}
        Response::Ready => send_open(job),
        Response::Reading { index } => job.borrow_mut().current = Some(index),
        Response::Fetched { index, requests, bytes, ms } => {
            let j = job.borrow();
            if let Some(id) = j.batch.get(index).and_then(|i| j.plan.inputs.get(*i)).and_then(|x| x.id) {
                j.d.dispatch(Action::Fetched(id, Fetch { requests, bytes, ms }));
            }
        }
        Response::Unreadable { index, message } => {
            let i = job.borrow().batch.get(index).copied();
            if let Some(i) = i {
                fail(job, i, message);
            }
        }
        Response::Progress { .. } => {}
        Response::Rows { index, tensors, rows, .. } => {
            let mut j = job.borrow_mut();
            let Some(i) = j.batch.get(index).copied() else { return };
            if let Some(id) = j.plan.inputs.get(i).and_then(|x| x.id) {
                j.d.dispatch(Action::EarlyRows { id, rows: Rc::new(EarlyRows { tensors, rows }) });
                j.early_rows = Some(i);
            }
        }
        Response::Inspected { index, inspection } => {
            let Some(i) = job.borrow().batch.get(index).copied() else { return };
            match Inspection::from_bytes(&inspection) {
                Ok(insp) => inspected(job, i, Rc::new(insp)),
                Err(e) => fail(job, i, format!("the inspection could not be read back: {e}")),
            }
        }
        Response::Opened { companions, skipped, bytes_read } => {
            {
                let mut j = job.borrow_mut();
                j.set.companions.extend(companions.into_iter().map(|c| (c.name, c.bytes)));
                j.set.skipped.extend(skipped.into_iter().map(|s| Skipped { name: s.name, kind: Kind::Unknown, len: s.len, reason: s.reason }));
                j.set.bytes_read = j.set.bytes_read.saturating_add(bytes_read);
                retire(&mut j, Terminate::Later);
            }
            finish(job);
        }
        Response::Panicked { message } => stopped(job, format!("the parser stopped: {message}")),
        Response::Error(p) => {
            // A URL that could not be opened: said on the file's own tab by its inspection.
            let _ = p;
        }
        Response::Done { .. } | Response::Hashed { .. } => {}
    }
}

fn send_open(job: &Rc<RefCell<Job>>) {
    let j = job.borrow();
    let inputs: Vec<OpenInput> = j
        .batch
        .iter()
        .filter_map(|i| j.plan.inputs.get(*i))
        .map(|i| OpenInput {
            name: i.name.clone(),
            file: i.file.clone().map_or(JsValue::UNDEFINED, JsValue::from),
            url: i.url.clone(),
            explain: i.explain,
            fault: i.fault,
        })
        .collect();
    // One file (no Model tab): its first rows ahead of its inspection, shown while the
    // whole view is rendered (`Response::Rows`, the rows www/loader.js shows before the app).
    let rows = j.plan.inputs.len() == 1 && j.plan.checkpoint.is_none();
    let sent = to_js(&Request::Open { inputs, classify_by_content: j.plan.classify_by_content, rows }).and_then(|v| {
        j.running.as_ref().ok_or("no worker".to_string())?.worker.post_message(&v).map_err(|e| format!("{e:?}"))
    });
    drop(j);
    match sent {
        Ok(()) => {
            if let Some(r) = job.borrow_mut().running.as_mut() {
                r.asked = true;
            }
        }
        Err(e) => stopped(job, format!("the file could not be handed to the worker: {e}")),
    }
}

fn inspected(job: &Rc<RefCell<Job>>, i: usize, insp: Rc<Inspection>) {
    let (id, d, rows_shown) = {
        let mut j = job.borrow_mut();
        let shown = j.early_rows.take_if(|k| *k == i).is_some();
        (j.plan.inputs.get(i).and_then(|x| x.id), j.d.clone(), shown)
    };
    if let Some(id) = id {
        let loaded = Action::Loaded { id, inspection: insp.clone(), now_ms: now_ms() };
        if rows_shown {
            // Its first rows are in the page: they are painted before the whole view's
            // render (tens of ms) holds the thread.
            crate::web::perf::after_a_frame(EARLY_ROWS_PAINT_MS, move || d.dispatch(loaded));
        } else {
            d.dispatch(loaded);
        }
    }
    job.borrow_mut().set.files.push((i, insp));
}

/// Input `i` could not be read: its tab closes and an error panel names it.
fn fail(job: &Rc<RefCell<Job>>, i: usize, message: String) {
    let j = job.borrow();
    let Some(input) = j.plan.inputs.get(i) else { return };
    j.d.dispatch(Action::Failed { id: input.id, name: input.name.clone(), message });
}

/// The worker stopped (panic, hang, crash): the file it was on fails, the rest of its
/// batch goes to a fresh worker.
fn stopped(job: &Rc<RefCell<Job>>, message: String) {
    let (culprit, rest) = {
        let mut j = job.borrow_mut();
        retire(&mut j, Terminate::Now);
        let at = j.current.unwrap_or(0);
        let culprit = j.batch.get(at).copied();
        let rest: Vec<usize> = j.batch.iter().skip(at.saturating_add(1)).copied().collect();
        (culprit, rest)
    };
    if let Some(i) = culprit {
        fail(job, i, message);
    }
    run(job, rest);
}

/// Every input was read (or failed): merge what forms one model.
fn finish(job: &Rc<RefCell<Job>>) {
    let mut j = job.borrow_mut();
    retire(&mut j, Terminate::Later);
    if j.plan.checkpoint.is_none() {
        return;
    }
    drop(j);
    // The merge and the Model tab's first render, each in a task of its own and not in the
    // last file's message: for a 163-shard, 100,352-tensor checkpoint they took ~120 ms and
    // ~45 ms of the UI thread here, one task of 170-190 ms together (over 200 ms with the
    // other core busy).
    let job = job.clone();
    wasm_bindgen_futures::spawn_local(async move {
        gloo::timers::future::TimeoutFuture::new(0).await;
        let Some((d, loaded)) = merge(&job) else { return };
        gloo::timers::future::TimeoutFuture::new(0).await;
        d.dispatch(loaded);
    });
}

/// The job's files merged into the checkpoint's model: the action that shows it (or `None`
/// when there was nothing to merge, and its tab is removed).
fn merge(job: &Rc<RefCell<Job>>) -> Option<(UseReducerDispatcher<State>, Action)> {
    let mut j = job.borrow_mut();
    let cid = j.plan.checkpoint?;
    merge_set(&mut j.set);
    let d = j.d.clone();
    let Some(model) = j.set.checkpoint.take() else {
        // Nothing to merge (e.g. one file and a README): the files' tabs are enough.
        d.dispatch(Action::Remove(cid));
        return None;
    };
    // the files the model merged (safetensors or PyTorch shards), by the names it lists
    let shards = j
        .set
        .files
        .iter()
        .filter(|(_, f)| model.shards.iter().any(|s| s.name == crate::model::files::base_name(&f.name)))
        .map(|(_, f)| f.clone())
        .collect();
    let mut ignored: Vec<Ignored> = j.plan.notes.iter().map(|n| Ignored { name: n.clone(), size: 0, reason: "not read".into() }).collect();
    let mut unread = Vec::new();
    for s in std::mem::take(&mut j.set.skipped) {
        if s.reason.starts_with("reading it failed") {
            unread.push((s.name, s.reason));
        } else {
            ignored.push(Ignored { name: s.name, size: s.len, reason: s.reason });
        }
    }
    let data = CheckpointData::new(model, shards, unread, ignored);
    Some((d, Action::CheckpointLoaded { id: cid, data: Rc::new(data), bytes_read: j.set.bytes_read, now_ms: now_ms() }))
}
