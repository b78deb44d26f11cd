//! The Audit tab's page side: which open files an audit would compare ([`sides`]), the
//! run's state ([`AuditRun`]) and [`use_audit`], which runs it in a Web Worker (the values
//! worker's program, [`super::worker::audit_worker`]) and terminates it on Cancel. The tab
//! itself is [`super::views::audit_view`].

use super::perf::now_ms;
use super::sources::{FileSource, Sources};
use super::state::State;
use super::worker::protocol::{from_js, to_js, AuditResponse, Request};
use crate::model::audit::Audit;
use crate::vocab::Format;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{MessageEvent, Worker};
use yew::prelude::*;

/// The Audit tab's id among the tabs (file ids count up from 1).
pub const AUDIT_TAB: u32 = u32::MAX;

/// What the page would audit: the source's and the target's tabs (file ids) and names.
#[derive(Clone, Debug, PartialEq)]
pub struct Sides {
    pub source: Vec<(u32, String)>,
    pub target: Vec<(u32, String)>,
    /// The source checkpoint's config.json (as parsed by the page), as JSON text.
    pub config: Option<String>,
}

/// The sides among the open files: the checkpoint's shards (or every safetensors file)
/// against every GGUF file; `None` unless both are there and read.
pub fn sides(state: &State) -> Option<Sides> {
    // A safetensors tab that was read (a checkpoint's ids also name its other files).
    let name = |id: u32| {
        state.files.iter().find(|f| f.id == id && f.inspection().is_some_and(|i| i.format == Format::Safetensors)).map(|f| (id, f.name.clone()))
    };
    let done = |format: Format| state.inspections().filter(move |(_, i)| i.format == format).map(|(f, _)| (f.id, f.name.clone()));
    let (source, config) = match &state.checkpoint {
        Some(c) => {
            let model = c.model.as_ref()?;
            let config = model.0.model.architecture.as_ref().and_then(|a| serde_json::to_string(&a.raw).ok());
            (c.shard_ids.iter().filter_map(|id| name(*id)).collect(), config)
        }
        None => (done(Format::Safetensors).collect::<Vec<_>>(), None),
    };
    let target: Vec<(u32, String)> = done(Format::Gguf).collect();
    (!source.is_empty() && !target.is_empty()).then_some(Sides { source, target, config })
}

/// An audit on the page.
#[derive(Clone, Debug, PartialEq)]
pub enum AuditRun {
    Idle,
    /// The worker is loading.
    Starting,
    Running { pairs_done: u64, pairs: u64, done: u64, total: u64, current: Option<String>, started: f64, now: f64 },
    Done { audit: Rc<Audit>, ms: f64, wasm_memory: u64, bytes: u64 },
    Cancelled { pairs_done: u64, pairs: u64 },
    Failed(String),
}

/// The audit worker and its handlers (kept alive while the worker may call them).
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

/// The audit as the app holds it: its state, start (with the sides and first-mismatch) and
/// cancel.
pub struct AuditHandle {
    pub run: AuditRun,
    pub start: Callback<(Sides, bool)>,
    pub cancel: Callback<()>,
}

/// The audit runs in a Web Worker; Cancel terminates it at once, a new run starts a fresh
/// one. Held by the app, so the result outlives switching tabs.
#[hook]
pub fn use_audit(sources: Sources) -> AuditHandle {
    let run = use_state(|| AuditRun::Idle);
    let job: Rc<RefCell<Option<Job>>> = use_mut_ref(|| None);
    {
        let job = job.clone();
        use_effect_with((), move |_| move || drop(job.borrow_mut().take()));
    }
    let start = {
        let (run, job) = (run.clone(), job.clone());
        Callback::from(move |(sides, first_mismatch): (Sides, bool)| {
            drop(job.borrow_mut().take());
            match spawn(&sources, &sides, first_mismatch, run.clone()) {
                Ok(j) => {
                    *job.borrow_mut() = Some(j);
                    run.set(AuditRun::Starting);
                }
                Err(e) => run.set(AuditRun::Failed(e)),
            }
        })
    };
    let cancel = {
        let (run, job) = (run.clone(), job.clone());
        Callback::from(move |_: ()| {
            drop(job.borrow_mut().take());
            let (pairs_done, pairs) = match &*run {
                AuditRun::Running { pairs_done, pairs, .. } => (*pairs_done, *pairs),
                _ => (0, 0),
            };
            run.set(AuditRun::Cancelled { pairs_done, pairs });
        })
    };
    AuditHandle { run: (*run).clone(), start, cancel }
}

/// The files of some tabs as a JS array: a local file's `File`, or the URL a file was
/// opened from (the worker reads it with range requests). A tab closed meanwhile is an error.
fn files(sources: &Sources, tabs: &[(u32, String)]) -> Result<(js_sys::Array, Vec<String>), String> {
    let array = js_sys::Array::new();
    let mut names = Vec::new();
    for (id, name) in tabs {
        let src = sources.get(*id).ok_or_else(|| format!("{name} is no longer open; open it again"))?;
        match &src {
            FileSource::Blob(b) => array.push(b.blob()),
            FileSource::Url(u) => array.push(&JsValue::from_str(u)),
        };
        names.push(name.clone());
    }
    Ok((array, names))
}

fn spawn(sources: &Sources, sides: &Sides, first_mismatch: bool, run: UseStateHandle<AuditRun>) -> Result<Job, String> {
    let (source, source_names) = files(sources, &sides.source)?;
    let (target, target_names) = files(sources, &sides.target)?;
    let request = to_js(&Request::Audit {
        source: source.into(),
        source_names,
        target: target.into(),
        target_names,
        config: sides.config.clone(),
        first_mismatch,
    })?;
    let (worker, ready) = super::worker::pool::take().map_err(|e| format!("the audit worker could not start: {e}"))?;
    let request2 = request.clone();
    let w = worker.clone();
    let run_err = run.clone();
    let started = Rc::new(std::cell::Cell::new(now_ms()));
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| match from_js::<AuditResponse>(e.data()) {
        Ok(AuditResponse::Ready) => {
            started.set(now_ms());
            if let Err(e) = w.post_message(&request) {
                run.set(AuditRun::Failed(format!("could not hand the files to the worker: {e:?}")));
            }
        }
        Ok(AuditResponse::AuditProgress { pairs_done, pairs, done, total, current }) => {
            run.set(AuditRun::Running { pairs_done, pairs, done, total, current, started: started.get(), now: now_ms() })
        }
        Ok(AuditResponse::AuditDone { audit, ms, bytes, wasm_memory }) => {
            w.terminate();
            run.set(AuditRun::Done { audit: Rc::from(audit), ms, wasm_memory, bytes });
        }
        Ok(AuditResponse::AuditFailed { message }) => {
            w.terminate();
            run.set(AuditRun::Failed(message));
        }
        Err(e) => {
            w.terminate();
            run.set(AuditRun::Failed(format!("the worker's answer was not understood: {e}")));
        }
    });
    worker.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    let w2 = worker.clone();
    let onerror = Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
        w2.terminate();
        let detail = e.dyn_ref::<web_sys::ErrorEvent>().map(|e| e.message()).unwrap_or_else(|| "it could not be loaded".to_string());
        run_err.set(AuditRun::Failed(format!("the audit worker failed: {detail}")));
    });
    worker.set_onerror(Some(onerror.as_ref().unchecked_ref()));
    if ready {
        // A warm worker (super::worker::pool) already said Ready.
        worker.post_message(&request2).map_err(|e| format!("could not hand the files to the worker: {e:?}"))?;
    }
    Ok(Job { worker, _onmessage: onmessage, _onerror: onerror })
}
