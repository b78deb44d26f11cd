//! Whole checkpoints: several safetensors shards — or PyTorch `pytorch_model*.bin` shards —
//! plus their small JSON companions (`model.safetensors.index.json` /
//! `pytorch_model.bin.index.json`, `config.json`, `generation_config.json`,
//! `tokenizer.json`, `tokenizer_config.json`) merged into one model. A folder holding both
//! families (many repositories ship both) merges the safetensors shards, as loaders prefer
//! them; the `.bin` files are still inspected on their own.
//!
//! Everything here is pure (no I/O): the caller inspects the shards' headers, reads the
//! small JSON files whole (those `files::classify` marks with `Kind::read_whole`) and calls
//! [`build_model`], which works in stages: read the companions, collect the shards, check
//! the index, check the shard-name series, check the tensors against `config.json`.
//! Every finding about one of several files names that file.

use super::architecture::{self, Architecture, InventoryCheck, Present};
use super::companions::{self, IndexSummary};
use super::files::{base_name, companion_kind, Kind, MAX_COMPANION_BYTES};
use crate::error::{clip, keep_bounded, Code, Finding, Severity};
use crate::formats::pickle::Verdict as SafetyVerdict;
use crate::formats::{safetensors, Inspection};
use crate::vocab::{Format, TensorEntry, Totals, TokenizerSummary};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};

/// Bytes of each shard's header length prefix (the safetensors u64).
pub const SHARD_PREFIX_BYTES: u64 = safetensors::LEN_PREFIX;
/// Tensor names quoted in one summarising finding (the rest are counted).
pub const MAX_NAMES_LISTED: usize = 5;
/// Largest `generation_config.json` kept verbatim in the report (real ones are < 1 KB).
pub const MAX_GENERATION_CONFIG_BYTES: usize = 64 * 1024;
/// Largest `config.json` read. It is kept whole as a JSON tree (shown raw for unknown
/// families) and copied once into the architecture, and a tree costs up to ~50× its text
/// (`[0,0,…]`: a 32-byte value per 2 bytes, twice, plus growth), so it is bounded far below
/// the other companions: at 256 KiB a hostile one costs under 30 MB. Real ones are 1–50 KB
/// (an image classifier's 20,000-label map, a few hundred KB, is skipped with a warning).
pub const MAX_CONFIG_BYTES: usize = 256 * 1024;

/// Which kind of shards a checkpoint is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardFamily {
    /// `*.safetensors` shards, `model.safetensors.index.json`.
    Safetensors,
    /// PyTorch `pytorch_model*.bin` shards (zip or legacy), `pytorch_model.bin.index.json`.
    Torch,
}

impl ShardFamily {
    /// The shard file name ending.
    pub fn extension(self) -> &'static str {
        match self {
            ShardFamily::Safetensors => ".safetensors",
            ShardFamily::Torch => ".bin",
        }
    }

    /// The index file transformers writes for this family.
    pub fn index_name(self) -> &'static str {
        match self {
            ShardFamily::Safetensors => "model.safetensors.index.json",
            ShardFamily::Torch => "pytorch_model.bin.index.json",
        }
    }

    /// The report's `model.format`.
    pub fn model_format(self) -> &'static str {
        match self {
            ShardFamily::Safetensors => "safetensors-checkpoint",
            ShardFamily::Torch => "pytorch-checkpoint",
        }
    }

    /// The family of a set of files: safetensors when any file is one (loaders prefer
    /// them), else PyTorch when a PyTorch file is named as a shard or an index of `.bin`
    /// shards is given, else safetensors.
    pub fn of(files: &[&Inspection], companions: &[(String, Vec<u8>)]) -> ShardFamily {
        if files.iter().any(|f| f.format == Format::Safetensors) {
            return ShardFamily::Safetensors;
        }
        let torch_files = files.iter().filter(|f| f.format.is_torch());
        let bin_index = companions.iter().any(|(n, _)| base_name(n).to_ascii_lowercase().ends_with(".bin.index.json"));
        if torch_files.clone().any(|f| is_torch_shard_name(&f.name)) || (bin_index && torch_files.count() > 0) {
            ShardFamily::Torch
        } else {
            ShardFamily::Safetensors
        }
    }
}

/// Whether a PyTorch file is named as a checkpoint shard (`pytorch_model.bin`,
/// `pytorch_model-00001-of-00002.bin`, any `…-0000k-of-0000n.bin`); others in a folder
/// (`optimizer.pt`, `training_args.bin`, `rng_state.pth`) are files of their own.
pub fn is_torch_shard_name(name: &str) -> bool {
    let base = base_name(name).to_ascii_lowercase();
    (base.starts_with("pytorch_model") && base.ends_with(".bin")) || series(&base, ".bin").is_some()
}

/// One tensor of the merged model: the file's entry plus the shard it is in.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelTensor {
    #[serde(flatten)]
    pub tensor: TensorEntry,
    pub file: String,
}

/// One provided shard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ShardInfo {
    pub name: String,
    pub size: u64,
    pub ok: bool,
    /// N, the JSON header's length.
    pub header_len: Option<u64>,
    /// 8 + N: the header with its length prefix.
    pub header_bytes: Option<u64>,
    pub tensors: u64,
    pub params: u64,
    pub tensor_bytes: u64,
    /// size − (8 + N) − tensor bytes: 0 for a well-formed shard.
    pub unaccounted_bytes: Option<i64>,
    /// Tensors the index places in this shard (None without an index).
    pub indexed_tensors: Option<u64>,
}

/// "sum of shard sizes = tensor bytes + headers + 8-byte prefixes".
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Reconciliation {
    pub file_bytes: u64,
    pub tensor_bytes: u64,
    /// Sum of the N's.
    pub header_bytes: u64,
    /// 8 per shard.
    pub prefix_bytes: u64,
    /// PyTorch shards: what is not tensor data (zip records, the pickle), each shard's size
    /// minus its tensor data counted once (tensors sharing a storage).
    pub container_bytes: u64,
    pub headers_and_prefixes: u64,
    /// file_bytes − tensor_bytes − headers_and_prefixes (0 when the files hold nothing else).
    pub unaccounted_bytes: i64,
    pub balanced: bool,
}

/// A companion file that was given.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CompanionInfo {
    pub name: String,
    pub kind: Kind,
    pub size: u64,
    /// False when it was not read (too large, unreadable JSON, a second file of a kind).
    pub used: bool,
}

/// The merged view of a checkpoint (the report's `model` section, docs/report.md).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckpointModel {
    /// `safetensors-checkpoint` or `pytorch-checkpoint`.
    pub format: &'static str,
    /// PyTorch shards: the worst of their safety verdicts (dangerous, error, suspicious,
    /// safe), so that one dangerous shard marks the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safety: Option<SafetyVerdict>,
    /// False when the merged model has errors (each shard's own findings are in its file
    /// entry; see also [`CheckpointModel::ok_with`]).
    pub ok: bool,
    pub errors: Vec<Finding>,
    pub warnings: Vec<Finding>,
    pub shards: Vec<ShardInfo>,
    /// Shards the index (or the `-0000k-of-0000n` naming) expects but that were not given.
    pub missing_shards: Vec<String>,
    pub companions: Vec<CompanionInfo>,
    pub tensors: Vec<ModelTensor>,
    pub totals: Totals,
    pub reconciliation: Reconciliation,
    pub index: Option<IndexSummary>,
    pub architecture: Option<Architecture>,
    /// The tensors checked against the inventory the architecture implies.
    pub inventory: Option<InventoryCheck>,
    pub tokenizer: Option<TokenizerSummary>,
    pub generation_config: Option<Value>,
}

impl CheckpointModel {
    /// True when neither the merged model nor any of the given shards has errors.
    pub fn ok_with(&self, files: &[Inspection]) -> bool {
        self.ok && files.iter().all(Inspection::ok)
    }

    /// All findings, errors first.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.errors.iter().chain(self.warnings.iter())
    }
}

/// Whether a set of inputs forms a checkpoint to merge: several safetensors files, or
/// any recognised companion (index, config, tokenizer files; not [`Kind::Json`]). A single
/// safetensors file on its own keeps `model` null.
pub fn wants_model(safetensors_files: usize, recognised_companions: usize) -> bool {
    safetensors_files > 1 || recognised_companions > 0
}

/// Builds the merged model from the inspected files (safetensors shards; other formats
/// are ignored) and the companions' names and whole bytes. Pure: no I/O.
pub fn build_model(files: &[&Inspection], companions: &[(String, Vec<u8>)]) -> CheckpointModel {
    let family = ShardFamily::of(files, companions);
    let mut findings: Vec<Finding> = Vec::new();
    let mut comp = read_companions(companions, family, &mut findings);
    // the shards an index names (its `shards` summary: one entry per shard, not per tensor)
    let listed: BTreeSet<&str> = comp.index.iter().flat_map(|i| i.shards.iter().map(|s| s.name.as_str())).collect();
    let shard_files: Vec<&Inspection> = files
        .iter()
        .copied()
        .filter(|f| match family {
            ShardFamily::Safetensors => f.format == Format::Safetensors,
            ShardFamily::Torch => f.format.is_torch() && (is_torch_shard_name(&f.name) || listed.contains(base_name(&f.name))),
        })
        .collect();
    let safety = (family == ShardFamily::Torch)
        .then(|| shard_files.iter().filter_map(|f| f.parsed.torch()).map(|t| t.inspection.safety.verdict).max_by_key(|v| crate::formats::safety_rank(*v)))
        .flatten();
    let mut shards = collect_shards(&shard_files, &mut findings);
    let missing = check_index(comp.index.as_mut(), &mut shards, family, &mut findings);
    let missing_shards = check_series(&shards, missing.shards, family, &mut findings);
    let (architecture, inventory) = match &comp.config {
        Some((name, cfg)) => {
            let checked = check_architecture(name, cfg, &shards.tensors, &missing.absent_ok, comp.index.is_some(), &missing_shards, &mut findings);
            if let (Some(vocab), Some(total)) = (checked.0.vocab_size, comp.tokenizer.total_tokens) {
                if total > vocab {
                    findings.push(
                        Finding::error(
                            Code::VocabMismatch,
                            format!("the tokenizer has {total} token ids but config.json's vocab_size is {vocab}: ids from {vocab} on have no embedding row"),
                        )
                        .field("vocab_size")
                        .file(name.as_str()),
                    );
                }
            }
            (Some(checked.0), checked.1)
        }
        None => (None, None),
    };
    let totals = Totals::of(shards.tensors.iter().map(|t| &t.tensor));
    let (errors, warnings): (Vec<Finding>, Vec<Finding>) =
        architecture::cap_findings(findings).into_iter().partition(|f| f.severity == Severity::Error);
    let tokenizer = comp.tokenizer_seen.then(|| std::mem::take(&mut comp.tokenizer));
    CheckpointModel {
        format: family.model_format(),
        safety,
        ok: errors.is_empty(),
        errors,
        warnings,
        shards: shards.infos,
        missing_shards,
        companions: comp.infos,
        tensors: shards.tensors,
        totals,
        reconciliation: shards.recon,
        index: comp.index,
        architecture,
        inventory,
        tokenizer,
        generation_config: comp.generation_config,
    }
}

/// Stage 1: the companions, each parsed once (the first of each kind; a second one is a
/// finding). tokenizer.json is read before tokenizer_config.json, which adds the roles.
struct Companions {
    infos: Vec<CompanionInfo>,
    index: Option<IndexSummary>,
    config: Option<(String, Value)>,
    tokenizer: TokenizerSummary,
    tokenizer_seen: bool,
    generation_config: Option<Value>,
}

fn read_companions(companions: &[(String, Vec<u8>)], family: ShardFamily, findings: &mut Vec<Finding>) -> Companions {
    let mut c = Companions {
        infos: Vec::new(),
        index: None,
        config: None,
        tokenizer: TokenizerSummary::default(),
        tokenizer_seen: false,
        generation_config: None,
    };
    let mut tokenizer_json = false;
    let mut tokenizer_config = false;
    let mut order: Vec<(Kind, &str, &[u8])> = companions
        .iter()
        .map(|(n, b)| (companion_kind(n, b), n.as_str(), b.as_slice()))
        .collect();
    order.sort_by_key(|(k, _, _)| *k != Kind::Tokenizer);
    for (kind, name, bytes) in order {
        let size = bytes.len() as u64;
        let used = if size > MAX_COMPANION_BYTES {
            findings.push(
                Finding::warning(
                    Code::CompanionTooLarge,
                    format!("{name} has {size} bytes, more than the {MAX_COMPANION_BYTES} read for a JSON companion; it was skipped"),
                )
                .file(name),
            );
            false
        } else {
            match kind {
                // the index of the other family's shards (a folder with both) is not this
                // checkpoint's: left unused, without a finding
                Kind::Index if index_family(name).is_some_and(|f| f != family) => false,
                Kind::Index if c.index.is_none() => {
                    c.index = companions::parse_index(name, bytes, findings);
                    c.index.is_some()
                }
                Kind::Config if c.config.is_none() && bytes.len() > MAX_CONFIG_BYTES => {
                    findings.push(
                        Finding::warning(
                            Code::CompanionTooLarge,
                            format!("{name} has {size} bytes, more than the {MAX_CONFIG_BYTES} read for a config.json; it was skipped"),
                        )
                        .file(name),
                    );
                    false
                }
                Kind::Config if c.config.is_none() => match serde_json::from_slice::<Value>(&crate::model::companions::python_json(bytes)) {
                    Ok(v) if v.is_object() => {
                        c.config = Some((name.to_string(), v));
                        true
                    }
                    Ok(_) => {
                        findings.push(Finding::error(Code::InvalidConfig, format!("{name} is not a JSON object")).at(0).file(name));
                        false
                    }
                    Err(e) => {
                        findings.push(Finding::error(Code::InvalidConfig, format!("{name} is not valid JSON: {e}")).file(name));
                        false
                    }
                },
                Kind::Tokenizer if !tokenizer_json => {
                    tokenizer_json = companions::parse_tokenizer(name, bytes, &mut c.tokenizer, findings);
                    tokenizer_json
                }
                Kind::TokenizerConfig if !tokenizer_config => {
                    tokenizer_config = companions::parse_tokenizer_config(name, bytes, tokenizer_json, &mut c.tokenizer, findings);
                    tokenizer_config
                }
                Kind::GenerationConfig if c.generation_config.is_none() => {
                    c.generation_config = if bytes.len() <= MAX_GENERATION_CONFIG_BYTES {
                        serde_json::from_slice::<Value>(bytes).ok()
                    } else {
                        None
                    };
                    c.generation_config.is_some()
                }
                Kind::Json | Kind::Unknown | Kind::Safetensors | Kind::Gguf | Kind::Pickle => false,
                _ => {
                    findings.push(
                        Finding::warning(
                            Code::DuplicateCompanion,
                            format!("{name} is a second {} file; only the first one is used", kind.name()),
                        )
                        .file(name),
                    );
                    false
                }
            }
        };
        c.infos.push(CompanionInfo {
            name: name.to_string(),
            kind,
            size,
            used,
        });
    }
    c.tokenizer_seen = tokenizer_json || tokenizer_config;
    c
}

/// The family an index belongs to, from its name (`model.safetensors.index.json`,
/// `pytorch_model.bin.index.json`); `None` for other names (used by either family).
fn index_family(name: &str) -> Option<ShardFamily> {
    let base = base_name(name).to_ascii_lowercase();
    if base.ends_with(".safetensors.index.json") {
        Some(ShardFamily::Safetensors)
    } else if base.ends_with(".bin.index.json") {
        Some(ShardFamily::Torch)
    } else {
        None
    }
}

/// Stage 2: the shards (sorted by name), their tensors, the byte
/// reconciliation, and tensors stored in more than one shard. Tensor names are looked up
/// borrowed from the inspections, by index: a 163-shard, 100,352-tensor checkpoint spent
/// most of its merge (175 ms natively, 230 ms on the page's UI thread) making, hashing and
/// freeing a name and a shard name per tensor.
struct Shards<'a> {
    infos: Vec<ShardInfo>,
    tensors: Vec<ModelTensor>,
    /// For each of `tensors`, the index of its shard in `infos`.
    shard_of: Vec<u32>,
    /// Tensor name → the first of `tensors` with it.
    located: HashMap<&'a str, u32>,
    /// Tensor name → every one of `tensors` with it, for names stored more than once.
    repeated: HashMap<&'a str, Vec<u32>>,
    recon: Reconciliation,
    /// Bytes of all tensors, each counted whole (what an index's `total_size` sums).
    listed_bytes: u64,
}

impl<'a> Shards<'a> {
    /// The places of `tensor` among `tensors`, in order: one index when the name is stored
    /// once (no allocation: the common case, per tensor of the index), all when repeated.
    fn copies(&self, tensor: &str) -> impl Iterator<Item = u32> + '_ {
        // a repeated name is rare: no lookup in an empty map, which would hash the name
        let repeated = if self.repeated.is_empty() { None } else { self.repeated.get(tensor) };
        let single = if repeated.is_some() { None } else { self.located.get(tensor).copied() };
        single.into_iter().chain(repeated.into_iter().flatten().copied())
    }

    /// The shard of the `i`th of `tensors` (by index into `infos`).
    fn shard_of(&self, i: u32) -> Option<u32> {
        self.shard_of.get(i as usize).copied()
    }

    fn shard_name(&self, shard: u32) -> &str {
        self.infos.get(shard as usize).map_or("", |s| s.name.as_str())
    }
}

fn collect_shards<'a>(files: &[&'a Inspection], findings: &mut Vec<Finding>) -> Shards<'a> {
    let mut shard_files: Vec<&'a Inspection> = files.to_vec();
    shard_files.sort_by(|a, b| a.name.cmp(&b.name));
    let count: usize = shard_files.iter().map(|f| f.tensors().len()).sum();
    let mut out = Shards {
        infos: Vec::new(),
        tensors: Vec::with_capacity(count),
        shard_of: Vec::with_capacity(count),
        located: HashMap::with_capacity(count),
        repeated: HashMap::new(),
        recon: Reconciliation::default(),
        listed_bytes: 0,
    };
    for f in shard_files {
        // The index names shards by base name; a dropped folder may give relative paths.
        let base = base_name(&f.name);
        if out.infos.iter().any(|s| s.name == base) {
            findings.push(
                Finding::warning(Code::DuplicateCompanion, format!("{base} was given twice; only the first is used")).file(f.name.as_str()),
            );
            continue;
        }
        let header_len = f.header_len();
        let header_bytes = header_len.and_then(|n| n.checked_add(SHARD_PREFIX_BYTES));
        // a PyTorch shard: its tensor data counted once, the rest is its container
        let torch_data = f.parsed.torch().map(|t| t.data_bytes);
        let unaccounted = header_bytes.and_then(|h| {
            let used = i128::from(h) + i128::from(f.totals.bytes);
            i64::try_from(i128::from(f.size) - used).ok()
        });
        out.infos.push(ShardInfo {
            name: base.to_string(),
            size: f.size,
            ok: f.ok(),
            header_len,
            header_bytes,
            tensors: f.totals.tensors,
            params: f.totals.params,
            tensor_bytes: f.totals.bytes,
            unaccounted_bytes: unaccounted,
            indexed_tensors: None,
        });
        let r = &mut out.recon;
        r.file_bytes = r.file_bytes.saturating_add(f.size);
        out.listed_bytes = out.listed_bytes.saturating_add(f.totals.bytes);
        match torch_data {
            Some(data) => {
                r.tensor_bytes = r.tensor_bytes.saturating_add(data);
                r.container_bytes = r.container_bytes.saturating_add(f.size.saturating_sub(data));
            }
            None => r.tensor_bytes = r.tensor_bytes.saturating_add(f.totals.bytes),
        }
        if let Some(n) = header_len {
            r.header_bytes = r.header_bytes.saturating_add(n);
            r.prefix_bytes = r.prefix_bytes.saturating_add(SHARD_PREFIX_BYTES);
        }
        let shard = u32::try_from(out.infos.len().saturating_sub(1)).unwrap_or(u32::MAX);
        for t in f.tensors() {
            let i = u32::try_from(out.tensors.len()).unwrap_or(u32::MAX);
            match out.located.entry(t.name.as_str()) {
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(i);
                }
                std::collections::hash_map::Entry::Occupied(o) => {
                    let first = *o.get();
                    out.repeated.entry(t.name.as_str()).or_insert_with(|| vec![first]).push(i);
                }
            }
            out.tensors.push(ModelTensor {
                tensor: t.clone(),
                file: base.to_string(),
            });
            out.shard_of.push(shard);
        }
    }
    let r = &mut out.recon;
    r.headers_and_prefixes = r.header_bytes.saturating_add(r.prefix_bytes);
    r.unaccounted_bytes = i64::try_from(i128::from(r.file_bytes) - i128::from(r.tensor_bytes) - i128::from(r.headers_and_prefixes) - i128::from(r.container_bytes)).unwrap_or(i64::MAX);
    r.balanced = r.unaccounted_bytes == 0;

    // each name stored more than once, reported once at its first place (in tensor order)
    let mut repeated: Vec<(&str, &Vec<u32>)> = out.repeated.iter().map(|(n, all)| (*n, all)).collect();
    repeated.sort_by_key(|(_, all)| all.first().copied());
    for (name, all) in repeated {
        keep_bounded(findings);
        let Some(t) = all.first().and_then(|&i| out.tensors.get(i as usize)) else { continue };
        let where_: Vec<&str> = all.iter().filter_map(|&i| out.shard_of(i)).map(|s| out.shard_name(s)).collect();
        findings.push(
            Finding::error(
                Code::DuplicateTensor,
                format!("{} is stored in more than one shard: {}; loaders keep only one of them", clip(name), clip(&where_.join(", "))),
            )
            .at_opt(t.tensor.header_offset)
            .tensor(name)
            .file(t.file.as_str()),
        );
    }
    out
}

/// What the index says is missing: shards it names that were not given, and the tensors
/// it places there (their absence is not reported again).
#[derive(Default)]
struct Missing {
    shards: Vec<String>,
    absent_ok: BTreeSet<String>,
}

/// Stage 3: the index against the shards.
fn check_index(index: Option<&mut IndexSummary>, shards: &mut Shards<'_>, family: ShardFamily, findings: &mut Vec<Finding>) -> Missing {
    let mut missing = Missing::default();
    let Some(idx) = index else {
        if shards.infos.len() > 1 {
            findings.push(Finding::warning(
                Code::InvalidIndex,
                format!(
                    "several {} shards but no {}: loaders need the index to find each tensor's shard",
                    family.extension(),
                    family.index_name()
                ),
            ));
        }
        return missing;
    };
    let file = idx.file.clone();
    for shard in &mut shards.infos {
        shard.indexed_tensors = Some(idx.shards.iter().find(|s| s.name == shard.name).map_or(0, |s| s.tensors));
    }
    let provided: BTreeSet<&str> = shards.infos.iter().map(|s| s.name.as_str()).collect();
    for s in &mut idx.shards {
        keep_bounded(findings);
        s.provided = provided.contains(s.name.as_str());
        if !s.provided {
            findings.push(
                Finding::error(Code::MissingShard, format!("{} is referenced by the index but was not provided", clip(&s.name)))
                    .field("weight_map")
                    .file(file.as_str()),
            );
            missing.shards.push(s.name.clone());
        }
    }
    // which of the stored tensors the index lists (by name: every copy of a repeated name)
    let mut listed = vec![false; shards.tensors.len()];
    for (tensor, shard) in &idx.weight_map {
        keep_bounded(findings);
        let mut first_holder = None;
        let mut held = false;
        for i in shards.copies(tensor) {
            if let Some(l) = listed.get_mut(i as usize) {
                *l = true;
            }
            let holder = shards.shard_of(i);
            first_holder = first_holder.or(holder);
            held |= holder.is_some_and(|h| shards.shard_name(h) == shard);
        }
        if !provided.contains(shard.as_str()) {
            missing.absent_ok.insert(tensor.clone());
            continue;
        }
        if held {
            continue;
        }
        let (tensor_q, shard_q) = (clip(tensor), clip(shard));
        let f = match first_holder {
            Some(actual) => Finding::error(
                Code::TensorInWrongShard,
                format!("the index places {tensor_q} in {shard_q}, but it is stored in {}; loaders following the index will not find it", clip(shards.shard_name(actual))),
            ),
            None => Finding::error(Code::TensorNotInShard, format!("the index places {tensor_q} in {shard_q}, but that shard has no such tensor")),
        };
        findings.push(f.tensor(tensor.as_str()).field("weight_map").file(file.as_str()));
    }
    let referenced: BTreeSet<&str> = idx.shards.iter().map(|s| s.name.as_str()).collect();
    for shard in &shards.infos {
        if !referenced.contains(shard.name.as_str()) && shard.tensors > 0 {
            findings.push(
                Finding::error(
                    Code::TensorNotInIndex,
                    format!("{} is not referenced by the index; none of its {} tensors is listed in {}", shard.name, shard.tensors, idx.file),
                )
                .file(shard.name.as_str()),
            );
        }
    }
    let shard_referenced: Vec<bool> = shards.infos.iter().map(|s| referenced.contains(s.name.as_str())).collect();
    for ((t, &shard), &is_listed) in shards.tensors.iter().zip(&shards.shard_of).zip(&listed) {
        keep_bounded(findings);
        let name = t.tensor.name.as_str();
        if shard_referenced.get(shard as usize).copied().unwrap_or(false) && !is_listed {
            findings.push(
                Finding::error(
                    Code::TensorNotInIndex,
                    format!("{} is stored in {} but the index does not list it; loaders following the index will not find it", clip(name), clip(&t.file)),
                )
                .at_opt(t.tensor.header_offset)
                .tensor(name)
                .file(t.file.as_str()),
            );
        }
    }
    let all_present = missing.shards.is_empty() && shards.infos.iter().all(|s| s.ok);
    if let (Some(total), true) = (idx.total_size, all_present) {
        idx.total_size_checked = true;
        let stored = shards.listed_bytes;
        if total != stored {
            findings.push(
                Finding::warning(
                    Code::TotalSizeMismatch,
                    format!("{file}: metadata.total_size is {total} but the shards hold {stored} bytes of tensors (off by {})", i128::from(total) - i128::from(stored)),
                )
                .field("metadata.total_size")
                .file(file.as_str()),
            );
        }
    }
    missing
}

/// Stage 4: shards named "<stem>-0000k-of-0000n.safetensors" (`.bin`) tell how many there
/// should be; those absent (and not already named by the index) are findings.
fn check_series(shards: &Shards, mut missing: Vec<String>, family: ShardFamily, findings: &mut Vec<Finding>) -> Vec<String> {
    let provided: BTreeSet<&str> = shards.infos.iter().map(|s| s.name.as_str()).collect();
    let known: std::collections::HashSet<String> = missing.iter().cloned().collect();
    for name in series_missing(&provided, family.extension()) {
        keep_bounded(findings);
        if !known.contains(&name) {
            findings.push(Finding::error(Code::MissingShard, format!("{name} is expected from the shard names but was not provided")).file(name.as_str()));
            missing.push(name);
        }
    }
    missing
}

/// Stage 5: the architecture from config.json and the tensors checked against the
/// inventory it implies.
fn check_architecture(
    config_name: &str,
    cfg: &Value,
    tensors: &[ModelTensor],
    absent_ok: &BTreeSet<String>,
    has_index: bool,
    missing_shards: &[String],
    findings: &mut Vec<Finding>,
) -> (Architecture, Option<InventoryCheck>) {
    let (arch, f) = Architecture::from_config(cfg, config_name);
    findings.extend(f.into_iter().map(|x| x.file(config_name)));
    if tensors.is_empty() {
        return (arch, None);
    }
    let present: Vec<Present<'_>> = tensors
        .iter()
        .map(|t| Present {
            name: t.tensor.name.as_str(),
            shape: t.tensor.shape.as_slice(),
            params: t.tensor.params,
            file: t.file.as_str(),
        })
        .collect();
    let (check, f) = architecture::check_inventory(&arch, &present, absent_ok);
    if !has_index && !missing_shards.is_empty() {
        // Without an index we cannot tell which tensors the missing shards hold: one
        // finding instead of one per absent tensor.
        let (missing, rest): (Vec<Finding>, Vec<Finding>) = f.into_iter().partition(|x| x.code == Code::MissingTensor);
        findings.extend(rest);
        if let Some(first) = missing.first() {
            let names: Vec<&str> = missing.iter().filter_map(|x| x.tensor.as_deref()).take(MAX_NAMES_LISTED).collect();
            findings.push(
                Finding::error(
                    Code::MissingTensor,
                    format!(
                        "{} tensors config.json expects are absent, probably in the missing shard(s) {}: {}{}",
                        missing.len(),
                        missing_shards.join(", "),
                        names.join(", "),
                        if missing.len() > names.len() { ", …" } else { "" }
                    ),
                )
                .tensor(first.tensor.clone().unwrap_or_default())
                .file(config_name),
            );
        }
    } else {
        findings.extend(f);
    }
    (arch, Some(check))
}

/// Parses "<stem>-<k>-of-<n><ext>" (k, n decimal, same width; ext `.safetensors`, `.bin`).
fn series<'a>(name: &'a str, ext: &str) -> Option<(&'a str, usize, u64, u64)> {
    let stem = name.strip_suffix(ext)?;
    let (head, n) = stem.rsplit_once("-of-")?;
    let (prefix, k) = head.rsplit_once('-')?;
    if k.is_empty() || k.len() != n.len() || !k.bytes().all(|b| b.is_ascii_digit()) || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((prefix, k.len(), k.parse().ok()?, n.parse().ok()?))
}

/// Most shards a name series is trusted to announce (real checkpoints: up to a few
/// hundred; DeepSeek-V3 has 163). Also the most names checked over all series together,
/// so that many files each announcing a long series cannot make the work multiply.
pub const MAX_SERIES_SHARDS: u64 = 100_000;

/// Names of a "-0000k-of-0000n" series that are absent from `provided`.
fn series_missing(provided: &BTreeSet<&str>, ext: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen_series = BTreeSet::new();
    let mut budget = MAX_SERIES_SHARDS;
    for name in provided {
        let Some((prefix, width, _, n)) = series(name, ext) else {
            continue;
        };
        if n > budget || !seen_series.insert((prefix, width, n)) {
            continue;
        }
        budget -= n;
        for k in 1..=n {
            let want = format!("{prefix}-{k:0width$}-of-{n:0width$}{ext}");
            if !provided.contains(want.as_str()) {
                out.push(want);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::{Dtype, TensorDtype};
    use crate::formats::{safetensors::Header, Parsed};
    use crate::vocab::SpecialToken;

    #[test]
    fn tokenizer_counts_without_building() {
        let tok = br#"{"version":"1.0","added_tokens":[{"id":5,"content":"<s>","special":true},{"id":6,"content":"x","special":false}],
            "model":{"type":"BPE","vocab":{"a":0,"b":1,"c":2,"d":3,"e":4},"merges":["a b","c d"]}}"#;
        let cfg = br#"{"bos_token":"<s>","eos_token":{"content":"</s>"},"chat_template":"{% for m in messages %}{{ m.content }}{% endfor %}"}"#;
        let m = build_model(&[], &[("tokenizer_config.json".into(), cfg.to_vec()), ("tokenizer.json".into(), tok.to_vec())]);
        let t = m.tokenizer.unwrap();
        assert_eq!(t.model.as_deref(), Some("BPE"));
        assert_eq!((t.tokens, t.merges, t.added_tokens, t.total_tokens), (Some(5), Some(2), Some(2), Some(7)));
        let special = |role: Option<&str>, id: Option<u64>, text: &str| SpecialToken { role: role.map(str::to_string), id, text: Some(text.into()) };
        assert_eq!(t.special_tokens, vec![special(Some("bos"), Some(5), "<s>"), special(Some("eos"), None, "</s>")]);
        assert_eq!(t.role("eos").and_then(|s| s.text.as_deref()), Some("</s>"));
        assert_eq!(t.chat_templates.len(), 1);
        assert!(t.chat_templates[0].template.starts_with("{% for m"));
    }

    #[test]
    fn series_names() {
        assert_eq!(series("model-00001-of-00002.safetensors", ".safetensors"), Some(("model", 5, 1, 2)));
        assert_eq!(series("model.safetensors", ".safetensors"), None);
        let provided: BTreeSet<&str> = ["model-00001-of-00003.safetensors", "model-00003-of-00003.safetensors"].into();
        assert_eq!(series_missing(&provided, ".safetensors"), vec!["model-00002-of-00003.safetensors".to_string()]);
        let provided: BTreeSet<&str> = ["pytorch_model-00002-of-00002.bin"].into();
        assert_eq!(series_missing(&provided, ".bin"), vec!["pytorch_model-00001-of-00002.bin".to_string()]);
        assert!(is_torch_shard_name("dir/pytorch_model.bin"));
        assert!(is_torch_shard_name("model-00001-of-00009.bin"));
        assert!(!is_torch_shard_name("training_args.bin"));
        assert!(!is_torch_shard_name("optimizer.pt"));
    }

    fn shard(name: &str, tensors: &[(&str, Vec<u64>)]) -> Inspection {
        let mut h = Header { header_len: Some(100), data_start: Some(108), metadata: Vec::new(), tensors: Vec::new(), findings: Vec::new() };
        let mut off = 0;
        for (t, shape) in tensors {
            let params: u64 = shape.iter().product();
            h.tensors.push(TensorEntry {
                name: t.to_string(),
                dtype: TensorDtype::Safetensors(Dtype::F32),
                shape: shape.clone(),
                ggml_dims: None,
                params: Some(params),
                start: off,
                end: off + params * 4,
                abs_start: Some(off + 108),
                bytes: Some(params * 4),
                header_offset: None,
            });
            off += params * 4;
        }
        Inspection::new(name, 108 + off, Format::Safetensors, 108, Parsed::Safetensors(h))
    }

    #[test]
    fn repeated_weight_map_key_and_unreferenced_shard() {
        let files = [shard("a.safetensors", &[("x", vec![2])]), shard("b.safetensors", &[("y", vec![3]), ("z", vec![1])])];
        let idx = br#"{"weight_map": {"x": "a.safetensors", "x": "a.safetensors"}, "metadata": {"total_size": 8}}"#;
        let m = build_model(&files.iter().collect::<Vec<_>>(), &[("model.safetensors.index.json".into(), idx.to_vec())]);
        let codes: Vec<Code> = m.errors.iter().map(|f| f.code).collect();
        assert_eq!(codes, vec![Code::InvalidIndex, Code::TensorNotInIndex]);
        assert!(m.errors[1].message.contains("b.safetensors is not referenced by the index; none of its 2 tensors"));
        assert_eq!(m.reconciliation.file_bytes, 108 + 8 + 108 + 16);
        assert_eq!(m.reconciliation.headers_and_prefixes, 216);
        assert!(m.reconciliation.balanced);
        // total_size counts only what is stored: 8 + 16 bytes here, so 8 is a mismatch.
        assert_eq!(m.warnings.iter().map(|f| f.code).collect::<Vec<_>>(), vec![Code::TotalSizeMismatch]);
    }

    #[test]
    fn tokenizer_larger_than_vocab() {
        let cfg = br#"{"model_type": "llama", "vocab_size": 4}"#;
        let tok = br#"{"added_tokens": [{"id": 9, "content": "<x>", "special": true}], "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}"#;
        let m = build_model(&[], &[("config.json".into(), cfg.to_vec()), ("tokenizer.json".into(), tok.to_vec())]);
        assert!(m.errors.iter().any(|f| f.code == Code::VocabMismatch && f.message.contains("10 token ids")), "{:?}", m.errors);
    }

    #[test]
    fn bad_index_is_a_finding() {
        let m = build_model(&[], &[("model.safetensors.index.json".into(), br#"{"weight_map": {"a": 3}, "metadata": {"total_size": "x"}}"#.to_vec())]);
        let codes: Vec<Code> = m.findings().map(|f| f.code).collect();
        assert!(codes.contains(&Code::InvalidIndex), "{codes:?}");
        let m = build_model(&[], &[("model.safetensors.index.json".into(), br#"{"weight_map": ["#.to_vec())]);
        assert_eq!(m.errors.first().map(|f| f.code), Some(Code::InvalidIndex));
    }
}
