//! The page's state: plain data (no web handles — the files' `Blob`s live in
//! [`super::sources`]), changed only through [`Action`]s (a Yew `Reducible`), so every view
//! renders from one place.

use crate::formats::Inspection;
use crate::model::checkpoint::{CheckpointModel, ModelTensor};
use crate::stats::Stats;
use crate::vocab::TensorEntry;
use std::collections::BTreeMap;
use std::rc::Rc;
use yew::Reducible;

/// Shared data, equal by identity: views re-render only when a new value replaces the old.
#[derive(Debug)]
pub struct Shared<T>(pub Rc<T>);

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(self.0.clone())
    }
}

impl<T> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

/// The tensors of a table (one file's, or a merged model's), by identity. A file's are its
/// inspection's own, not a copy: copying 100,352 entries took ~80 ms of the UI thread
/// between the inspection's arrival and the first row (Chromium profile).
#[derive(Clone)]
pub struct Tensors(Rc<dyn TensorList>);

/// What holds a table's tensors.
pub trait TensorList {
    fn list(&self) -> &[TensorEntry];
}

impl TensorList for Vec<TensorEntry> {
    fn list(&self) -> &[TensorEntry] {
        self
    }
}

impl TensorList for Inspection {
    fn list(&self) -> &[TensorEntry] {
        self.tensors()
    }
}

impl Tensors {
    /// A list of its own (a merged model's).
    pub fn own(list: Vec<TensorEntry>) -> Tensors {
        Tensors(Rc::new(list))
    }

    /// An inspection's tensors, shared with it.
    pub fn of(inspection: Rc<Inspection>) -> Tensors {
        Tensors(inspection)
    }
}

impl std::ops::Deref for Tensors {
    type Target = [TensorEntry];
    fn deref(&self) -> &[TensorEntry] {
        self.0.list()
    }
}

impl PartialEq for Tensors {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::addr_eq(Rc::as_ptr(&self.0), Rc::as_ptr(&other.0))
    }
}

impl std::fmt::Debug for Tensors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tensors({})", self.len())
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    /// The header is being read.
    Reading,
    /// Done: the inspection and its tensors (kept once, shared with the table).
    Done(Shared<Inspection>, Tensors),
}

#[derive(Clone, Debug, PartialEq)]
pub struct FileEntry {
    pub id: u32,
    pub name: String,
    pub size: u64,
    pub status: Status,
    /// Time the drop was seen (performance.now(), ms), for the "read in … ms" line.
    pub started_ms: f64,
    pub took_ms: Option<f64>,
    /// The URL that reopens this file in a link (`#file=…`): the file's own URL, or the
    /// index it came with; `None` for a local file, which cannot be linked.
    pub link: Option<String>,
    /// What reading it over HTTP cost (files opened by URL).
    pub fetch: Option<Fetch>,
    /// While it is `Reading`: its first rows, when the parse worker has sent them ahead of
    /// the inspection (a job of one file, web/worker/opener.rs); the file view shows them
    /// until its whole view is rendered.
    pub early: Option<Rc<EarlyRows>>,
}

/// A file's first rows as the parse worker sends them ahead of its inspection
/// (`Response::Rows`: `report::table::first_rows`, the rows www/loader.js shows).
#[derive(Clone, Debug, PartialEq)]
pub struct EarlyRows {
    /// How many tensors the file has in all.
    pub tensors: u64,
    /// Name, dtype, shape, parameters, bytes — the first `report::table::MAX_FIRST_ROWS`.
    pub rows: Vec<[String; 5]>,
}

/// Requests made, bytes received and time taken for a file read over HTTP.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Fetch {
    pub requests: u64,
    pub bytes: u64,
    pub ms: f64,
}

/// A tab to add: a file given (picked, dropped, or a URL).
#[derive(Clone, Debug, PartialEq)]
pub struct NewFile {
    pub id: u32,
    pub name: String,
    /// 0 for a URL until its first answer tells.
    pub size: u64,
    pub started_ms: f64,
    pub link: Option<String>,
}

pub use crate::source::resolve::HubChoices;

impl FileEntry {
    pub fn inspection(&self) -> Option<&Inspection> {
        match &self.status {
            Status::Done(i, _) => Some(&i.0),
            Status::Reading => None,
        }
    }
}

/// A file given with a checkpoint but not read.
#[derive(Clone, Debug, PartialEq)]
pub struct Ignored {
    pub name: String,
    pub size: u64,
    pub reason: String,
}

/// A built checkpoint model with what its views need, computed once.
#[derive(Debug)]
pub struct CheckpointData {
    /// The merged model, its `tensors` moved to `tensors` and `tensor_files` (see [`CheckpointData::new`]).
    pub model: CheckpointModel,
    /// The shards' inspections (shared with their tabs), for the export and their findings.
    pub files: Vec<Rc<Inspection>>,
    /// The merged tensors for the table, and each one's file.
    pub tensors: Tensors,
    pub tensor_files: Rc<Vec<String>>,
    /// JSON files that could not be read: (name, why).
    pub unread: Vec<(String, String)>,
    /// Files given but not read (README.md, tokenizer.model, …).
    pub ignored: Vec<Ignored>,
}

impl CheckpointData {
    /// The model's tensors move to `tensors` and `tensor_files` (the tables' shape), not
    /// copied: `model.tensors` stays empty, and [`whole_model`](Self::whole_model) puts
    /// them back for an export. (Copying them was a third copy of every entry, on the UI
    /// thread, for a 100,352-tensor checkpoint.)
    pub fn new(mut model: CheckpointModel, files: Vec<Rc<Inspection>>, unread: Vec<(String, String)>, ignored: Vec<Ignored>) -> CheckpointData {
        let (tensors, tensor_files): (Vec<TensorEntry>, Vec<String>) = std::mem::take(&mut model.tensors).into_iter().map(|t| (t.tensor, t.file)).unzip();
        CheckpointData { model, files, tensors: Tensors::own(tensors), tensor_files: Rc::new(tensor_files), unread, ignored }
    }

    /// The merged model with its tensors, as the report has it.
    pub fn whole_model(&self) -> CheckpointModel {
        let mut m = self.model.clone();
        m.tensors = self.tensors.iter().zip(self.tensor_files.iter()).map(|(t, f)| ModelTensor { tensor: t.clone(), file: f.clone() }).collect();
        m
    }
}

/// A checkpoint open on the page: its "Model" tab.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointTab {
    pub id: u32,
    /// The folder's name, or "checkpoint" for loose files.
    pub name: String,
    /// Ids of the shards' own tabs.
    pub shard_ids: Vec<u32>,
    /// JSON companions given: (name, size).
    pub companions: Vec<(String, u64)>,
    /// Bytes of all files given (shards and companions).
    pub given_bytes: u64,
    pub model: Option<Shared<CheckpointData>>,
    pub bytes_read: u64,
    pub started_ms: f64,
    pub took_ms: Option<f64>,
    /// The URLs that reopen it in a link (its index, or its shards); empty when local.
    pub links: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct State {
    pub files: Vec<FileEntry>,
    /// The tab shown (a file's id, or the checkpoint's).
    pub current: Option<u32>,
    /// (file id, tensor index) of the tensor a person selected in a table.
    pub selected: Option<(u32, usize)>,
    /// A safetensors checkpoint merged into one model.
    pub checkpoint: Option<CheckpointTab>,
    /// Stats read on request, by (file id, tensor index); merged into the exported report.
    pub values: BTreeMap<(u32, usize), Stats>,
    /// Files that could not be read at all (the parser panicked or never finished):
    /// (name, message), shown in an error panel until dismissed.
    pub failed: Vec<(String, String)>,
    /// Whether a values read also hashes the raw bytes: off by default, remembered while
    /// the page is open.
    pub values_sha256: bool,
    /// The tensor table's name filter, by tab id (kept in a link).
    pub filters: BTreeMap<u32, String>,
    /// A Hub repository's GGUF models to choose from.
    pub choices: Option<HubChoices>,
    /// Things worth knowing that are not errors (e.g. no config.json beside an index).
    pub notes: Vec<String>,
}

impl State {
    pub fn current_file(&self) -> Option<&FileEntry> {
        let id = self.current?;
        self.files.iter().find(|f| f.id == id)
    }

    /// One file's stats, by tensor index.
    pub fn values_of(&self, id: u32) -> BTreeMap<usize, Stats> {
        self.values.range((id, 0)..=(id, usize::MAX)).map(|((_, i), s)| (*i, s.clone())).collect()
    }

    /// The inspected files, in tab order.
    pub fn inspections(&self) -> impl Iterator<Item = (&FileEntry, &Inspection)> {
        self.files.iter().filter_map(|f| f.inspection().map(|i| (f, i)))
    }
}

pub enum Action {
    /// Files were dropped, picked or given by URL; the last is shown unless `behind` (then
    /// only when nothing is shown yet).
    Add { files: Vec<NewFile>, behind: bool },
    /// What reading a file over HTTP cost so far.
    Fetched(u32, Fetch),
    /// The tensor filter of a tab changed.
    Filter(u32, String),
    /// A Hub repository's GGUF models to choose from (`None`: chosen, or closed).
    Choices(Option<HubChoices>),
    /// A note for the notes panel (`None` clears them).
    Note(Option<String>),
    /// A file's first rows came ahead of its inspection (ignored once it is read, or closed).
    EarlyRows { id: u32, rows: Rc<EarlyRows> },
    /// A file's inspection finished (ignored when the file was closed meanwhile).
    Loaded { id: u32, inspection: Rc<Inspection>, now_ms: f64 },
    /// Close a tab (a read in flight is dropped when it ends).
    Remove(u32),
    /// Show this tab.
    Show(u32),
    /// A tensor row was chosen (or `None` to clear).
    Select(Option<(u32, usize)>),
    /// A checkpoint's files were given (replaces an earlier checkpoint); its tab is shown
    /// unless `behind` (as for [`Action::Add`]).
    AddCheckpoint { tab: CheckpointTab, behind: bool },
    /// The checkpoint's model was built (ignored when it was closed meanwhile).
    CheckpointLoaded { id: u32, data: Rc<CheckpointData>, bytes_read: u64, now_ms: f64 },
    /// A tensor's values were read: (file id, tensor index, stats).
    Stats(u32, usize, Stats),
    /// A file could not be read (its parse panicked or never finished): its tab closes and
    /// the error panel names it.
    Failed { id: Option<u32>, name: String, message: String },
    /// The error panel's entry `i` was dismissed.
    Dismiss(usize),
    /// Hash the raw bytes when reading values (or not).
    SetValuesSha256(bool),
}

impl Reducible for State {
    type Action = Action;

    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        let mut s = (*self).clone();
        match action {
            Action::Add { files, behind } => {
                for NewFile { id, name, size, started_ms, link } in files {
                    if !behind || s.current.is_none() {
                        s.current = Some(id);
                    }
                    s.files.push(FileEntry { id, name, size, status: Status::Reading, started_ms, took_ms: None, link, fetch: None, early: None });
                }
            }
            Action::Loaded { id, inspection, now_ms } => {
                let Some(f) = s.files.iter_mut().find(|f| f.id == id) else {
                    return self;
                };
                let tensors = Tensors::of(inspection.clone());
                f.size = inspection.size;
                f.status = Status::Done(Shared(inspection), tensors);
                f.early = None;
                f.took_ms = Some((now_ms - f.started_ms).max(0.0));
            }
            Action::Remove(id) if s.checkpoint.as_ref().is_some_and(|c| c.id == id) => {
                s.checkpoint = None;
                if s.current == Some(id) {
                    s.current = s.files.last().map(|f| f.id);
                }
            }
            Action::Remove(id) => {
                let pos = s.files.iter().position(|f| f.id == id);
                s.files.retain(|f| f.id != id);
                if s.current == Some(id) {
                    let next = pos.and_then(|p| s.files.get(p).or_else(|| s.files.last()));
                    s.current = next.map(|f| f.id).or(s.checkpoint.as_ref().map(|c| c.id));
                }
                if s.selected.is_some_and(|(f, _)| f == id) {
                    s.selected = None;
                }
                s.values.retain(|(f, _), _| *f != id);
                s.filters.remove(&id);
            }
            Action::EarlyRows { id, rows } => match s.files.iter_mut().find(|f| f.id == id && matches!(f.status, Status::Reading)) {
                Some(f) => f.early = Some(rows),
                None => return self,
            },
            Action::Show(id) => s.current = Some(id),
            Action::Fetched(id, fetch) => match s.files.iter_mut().find(|f| f.id == id) {
                Some(f) => f.fetch = Some(fetch),
                None => return self,
            },
            Action::Filter(id, text) => {
                if text.is_empty() {
                    s.filters.remove(&id);
                } else {
                    s.filters.insert(id, text);
                }
            }
            Action::Choices(c) => s.choices = c,
            Action::Note(Some(n)) => s.notes.push(n),
            Action::Note(None) => s.notes.clear(),
            Action::Select(sel) => s.selected = sel,
            Action::AddCheckpoint { tab: c, behind } => {
                // Behind: shown only in place of its own shards' tabs, of the checkpoint it
                // replaces, or of nothing.
                let own = |id: u32| c.shard_ids.contains(&id) || s.checkpoint.as_ref().is_some_and(|old| old.id == id);
                if !behind || s.current.is_none_or(own) {
                    s.current = Some(c.id);
                }
                s.checkpoint = Some(c);
            }
            Action::CheckpointLoaded { id, data, bytes_read, now_ms } => match s.checkpoint.as_mut() {
                Some(c) if c.id == id => {
                    if !c.links.is_empty() {
                        // Opened by URL: the shards' lengths are known only now.
                        let shards: u64 = data.files.iter().map(|f| f.size).fold(0, u64::saturating_add);
                        let json: u64 = c.companions.iter().map(|(_, n)| *n).fold(0, u64::saturating_add);
                        c.given_bytes = shards.saturating_add(json);
                    }
                    c.model = Some(Shared(data));
                    c.bytes_read = bytes_read;
                    c.took_ms = Some((now_ms - c.started_ms).max(0.0));
                }
                _ => return self,
            },
            Action::Stats(id, index, stats) => {
                if s.files.iter().any(|f| f.id == id) {
                    s.values.insert((id, index), stats);
                }
            }
            Action::Failed { id, name, message } => {
                s.failed.push((name, message));
                if let Some(id) = id {
                    return Rc::new(s).reduce(Action::Remove(id));
                }
            }
            Action::SetValuesSha256(on) => s.values_sha256 = on,
            Action::Dismiss(i) => {
                if i < s.failed.len() {
                    s.failed.remove(i);
                }
            }
        }
        Rc::new(s)
    }
}
