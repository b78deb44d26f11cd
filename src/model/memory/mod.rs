//! Will it run here? The memory llama.cpp allocates to run a GGUF model — weight buffers,
//! the KV cache / recurrent state, the compute buffers — projected from the header alone,
//! buffer by buffer, as llama.cpp names them; and the settings that fit given devices
//! (`fit`, llama.cpp's `common_fit_params`).
//!
//! Pure: it takes a [`Description`] (read from the header) and the tensors' placement in
//! their files, and the settings a person would pass to llama.cpp (its own flag names). The
//! rules are llama.cpp's, in the tree vendored by llama-cpp-python 0.3.36
//! (`src/llama-context.cpp`, `src/llama-kv-cache*.cpp`, `src/llama-memory-recurrent.cpp`,
//! `src/llama-model.cpp` `load_tensors`, `ggml/src/ggml-alloc.c`, `common/fit.cpp`); the
//! tests compare every figure with what llama.cpp printed for committed fixtures
//! (tests/fixtures/memory/). Written by hand: no crate models llama.cpp's allocator.

mod compute;
mod dsa;
mod galloc;
mod gemma3n;
mod graph;
pub mod fit;
pub mod flags;
mod kpool;
mod kv;
mod msa;
mod params;
mod weights;

pub use params::{CacheType, ContextParams, FlashAttn};

use crate::model::description::{Description, MemoryKind};
use serde::Serialize;

/// Most devices a plan takes (llama.cpp's `GGML_SCHED_MAX_BACKENDS` is 16, the CPU one of them).
pub const MAX_DEVICES: usize = 15;
/// Most `-ot` overrides a plan takes.
pub const MAX_OVERRIDES: usize = 64;
/// Largest context a plan takes: llama.cpp keeps cell counts in u32.
pub const MAX_CONTEXT: u64 = u32::MAX as u64;
/// Most parallel sequences (`LLAMA_MAX_SEQ`, `src/llama-cparams.h`).
pub const MAX_SEQ: u64 = 256;

/// The kind of accelerator a device is: it decides the buffer names, the alignment, the
/// padding of quantized rows and whether host weights may be mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// NVIDIA (CUDA): 128-byte alignment, quantized rows padded to 512 elements, a pinned
    /// host buffer type (`CUDA_Host`), no mapping of host memory.
    Cuda,
    /// ggml's RPC backend over a CPU server (the reference tests' second device): CPU
    /// alignment, no padding, no host buffer type.
    Rpc,
}

impl Backend {
    pub fn parse(s: &str) -> Option<Backend> {
        match s.to_ascii_lowercase().as_str() {
            "cuda" => Some(Backend::Cuda),
            "rpc" => Some(Backend::Rpc),
            _ => None,
        }
    }
    fn alignment(self) -> u64 {
        match self {
            Backend::Cuda => 128,
            Backend::Rpc => weights::CPU_ALIGNMENT,
        }
    }
}

/// A GPU (or other accelerator) the model may use.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Device {
    /// The buffer-type name llama.cpp prints for it (`CUDA0`, `RPC0[127.0.0.1:50052]`).
    pub name: String,
    pub backend: Backend,
    /// Memory the device has free, in bytes.
    pub memory: u64,
}

/// An `-ot PATTERN=BUFT` override: tensors whose name the pattern finds (anywhere in the
/// name, as `std::regex_search`) go to the named buffer type.
#[derive(Clone, Debug)]
pub struct Override {
    pub pattern: String,
    pub regex: regex_lite::Regex,
    /// `CPU`, or a device's name.
    pub buft: String,
    /// For a pattern that can only find names with `blk.N.` in them, N
    /// (`weights::block_literal`): the names without it are not tried.
    block: Option<String>,
}

impl Override {
    /// Parses `PATTERN=BUFT`; `None` when there is no `=` or the pattern is no regex.
    pub fn parse(s: &str) -> Option<Override> {
        let (pattern, buft) = s.rsplit_once('=')?;
        let regex = regex_lite::Regex::new(pattern).ok()?;
        let block = weights::block_literal(pattern).map(str::to_string);
        Some(Override { pattern: pattern.to_string(), regex, buft: buft.to_string(), block })
    }

    /// Whether the pattern finds `name` (anywhere in it, as `std::regex_search`).
    pub fn finds(&self, name: &str) -> bool {
        self.block.as_ref().is_none_or(|n| weights::block_numbers(name).any(|b| b == n)) && self.regex.is_match(name)
    }
}

/// CPU weight repacking llama.cpp's CPU backend does on this kind of processor
/// (`ggml/src/ggml-cpu/repack.cpp`): only in a CPU-only or RPC build, or with `--no-host`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Repack {
    /// No repacking.
    None,
    /// x86-64 with AVX2 (most desktops and servers): Q4_0, Q4_K, IQ4_NL, MXFP4 with rows % 8.
    Avx2,
}

/// Everything a person passes to llama.cpp that changes memory.
#[derive(Clone, Debug)]
pub struct Settings {
    /// `-c`: 0 = the training context.
    pub n_ctx: u64,
    /// `-np`.
    pub n_seq: u64,
    /// `-b`, `-ub`.
    pub n_batch: u64,
    pub n_ubatch: u64,
    /// `-ctk`, `-ctv`.
    pub type_k: CacheType,
    pub type_v: CacheType,
    /// `-fa`.
    pub flash_attn: FlashAttn,
    /// `--swa-full`.
    pub swa_full: bool,
    /// `--kv-unified`.
    pub kv_unified: bool,
    /// `-ngl`: `None` = all layers (llama.cpp's default −1 without fitting).
    pub n_gpu_layers: Option<u64>,
    /// `-ts`: the share of layers per device (empty or all zero: by free memory).
    pub tensor_split: Vec<f32>,
    /// `-ot`, in order; then `--n-cpu-moe` adds its own.
    pub overrides: Vec<Override>,
    /// `--n-cpu-moe N`: the experts of the first N layers stay on the CPU.
    pub n_cpu_moe: u64,
    /// `--no-mmap` clears it.
    pub mmap: bool,
    /// `-nkvo` clears it: the KV cache stays on the host.
    pub offload_kqv: bool,
    pub devices: Vec<Device>,
    /// Host memory, in bytes (for the fit and what is left).
    pub host_memory: Option<u64>,
    pub repack: Repack,
    /// llama.cpp's `no_alloc` load (llama-fit-params' probes): the compute buffers are
    /// measured by `ggml_backend_sched_reserve_size`, whose reset (ggml-backend.cpp:1977-1988)
    /// drops the backends the graph builder pinned tensors to (`graph_get_cb`'s norms,
    /// `-nkvo`'s attention output).
    pub no_alloc: bool,
}

impl Default for Settings {
    /// llama.cpp's command-line defaults (`common/common.h`).
    fn default() -> Settings {
        Settings {
            n_ctx: 0,
            n_seq: 1,
            n_batch: 2048,
            n_ubatch: 512,
            type_k: CacheType::F16,
            type_v: CacheType::F16,
            flash_attn: FlashAttn::Auto,
            swa_full: false,
            kv_unified: false,
            n_gpu_layers: None,
            tensor_split: Vec::new(),
            overrides: Vec::new(),
            n_cpu_moe: 0,
            mmap: true,
            offload_kqv: true,
            devices: Vec::new(),
            host_memory: None,
            repack: Repack::Avx2,
            no_alloc: false,
        }
    }
}

/// One tensor as the planner needs it: where it lies and what it is.
#[derive(Clone, Debug)]
pub struct PlacedTensor {
    pub name: String,
    /// ggml type id.
    pub ggml_type: u32,
    /// Dims as stored, ne[0] first.
    pub ne: Vec<u64>,
    pub bytes: u64,
    /// Which file of a split model, and the absolute offset there.
    pub file: usize,
    pub offset: u64,
}

/// Every tensor of a model as the planner takes it: the list, and what the weight pass needs of
/// each worked out once ([`weights::Index`]: each name's layer, whether it is an expert, its
/// padded sizes; alike tensors summed into groups), so that a projection adds up a few hundred
/// groups instead of reading 100,000 names.
#[derive(Clone, Debug)]
pub struct ModelTensors {
    list: Vec<PlacedTensor>,
    index: weights::Index,
}

impl ModelTensors {
    /// The index is made for `desc` (its layer count, which blocks llama.cpp skips): plan
    /// with the same description.
    pub fn new(desc: &Description, list: Vec<PlacedTensor>) -> ModelTensors {
        let index = weights::Index::new(desc, &list);
        ModelTensors { list, index }
    }
    pub fn list(&self) -> &[PlacedTensor] {
        &self.list
    }
    pub fn len(&self) -> usize {
        self.list.len()
    }
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// What a buffer holds (`common_memory_breakdown_print`'s columns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Model,
    Context,
    Compute,
}

/// One buffer llama.cpp would allocate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Buffer {
    /// `Host`, or `GPU0`, `GPU1`, … in the order of the devices given.
    pub device: String,
    /// llama.cpp's buffer-type name: `CPU_Mapped`, `CPU`, `CPU_REPACK`, `CUDA0`, `CUDA_Host`, …
    pub buft: String,
    pub kind: Kind,
    pub bytes: u64,
}

/// One device's sums.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceTotal {
    pub device: String,
    pub model: u64,
    pub context: u64,
    pub compute: u64,
    pub total: u64,
    /// Its memory, when known.
    pub memory: Option<u64>,
    /// memory − total (negative: does not fit).
    pub left: Option<i64>,
}

/// The KV cache (or recurrent state) llama.cpp would make.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KvSummary {
    pub memory: MemoryKind,
    /// Cells per stream of the full cache, and of the sliding-window cache (iSWA).
    pub cells: u64,
    pub swa_cells: Option<u64>,
    pub streams: u64,
    pub type_k: CacheType,
    pub type_v: CacheType,
    /// Layers with a cache, and their K and V bytes (unpadded, as `llama_kv_cache: size =`).
    pub layers: u64,
    pub swa_layers: u64,
    pub k_bytes: u64,
    pub v_bytes: u64,
    /// Recurrent state (R and S, f32) bytes, and its layers.
    pub recurrent_layers: u64,
    pub r_bytes: u64,
    pub s_bytes: u64,
    /// The indexer's cache (its own `llama_kv_cache`: DSA's lightning-indexer keys, K only;
    /// MSA's block-indexer keys and a V beside them): layers and K and V bytes.
    pub indexer_layers: u64,
    pub indexer_k_bytes: u64,
    pub indexer_v_bytes: u64,
    /// V transposed (flash attention off): every V row padded to the widest layer's.
    pub v_trans: bool,
}

/// The whole projection.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    pub params: ContextParams,
    pub buffers: Vec<Buffer>,
    pub devices: Vec<DeviceTotal>,
    pub kv: KvSummary,
    /// The output (logits) buffer on the host: llama.cpp allocates it but leaves it out of
    /// its breakdown.
    pub output_bytes: u64,
    /// Which device each block (and, last, the output layer) is on: `Host`, `GPU0`, …
    pub layer_devices: Vec<String>,
    /// Why llama.cpp would refuse these settings, in its words; `None` when it would run.
    pub refused: Option<String>,
    /// What llama.cpp would warn about (a context past the training one, …).
    pub warnings: Vec<String>,
}

/// Why no plan can be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoPlan {
    /// The architecture's memory module is one tensorpeek does not model.
    Unmodelled(String),
    /// A setting out of range (the sentence says which).
    Setting(String),
}

impl std::fmt::Display for NoPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoPlan::Unmodelled(arch) => write!(f, "llama.cpp's memory rules for the {arch} architecture are not modelled by tensorpeek"),
            NoPlan::Setting(s) => f.write_str(s),
        }
    }
}

/// The device label of device index `d` (`None` = the host).
pub fn device_label(d: Option<usize>) -> String {
    match d {
        None => "Host".to_string(),
        Some(i) => format!("GPU{i}"),
    }
}

/// Projects the memory llama.cpp would allocate for this model with these settings.
pub fn plan(desc: &Description, tensors: &ModelTensors, s: &Settings) -> Result<Plan, NoPlan> {
    plan_with(desc, &weight_buffers(desc, tensors, s), s)
}

/// The weight buffers alone: they depend on the placement settings (`-ngl`, `-ts`, `-ot`,
/// `--n-cpu-moe`, mmap, the devices), not on the context or the cache, so a chart over
/// contexts computes them once ([`plan_with`]).
pub fn weight_buffers(desc: &Description, tensors: &ModelTensors, s: &Settings) -> Vec<Buffer> {
    weights::weights(desc, &tensors.list, &tensors.index, s, &weights::layer_devices(desc, s), false)
}

/// [`weight_buffers`] tensor by tensor, every name matched against every `-ot` pattern as
/// llama.cpp does, without the index's groups or kept matches: what tests/memory_layout.rs
/// checks the grouped pass against.
pub fn weight_buffers_each(desc: &Description, tensors: &ModelTensors, s: &Settings) -> Vec<Buffer> {
    weights::weights(desc, &tensors.list, &tensors.index, s, &weights::layer_devices(desc, s), true)
}

/// [`plan`] with the weight buffers already made by [`weight_buffers`] for the same
/// placement settings.
pub fn plan_with(desc: &Description, weights: &[Buffer], s: &Settings) -> Result<Plan, NoPlan> {
    if desc.memory == MemoryKind::Unmodelled {
        return Err(NoPlan::Unmodelled(desc.arch.clone()));
    }
    if s.devices.len() > MAX_DEVICES {
        return Err(NoPlan::Setting(format!("at most {MAX_DEVICES} devices")));
    }
    let (params, mut warnings) = params::derive(desc, s)?;
    let layers = weights::layer_devices(desc, s);
    let (kv, kv_buffers, refused) = kv::cache(desc, s, &params, &layers);
    let compute = compute::buffers(desc, s, &params, &layers, &kv);
    let output_bytes = params::output_bytes(desc, &params);
    if desc.enc_dec.is_some() && params.n_stream > 1 {
        // src/models/t5.cpp's relative-position bias has no stream dimension: llama.cpp aborts
        // building the graph (GGML_ASSERT(ggml_can_repeat(b, a)), ggml/src/ggml.c:2072).
        warnings.push("llama.cpp aborts building a T5 graph with more than one stream (-np > 1 without --kv-unified): GGML_ASSERT(ggml_can_repeat(b, a))".to_string());
    }
    if let Some(r) = &params.refused {
        warnings.retain(|x| x != r);
    }
    let refused = params.refused.clone().or(refused);

    let mut buffers = weights.to_vec();
    buffers.extend(kv_buffers);
    buffers.extend(compute);
    let devices = totals(&buffers, s);
    let layer_devices = layers.iter().map(|d| device_label(*d)).collect();
    Ok(Plan { params, buffers, devices, kv, output_bytes, layer_devices, refused, warnings })
}

/// One compute buffer's size and the tensors live at its peak: (name, start, end).
pub type BufferLayout = (u64, Vec<(String, u64, u64)>);

/// What ggml-alloc holds in each compute buffer at its peak, for the architectures whose graph
/// tensorpeek simulates (`graph.rs`, `galloc.rs`): per backend (the devices, then the host) the
/// buffer's size and its live tensors (name, start, end), as llama.cpp's ggml-alloc built with
/// GGML_ALLOCATOR_DEBUG prints them for the prompt graph. `None` for the others.
pub fn compute_layouts(desc: &Description, s: &Settings) -> Option<Vec<BufferLayout>> {
    let (params, _) = params::derive(desc, s).ok()?;
    let layers = weights::layer_devices(desc, s);
    let (kv, _, _) = kv::cache(desc, s, &params, &layers);
    compute::layouts(desc, s, &params, &layers, &kv)
}

fn totals(buffers: &[Buffer], s: &Settings) -> Vec<DeviceTotal> {
    let mut names: Vec<String> = (0..s.devices.len()).map(|i| device_label(Some(i))).collect();
    names.push(device_label(None));
    names
        .into_iter()
        .map(|device| {
            let sum = |k: Kind| buffers.iter().filter(|b| b.device == device && b.kind == k).map(|b| b.bytes).sum::<u64>();
            let (model, context, compute) = (sum(Kind::Model), sum(Kind::Context), sum(Kind::Compute));
            let total = model + context + compute;
            let memory = match device.strip_prefix("GPU").and_then(|i| i.parse::<usize>().ok()) {
                Some(i) => s.devices.get(i).map(|d| d.memory),
                None => s.host_memory,
            };
            let left = memory.map(|m| (m as i128 - total as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64);
            DeviceTotal { device, model, context, compute, total, memory, left }
        })
        .collect()
}

#[cfg(test)]
mod tests;

/// The description (from the first part) and every tensor's placement, for a GGUF model
/// given as one file or all the parts of a split model (in `split.no` order; parts without
/// that key in the order given).
pub fn from_gguf_files(parts: &[&crate::formats::gguf::GgufFile]) -> Option<(Description, ModelTensors)> {
    let mut parts: Vec<&crate::formats::gguf::GgufFile> = parts.to_vec();
    parts.sort_by_key(|g| g.kv("split.no").and_then(crate::formats::gguf::Value::as_u64).unwrap_or(0));
    let desc = parts.iter().find_map(|g| Description::from_gguf(g))?;
    let mut tensors = Vec::new();
    for (file, g) in parts.iter().enumerate() {
        for t in &g.tensors {
            let crate::dtype::TensorDtype::Ggml(ggml_type) = t.dtype else { continue };
            let (Some(bytes), Some(offset)) = (t.bytes, t.abs_start) else { continue };
            let ne = t.ggml_dims.clone().unwrap_or_else(|| t.shape.iter().rev().copied().collect());
            tensors.push(PlacedTensor { name: t.name.clone(), ggml_type, ne, bytes, file, offset });
        }
    }
    let tensors = ModelTensors::new(&desc, tensors);
    Some((desc, tensors))
}
