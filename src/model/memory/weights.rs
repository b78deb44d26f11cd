//! The weight buffers (`load_tensors`, `src/llama-model.cpp`): which device each layer is on,
//! which buffer type each tensor lands in, and each buffer's size as ggml allocates it.

use super::params::pad;
use super::{device_label, Backend, Buffer, Kind, PlacedTensor, Repack, Settings};
use crate::dtype::ggml::GgmlType;
use crate::model::description::Description;

/// ggml's CPU tensor alignment (`TENSOR_ALIGNMENT`, `ggml/src/ggml-impl.h`).
pub const CPU_ALIGNMENT: u64 = 32;
/// CUDA pads a quantized tensor's last row to a multiple of this many elements
/// (`MATRIX_ROW_PADDING`, `ggml/src/ggml-cuda/common.cuh`).
const CUDA_ROW_PADDING: u64 = 512;

/// The device of each block and, last, of the output layer (`None` = the host):
/// `get_layer_buft_list` with `-ngl` and the split by free memory (or `-ts`).
pub fn layer_devices(desc: &Description, s: &Settings) -> Vec<Option<usize>> {
    let n_layer_all = desc.n_layer_all();
    let ngl = s.n_gpu_layers.unwrap_or(n_layer_all + 1);
    let i_gpu_start = (n_layer_all + 1).saturating_sub(ngl);
    let act = if s.devices.is_empty() { 0 } else { ngl.min(n_layer_all + 1) };
    // The split points: cumulative shares of the devices' free memory, in f32 as llama.cpp.
    let mut splits: Vec<f32> = Vec::with_capacity(s.devices.len());
    let mut sum = 0f32;
    for (i, d) in s.devices.iter().enumerate() {
        let share = s.tensor_split.get(i).copied().filter(|_| s.tensor_split.iter().any(|x| *x != 0.0));
        sum += share.unwrap_or(d.memory as f32);
        splits.push(sum);
    }
    for x in &mut splits {
        *x /= sum;
    }
    (0..=n_layer_all)
        .map(|il| {
            if il < i_gpu_start || il - i_gpu_start >= act {
                return None;
            }
            let at = (il - i_gpu_start) as f32 / act as f32;
            // std::upper_bound: the first split point greater than `at`.
            let d = splits.iter().position(|x| *x > at).unwrap_or(splits.len());
            Some(d.min(s.devices.len().saturating_sub(1)))
        })
        .collect()
}

/// Where a tensor belongs (`llm_tensor_info`'s layer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Slot {
    Input,
    Output,
    Block(u64),
}

fn slot(name: &str, n_layer_all: u64) -> Slot {
    // T5's encoder and decoder blocks are layer N too (`LLM_TENSOR_ENC_*` / `LLM_TENSOR_DEC_*`
    // are `LLM_TENSOR_LAYER_REPEATING`, src/llama-arch.cpp); `enc.output_norm` and
    // `dec.output_norm` are output tensors.
    let name = name.strip_prefix("enc.").or_else(|| name.strip_prefix("dec.")).filter(|r| r.starts_with("blk.")).unwrap_or(name);
    if let Some(rest) = name.strip_prefix("blk.") {
        // The block number, read by hand: this runs for every tensor at every projection
        // (101,013 of them in the largest bench model), and `str::parse` cost twice as much.
        let mut n: Option<u64> = None;
        for b in rest.bytes().take_while(u8::is_ascii_digit) {
            n = n.unwrap_or(0).checked_mul(10).and_then(|v| v.checked_add(u64::from(b - b'0')));
            if n.is_none() {
                break;
            }
        }
        if let Some(n) = n.filter(|n| *n < n_layer_all) {
            return Slot::Block(n);
        }
    }
    let base = name.strip_suffix(".weight").or_else(|| name.strip_suffix(".bias")).unwrap_or(name);
    match base {
        "token_embd" | "pos_embd" | "token_types" | "per_layer_token_embd" => Slot::Input,
        // Repeating-layer tensors without a block number are layer 0's (`create_tensor` with
        // `tn(…, 0)`): gemma3n's per-layer projection and its norm (src/llama-arch.cpp:922-923).
        "rope_freqs" | "rope_factors_long" | "rope_factors_short" | "per_layer_model_proj" | "per_layer_proj_norm" => Slot::Block(0),
        _ => Slot::Output,
    }
}

/// Whether the CPU backend repacks this weight when it repacks at all and the tensor is not an
/// input one (`ggml_repack_get_optimal_repack_type` on AVX2, and MUL_MAT on 2-D / MUL_MAT_ID
/// on 3-D weights).
fn repackable(t: &PlacedTensor) -> bool {
    let Some(ty) = GgmlType::from_id(t.ggml_type) else { return false };
    let dims = t.ne.iter().rposition(|d| *d != 1).map_or(1, |i| i + 1);
    let matmul = dims == 2 || (dims == 3 && t.name.contains("_exps"));
    let ne1 = t.ne.get(1).copied().unwrap_or(1);
    matmul && matches!(ty.name, "Q4_0" | "Q4_K" | "IQ4_NL" | "MXFP4") && ne1 % 8 == 0
}

/// What the weight pass needs of one tensor, worked out once from its name, type and dims.
#[derive(Clone, Copy, Debug)]
struct Info {
    slot: Slot,
    /// `FFN_EXPS_REGEX` finds its name (`--n-cpu-moe` keeps it on the CPU).
    expert: bool,
    /// The CPU backend repacks it when it repacks at all ([`repackable`]), input tensors aside.
    repackable: bool,
    /// A tensor handled on its own: `rope_freqs` (made per buffer type) or `token_embd.weight`
    /// (maybe tied to the output).
    special: bool,
    /// Not allocated ([`is_skipped`]).
    skipped: bool,
    /// Its allocation, padded, per [`SizeOn`].
    size: [u64; 3],
    /// Its [`Group`]'s index, [`NO_GROUP`] for a special or skipped tensor.
    group: u32,
}

/// [`Info::group`] of a tensor in no group.
const NO_GROUP: u32 = u32::MAX;

/// Most `-ot` patterns whose matches an [`Index`] keeps (the fitting tries one per layer and
/// fraction, a person types a few): past it the kept matches are dropped and found again.
pub const MAX_CACHED_PATTERNS: usize = 1024;

/// Which of a tensor's padded sizes a buffer type takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SizeOn {
    Cpu = 0,
    Cuda = 1,
    Rpc = 2,
}

/// Tensors alike in everything the placement looks at (layer, expert, repackable, file):
/// their sizes summed and their span in the file.
#[derive(Clone, Debug)]
struct Group {
    slot: Slot,
    expert: bool,
    repackable: bool,
    file: usize,
    size: [u64; 3],
    lo: u64,
    hi: u64,
}

/// The weight pass's view of a model's tensors, made once ([`super::ModelTensors`]): per tensor
/// its [`Info`], and the [`Group`]s a projection without `-ot` adds up instead of the tensors
/// (a 101,013-tensor model has 520 groups).
#[derive(Clone, Debug, Default)]
pub struct Index {
    info: Vec<Info>,
    groups: Vec<Group>,
    specials: Vec<usize>,
    has_output: bool,
    /// Per block number as written in a name (`blk.N.` anywhere in it, N's digits as they
    /// are), the tensors whose name has it: the only ones a pattern that starts `blk\.N\.`
    /// can find ([`block_literal`]).
    by_block: std::collections::HashMap<String, Vec<u32>>,
    /// Per `-ot` pattern, the tensors it finds (ascending): a projection with overrides
    /// matches each pattern against the names once, not at every projection — the fitting
    /// makes dozens of projections with a hundred patterns each. Shared by the clones.
    matches: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<[u32]>>>>,
}

impl Index {
    pub fn new(desc: &Description, tensors: &[PlacedTensor]) -> Index {
        let n_layer_all = desc.n_layer_all();
        let mut info = Vec::with_capacity(tensors.len());
        let mut specials = Vec::new();
        // Group keys are few (a handful per block): a map from key to the group's index.
        let mut by_key: std::collections::HashMap<(Slot, bool, bool, usize), usize> = std::collections::HashMap::new();
        let mut groups: Vec<Group> = Vec::new();
        let mut by_block: std::collections::HashMap<String, Vec<u32>> = std::collections::HashMap::new();
        for (i, t) in tensors.iter().enumerate() {
            let slot = slot(&t.name, n_layer_all);
            let x = Info {
                slot,
                expert: is_expert(&t.name),
                repackable: repackable(t),
                special: t.name.starts_with("rope_freqs") || t.name == "token_embd.weight",
                skipped: is_skipped(desc, &t.name, slot),
                size: [alloc_size_on(t, SizeOn::Cpu), alloc_size_on(t, SizeOn::Cuda), alloc_size_on(t, SizeOn::Rpc)],
                group: NO_GROUP,
            };
            // Tensor counts are bounded far below u32::MAX (`formats::MAX_TENSORS`).
            let Ok(at) = u32::try_from(i) else { break };
            for n in block_numbers(&t.name) {
                let list = by_block.entry(n.to_string()).or_default();
                if list.last() != Some(&at) {
                    list.push(at);
                }
            }
            if x.skipped || x.special {
                if !x.skipped {
                    specials.push(i);
                }
                info.push(x);
                continue;
            }
            let end = t.offset.saturating_add(t.bytes);
            let g = *by_key.entry((slot, x.expert, x.repackable, t.file)).or_insert_with(|| {
                groups.push(Group { slot, expert: x.expert, repackable: x.repackable, file: t.file, size: [0; 3], lo: t.offset, hi: end });
                groups.len() - 1
            });
            info.push(Info { group: u32::try_from(g).unwrap_or(NO_GROUP), ..x });
            if let Some(g) = groups.get_mut(g) {
                for (a, b) in g.size.iter_mut().zip(x.size) {
                    *a = a.saturating_add(b);
                }
                g.lo = g.lo.min(t.offset);
                g.hi = g.hi.max(end);
            }
        }
        let has_output = tensors.iter().any(|t| t.name == "output.weight");
        Index { info, groups, specials, has_output, by_block, matches: Default::default() }
    }

    /// For each tensor, the 1-based position of the first override that finds it (0: none),
    /// and for each group whether an override finds any of its tensors; both empty without
    /// overrides.
    fn claims(&self, s: &Settings, tensors: &[PlacedTensor]) -> (Vec<u32>, Vec<bool>) {
        if s.overrides.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let mut claimed = vec![0u32; tensors.len()];
        let mut touched = vec![false; self.groups.len()];
        for (o, k) in s.overrides.iter().zip(1u32..) {
            for i in self.matches(o, tensors).iter() {
                if let Some(c) = claimed.get_mut(*i as usize).filter(|c| **c == 0) {
                    *c = k;
                    if let Some(t) = self.info.get(*i as usize).and_then(|x| touched.get_mut(x.group as usize)) {
                        *t = true;
                    }
                }
            }
        }
        (claimed, touched)
    }

    /// The tensors (indices into `tensors`, the list this index was made from) whose name
    /// the override's pattern finds, as `std::regex_search`: kept per pattern. A pattern that
    /// starts `blk\.N\.` is tried only on the names that have `blk.N.` in them.
    fn matches(&self, o: &super::Override, tensors: &[PlacedTensor]) -> std::sync::Arc<[u32]> {
        if let Some(m) = self.matches.lock().ok().and_then(|c| c.get(&o.pattern).cloned()) {
            return m;
        }
        let hit = |i: &u32| tensors.get(*i as usize).is_some_and(|t| o.regex.is_match(&t.name));
        let found: std::sync::Arc<[u32]> = match o.block.as_deref() {
            Some(n) => self.by_block.get(n).map_or_else(Vec::new, |l| l.iter().copied().filter(hit).collect()).into(),
            None => (0..u32::try_from(tensors.len()).unwrap_or(u32::MAX)).filter(hit).collect::<Vec<u32>>().into(),
        };
        if let Ok(mut c) = self.matches.lock() {
            if c.len() >= MAX_CACHED_PATTERNS {
                c.clear();
            }
            c.insert(o.pattern.clone(), found.clone());
        }
        found
    }
}

/// Every `N` of a `blk.N.` in `name` (N one or more ASCII digits, as written).
pub(super) fn block_numbers(name: &str) -> impl Iterator<Item = &str> {
    name.match_indices("blk.").filter_map(move |(at, _)| {
        let rest = name.get(at + 4..)?;
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        (digits > 0 && rest.as_bytes().get(digits) == Some(&b'.')).then(|| rest.get(..digits)).flatten()
    })
}

/// For a pattern that can only find a name with `blk.N.` in it, N: the pattern starts with
/// `blk\.`, N's digits and `\.` not followed by a quantifier, and has no `|` outside
/// parentheses or brackets (which could find a name without that start). Every other
/// pattern gives `None` and is tried on every name. Written here because `regex_lite` (the
/// page's regex engine, chosen for its size) finds no required literal of its own, and the
/// `regex` crate, which does, would add its literal search and automata to the page.
pub(super) fn block_literal(pattern: &str) -> Option<&str> {
    let rest = pattern.strip_prefix(r"blk\.")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let after = rest.get(digits..)?.strip_prefix(r"\.")?;
    if digits == 0 || after.starts_with(['*', '?', '{']) {
        return None;
    }
    // A `|` at depth 0 makes the start optional; `\` escapes the next character; in a
    // bracket expression `|` and parentheses are literal.
    let (mut depth, mut class, mut escaped) = (0usize, false, false);
    for c in pattern.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '[' if !class => class = true,
            ']' if class => class = false,
            '(' if !class => depth += 1,
            ')' if !class => depth = depth.saturating_sub(1),
            '|' if !class && depth == 0 => return None,
            _ => {}
        }
    }
    rest.get(..digits)
}

/// A buffer type a tensor may land in.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Buft {
    /// The CPU's own: mapped from the file when mmap is on.
    Cpu,
    CpuRepack,
    /// The first GPU's pinned host memory (CUDA_Host), without mmap.
    Host,
    Gpu(usize),
}

fn buft_name(b: &Buft, s: &Settings, mapped: bool) -> String {
    match b {
        Buft::Cpu if mapped => "CPU_Mapped".to_string(),
        Buft::Cpu => "CPU".to_string(),
        Buft::CpuRepack => "CPU_REPACK".to_string(),
        Buft::Host => "CUDA_Host".to_string(),
        Buft::Gpu(i) => s.devices.get(*i).map_or_else(|| format!("GPU{i}"), |d| d.name.clone()),
    }
}

/// The buffer type for a tensor on the CPU: the CPU list's first that takes it
/// (`make_cpu_buft_list`: the first GPU's host type, the CPU extras, the CPU).
fn cpu_buft(repackable: bool, s: &Settings, input: bool) -> Buft {
    let cuda_host = s.devices.first().is_some_and(|d| d.backend == Backend::Cuda);
    if cuda_host {
        // With mmap the host type is replaced by the plain CPU one (and never repacked).
        return if s.mmap { Buft::Cpu } else { Buft::Host };
    }
    if s.repack != Repack::None && !input && repackable {
        Buft::CpuRepack
    } else {
        Buft::Cpu
    }
}

/// `ggml_backend_buft_get_alloc_size` padded to the buffer type's alignment, for a buffer
/// type of this kind.
fn alloc_size_on(t: &PlacedTensor, on: SizeOn) -> u64 {
    let (align, cuda) = match on {
        SizeOn::Cuda => (Backend::Cuda.alignment(), true),
        SizeOn::Rpc => (Backend::Rpc.alignment(), false),
        SizeOn::Cpu => (CPU_ALIGNMENT, false),
    };
    let mut size = t.bytes;
    if cuda {
        if let Some(ty) = GgmlType::from_id(t.ggml_type).filter(|ty| ty.block_size > 1) {
            let ne0 = t.ne.first().copied().unwrap_or(0);
            if ne0 % CUDA_ROW_PADDING != 0 {
                let extra = (CUDA_ROW_PADDING - ne0 % CUDA_ROW_PADDING) / ty.block_size * ty.type_size;
                size = size.saturating_add(extra);
            }
        }
    }
    pad(size, align)
}

/// Which padded size a buffer type takes.
fn size_on(b: &Buft, s: &Settings) -> SizeOn {
    match b {
        Buft::Gpu(i) => match s.devices.get(*i).map(|d| d.backend) {
            Some(Backend::Cuda) => SizeOn::Cuda,
            Some(Backend::Rpc) => SizeOn::Rpc,
            None => SizeOn::Cpu,
        },
        _ => SizeOn::Cpu,
    }
}

/// The tensors-to-buffer step of every `-ot` (and `--n-cpu-moe`) override, in order.
fn overridden(name: &str, s: &Settings, il: Option<u64>) -> Option<Option<usize>> {
    ot_device(name, s).or_else(|| cpu_moe(s, il, is_expert(name)))
}

/// The first `-ot` override whose pattern finds `name`: its device.
fn ot_device(name: &str, s: &Settings) -> Option<Option<usize>> {
    s.overrides.iter().find(|o| o.finds(name)).map(|o| device_by_buft(&o.buft, s))
}

/// `--n-cpu-moe`'s override (after every `-ot`): the host, for an expert tensor of a layer below N.
fn cpu_moe(s: &Settings, il: Option<u64>, expert: bool) -> Option<Option<usize>> {
    (expert && il.is_some_and(|il| il < s.n_cpu_moe)).then_some(None)
}

/// Where each block's expert tensors are: the block's device unless an override (or
/// `--n-cpu-moe`) sends them elsewhere. Decided on the block's `ffn_up_exps` name.
pub fn expert_devices(desc: &Description, s: &Settings, layers: &[Option<usize>]) -> Vec<Option<usize>> {
    (0..desc.n_layer_all())
        .map(|il| {
            let name = format!("blk.{il}.ffn_up_exps.weight");
            overridden(&name, s, Some(il)).unwrap_or_else(|| layers.get(il as usize).copied().flatten())
        })
        .collect()
}

/// The device whose buffer a weight named `name` lands in (`None` = the host): an override's
/// (`-ot`, `--n-cpu-moe`) first, else its layer's (the token embeddings on the host, the
/// output tensors on the output layer's device), as [`weights`] places it.
pub fn tensor_device(desc: &Description, s: &Settings, layers: &[Option<usize>], name: &str) -> Option<usize> {
    let sl = slot(name, desc.n_layer_all());
    let il = match sl {
        Slot::Block(i) => Some(i),
        _ => None,
    };
    overridden(name, s, il).unwrap_or_else(|| match sl {
        Slot::Input => None,
        Slot::Output => layers.last().copied().flatten(),
        Slot::Block(i) => layers.get(i as usize).copied().flatten(),
    })
}

/// llama.cpp's `LLM_FFN_EXPS_REGEX` (common/common.h): the expert tensors `-cmoe` keeps on
/// the CPU, and (after `blk\.N`) those of each layer `-ncmoe N` does.
pub const FFN_EXPS_REGEX: &str = r"\.ffn_(up|down|gate|gate_up)_(ch|)exps";

/// `\.ffn_(up|down|gate|gate_up)_(ch|)exps`: the tensors `--cpu-moe` keeps on the CPU.
pub fn is_expert(name: &str) -> bool {
    ["up", "down", "gate", "gate_up"].iter().any(|p| {
        name.contains(&format!(".ffn_{p}_exps")) || name.contains(&format!(".ffn_{p}_chexps"))
    })
}

fn device_by_buft(buft: &str, s: &Settings) -> Option<usize> {
    s.devices.iter().position(|d| d.name == buft || d.name.split('[').next() == Some(buft))
}

/// The sums of a weight pass: per buffer type the padded sizes, and for the CPU buffer mapped
/// from the files (mmap) each file's span.
struct Sums<'a> {
    s: &'a Settings,
    /// Few buffer types: a short vector, searched linearly.
    sums: Vec<(Buft, u64)>,
    /// Mapped CPU tensors: per file (by its index among the parts), (min offset, max end).
    spans: Vec<Option<(u64, u64)>>,
}

impl Sums<'_> {
    fn add(&mut self, b: Buft, size: &[u64; 3], file: usize, lo: u64, hi: u64) {
        if b == Buft::Cpu && self.s.mmap {
            if self.spans.len() <= file {
                self.spans.resize(file.saturating_add(1), None);
            }
            if let Some(e) = self.spans.get_mut(file) {
                let (l, h) = e.get_or_insert((lo, hi));
                *l = (*l).min(lo);
                *h = (*h).max(hi);
            }
        } else {
            let n = size.get(size_on(&b, self.s) as usize).copied().unwrap_or(0);
            match self.sums.iter_mut().find(|(x, _)| *x == b) {
                Some((_, x)) => *x = x.saturating_add(n),
                None => self.sums.push((b, n)),
            }
        }
    }
}

/// The device of a tensor in `slot` that no `-ot` override moved.
fn slot_device(sl: Slot, layers: &[Option<usize>]) -> Option<usize> {
    match sl {
        Slot::Input => None,
        Slot::Output => layers.last().copied().flatten(),
        Slot::Block(i) => layers.get(i as usize).copied().flatten(),
    }
}

fn block_of(sl: Slot) -> Option<u64> {
    match sl {
        Slot::Block(i) => Some(i),
        _ => None,
    }
}

/// Every weight buffer: per buffer type, the tensors' padded sizes; the CPU one mapped
/// from the file (its span per file) when mmap is on. Without `-ot` overrides the index's
/// groups are added up; with them every tensor's name is matched, as llama.cpp does.
///
/// `each` goes tensor by tensor, matching every name against every override: the pass the
/// grouped one is checked against ([`super::weight_buffers_each`], tests/memory_layout.rs).
pub fn weights(desc: &Description, tensors: &[PlacedTensor], index: &Index, s: &Settings, layers: &[Option<usize>], each: bool) -> Vec<Buffer> {
    let mut sums = Sums { s, sums: Vec::new(), spans: Vec::new() };
    let gpu_or_cpu = |d: Option<usize>, repackable: bool, input: bool| match d {
        Some(d) => Buft::Gpu(d),
        None => cpu_buft(repackable, s, input),
    };
    // Where a tensor or a group lands unless an `-ot` override sends it elsewhere.
    let own = |slot: Slot, expert: bool| cpu_moe(s, block_of(slot), expert).unwrap_or_else(|| slot_device(slot, layers));
    let mut one = |t: &PlacedTensor, x: &Info, by_ot: Option<Option<usize>>| {
        let b = gpu_or_cpu(by_ot.unwrap_or_else(|| own(x.slot, x.expert)), x.repackable, x.slot == Slot::Input);
        sums.add(b, &x.size, t.file, t.offset, t.offset.saturating_add(t.bytes));
    };
    let placed = tensors.iter().zip(&index.info).enumerate().filter(|(_, (_, x))| !x.skipped && !x.special);
    if each {
        for (_, (t, x)) in placed {
            one(t, x, ot_device(&t.name, s));
        }
    } else {
        // Each tensor's first override that finds it, from the kept matches; the tensors of
        // the groups an override touches one by one, the other groups added up whole.
        let (claimed, touched) = index.claims(s, tensors);
        let is_touched = |g: u32| touched.get(g as usize).copied().unwrap_or(false);
        if touched.contains(&true) {
            for (i, (t, x)) in placed.filter(|(_, (_, x))| is_touched(x.group)) {
                let by_ot = claimed.get(i).and_then(|k| k.checked_sub(1)).and_then(|k| s.overrides.get(k as usize));
                one(t, x, by_ot.map(|o| device_by_buft(&o.buft, s)));
            }
        }
        for (g, _) in index.groups.iter().zip(0u32..).filter(|(_, i)| !is_touched(*i)) {
            let b = gpu_or_cpu(own(g.slot, g.expert), g.repackable, g.slot == Slot::Input);
            sums.add(b, &g.size, g.file, g.lo, g.hi);
        }
    }
    let output_device = layers.last().copied().flatten();
    // Tensors made once per distinct buffer type of the layers (TENSOR_DUPLICATED).
    let mut rope_bufts: Vec<Buft> = Vec::new();
    for i in &index.specials {
        let (Some(t), Some(x)) = (tensors.get(*i), index.info.get(*i)) else { continue };
        let end = t.offset.saturating_add(t.bytes);
        if t.name.starts_with("rope_freqs") {
            // Made for layer 0, then again for every layer whose buffer type differs.
            for l in 0..desc.n_layer_all() as usize {
                let bl = gpu_or_cpu(layers.get(l).copied().flatten(), x.repackable, false);
                if !rope_bufts.contains(&bl) {
                    rope_bufts.push(bl.clone());
                    sums.add(bl, &x.size, t.file, t.offset, end);
                }
            }
            continue;
        }
        // token_embd.weight.
        let device = overridden(&t.name, s, block_of(x.slot)).unwrap_or_else(|| slot_device(x.slot, layers));
        let b = gpu_or_cpu(device, x.repackable, x.slot == Slot::Input);
        let tied = !index.has_output && ties_output(desc);
        if tied {
            // The output is token_embd again (TENSOR_DUPLICATED), on the output layer's
            // buffer type; one copy when that is the same one.
            let ob = gpu_or_cpu(output_device, x.repackable, false);
            if ob != b || OUTPUT_BEFORE_EMBD.contains(&desc.arch.as_str()) {
                sums.add(ob, &x.size, t.file, t.offset, end);
            }
        }
        sums.add(b, &x.size, t.file, t.offset, end);
    }
    let Sums { sums: mut by_buft, spans, .. } = sums;
    let mut out = Vec::new();
    for (lo, hi) in spans.into_iter().flatten() {
        out.push(Buffer { device: device_label(None), buft: "CPU_Mapped".to_string(), kind: Kind::Model, bytes: hi - lo });
    }
    by_buft.sort_by(|a, b| a.0.cmp(&b.0));
    for (b, bytes) in by_buft {
        let device = match b {
            Buft::Gpu(i) => device_label(Some(i)),
            _ => device_label(None),
        };
        out.push(Buffer { device, buft: buft_name(&b, s, false), kind: Kind::Model, bytes });
    }
    out
}

/// Architectures whose `load_arch_tensors` creates the tied output (token_embd, DUPLICATED)
/// before token_embd itself: the loader's "already in this buffer type" check finds nothing
/// yet, so token_embd is allocated twice even in the same buffer type (src/models/gemma4.cpp,
/// `create_tensor` in src/llama-model-loader.cpp).
const OUTPUT_BEFORE_EMBD: &[&str] = &["gemma4"];

/// Architectures whose output falls back to token_embd when `output.weight` is absent
/// (nearly all decoders; encoders have no output projection).
fn ties_output(desc: &Description) -> bool {
    desc.causal
}

/// Tensors llama.cpp does not allocate: the nextn (MTP) blocks, skipped unless a draft
/// model is asked for.
fn is_skipped(desc: &Description, _name: &str, sl: Slot) -> bool {
    matches!(sl, Slot::Block(i) if i >= desc.n_layer())
}

#[cfg(test)]
mod tests {
    use super::{block_literal, block_numbers};

    #[test]
    fn a_pattern_narrows_to_a_block_only_when_it_must_find_blk_n() {
        assert_eq!(block_literal(r"blk\.12\.ffn_(up|down)_exps"), Some("12"));
        assert_eq!(block_literal(r"blk\.012\.attn"), Some("012"));
        assert_eq!(block_literal(r"blk\.3\.+x"), Some("3"));
        assert_eq!(block_literal(r"blk\.3\.[|(]"), Some("3"));
        assert_eq!(block_literal(r"blk\.3\.(a|b)\|c"), Some("3"));
        // The dot may be absent, or the start is one alternative, or no digits, or no dot.
        assert_eq!(block_literal(r"blk\.1\.*ffn"), None);
        assert_eq!(block_literal(r"blk\.1\.?ffn"), None);
        assert_eq!(block_literal(r"blk\.1\.{0,1}ffn"), None);
        assert_eq!(block_literal(r"blk\.2\.|output"), None);
        assert_eq!(block_literal(r"blk\.\d+\.ffn"), None);
        assert_eq!(block_literal(r"blk\.12ffn"), None);
        assert_eq!(block_literal(r"blk\.12"), None);
        assert_eq!(block_literal(r"^blk\.12\."), None);
        assert_eq!(block_literal(r"(?i)blk\.12\."), None);
    }

    #[test]
    fn every_blk_n_of_a_name() {
        assert_eq!(block_numbers("blk.12.ffn_up_exps.weight").collect::<Vec<_>>(), ["12"]);
        assert_eq!(block_numbers("enc.blk.3.attn_k.weight").collect::<Vec<_>>(), ["3"]);
        assert_eq!(block_numbers("blk.1.x.blk.012.y").collect::<Vec<_>>(), ["1", "012"]);
        assert_eq!(block_numbers("blk.12").count(), 0);
        assert_eq!(block_numbers("blk..x").count(), 0);
        assert_eq!(block_numbers("output.weight").count(), 0);
    }
}
