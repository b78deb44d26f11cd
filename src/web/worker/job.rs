//! One job in a worker of the pool, as the page runs it (a panel's values or hash, an
//! audit): the request handed over once the worker listens, its answers read back typed,
//! the worker terminated when the [`Job`] is dropped (the job is over, cancelled, or its
//! owner went); [`use_job`] holds one for a component, with start and cancel. The open
//! jobs, with their watchdog and fresh workers, are [`super::opener`].

use super::protocol::{from_js, AuditResponse, Response};
use serde::Deserialize;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{MessageEvent, Worker};
use yew::prelude::*;

/// A worker's answers, typed: the first says it listens.
pub trait Answer: for<'de> Deserialize<'de> + 'static {
    fn is_ready(&self) -> bool;
}

impl Answer for Response {
    fn is_ready(&self) -> bool {
        matches!(self, Response::Ready)
    }
}

impl Answer for AuditResponse {
    fn is_ready(&self) -> bool {
        matches!(self, AuditResponse::Ready)
    }
}

/// How the page names a job's parts when it fails: what the request hands over ("the
/// file") and the worker ("audit worker").
pub struct Words {
    pub handed: &'static str,
    pub worker: &'static str,
}

/// A running worker and its handlers (kept alive as long as the worker may call them).
pub struct Job {
    worker: Worker,
    _onmessage: Closure<dyn FnMut(MessageEvent)>,
    _onerror: Closure<dyn FnMut(web_sys::Event)>,
}

impl Drop for Job {
    fn drop(&mut self) {
        self.worker.terminate();
    }
}

impl Job {
    /// Runs `request` in `worker`, taken from the pool ([`super::pool::take`]; `ready`: it
    /// already said it listens, so the request goes at once). Every answer, `Ready` first,
    /// goes to `on_answer` with the worker (to terminate it when the job is done); on
    /// `Ready` the request is handed over. A failure the job cannot answer for — the request
    /// not handed over, an answer not understood, the worker failing to load — goes to
    /// `on_failed` as a sentence, and the worker is terminated (but where the request could
    /// not be handed over). `Err` when the request cannot be handed to a ready worker.
    pub fn start<M: Answer>(
        worker: Worker,
        ready: bool,
        request: JsValue,
        words: Words,
        mut on_answer: impl FnMut(&Worker, M) + 'static,
        on_failed: impl Fn(String) + Clone + 'static,
    ) -> Result<Job, String> {
        let Words { handed, worker: who } = words;
        let request2 = request.clone();
        let w = worker.clone();
        let failed = on_failed.clone();
        let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| match from_js::<M>(e.data()) {
            Ok(m) => {
                let ready = m.is_ready();
                on_answer(&w, m);
                if ready {
                    if let Err(e) = w.post_message(&request) {
                        failed(format!("could not hand {handed} to the worker: {e:?}"));
                    }
                }
            }
            Err(e) => {
                w.terminate();
                failed(format!("the worker's answer was not understood: {e}"));
            }
        });
        worker.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
        let w2 = worker.clone();
        let onerror = Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
            w2.terminate();
            let detail = e.dyn_ref::<web_sys::ErrorEvent>().map(|e| e.message()).unwrap_or_else(|| "it could not be loaded".to_string());
            on_failed(format!("the {who} failed: {detail}"));
        });
        worker.set_onerror(Some(onerror.as_ref().unchecked_ref()));
        if ready {
            // A warm worker (super::pool) already said Ready.
            worker.post_message(&request2).map_err(|e| format!("could not hand {handed} to the worker: {e:?}"))?;
        }
        Ok(Job { worker, _onmessage: onmessage, _onerror: onerror })
    }
}

/// A job's state as its owner shows it (a panel's `hooks::Run`, the audit's `AuditRun`).
pub trait Progress: Clone + 'static {
    fn idle() -> Self;
    /// The worker is loading.
    fn starting() -> Self;
    /// The job could not start: `error` says why.
    fn not_started(error: String) -> Self;
    /// Cancelled where it was.
    fn cancelled(&self) -> Self;
}

/// A job as its owner holds it: its state, start (with the job's request) and cancel.
pub struct JobHandle<Q, R> {
    pub run: R,
    pub start: Callback<Q>,
    pub cancel: Callback<()>,
}

/// One job at a time for a component, in a worker: a start drops the job before it (its
/// worker terminated) and starts `spawn`'s; Cancel — or the component going — terminates
/// it at once.
#[hook]
pub fn use_job<Q, R, F>(spawn: F) -> JobHandle<Q, R>
where
    Q: 'static,
    R: Progress,
    F: Fn(Q, UseStateHandle<R>) -> Result<Job, String> + 'static,
{
    let run = use_state(R::idle);
    let job: Rc<RefCell<Option<Job>>> = use_mut_ref(|| None);
    {
        let job = job.clone();
        use_effect_with((), move |_| move || drop(job.borrow_mut().take()));
    }
    let start = {
        let (run, job) = (run.clone(), job.clone());
        Callback::from(move |q: Q| {
            drop(job.borrow_mut().take());
            match spawn(q, run.clone()) {
                Ok(j) => {
                    *job.borrow_mut() = Some(j);
                    run.set(R::starting());
                }
                Err(e) => run.set(R::not_started(e)),
            }
        })
    };
    let cancel = {
        let (run, job) = (run.clone(), job.clone());
        Callback::from(move |_: ()| {
            drop(job.borrow_mut().take());
            run.set(run.cancelled());
        })
    };
    JobHandle { run: (*run).clone(), start, cancel }
}
