//! The Audit tab's page side: which open files an audit would compare ([`sides`]), the
//! run's state ([`AuditRun`]) and [`use_audit`], which runs it in a Web Worker (the values
//! worker's program, [`super::worker::audit_worker`]) and terminates it on Cancel. The tab
//! itself is [`super::views::audit_view`].

use super::perf::now_ms;
use super::sources::{FileSource, Sources};
use super::state::State;
use super::worker::job::{use_job, Job, JobHandle, Progress, Words};
use super::worker::protocol::{to_js, AuditResponse, Request};
use crate::model::audit::Audit;
use crate::vocab::Format;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use web_sys::Worker;
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

/// The audit as the app holds it: its state, start (with the sides and first-mismatch) and
/// cancel.
pub type AuditHandle = JobHandle<(Sides, bool), AuditRun>;

impl Progress for AuditRun {
    fn idle() -> AuditRun {
        AuditRun::Idle
    }

    fn starting() -> AuditRun {
        AuditRun::Starting
    }

    fn not_started(error: String) -> AuditRun {
        AuditRun::Failed(error)
    }

    fn cancelled(&self) -> AuditRun {
        let (pairs_done, pairs) = match self {
            AuditRun::Running { pairs_done, pairs, .. } => (*pairs_done, *pairs),
            _ => (0, 0),
        };
        AuditRun::Cancelled { pairs_done, pairs }
    }
}

/// The audit runs in a Web Worker; Cancel terminates it at once, a new run starts a fresh
/// one. Held by the app, so the result outlives switching tabs.
#[hook]
pub fn use_audit(sources: Sources) -> AuditHandle {
    use_job(move |(sides, first_mismatch): (Sides, bool), run| spawn(&sources, &sides, first_mismatch, run))
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
    let started = Rc::new(std::cell::Cell::new(now_ms()));
    let run_failed = run.clone();
    let on_failed = move |message: String| run_failed.set(AuditRun::Failed(message));
    let on_answer = move |w: &Worker, r: AuditResponse| match r {
        AuditResponse::Ready => started.set(now_ms()),
        AuditResponse::AuditProgress { pairs_done, pairs, done, total, current } => {
            run.set(AuditRun::Running { pairs_done, pairs, done, total, current, started: started.get(), now: now_ms() })
        }
        AuditResponse::AuditDone { audit, ms, bytes, wasm_memory } => {
            w.terminate();
            run.set(AuditRun::Done { audit: Rc::from(audit), ms, wasm_memory, bytes });
        }
        AuditResponse::AuditFailed { message } => {
            w.terminate();
            run.set(AuditRun::Failed(message));
        }
    };
    Job::start(worker, ready, request, Words { handed: "the files", worker: "audit worker" }, on_answer, on_failed)
}
