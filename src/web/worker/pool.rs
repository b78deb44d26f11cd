//! A warm worker: starting a Web Worker fetches and compiles its wasm, 50–200 ms on the
//! machines we measured, which a person would otherwise wait for after every drop and every
//! **Read values**. One spare worker is kept listening: it is started with the app (which
//! itself starts in idle time after the first view, or on the first sign of a file:
//! `www/loader.js`), and again after
//! each job takes it (an open job: once its worker is done, [`take_for_open`]).
//!
//! A taken worker is used for one job and then terminated, as before: a job that panicked
//! or was cancelled never leaves a worker behind in an unknown state.

use super::hasher::WORKER_URL;
use super::protocol::{from_js, Response};
use gloo::timers::callback::Timeout;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{MessageEvent, Worker};

/// How long after a job took the spare the next one starts: the job's worker compiles and
/// begins reading first.
const REFILL_AFTER_MS: u32 = 400;
/// How long after an open job's worker is done the next spare starts. An open job refills
/// only then ([`take_for_open`]): a spare started beside a header still being read (a
/// 100,352-tensor one reads for ~600 ms) spent ~230 ms of CPU on its own warm-up in the
/// middle of it (Chromium trace), on a machine with two cores for the parse, the page and
/// the browser. By then the page has put the first rows on screen.
const REFILL_AFTER_DONE_MS: u32 = 500;

struct Spare {
    worker: Worker,
    /// It said [`Response::Ready`] (no other message comes before a request).
    ready: Rc<Cell<bool>>,
    /// It failed to load (its error event fired with nobody else listening).
    failed: Rc<Cell<bool>>,
    _onmessage: Closure<dyn FnMut(MessageEvent)>,
    _onerror: Closure<dyn FnMut(web_sys::Event)>,
}

thread_local! {
    static SPARE: RefCell<Option<Spare>> = const { RefCell::new(None) };
    static REFILL: RefCell<Option<Timeout>> = const { RefCell::new(None) };
}

/// Starts the spare worker if none is waiting.
pub fn warm() {
    if SPARE.with(|s| s.borrow().is_some()) {
        return;
    }
    let Ok(worker) = Worker::new(WORKER_URL) else { return };
    let (ready, failed) = (Rc::new(Cell::new(false)), Rc::new(Cell::new(false)));
    let r = ready.clone();
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
        if matches!(from_js::<Response>(e.data()), Ok(Response::Ready)) {
            r.set(true);
            warm_messages();
            crate::web::perf::mark("spare worker ready");
        }
    });
    let f = failed.clone();
    let onerror = Closure::<dyn FnMut(web_sys::Event)>::new(move |_: web_sys::Event| f.set(true));
    worker.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    worker.set_onerror(Some(onerror.as_ref().unchecked_ref()));
    SPARE.with(|s| *s.borrow_mut() = Some(Spare { worker, ready, failed, _onmessage: onmessage, _onerror: onerror }));
}

/// Reads back, once, the messages a file's opening brings. V8 compiles a wasm function on
/// its first call; serde-wasm-bindgen's code for these took ~12 ms of compiling on the UI
/// thread between a file's inspection and its first paint (Chromium trace). Done while the
/// person is still on the way.
fn warm_messages() {
    thread_local!(static DONE: Cell<bool> = const { Cell::new(false) });
    if DONE.with(|d| d.replace(true)) {
        return;
    }
    use super::protocol::{to_js, Companion, Skip};
    let companion = || Companion { name: String::new(), bytes: vec![0] };
    let skip = || Skip { name: String::new(), len: 0, reason: String::new() };
    for msg in [
        Response::Reading { index: 0 },
        Response::Inspected { index: 0, inspection: vec![0] },
        Response::Opened { companions: vec![companion()], skipped: vec![skip()], bytes_read: 0 },
    ] {
        if let Ok(v) = to_js(&msg) {
            let _ = from_js::<Response>(v);
        }
    }
}

/// A worker for one job, and whether it is already listening (then post the request at
/// once: its [`Response::Ready`] was already heard). The caller sets its own handlers
/// before this task ends, so no message falls between the two.
pub fn take() -> Result<(Worker, bool), String> {
    REFILL.with(|r| *r.borrow_mut() = Some(Timeout::new(REFILL_AFTER_MS, warm)));
    take_spare()
}

/// [`take`] for an open job, whose worker reads a header and is done: the pool is refilled
/// when the caller says so ([`refill`]), not while the header is being read.
pub fn take_for_open() -> Result<(Worker, bool), String> {
    REFILL.with(|r| *r.borrow_mut() = None);
    take_spare()
}

/// The worker taken with [`take_for_open`] is done: a spare is started a moment later.
pub fn refill() {
    REFILL.with(|r| *r.borrow_mut() = Some(Timeout::new(REFILL_AFTER_DONE_MS, warm)));
}

fn take_spare() -> Result<(Worker, bool), String> {
    let spare = SPARE.with(|s| s.borrow_mut().take());
    if let Some(s) = spare {
        s.worker.set_onmessage(None);
        s.worker.set_onerror(None);
        if !s.failed.get() {
            return Ok((s.worker, s.ready.get()));
        }
        s.worker.terminate();
    }
    Worker::new(WORKER_URL).map(|w| (w, false)).map_err(|e| format!("{e:?}"))
}
