//! The settings that fit: the largest context that fits fully offloaded, and llama.cpp's own
//! fitting (`common_fit_params`, `common/fit.cpp`).

use super::weights::FFN_EXPS_REGEX;
use super::{plan, NoPlan, Override, ModelTensors, Plan, Settings};
use serde::Serialize;
use crate::model::description::Description;

/// Whether every device (and the host, when its memory is given) holds what the plan puts there,
/// keeping `margins[i]` bytes free on GPU i (the last margin for the GPUs past the list).
pub fn fits(p: &Plan, margins: &[u64]) -> bool {
    let margin = |label: &str| -> u64 {
        let i = label.strip_prefix("GPU").and_then(|i| i.parse::<usize>().ok()).unwrap_or(0);
        margins.get(i).or(margins.last()).copied().unwrap_or(0)
    };
    p.devices.iter().all(|d| match (d.memory, d.device.as_str()) {
        (None, _) => true,
        (Some(m), "Host") => d.total <= m,
        (Some(m), label) => d.total.saturating_add(margin(label)) <= m,
    })
}

/// The largest context (a multiple of 256, at most the training context) whose plan fits the
/// devices with every layer offloaded; `None` when not even 256 tokens fit.
pub fn largest_context(desc: &Description, tensors: &ModelTensors, s: &Settings, margins: &[u64]) -> Result<Option<u64>, NoPlan> {
    let top = desc.n_ctx_train.max(256) / 256;
    let weights = super::weight_buffers(desc, tensors, s);
    let at = |k: u64| -> Result<bool, NoPlan> {
        let mut t = s.clone();
        t.n_ctx = k * 256;
        Ok(fits(&super::plan_with(desc, &weights, &t)?, margins))
    };
    if !at(1)? {
        return Ok(None);
    }
    // Memory grows with the context: the last k that fits, by bisection.
    let (mut lo, mut hi) = (1u64, top);
    if at(hi)? {
        return Ok(Some(hi * 256));
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if at(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(Some(lo * 256))
}

/// What llama.cpp's fitting settles on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fitted {
    pub n_ctx: u64,
    pub n_gpu_layers: u64,
    /// Layers per device (`-ts`), with more than one device.
    pub tensor_split: Vec<u64>,
    /// `-ot` overrides: (pattern, buffer type), for partly offloaded MoE layers.
    pub overrides: Vec<(String, String)>,
    /// The arguments to paste, as llama-fit-params prints them.
    pub args: String,
}

/// Layers given to one device: `n_layer` in all, the last `n_part` of them partial (their
/// experts, or part of their feed-forward, elsewhere).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Ngl {
    n_layer: u64,
    n_part: u64,
    overflow: Fraction,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
enum Fraction {
    Attn,
    Up,
    Gate,
    #[default]
    Moe,
}

fn overflow_pattern(il: u64, f: Fraction) -> String {
    match f {
        Fraction::Attn => format!("blk\\.{il}\\.ffn_(gate|up|gate_up|down).*"),
        Fraction::Up => format!("blk\\.{il}\\.ffn_(gate|gate_up|down).*"),
        Fraction::Gate => format!("blk\\.{il}\\.ffn_down.*"),
        Fraction::Moe => format!("blk\\.{il}\\.ffn_(up|down|gate_up|gate)_(ch|)exps"),
    }
}

struct Fitter<'a> {
    desc: &'a Description,
    tensors: &'a ModelTensors,
    base: Settings,
    /// n_layer() + 1: the blocks the main model runs and the output layer.
    layers: u64,
}

impl Fitter<'_> {
    /// A probe: the model loaded without mmap and without allocating (`no_alloc`), each
    /// device's total (its own buffers only; host buffers counted for the host, CPU_REPACK
    /// and other devices' buffers left out), and the host's.
    fn measure(&self, s: &Settings) -> Result<(Vec<i64>, i64), NoPlan> {
        let mut t = s.clone();
        t.mmap = false;
        t.no_alloc = true;
        let p = plan(self.desc, self.tensors, &t)?;
        let per = |label: &str| -> i64 {
            p.buffers.iter().filter(|b| b.device == label && b.buft != "CPU_REPACK").map(|b| b.bytes as i64).sum()
        };
        let devs = (0..s.devices.len()).map(|i| per(&super::device_label(Some(i)))).collect();
        Ok((devs, per("Host")))
    }

    fn apply(&self, ngl: &[Ngl], overflow_bufts: &[String], s: &mut Settings) -> Vec<(String, String)> {
        let nd = ngl.len();
        let total: u64 = ngl.iter().map(|n| n.n_layer).sum();
        s.n_gpu_layers = Some(total);
        s.tensor_split = if nd > 1 { ngl.iter().map(|n| n.n_layer as f32).collect() } else { Vec::new() };
        let mut il0 = (self.layers).saturating_sub(total);
        let mut ot = Vec::new();
        for (id, n) in ngl.iter().enumerate() {
            il0 += n.n_layer - n.n_part;
            for il in il0..il0 + n.n_part {
                let first = il == il0;
                let pat = overflow_pattern(il, if first { n.overflow } else { Fraction::Moe });
                let buft = if first { overflow_bufts.get(id).cloned().unwrap_or_else(|| "CPU".to_string()) } else { "CPU".to_string() };
                ot.push((pat, buft));
            }
            il0 += n.n_part;
        }
        s.overrides = ot.iter().filter_map(|(p, b)| Override::parse(&format!("{p}={b}"))).collect();
        ot
    }

    fn memory_for(&self, ngl: &[Ngl], overflow_bufts: &[String], s: &Settings) -> Result<Vec<i64>, NoPlan> {
        let mut t = s.clone();
        self.apply(ngl, overflow_bufts, &mut t);
        Ok(self.measure(&t)?.0)
    }
}

/// The overrides a person gave, as llama-fit-params prints them: `-ot` in order, then
/// `-ncmoe N`'s `blk\.I` + [`FFN_EXPS_REGEX`] for I below N (common.h).
fn user_overrides(s: &Settings) -> Vec<(String, String)> {
    let mut ot: Vec<(String, String)> = s.overrides.iter().map(|o| (o.pattern.clone(), o.buft.clone())).collect();
    for il in 0..s.n_cpu_moe.min(MAX_PRINTED_NCMOE) {
        ot.push((format!(r"blk\.{il}{FFN_EXPS_REGEX}"), "CPU".to_string()));
    }
    ot
}

/// Most `-ncmoe` layers spelled out in printed arguments (a model has at most a few hundred).
pub const MAX_PRINTED_NCMOE: u64 = 4096;

/// The next guess of the false-position search, as `common_fit_params` computes it: the
/// interpolated number of layers stored in a `uint32_t` (a negative guess wraps around and so
/// becomes `delta − 1`), then held to `[1, delta − 1]`.
fn false_position_step(delta: u64, to_target: i64, to_high: i64) -> u64 {
    let guess = (delta as i64).saturating_mul(to_target).checked_div(to_high).unwrap_or(0);
    let wrapped = guess as u32 as u64;
    wrapped.max(1).min(delta - 1)
}

/// llama.cpp's `common_fit_params`: context reduced first (if it was left to the model), then
/// layers filled from the last device to the first, MoE experts overflowing to the host.
/// `margins`: the bytes to keep free per device (one value: every device's). `user_ngl`: an
/// `-ngl` other than llama.cpp's default (−1), which fitting leaves alone. `Err` says why
/// fitting gave up, as llama.cpp says it.
pub fn fit_params(
    desc: &Description,
    tensors: &ModelTensors,
    s: &Settings,
    margins: &[u64],
    n_ctx_min: u64,
    n_ctx_auto: bool,
    user_ngl: Option<i64>,
) -> Result<Fitted, String> {
    let f = Fitter { desc, tensors, base: s.clone(), layers: desc.n_layer() + 1 };
    let err = |e: NoPlan| e.to_string();
    let mut s = f.base.clone();
    let nd = s.devices.len();
    let n_streams = if s.kv_unified { 1 } else { s.n_seq.max(1) };
    let margins: Vec<i64> =
        (0..nd.max(1)).map(|i| margins.get(i).or(margins.last()).map_or(0, |m| i64::try_from(*m).unwrap_or(i64::MAX))).collect();
    let n_ctx_max = desc.n_ctx_train.saturating_mul(n_streams).min(u32::MAX as u64);
    let n_ctx_min_total = n_ctx_min.saturating_mul(n_streams).min(u32::MAX as u64);
    if n_ctx_auto {
        s.n_ctx = n_ctx_max;
    }
    let free: Vec<i64> = s.devices.iter().map(|d| d.memory as i64).collect();
    let host_total = s.host_memory.map(|m| m as i64).unwrap_or(i64::MAX);
    let (full, host_used) = f.measure(&s).map_err(err)?;
    let finish = |s: &Settings, ot: Vec<(String, String)>| -> Fitted {
        // llama-fit-params prints the layer count it was given when it left it alone (-1,
        // "auto", or the user's -2 for "all").
        let ngl_arg = s.n_gpu_layers.map_or(user_ngl.unwrap_or(-1), |n| n as i64);
        let ngl = s.n_gpu_layers.unwrap_or(desc.n_layer_all() + 1);
        // tools/fit-params: the shares up to the last non-zero one, each as a whole number
        // (uint32), when that is more than one.
        let ts: Vec<u64> = match s.tensor_split.iter().rposition(|x| *x != 0.0) {
            Some(last) if last >= 1 => s.tensor_split.iter().take(last + 1).map(|x| *x as u64).collect(),
            _ => Vec::new(),
        };
        // Left alone, the user's overrides are printed as they were given (-ncmoe's as the
        // patterns llama.cpp makes of it).
        let ot = if ot.is_empty() { user_overrides(s) } else { ot };
        let mut args = format!("-c {} -ngl {}", s.n_ctx, ngl_arg);
        if !ts.is_empty() {
            args.push_str(&format!(" -ts {}", ts.iter().map(u64::to_string).collect::<Vec<_>>().join(",")));
        }
        if !ot.is_empty() {
            args.push_str(&format!(" -ot \"{}\"", ot.iter().map(|(p, b)| format!("{p}={b}")).collect::<Vec<_>>().join(",")));
        }
        Fitted { n_ctx: s.n_ctx, n_gpu_layers: ngl, tensor_split: ts, overrides: ot, args }
    };

    // Step 1: nothing to change?
    let (sum_used, sum_free_proj, sum_model): (i64, i64, i64);
    if nd == 0 {
        sum_used = host_used;
        sum_free_proj = host_total.saturating_sub(host_used);
        if sum_free_proj >= margins[0] {
            return Ok(finish(&s, Vec::new()));
        }
        sum_model = 0;
    } else {
        let proj: Vec<i64> = free.iter().zip(&full).map(|(f, u)| f - u).collect();
        sum_used = full.iter().sum();
        sum_free_proj = proj.iter().sum();
        let p = plan(desc, tensors, &Settings { mmap: false, ..s.clone() }).map_err(err)?;
        sum_model = p.devices.iter().filter(|d| d.device != "Host").map(|d| d.model as i64).sum();
        if proj.iter().zip(&margins).all(|(p, m)| p >= m) {
            return Ok(finish(&s, Vec::new()));
        }
    }

    // Step 2: reduce the context.
    let sum_free: i64 = if nd == 0 { host_total } else { free.iter().sum() };
    let global_surplus = sum_free_proj - margins.iter().take(nd.max(1)).sum::<i64>();
    if global_surplus < 0 && n_ctx_auto && n_ctx_max > n_ctx_min_total {
        let mut target = sum_free - margins.iter().take(nd.max(1)).sum::<i64>();
        if nd > 1 {
            let ngl = s.n_gpu_layers.unwrap_or(u64::MAX).min(desc.n_layer()).max(1) as i64;
            let per_layer = sum_model / ngl;
            target -= (nd as i64 + 1) * per_layer / if desc.is_moe() { 6 } else { 2 };
        }
        let mut t = s.clone();
        t.n_ctx = n_ctx_min_total;
        let (min_dev, min_host) = f.measure(&t).map_err(err)?;
        let used_min: i64 = if nd == 0 { min_host } else { min_dev.iter().sum() };
        s.n_ctx = n_ctx_min_total;
        if target > used_min {
            let span = (n_ctx_max - n_ctx_min_total) as i64;
            let add = span * (target - used_min) / (sum_used - used_min).max(1);
            let n = s.n_ctx as i64 + add;
            let align = 256 * n_streams as i64;
            s.n_ctx = (n - n % align).max(n_ctx_min_total as i64) as u64;
            if nd <= 1 {
                return Ok(finish(&s, Vec::new()));
            }
        }
    }
    if nd == 0 {
        return Err("was unable to fit model into system memory by reducing context, abort".to_string());
    }
    if let Some(n) = user_ngl {
        return Err(format!("n_gpu_layers already set by user to {n}, abort"));
    }
    // common/fit.cpp: a -ts with any non-zero share, with several devices.
    if nd > 1 && s.tensor_split.iter().any(|x| *x != 0.0) {
        return Err("model_params::tensor_split already set by user, abort".to_string());
    }
    // `-ncmoe N` is N overrides in llama.cpp (common/arg.cpp: llm_add_n_cpu_ffn_overrides).
    if !s.overrides.is_empty() || s.n_cpu_moe > 0 {
        return Err("model_params::tensor_buft_overrides already set by user, abort".to_string());
    }

    // Step 3: fill devices back to front with whole layers (MoE: without their experts).
    let moe = desc.is_moe();
    let mut surplus_cpu_moe = 0i64;
    if moe {
        let mut t = s.clone();
        t.overrides = Override::parse(r"blk\.\d+\.ffn_(up|down|gate_up|gate)_(ch|)exps=CPU").into_iter().collect();
        let (d, _) = f.measure(&t).map_err(err)?;
        for id in 0..nd {
            surplus_cpu_moe += free[id] - d[id] - margins[id];
        }
    }
    let targets: Vec<i64> = (0..nd).map(|id| free[id] - margins[id]).collect();
    let mut overflow_bufts = vec!["CPU".to_string(); nd];
    let mut ngl = vec![Ngl::default(); nd];
    let mut mem = f.memory_for(&ngl, &overflow_bufts, &s).map_err(err)?;
    for id in (0..nd).rev() {
        let assigned: u64 = ngl[id + 1..].iter().map(|n| n.n_layer).sum();
        let n_unassigned = f.layers.saturating_sub(assigned);
        let mut high = ngl.clone();
        high[id].n_layer = n_unassigned;
        if moe {
            high[id].n_part = if id < nd - 1 { high[id].n_layer } else { high[id].n_layer.saturating_sub(1) };
        }
        if high[id].n_layer == 0 {
            continue;
        }
        let mut mem_high = f.memory_for(&high, &overflow_bufts, &s).map_err(err)?;
        if mem_high[id] > targets[id] {
            let mut delta = high[id].n_layer - ngl[id].n_layer;
            while delta > 1 {
                let step = false_position_step(delta, targets[id] - mem[id], mem_high[id] - mem[id]);
                let mut test = ngl.clone();
                test[id].n_layer += step;
                if moe {
                    test[id].n_part += if id == nd - 1 && test[id].n_part == 0 { step - 1 } else { step };
                }
                let mem_test = f.memory_for(&test, &overflow_bufts, &s).map_err(err)?;
                if mem_test[id] <= targets[id] {
                    ngl = test;
                    mem = mem_test;
                } else {
                    high = test;
                    mem_high = mem_test;
                }
                delta = high[id].n_layer - ngl[id].n_layer;
            }
        } else {
            ngl = high;
            mem = mem_high;
        }
    }
    if !moe || surplus_cpu_moe <= 0 {
        let ot = f.apply(&ngl, &overflow_bufts, &mut s);
        return Ok(finish(&s, ot));
    }

    // Step 4: MoE with room to spare: dense-only layers become full layers, front to back,
    // and one more layer partly (its up / gate / attention part) where it fits.
    let mut id_dense_start = nd;
    for id in (0..nd).rev() {
        if ngl[id].n_layer > 0 {
            id_dense_start = id;
            continue;
        }
        break;
    }
    let mut id = 0;
    while id <= id_dense_start && id_dense_start < nd {
        let mut high = ngl.clone();
        for jd in id_dense_start..nd {
            let mv = if jd < nd - 1 { high[jd].n_layer } else { high[jd].n_layer.saturating_sub(1) };
            high[id].n_layer += mv;
            high[jd].n_layer -= mv;
            high[jd].n_part = 0;
        }
        let mut mem_high = f.memory_for(&high, &overflow_bufts, &s).map_err(err)?;
        if mem_high[id] > targets[id] {
            let full = |n: &Ngl| n.n_layer - n.n_part;
            let mut delta = full(&high[id]).saturating_sub(full(&ngl[id]));
            while delta > 1 {
                let step = false_position_step(delta, targets[id] - mem[id], mem_high[id] - mem[id]);
                let mut test = ngl.clone();
                let mut ds = id_dense_start;
                let mut converted = 0;
                while ds < nd {
                    let c = (step - converted).min(test[ds].n_part);
                    test[ds].n_layer -= c;
                    test[ds].n_part -= c;
                    test[id].n_layer += c;
                    converted += c;
                    if test[ds].n_part > 0 {
                        break;
                    }
                    ds += 1;
                }
                let mem_test = f.memory_for(&test, &overflow_bufts, &s).map_err(err)?;
                if mem_test[id] <= targets[id] {
                    ngl = test;
                    mem = mem_test;
                    id_dense_start = ds;
                } else {
                    high = test;
                    mem_high = mem_test;
                }
                delta = full(&high[id]).saturating_sub(full(&ngl[id]));
            }
        } else {
            ngl = high;
            mem = mem_high;
            // All dense-only layers converted: the last device keeps only the output.
            id_dense_start = nd - 1;
        }
        let _ = &mem;
        // One more layer, partly.
        if id_dense_start < nd && ngl[id_dense_start].n_layer > if id < nd - 1 { 0 } else { 1 } {
            let mut test = ngl.clone();
            let mut ds = id_dense_start;
            test[ds].n_layer -= 1;
            test[ds].n_part = test[ds].n_part.saturating_sub(1);
            test[id].n_layer += 1;
            test[id].n_part += 1;
            if test[ds].n_part == 0 {
                ds += 1;
            }
            test[id].overflow = Fraction::Up;
            let mut ob = overflow_bufts.clone();
            if id < nd - 1 {
                ob[id] = s.devices[id + 1].name.clone();
            }
            let ok = |m: &[i64]| m[id] < targets[id] && (id + 1 == nd || m[id + 1] < targets[id + 1]);
            let mem_test = f.memory_for(&test, &ob, &s).map_err(err)?;
            if ok(&mem_test) {
                ngl = test.clone();
                overflow_bufts = ob.clone();
                mem = mem_test;
                id_dense_start = ds;
                test[id].overflow = Fraction::Gate;
                let mem_test = f.memory_for(&test, &ob, &s).map_err(err)?;
                if ok(&mem_test) {
                    ngl = test;
                    mem = mem_test;
                }
            } else {
                test[id].overflow = Fraction::Attn;
                let mem_test = f.memory_for(&test, &ob, &s).map_err(err)?;
                if ok(&mem_test) {
                    ngl = test;
                    overflow_bufts = ob;
                    mem = mem_test;
                    id_dense_start = ds;
                }
            }
        }
        id += 1;
    }
    let ot = f.apply(&ngl, &overflow_bufts, &mut s);
    Ok(finish(&s, ot))
}
