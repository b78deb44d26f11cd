//! Opening a set of files given together (picked, dropped, a folder, command-line paths):
//! each is classified, model files are inspected header-only, the small JSON companions
//! are read whole, and what forms one model is merged — a checkpoint
//! ([`crate::model::checkpoint`]) or the parts of a split GGUF
//! ([`crate::model::gguf_split`], grouped here, once, by the parts' name prefix). The page
//! and the CLI both open files through [`open_set`].

use super::{inspect, ByteSource};
use crate::formats::{self, Inspection};
use crate::model::checkpoint::{self, CheckpointModel};
use crate::model::files::{self, base_name, Kind};
use crate::model::gguf_split::{self, SplitModel};
use crate::report::ModelSection;
use crate::vocab::Format;
use std::rc::Rc;

/// One file of a set.
pub struct SetInput<S> {
    /// The name (a relative path for files from a folder).
    pub name: String,
    pub src: S,
    /// Inspect it even when it is neither a model file nor JSON, to say why (a file named
    /// explicitly on the command line); otherwise such a file is skipped.
    pub explain: bool,
}

/// How the set is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetOptions {
    /// Classify a file whose name says nothing (no `.safetensors`, `.gguf`, `.json`) by its
    /// first [`files::CLASSIFY_LEN`] bytes. Off: such a file is never read (the page's
    /// promise for folders: README.md, tokenizer.model, … are listed and left alone).
    pub classify_by_content: bool,
}

/// What a file is, from its name alone (nothing is read to decide this).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// `.safetensors` / `.gguf` / the pickle family (`.bin`, `.pt`, `.pth`, `.ckpt`, `.pkl`,
    /// `.npy`, `.npz`): inspected header-only.
    ModelFile,
    /// `.json`: read whole when small enough.
    Companion,
    /// Anything else.
    Other,
}

pub fn role_of(name: &str) -> Role {
    if formats::format_from_name(name) != Format::Unknown {
        Role::ModelFile
    } else if base_name(name).to_ascii_lowercase().ends_with(".json") {
        Role::Companion
    } else {
        Role::Other
    }
}

/// One input that was neither inspected nor read whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub name: String,
    pub kind: Kind,
    pub len: u64,
    pub reason: String,
}

/// What [`open_set`] found.
#[derive(Clone, Debug, Default)]
pub struct OpenedSet {
    /// The inspected files, in input order, with the index of their input.
    pub files: Vec<(usize, Rc<Inspection>)>,
    /// Companion JSON files read whole: (name, bytes).
    pub companions: Vec<(String, Vec<u8>)>,
    pub skipped: Vec<Skipped>,
    /// The merged checkpoint, when the inputs form one ([`checkpoint::wants_model`]).
    pub checkpoint: Option<CheckpointModel>,
    /// One merged model per split GGUF among the inputs (a lone part too: its missing
    /// parts are named).
    pub splits: Vec<SplitModel>,
    /// Bytes read over all inputs (headers, companions, classification prefixes).
    pub bytes_read: u64,
}

impl OpenedSet {
    pub fn inspections(&self) -> impl Iterator<Item = &Inspection> {
        self.files.iter().map(|(_, i)| i.as_ref())
    }

    /// The GGUF headers among the files (what the memory planner reads).
    pub fn ggufs(&self) -> Vec<&formats::gguf::GgufFile> {
        self.inspections().filter_map(|i| i.parsed.gguf()).collect()
    }

    /// The merged view for the report: the checkpoint, else the first split model.
    pub fn model_section(&self) -> Option<ModelSection> {
        ModelSection::of(self.checkpoint.as_ref(), self.splits.first())
    }
}

/// Reads the set and merges what forms one model: [`read_set`] then [`merge_set`].
/// `on_file(input index, inspection)` is called as each file's inspection finishes.
pub async fn open_set<S: ByteSource>(inputs: &[SetInput<S>], options: SetOptions, on_file: impl FnMut(usize, &Rc<Inspection>)) -> OpenedSet {
    let mut set = read_set(inputs, options, on_file).await;
    merge_set(&mut set);
    set
}

/// The reading half: each input classified, model files inspected header-only, JSON
/// companions read whole, the rest skipped; `checkpoint` and `splits` stay empty. The
/// page's parse worker runs this (and hands the results over); the page merges.
pub async fn read_set<S: ByteSource>(inputs: &[SetInput<S>], options: SetOptions, mut on_file: impl FnMut(usize, &Rc<Inspection>)) -> OpenedSet {
    let mut out = OpenedSet::default();
    for (i, input) in inputs.iter().enumerate() {
        let (name, src, len) = (&input.name, &input.src, input.src.len());
        let skip = |kind: Kind, reason: String| Skipped { name: name.clone(), kind, len, reason };
        let kind = match role_of(name) {
            Role::ModelFile => None,
            Role::Companion => Some(Kind::Json),
            Role::Other if !options.classify_by_content => {
                if input.explain {
                    None
                } else {
                    out.skipped.push(skip(Kind::Unknown, "not a model file or a JSON companion".into()));
                    continue;
                }
            }
            Role::Other => {
                let head = match src.read_at(0, len.min(files::CLASSIFY_LEN)).await {
                    Ok(h) => h,
                    Err(e) => {
                        out.skipped.push(skip(Kind::Unknown, format!("reading it failed: {e}")));
                        continue;
                    }
                };
                out.bytes_read = out.bytes_read.saturating_add(head.len() as u64);
                match files::classify(name, &head, len) {
                    k if k.is_tensor_file() => None,
                    k if k.is_companion() => Some(k),
                    _ if input.explain => None,
                    k => {
                        out.skipped.push(skip(k, "not a model file or a JSON companion".into()));
                        continue;
                    }
                }
            }
        };
        match kind {
            None => {
                let inspection = Rc::new(inspect(src, name).await);
                out.bytes_read = out.bytes_read.saturating_add(inspection.bytes_read);
                on_file(i, &inspection);
                out.files.push((i, inspection));
            }
            Some(kind) if !kind.read_whole(len) => {
                out.skipped.push(skip(kind, format!("larger than the {} bytes read for a JSON file", files::MAX_COMPANION_BYTES)));
            }
            Some(kind) => match src.read_at(0, len).await {
                Ok(bytes) => {
                    out.bytes_read = out.bytes_read.saturating_add(bytes.len() as u64);
                    out.companions.push((name.clone(), bytes));
                }
                Err(e) => out.skipped.push(skip(kind, format!("reading it failed: {e}"))),
            },
        }
    }
    out
}

/// The merging half, pure: a checkpoint when there are several safetensors files or a
/// recognised companion; the split GGUFs grouped by name prefix.
pub fn merge_set(out: &mut OpenedSet) {
    let recognised = out
        .companions
        .iter()
        .filter(|(n, b)| files::companion_kind(n, b) != Kind::Json)
        .count();
    // safetensors shards, or PyTorch files named as shards (`pytorch_model*.bin`)
    let safetensors = out.inspections().filter(|f| f.format == Format::Safetensors).count();
    let torch = out.inspections().filter(|f| f.format.is_torch() && checkpoint::is_torch_shard_name(&f.name)).count();
    let shards = safetensors.max(torch);
    if checkpoint::wants_model(shards, recognised) {
        let files: Vec<&Inspection> = out.inspections().filter(|f| f.format == Format::Safetensors || f.format.is_torch()).collect();
        out.checkpoint = Some(checkpoint::build_model(&files, &out.companions));
    }
    let files: Vec<&Inspection> = out.inspections().collect();
    out.splits = split_models(&files);
}

/// The split GGUF models among `files`: the parts grouped by [`split_group`], each group
/// merged (a lone part too, so that its missing parts are named). The one grouping rule,
/// used by [`open_set`] and by the page over all its open files.
pub fn split_models(files: &[&Inspection]) -> Vec<SplitModel> {
    let mut groups: Vec<(String, Vec<&Inspection>)> = Vec::new();
    for f in files {
        if !f.parsed.gguf().is_some_and(gguf_split::is_split_part) {
            continue;
        }
        let key = split_group(&f.name);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, parts)) => parts.push(f),
            None => groups.push((key, vec![f])),
        }
    }
    groups.iter().map(|(_, parts)| gguf_split::merge(parts)).collect()
}

/// The group of a split part: the prefix of `prefix-0000K-of-0000N.gguf` (with N, so two
/// splittings of one model stay apart), or the file's own name when it does not follow
/// the pattern.
pub fn split_group(name: &str) -> String {
    let base = base_name(name);
    gguf_split::parse_split_name(base).map_or_else(|| base.to_string(), |(p, _, n)| format!("{p}-of-{n:05}"))
}
