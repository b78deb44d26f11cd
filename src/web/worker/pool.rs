//! A warm worker: starting a Web Worker fetches and compiles its wasm, 50–200 ms on the
//! machines we measured, which a person would otherwise wait for after every drop and every
//! **Read values**. One spare worker is kept listening: it is started with the app (which
//! itself starts in idle time after the first view, or on the first sign of a file:
//! `www/loader.js`), and again after
//! each job takes it (an open job: once its worker is done, [`take_for_open`]).
//!
//! A taken worker is used for one job and then terminated, as before: a job that panicked
//! or was cancelled never leaves a worker behind in an unknown state.
//!
//! There are two programs ([`super::entry`]): the parse worker ([`PARSE_URL`], small: what
//! a dropped file waits for) and the values worker ([`VALUES_URL`]: values, hashes,
//! audits), each with its spare. The values spare starts once the parse spare is ready, so
//! that on a slow link the parse worker's bytes come first.

use super::protocol::{from_js, Response, PARSE_URL, VALUES_URL};
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
/// How long after the spare parse worker is ready the first spare values worker starts: its
/// 568 KB gzipped download and compile ran beside the app's take-over and a first drop's
/// read on a cold load (two cores); a person asks for values only once a file is shown.
const VALUES_SPARE_AFTER_MS: u32 = 2_000;

struct Spare {
    worker: Worker,
    /// It said [`Response::Ready`] (no other message comes before a request).
    ready: Rc<Cell<bool>>,
    /// It failed to load (its error event fired with nobody else listening).
    failed: Rc<Cell<bool>>,
    _onmessage: Closure<dyn FnMut(MessageEvent)>,
    _onerror: Closure<dyn FnMut(web_sys::Event)>,
}

/// Which program a spare runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Parse,
    Values,
}

impl Kind {
    fn url(self) -> &'static str {
        match self {
            Kind::Parse => PARSE_URL,
            Kind::Values => VALUES_URL,
        }
    }
}

thread_local! {
    static SPARE: RefCell<Option<Spare>> = const { RefCell::new(None) };
    static VALUES_SPARE: RefCell<Option<Spare>> = const { RefCell::new(None) };
    static REFILL: RefCell<Option<Timeout>> = const { RefCell::new(None) };
    /// The values worker's next spare, when one is due: the first [`VALUES_SPARE_AFTER_MS`]
    /// after the app's spare parse worker is ready, then [`REFILL_AFTER_MS`] after a job
    /// took one ([`take`]).
    static VALUES_REFILL: RefCell<Option<Timeout>> = const { RefCell::new(None) };
}

fn spare_of(kind: Kind) -> &'static std::thread::LocalKey<RefCell<Option<Spare>>> {
    match kind {
        Kind::Parse => &SPARE,
        Kind::Values => &VALUES_SPARE,
    }
}

/// Starts the spare parse worker if none is waiting (and, once it is ready, the spare
/// values worker).
pub fn warm() {
    warm_kind(Kind::Parse);
}

/// Starts the spare values worker if none is waiting.
fn warm_values() {
    warm_kind(Kind::Values);
}

fn warm_kind(kind: Kind) {
    if spare_of(kind).with(|s| s.borrow().is_some()) {
        return;
    }
    // The parse worker www/loader.js started before the app, when it is still unused.
    let (worker, was_ready) = match (kind, loader_take("spare")) {
        (Kind::Parse, Some(spare)) if !get(&spare, "failed").is_truthy() => match get(&spare, "worker").dyn_into::<Worker>() {
            Ok(w) => (w, get(&spare, "ready").is_truthy()),
            Err(_) => return warm_kind(kind),
        },
        _ => match Worker::new(kind.url()) {
            Ok(w) => (w, false),
            Err(_) => return,
        },
    };
    let (ready, failed) = (Rc::new(Cell::new(false)), Rc::new(Cell::new(false)));
    let r = ready.clone();
    let on_ready = move || {
        r.set(true);
        warm_messages();
        match kind {
            Kind::Parse => {
                crate::web::perf::mark("spare worker ready");
                // the first values spare is due later; after it, a parse spare's readiness
                // only makes sure one is there
                if VALUES_REFILL.with(|r| r.borrow().is_none()) {
                    VALUES_REFILL.with(|r| *r.borrow_mut() = Some(Timeout::new(VALUES_SPARE_AFTER_MS, warm_values)));
                } else {
                    warm_values();
                }
            }
            Kind::Values => crate::web::perf::mark("spare values worker ready"),
        }
    };
    let on_ready2 = on_ready.clone();
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
        if matches!(from_js::<Response>(e.data()), Ok(Response::Ready)) {
            on_ready2();
        }
    });
    let f = failed.clone();
    let onerror = Closure::<dyn FnMut(web_sys::Event)>::new(move |_: web_sys::Event| f.set(true));
    worker.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    worker.set_onerror(Some(onerror.as_ref().unchecked_ref()));
    spare_of(kind).with(|s| *s.borrow_mut() = Some(Spare { worker, ready, failed, _onmessage: onmessage, _onerror: onerror }));
    if was_ready {
        on_ready();
    }
}

fn get(v: &JsValue, key: &str) -> JsValue {
    js_sys::Reflect::get(v, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

/// Takes (once) what www/loader.js left under `key` in `window.__tensorpeek`.
fn loader_take(key: &str) -> Option<JsValue> {
    let tp = get(&web_sys::window()?.into(), "__tensorpeek");
    if !tp.is_object() {
        return None;
    }
    let v = get(&tp, key);
    let _ = js_sys::Reflect::set(&tp, &JsValue::from_str(key), &JsValue::NULL);
    v.is_object().then_some(v)
}

/// Tells www/loader.js that the app runs: from now on the app's pool reads what is dropped.
pub fn app_running() {
    if let Some(tp) = web_sys::window().map(|w| get(&w.into(), "__tensorpeek")).filter(JsValue::is_object) {
        let _ = js_sys::Reflect::set(&tp, &JsValue::from_str("running"), &JsValue::TRUE);
    }
}

/// The open job www/loader.js started before the app ran (a pick or drop of loose files),
/// when it read exactly `names` in this order: its worker and the answers it has given so
/// far (`Ready` aside: the loader posted the request itself). Taken once; a job of other
/// names is stopped (the app reads its files itself).
pub fn take_early(names: &[String]) -> Option<(Worker, Vec<JsValue>)> {
    let early = loader_take("early")?;
    let worker = get(&early, "worker").dyn_into::<Worker>().ok()?;
    let given: Vec<String> = get(&early, "names").dyn_into::<js_sys::Array>().map(|a| a.iter().filter_map(|n| n.as_string()).collect()).unwrap_or_default();
    if given != names || get(&early, "failed").is_truthy() {
        worker.terminate();
        return None;
    }
    // The loader's handler is replaced before the answers are taken: none falls between.
    worker.set_onmessage(None);
    worker.set_onerror(None);
    let messages = get(&early, "messages").dyn_into::<js_sys::Array>().map(|a| a.iter().collect()).unwrap_or_default();
    Some((worker, messages))
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

/// A values worker for one job (values, hash, audit), and whether it is already listening
/// (then post the request at once: its [`Response::Ready`] was already heard). The caller
/// sets its own handlers before this task ends, so no message falls between the two.
pub fn take() -> Result<(Worker, bool), String> {
    VALUES_REFILL.with(|r| *r.borrow_mut() = Some(Timeout::new(REFILL_AFTER_MS, warm_values)));
    take_spare(Kind::Values)
}

/// A parse worker for an open job, which reads a header and is done: the pool is refilled
/// when the caller says so ([`refill`]), not while the header is being read.
pub fn take_for_open() -> Result<(Worker, bool), String> {
    REFILL.with(|r| *r.borrow_mut() = None);
    take_spare(Kind::Parse)
}

/// The worker taken with [`take_for_open`] is done: a spare is started a moment later.
pub fn refill() {
    REFILL.with(|r| *r.borrow_mut() = Some(Timeout::new(REFILL_AFTER_DONE_MS, warm)));
}

fn take_spare(kind: Kind) -> Result<(Worker, bool), String> {
    let spare = spare_of(kind).with(|s| s.borrow_mut().take());
    if let Some(s) = spare {
        s.worker.set_onmessage(None);
        s.worker.set_onerror(None);
        if !s.failed.get() {
            return Ok((s.worker, s.ready.get()));
        }
        s.worker.terminate();
    }
    Worker::new(kind.url()).map(|w| (w, false)).map_err(|e| format!("{e:?}"))
}
