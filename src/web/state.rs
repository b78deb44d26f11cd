//! The page's state: the files a person dropped, each loading or inspected. Changed only
//! through [`Action`]s (a Yew `Reducible`), so every view renders from one place.

use super::model_view::{Checkpoint, ModelData};
use crate::report::TensorEntry;
use crate::source::Inspection;
use crate::stats::Stats;
use std::collections::BTreeMap;
use std::rc::Rc;
use yew::Reducible;

/// An inspection shared between views; equality is identity (views re-render only when a
/// new inspection replaces the old one).
#[derive(Clone, Debug)]
pub struct Shared(pub Rc<Inspection>);

impl PartialEq for Shared {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

/// A list of tensors for the table (one file's, or later a merged model's), compared by
/// identity.
#[derive(Clone, Debug)]
pub struct Tensors(pub Rc<Vec<TensorEntry>>);

impl PartialEq for Tensors {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

/// The file's bytes, kept so a view can read more on request (a GGUF array's further
/// elements); equality is identity.
#[derive(Clone)]
pub struct SourceHandle(pub Rc<crate::source::blob::BlobSource>);

impl PartialEq for SourceHandle {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for SourceHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SourceHandle")
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    /// The header is being read.
    Reading,
    /// Done: the inspection and its tensors (kept once, shared with the table).
    Done(Shared, Tensors),
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
    /// The file itself, for reads on request (set by [`Action::Source`]).
    pub source: Option<SourceHandle>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct State {
    pub files: Vec<FileEntry>,
    /// The file whose view is shown.
    pub current: Option<u32>,
    /// (file id, tensor index) of the tensor a person selected in a table.
    pub selected: Option<(u32, usize)>,
    /// A safetensors checkpoint (a folder, or shards with their JSON files) merged into one
    /// model; its id shares the file ids' numbering and `current` when its tab is shown.
    pub checkpoint: Option<Checkpoint>,
    /// Stats read on request, by (file id, tensor index); merged into the exported report.
    pub values: BTreeMap<(u32, usize), Stats>,
    next_id: u32,
}

impl State {
    /// The id the next added file will get.
    pub fn next_id(&self) -> u32 {
        self.next_id
    }

    pub fn current_file(&self) -> Option<&FileEntry> {
        let id = self.current?;
        self.files.iter().find(|f| f.id == id)
    }
}

pub enum Action {
    /// Files were dropped or picked: (id, name, size, start time).
    Add(Vec<(u32, String, u64, f64)>),
    /// A file's inspection finished (ignored when the file was closed meanwhile).
    Loaded {
        id: u32,
        inspection: Rc<Inspection>,
        now_ms: f64,
    },
    /// Close a file's view (also cancels a read in flight: its result is dropped).
    Remove(u32),
    /// Show this file's view.
    Show(u32),
    /// A tensor row was chosen (or `None` to clear).
    Select(Option<(u32, usize)>),
    /// A checkpoint's files were given (replaces an earlier checkpoint); its tab is shown.
    AddCheckpoint(Checkpoint),
    /// The checkpoint's model was built (ignored when it was closed meanwhile).
    CheckpointLoaded {
        id: u32,
        data: Rc<ModelData>,
        bytes_read: u64,
        now_ms: f64,
    },
    /// Keep a file's source for later reads on request (GGUF arrays, tensor values).
    Source(u32, SourceHandle),
    /// A tensor's values were read: (file id, tensor index, stats).
    Stats(u32, usize, Stats),
}

impl Reducible for State {
    type Action = Action;

    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        let mut s = (*self).clone();
        match action {
            Action::Add(list) => {
                for (id, name, size, started_ms) in list {
                    s.next_id = s.next_id.max(id.saturating_add(1));
                    s.current = Some(id);
                    s.files.push(FileEntry {
                        id,
                        name,
                        size,
                        status: Status::Reading,
                        started_ms,
                        took_ms: None,
                        source: None,
                    });
                }
            }
            Action::Loaded {
                id,
                inspection,
                now_ms,
            } => {
                let Some(f) = s.files.iter_mut().find(|f| f.id == id) else {
                    return self;
                };
                let tensors = Tensors(Rc::new(inspection.report.tensors.clone()));
                f.status = Status::Done(Shared(inspection), tensors);
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
                    s.current = next.map(|f| f.id);
                }
                if s.selected.is_some_and(|(f, _)| f == id) {
                    s.selected = None;
                }
                s.values.retain(|(f, _), _| *f != id);
            }
            Action::Show(id) => s.current = Some(id),
            Action::Select(sel) => s.selected = sel,
            Action::AddCheckpoint(c) => {
                s.next_id = s.next_id.max(c.id.saturating_add(1));
                s.current = Some(c.id);
                s.checkpoint = Some(c);
            }
            Action::CheckpointLoaded {
                id,
                data,
                bytes_read,
                now_ms,
            } => match s.checkpoint.as_mut() {
                Some(c) if c.id == id => c.loaded(data, bytes_read, now_ms),
                _ => return self,
            },
            Action::Source(id, src) => {
                if let Some(f) = s.files.iter_mut().find(|f| f.id == id) {
                    f.source = Some(src);
                }
            }
            Action::Stats(id, index, stats) => {
                if s.files.iter().any(|f| f.id == id) {
                    s.values.insert((id, index), stats);
                }
            }
        }
        Rc::new(s)
    }
}
