//! The page's side effects, as hooks: opening files ([`use_open_files`]: tabs at once, the
//! reading in a Web Worker through the set driver the CLI uses too — see
//! [`super::worker::opener`]) and a panel's job in the Web Worker ([`use_worker_job`]: a
//! tensor's values, a file's hash). The views ask in their own terms ([`JobRequest`]);
//! the hooks speak the worker's protocol for them.

use super::perf::now_ms;
use super::worker::opener::{self, JobInput, JobPlan};
use super::worker::job::{use_job, Job, JobHandle, Progress, Words};
use super::worker::protocol::{to_js, Fault, Problem, Request, Response};
use crate::error::Finding;
use super::sources::{FileSource, Sources};
use super::state::{Action, CheckpointTab, NewFile, State};
use crate::model::files::base_name;
use crate::source::blob::BlobSource;
use crate::source::set::{role_of, Role};
use crate::source::ByteSource;
use crate::stats::Stats;
use crate::values::StridedView;
use crate::vocab::TensorEntry;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use web_sys::Worker;
use yew::prelude::*;

/// Files given together: picked, dropped, walked from a folder, or given by URL.
#[derive(Default)]
pub struct OpenRequest {
    /// Each file with its name (a relative path for files from a folder).
    pub files: Vec<(String, web_sys::File)>,
    /// Files behind URLs (read with range requests in the worker).
    pub urls: Vec<RemoteFile>,
    /// JSON companions already read while resolving the URLs (an index, the config.json
    /// beside it): (name, bytes).
    pub companions: Vec<(String, Vec<u8>)>,
    pub from_folder: bool,
    /// The Model tab's name for a checkpoint given by URL (a repository, a folder).
    pub title: Option<String>,
    /// Entries of a dropped folder that were not walked (too deep, too many), as text.
    pub notes: Vec<String>,
    /// The ask ([`ask`]) this request answers when it was formed a while after it (URLs
    /// resolved first): if the person asked for something else meanwhile, its tabs open
    /// behind what is shown. `None`: asked now.
    pub asked: Option<u64>,
}

impl OpenRequest {
    pub fn local(files: Vec<(String, web_sys::File)>, from_folder: bool, notes: Vec<String>) -> OpenRequest {
        OpenRequest { files, from_folder, notes, ..OpenRequest::default() }
    }
}

pub use crate::source::resolve::RemoteFile;

/// Whether files given together form a checkpoint (a Model tab beside the files' tabs): a
/// folder, any `.json` file, or two or more shards named `…-0000k-of-0000n.safetensors`
/// (or `.bin`).
fn is_checkpoint_set(names: &[String], from_folder: bool) -> bool {
    let lower: Vec<String> = names.iter().map(|n| base_name(n).to_ascii_lowercase()).collect();
    let shards = |ext: &str| lower.iter().filter(|n| n.ends_with(ext) && n.contains("-of-")).count();
    from_folder || lower.iter().any(|n| n.ends_with(".json")) || shards(".safetensors") > 1 || shards(".bin") > 1
}

/// A callback that opens files: every model file gets a tab at once ("Reading header…"),
/// each tab is filled as its header is read, and a checkpoint gets its Model tab.
#[hook]
pub fn use_open_files(dispatcher: UseReducerDispatcher<State>, sources: Sources) -> Callback<OpenRequest> {
    let next_id = use_mut_ref(|| 0u32);
    use_callback((dispatcher, sources), move |req: OpenRequest, (d, sources)| {
        let behind = match req.asked {
            Some(n) => ASKS.with(|a| a.get()) != n,
            None => {
                ask();
                false
            }
        };
        open(req, behind, &next_id, d.clone(), sources.clone());
    })
}

thread_local! {
    /// How many times the person asked for files to be opened ([`ask`]).
    static ASKS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The person asks for files to be opened (a pick, a drop, a URL or the address): the ask's
/// number, for a request formed later ([`OpenRequest::asked`]). Whatever was asked last is
/// shown.
pub fn ask() -> u64 {
    ASKS.with(|a| {
        let n = a.get().wrapping_add(1);
        a.set(n);
        n
    })
}

/// Test switches read from the page's address: `?faults=1` stages a panic for a file
/// named `*.panic.*` and a parse that never ends for `*.hang.*`, and `&stall=MS` shortens
/// the watchdog (the e2e robustness tests; nothing else sets them).
fn faults() -> (bool, Option<f64>) {
    let search = web_sys::window().and_then(|w| w.location().search().ok()).unwrap_or_default();
    let params = web_sys::UrlSearchParams::new_with_str(&search).ok();
    let get = |k: &str| params.as_ref().and_then(|p| p.get(k));
    let on = get("faults").as_deref() == Some("1");
    let stall = get("stall").and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite() && *v > 0.0);
    (on, if on { stall } else { None })
}

fn fault_of(name: &str, on: bool) -> Option<Fault> {
    let base = base_name(name);
    match () {
        _ if on && base.contains(".panic.") => Some(Fault::Panic),
        _ if on && base.contains(".hang.") => Some(Fault::Hang),
        _ => None,
    }
}

/// One input of a request: a local file or a URL.
enum Given {
    File(web_sys::File),
    Url { url: String, link: String },
}

fn open(req: OpenRequest, behind: bool, next_id: &Rc<RefCell<u32>>, d: UseReducerDispatcher<State>, sources: Sources) {
    let OpenRequest { files, urls, companions: preloaded, from_folder, title, notes, asked: _ } = req;
    let mut items: Vec<(String, Given)> = files.into_iter().map(|(n, f)| (n, Given::File(f))).collect();
    items.extend(urls.into_iter().map(|u| (u.name, Given::Url { url: u.url, link: u.link })));
    if items.is_empty() {
        return;
    }
    let mut take_id = || {
        let mut n = next_id.borrow_mut();
        let id = *n;
        *n = n.saturating_add(1);
        id
    };
    let started = now_ms();
    let mut names: Vec<String> = items.iter().map(|(n, _)| n.clone()).collect();
    names.extend(preloaded.iter().map(|(n, _)| n.clone()));
    let checkpoint = is_checkpoint_set(&names, from_folder);
    if checkpoint {
        // By name, so shards come in order whatever order the browser lists a folder in.
        items.sort_by(|a, b| a.0.cmp(&b.0));
    }
    let (faults_on, stall) = faults();
    // Loose files each get a tab (a file that is no model file says why there); in a
    // checkpoint only the model files do, the JSON is merged and the rest left unread.
    let mut tabs = Vec::new();
    let mut inputs = Vec::new();
    let mut companions: Vec<(String, u64)> = preloaded.iter().map(|(n, b)| (n.clone(), b.len() as u64)).collect();
    let mut given_bytes: u64 = companions.iter().map(|(_, n)| *n).sum();
    let mut links: Vec<String> = Vec::new();
    for (name, given) in items {
        let (src, len, link) = match &given {
            Given::File(file) => {
                let b = Rc::new(BlobSource::new(file.clone().into()));
                let len = b.len();
                (FileSource::Blob(b), len, None)
            }
            Given::Url { url, link } => (FileSource::Url(Rc::from(url.as_str())), 0, Some(link.clone())),
        };
        if let Some(l) = &link {
            if !links.contains(l) {
                links.push(l.clone());
            }
        }
        let role = role_of(&name);
        let id = (!checkpoint || role == Role::ModelFile).then(&mut take_id);
        if let Some(id) = id {
            tabs.push(NewFile { id, name: name.clone(), size: len, started_ms: started, link: link.clone() });
            sources.insert(id, src);
        }
        match role {
            Role::Other => {}
            Role::Companion => {
                given_bytes = given_bytes.saturating_add(len);
                companions.push((name.clone(), len));
            }
            Role::ModelFile => given_bytes = given_bytes.saturating_add(len),
        }
        let fault = fault_of(&name, faults_on);
        let (file, url) = match given {
            Given::File(f) => (Some(f), None),
            Given::Url { url, .. } => (None, Some(url)),
        };
        inputs.push(JobInput { name, file, url, id, explain: !checkpoint, fault });
    }
    let cid = checkpoint.then(&mut take_id);
    d.dispatch(Action::Add { files: tabs, behind });
    if let Some(id) = cid {
        let folder = title
            .or_else(|| names.iter().find_map(|n| n.split_once('/').map(|(dir, _)| dir.to_string())))
            .unwrap_or_else(|| "checkpoint".to_string());
        let tab = CheckpointTab {
            id,
            name: folder,
            shard_ids: inputs.iter().filter_map(|i| i.id).collect(),
            companions,
            given_bytes,
            model: None,
            bytes_read: 0,
            started_ms: started,
            took_ms: None,
            links,
        };
        d.dispatch(Action::AddCheckpoint { tab, behind });
    }
    let classify_by_content = inputs.iter().all(|i| i.url.is_some());
    opener::start(JobPlan { inputs, companions: preloaded, checkpoint: cid, notes, stall_ms: stall.unwrap_or(opener::STALL_MS), classify_by_content }, d);
}

/// A job of the worker (a tensor's values, a file's hash) as a panel shows it.
#[derive(Clone, Debug, PartialEq)]
pub enum Run {
    Idle,
    /// The worker is loading.
    Starting,
    Reading { done: u64, total: u64, started: f64, now: f64 },
    Cancelled { done: u64, total: u64 },
    Failed(Finding),
}

/// A job for the worker, as a panel asks for it, and what to do with its result.
pub enum JobRequest {
    /// A tensor's values: exactly its byte range of the file (`len`: the file's length as
    /// inspected), and the SHA-256 of the raw bytes when `sha256`; a strided view's
    /// elements are gathered through its strides.
    Values { source: FileSource, len: u64, entry: TensorEntry, sha256: bool, strided: Option<StridedView>, on_done: Callback<ValuesRead> },
    /// The SHA-256 of the whole file (`len`: its length as inspected): the digest in
    /// lowercase hex and the time it took, in ms.
    Hash { source: FileSource, len: u64, on_done: Callback<(String, f64)> },
}

/// A tensor's values as the worker read them, and what the read cost.
pub struct ValuesRead {
    pub stats: Stats,
    /// Bytes the worker read from the file.
    pub bytes_read: u64,
    pub ms: f64,
    /// The worker's WebAssembly memory, in bytes.
    pub wasm_memory: u64,
    /// Where the SHA-256 ran: "off", "nested worker", or why it ran in the worker itself.
    pub hashing: String,
    /// HTTP requests made (a file opened by URL).
    pub requests: u64,
}

/// A file as a request carries it: its `File`, or the URL it was opened from.
fn file_or_url(source: &FileSource) -> (JsValue, Option<String>) {
    match source {
        FileSource::Blob(b) => (b.blob().clone().into(), None),
        FileSource::Url(u) => (JsValue::UNDEFINED, Some(u.to_string())),
    }
}

impl JobRequest {
    /// The request in the worker's protocol, and what to do with its answer (`Done`,
    /// `Hashed`).
    fn wire(self) -> (Request, Callback<Response>) {
        match self {
            JobRequest::Values { source, len, entry, sha256, strided, on_done } => {
                let (file, url) = file_or_url(&source);
                let request = Request::Scan { file, url, len, entry, sha256, chunk: 0, slices: false, strided };
                let on_result = Callback::from(move |r: Response| {
                    if let Response::Done { stats, bytes_read, ms, wasm_memory, hashing, requests } = r {
                        on_done.emit(ValuesRead { stats: *stats, bytes_read, ms, wasm_memory, hashing, requests });
                    }
                });
                (request, on_result)
            }
            JobRequest::Hash { source, len, on_done } => {
                let (file, url) = file_or_url(&source);
                // A URL's answers are checked against its length; a local file has its own.
                let len = if url.is_some() { len } else { 0 };
                let on_result = Callback::from(move |r: Response| {
                    if let Response::Hashed { hex, ms, .. } = r {
                        on_done.emit((hex, ms));
                    }
                });
                (Request::Hash { file, url, len }, on_result)
            }
        }
    }
}

/// The worker as a panel uses it: the job's state, start and cancel.
pub type WorkerJob = JobHandle<JobRequest, Run>;

impl Progress for Run {
    fn idle() -> Run {
        Run::Idle
    }

    fn starting() -> Run {
        Run::Starting
    }

    fn not_started(error: String) -> Run {
        Run::Failed(read_failed(format!("the worker could not start: {error}")))
    }

    fn cancelled(&self) -> Run {
        let (done, total) = match self {
            Run::Reading { done, total, .. } => (*done, *total),
            _ => (0, 0),
        };
        Run::Cancelled { done, total }
    }
}

/// A Web Worker does the job (the UI thread never touches the bytes); Cancel — or leaving
/// the panel — terminates it at once, and the next job starts a fresh one.
#[hook]
pub fn use_worker_job() -> WorkerJob {
    use_job(spawn)
}

/// A job's failure on the page's side, as a finding (`read_failed`).
fn read_failed(message: String) -> Finding {
    Problem::read_failed(message).finding()
}

/// Starts a worker for one job. Errors are JS errors from the Worker constructor (e.g. a
/// Content-Security-Policy refusing it).
fn spawn(j: JobRequest, run: UseStateHandle<Run>) -> Result<Job, String> {
    let (request, on_result) = j.wire();
    let request = to_js(&request)?;
    let (worker, ready) = super::worker::pool::take()?;
    let started = Rc::new(std::cell::Cell::new(now_ms()));
    let run_failed = run.clone();
    let on_failed = move |message: String| run_failed.set(Run::Failed(read_failed(message)));
    let on_answer = move |w: &Worker, r: Response| match r {
        Response::Ready => started.set(now_ms()),
        Response::Progress { done, total } => run.set(Run::Reading { done, total, started: started.get(), now: now_ms() }),
        r @ (Response::Done { .. } | Response::Hashed { .. }) => {
            w.terminate();
            on_result.emit(r);
            run.set(Run::Idle);
        }
        Response::Error(p) => {
            w.terminate();
            run.set(Run::Failed(p.finding()));
        }
        Response::Panicked { message } => {
            w.terminate();
            run.set(Run::Failed(read_failed(format!("the worker stopped: {message}"))));
        }
        Response::Reading { .. } | Response::Fetched { .. } | Response::Inspected { .. } | Response::Rows { .. } | Response::Opened { .. } | Response::Unreadable { .. } => {}
    };
    Job::start(worker, ready, request, Words { handed: "the file", worker: "worker" }, on_answer, on_failed)
}

/// `false` on the renders before the page has painted once since `key` last changed, then
/// `true` (a task after the start of the frame after next: a task queued at once would run
/// before that paint and delay it). What a view shows only when this is `true` costs nothing in the first
/// frame after a file is read: the first rows of the table, the verdict and the summary
/// come first, the rest a frame later.
#[hook]
pub fn use_painted<K: PartialEq + Clone + 'static>(key: K) -> bool {
    // The key the page has painted for, not a flag: a flag set while the key was still the
    // old one (a GGUF header takes ~150 ms to read, several frames) read `true` on the very
    // render that brought the new key, and the first frame after the read built every
    // section (a 180 ms task in a Chromium trace of the 6.4 GB GGUF, before its first row).
    let painted = use_state(|| None::<K>);
    {
        let painted = painted.clone();
        use_effect_with(key.clone(), move |key| {
            let key = key.clone();
            // setting state of a view that is gone meanwhile is a no-op in Yew.
            // Two frames: the first is the one that paints what is shown at once; the task
            // goes after the next one's start, so that the first frame is complete (its
            // animation callbacks included) before the rest is built and laid out — with one,
            // the rest (a 20–30 ms render and a 40 ms layout in a Chromium trace) sometimes
            // came before the first rows were seen on screen
            super::perf::after_frames(2, move || painted.set(Some(key)));
        });
    }
    painted.as_ref() == Some(&key)
}

