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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// Whether the CPU backend repacks this weight (`ggml_repack_get_optimal_repack_type`,
/// and MUL_MAT on 2-D / MUL_MAT_ID on 3-D weights).
fn repacks(t: &PlacedTensor, repack: Repack, input: bool) -> bool {
    if repack == Repack::None || input {
        return false;
    }
    let Some(ty) = GgmlType::from_id(t.ggml_type) else { return false };
    let dims = t.ne.iter().rposition(|d| *d != 1).map_or(1, |i| i + 1);
    let matmul = dims == 2 || (dims == 3 && t.name.contains("_exps"));
    let ne1 = t.ne.get(1).copied().unwrap_or(1);
    matmul && matches!(ty.name, "Q4_0" | "Q4_K" | "IQ4_NL" | "MXFP4") && ne1 % 8 == 0
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
fn cpu_buft(t: &PlacedTensor, s: &Settings, input: bool) -> Buft {
    let cuda_host = s.devices.first().is_some_and(|d| d.backend == Backend::Cuda);
    if cuda_host {
        // With mmap the host type is replaced by the plain CPU one (and never repacked).
        return if s.mmap { Buft::Cpu } else { Buft::Host };
    }
    if repacks(t, s.repack, input) {
        Buft::CpuRepack
    } else {
        Buft::Cpu
    }
}

/// `ggml_backend_buft_get_alloc_size` padded to the buffer type's alignment.
fn alloc_size(t: &PlacedTensor, b: &Buft, s: &Settings) -> u64 {
    let (align, cuda) = match b {
        Buft::Gpu(i) => match s.devices.get(*i).map(|d| d.backend) {
            Some(Backend::Cuda) => (Backend::Cuda.alignment(), true),
            Some(k) => (k.alignment(), false),
            None => (CPU_ALIGNMENT, false),
        },
        _ => (CPU_ALIGNMENT, false),
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

/// The tensors-to-buffer step of every `-ot` (and `--n-cpu-moe`) override, in order.
fn overridden(name: &str, s: &Settings, il: Option<u64>) -> Option<Option<usize>> {
    for o in &s.overrides {
        if o.regex.is_match(name) {
            return Some(device_by_buft(&o.buft, s));
        }
    }
    if let Some(il) = il {
        if il < s.n_cpu_moe && is_expert(name) {
            return Some(None);
        }
    }
    None
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

/// Every weight buffer: per buffer type, the tensors' padded sizes; the CPU one mapped
/// from the file (its span per file) when mmap is on.
pub fn weights(desc: &Description, tensors: &[PlacedTensor], s: &Settings, layers: &[Option<usize>]) -> Vec<Buffer> {
    let n_layer_all = desc.n_layer_all();
    let output_device = layers.last().copied().flatten();
    // Few buffer types: a short vector, searched linearly.
    let mut sums: Vec<(Buft, u64)> = Vec::new();
    // Mapped CPU tensors: per file (by its index among the parts), (min offset, max end).
    let mut spans: Vec<Option<(u64, u64)>> = Vec::new();
    let mut add = |t: &PlacedTensor, b: Buft, sums: &mut Vec<(Buft, u64)>| {
        if b == Buft::Cpu && s.mmap {
            let end = t.offset.saturating_add(t.bytes);
            if spans.len() <= t.file {
                spans.resize(t.file.saturating_add(1), None);
            }
            if let Some(e) = spans.get_mut(t.file) {
                let (lo, hi) = e.get_or_insert((t.offset, end));
                *lo = (*lo).min(t.offset);
                *hi = (*hi).max(end);
            }
        } else {
            let size = alloc_size(t, &b, s);
            match sums.iter_mut().find(|(x, _)| *x == b) {
                Some((_, n)) => *n += size,
                None => sums.push((b, size)),
            }
        }
    };
    let has_output = tensors.iter().any(|t| t.name == "output.weight");
    // Tensors made once per distinct buffer type of the layers (TENSOR_DUPLICATED).
    let mut rope_bufts: Vec<Buft> = Vec::new();
    for t in tensors {
        let sl = slot(&t.name, n_layer_all);
        if is_skipped(desc, &t.name, sl) {
            continue;
        }
        let il = match sl {
            Slot::Block(i) => Some(i),
            _ => None,
        };
        let device = match overridden(&t.name, s, il) {
            Some(d) => d,
            None => match sl {
                Slot::Input => None,
                Slot::Output => output_device,
                Slot::Block(i) => layers.get(i as usize).copied().flatten(),
            },
        };
        let input = sl == Slot::Input;
        let b = match device {
            Some(d) => Buft::Gpu(d),
            None => cpu_buft(t, s, input),
        };
        if t.name.starts_with("rope_freqs") {
            // Made for layer 0, then again for every layer whose buffer type differs.
            for l in 0..n_layer_all as usize {
                let bl = match layers.get(l).copied().flatten() {
                    Some(d) => Buft::Gpu(d),
                    None => cpu_buft(t, s, false),
                };
                if !rope_bufts.contains(&bl) {
                    rope_bufts.push(bl.clone());
                    add(t, bl, &mut sums);
                }
            }
            continue;
        }
        let tied = t.name == "token_embd.weight" && !has_output && ties_output(desc);
        let b2 = if tied { Some(b.clone()) } else { None };
        add(t, b, &mut sums);
        if let Some(b) = b2 {
            // The output is token_embd again (TENSOR_DUPLICATED), on the output layer's
            // buffer type; one copy when that is the same one.
            let ob = match output_device {
                Some(d) => Buft::Gpu(d),
                None => cpu_buft(t, s, false),
            };
            if ob != b || OUTPUT_BEFORE_EMBD.contains(&desc.arch.as_str()) {
                add(t, ob, &mut sums);
            }
        }
    }
    let mut out = Vec::new();
    for (lo, hi) in spans.into_iter().flatten() {
        out.push(Buffer { device: device_label(None), buft: "CPU_Mapped".to_string(), kind: Kind::Model, bytes: hi - lo });
    }
    sums.sort_by(|a, b| a.0.cmp(&b.0));
    for (b, bytes) in sums {
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
