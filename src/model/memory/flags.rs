//! llama.cpp's flags as plain data, and the projection they ask for: what `tensorpeek fit`
//! takes on the command line (`cli/fit.rs` parses them with clap into [`Flags`]) and what
//! the JavaScript library's `fit(input, options)` takes as an object (`js/`, deserialized
//! from camelCase keys). One conversion to [`Settings`] and one projection for both.

use super::fit::{self, Fitted};
use super::weights::FFN_EXPS_REGEX;
use super::{Backend, CacheType, Device, FlashAttn, NoPlan, Override, ModelTensors, Plan, Repack, Settings, MAX_DEVICES, MAX_OVERRIDES};
use crate::model::description::Description;
use serde::Deserialize;

/// The flags of `tensorpeek fit`, with llama.cpp's defaults (see `cli/fit.rs` for each
/// one's spelling on the command line).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Flags {
    pub ctx_size: u64,
    pub parallel: u64,
    pub batch_size: u64,
    pub ubatch_size: u64,
    pub cache_type_k: String,
    pub cache_type_v: String,
    pub flash_attn: String,
    pub swa_full: bool,
    pub kv_unified: bool,
    pub n_gpu_layers: Option<i64>,
    pub tensor_split: Vec<f32>,
    pub override_tensor: Vec<String>,
    pub cpu_moe: bool,
    pub n_cpu_moe: u64,
    pub no_mmap: bool,
    pub load_mode: String,
    pub no_kv_offload: bool,
    /// The GPUs' free memory, `24GiB` each.
    pub gpu: Vec<String>,
    pub backend: String,
    /// Host memory, `64GiB`.
    pub ram: Option<String>,
    /// Also the arguments that fit the devices (llama-fit-params).
    pub fit: bool,
    /// MiB kept free on each GPU when fitting.
    pub fit_target: u64,
    /// MiB kept free per GPU when fitting (`-fitt 8000,2000`), in the order of `gpu`; devices
    /// past the list keep llama.cpp's default 1024. Empty: `fit_target` for every device.
    pub fit_targets: Vec<u64>,
    /// `-sm`: how layers are split over the GPUs; only `layer` (llama.cpp's default) is modelled.
    pub split_mode: String,
    /// The smallest context fitting may go down to.
    pub fit_ctx: u64,
}

impl Default for Flags {
    /// llama.cpp's command-line defaults.
    fn default() -> Flags {
        Flags {
            ctx_size: 0,
            parallel: 1,
            batch_size: 2048,
            ubatch_size: 512,
            cache_type_k: "f16".into(),
            cache_type_v: "f16".into(),
            flash_attn: "auto".into(),
            swa_full: false,
            kv_unified: false,
            n_gpu_layers: None,
            tensor_split: Vec::new(),
            override_tensor: Vec::new(),
            cpu_moe: false,
            n_cpu_moe: 0,
            no_mmap: false,
            load_mode: "auto".into(),
            no_kv_offload: false,
            gpu: Vec::new(),
            backend: "cuda".into(),
            ram: None,
            fit: false,
            fit_target: DEFAULT_FIT_TARGET,
            fit_targets: Vec::new(),
            split_mode: "layer".into(),
            fit_ctx: 4096,
        }
    }
}

/// `24GiB`, `512MiB`, `8GB`, `1.5TiB`, or a plain number of bytes.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok()?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024.0 * 1024.0,
        "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tib" => 1024f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        _ => return None,
    };
    let bytes = v * mult;
    (bytes.is_finite() && (0.0..1.8e19).contains(&bytes)).then_some(bytes as u64)
}

/// `-ngl` as llama.cpp reads it (common/arg.cpp): `auto` is −1 (its default: fitting may
/// choose), `all` is −2, else a number (any negative one: every layer).
pub fn parse_ngl(text: &str) -> Result<i64, String> {
    match text.trim() {
        "auto" => Ok(-1),
        "all" => Ok(-2),
        t => t.parse::<i64>().map_err(|_| format!("-ngl: {t} is not a number of layers, auto or all")),
    }
}

/// `-ts 3,1` as llama.cpp reads it: proportions separated by `,` or `/` (`common/arg.cpp`
/// splits on the regex `[,/]+`), at most [`MAX_DEVICES`]; an empty text is no split.
pub fn parse_tensor_split(text: &str) -> Result<Vec<f32>, String> {
    let parts: Vec<&str> = text.split([',', '/']).map(str::trim).filter(|p| !p.is_empty()).collect();
    if parts.len() > MAX_DEVICES {
        return Err(format!("-ts: at most {MAX_DEVICES} proportions"));
    }
    parts
        .iter()
        .map(|p| match p.parse::<f32>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
            _ => Err(format!("-ts: {p} is not a proportion such as 3 or 0.5")),
        })
        .collect()
}

/// `-ot A=CPU,B=CUDA1` as llama.cpp reads it: overrides separated by commas.
pub fn split_overrides(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|p| !p.is_empty()).map(str::to_string).collect()
}

/// A number as the shortest text that reads back as it (`3`, `0.5`).
fn short_number(v: f32) -> String {
    if v.fract() == 0.0 && v.abs() < 1e9 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

impl Flags {
    /// The margin fitting keeps free on each of `n_devices` GPUs, in bytes (`-fitt`: one value
    /// for all, or one per device with llama.cpp's 1024 MiB past the list).
    pub fn margins(&self, n_devices: usize) -> Vec<u64> {
        let mib = |m: u64| m.saturating_mul(1 << 20);
        (0..n_devices.max(1))
            .map(|i| match self.fit_targets.as_slice() {
                [] => mib(self.fit_target),
                list => mib(list.get(i).copied().unwrap_or(DEFAULT_FIT_TARGET)),
            })
            .collect()
    }

    /// The settings these flags say, or the sentence saying which flag is wrong.
    pub fn settings(&self) -> Result<Settings, String> {
        let a = self;
        if a.split_mode != "layer" {
            return Err(format!("-sm: {} is not modelled (only layer, llama.cpp's default)", a.split_mode));
        }
        let backend = Backend::parse(&a.backend).ok_or_else(|| format!("--backend: {} is not cuda or rpc", a.backend))?;
        let mut devices = Vec::new();
        for (i, g) in a.gpu.iter().enumerate() {
            let memory = parse_size(g).ok_or_else(|| format!("--gpu: {g} is not a size such as 24GiB"))?;
            let name = match backend {
                Backend::Cuda => format!("CUDA{i}"),
                Backend::Rpc => format!("RPC{i}"),
            };
            devices.push(Device { name, backend, memory });
        }
        if devices.len() > MAX_DEVICES {
            return Err(format!("--gpu: at most {MAX_DEVICES} devices"));
        }
        let cache = |s: &str, flag: &str| CacheType::parse(s).ok_or_else(|| format!("{flag}: {s} is not one of f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1"));
        let mut overrides = Vec::new();
        for o in &a.override_tensor {
            overrides.push(Override::parse(o).ok_or_else(|| format!("-ot: {o} is not PATTERN=BUFT with a valid pattern"))?);
        }
        if a.cpu_moe {
            overrides.push(Override::parse(&format!("{FFN_EXPS_REGEX}=CPU")).ok_or("internal: the -cmoe pattern")?);
        }
        if overrides.len() > MAX_OVERRIDES {
            return Err(format!("-ot: at most {MAX_OVERRIDES} overrides"));
        }
        Ok(Settings {
            n_ctx: a.ctx_size,
            n_seq: a.parallel,
            n_batch: a.batch_size,
            n_ubatch: a.ubatch_size,
            type_k: cache(&a.cache_type_k, "-ctk")?,
            type_v: cache(&a.cache_type_v, "-ctv")?,
            flash_attn: FlashAttn::parse(&a.flash_attn).ok_or_else(|| format!("-fa: {} is not on, off or auto", a.flash_attn))?,
            swa_full: a.swa_full,
            kv_unified: a.kv_unified,
            // llama.cpp: a negative -ngl means all layers.
            n_gpu_layers: a.n_gpu_layers.and_then(|n| u64::try_from(n).ok()),
            tensor_split: a.tensor_split.clone(),
            overrides,
            n_cpu_moe: a.n_cpu_moe,
            mmap: !a.no_mmap
                && match a.load_mode.as_str() {
                    "auto" | "mmap" | "mmap+mlock" => true,
                    "none" | "mlock" => false,
                    m => return Err(format!("-lm: {m} is not auto, none, mmap, mlock or mmap+mlock")),
                },
            offload_kqv: !a.no_kv_offload,
            devices,
            host_memory: a.ram.as_deref().map(|r| parse_size(r).ok_or_else(|| format!("--ram: {r} is not a size such as 64GiB"))).transpose()?,
            repack: if backend == Backend::Cuda { Repack::None } else { Repack::Avx2 },
            no_alloc: false,
        })
    }
}

impl Flags {
    /// `-ngl` when it is not llama.cpp's default (−1, "auto"): then its fitting leaves the
    /// layers alone (common/fit.cpp compares with the default).
    pub fn user_ngl(&self) -> Option<i64> {
        self.n_gpu_layers.filter(|n| *n != -1)
    }

    /// The llama.cpp arguments these flags set away from its defaults, as a person types
    /// them, but for those llama-fit-params prints itself (`-c`, `-ngl`, `-ts`, and `-ot`
    /// with `-cmoe`/`-ncmoe` as patterns): what the page shows before the fitted arguments.
    pub fn args_beside_fitted(&self) -> Vec<String> {
        let d = Flags::default();
        let mut f = Vec::new();
        if self.parallel != d.parallel {
            f.push(format!("-np {}", self.parallel));
        }
        if self.batch_size != d.batch_size {
            f.push(format!("-b {}", self.batch_size));
        }
        if self.ubatch_size != d.ubatch_size {
            f.push(format!("-ub {}", self.ubatch_size));
        }
        if self.cache_type_k != d.cache_type_k {
            f.push(format!("-ctk {}", self.cache_type_k));
        }
        if self.cache_type_v != d.cache_type_v {
            f.push(format!("-ctv {}", self.cache_type_v));
        }
        if self.flash_attn != d.flash_attn {
            f.push(format!("-fa {}", self.flash_attn));
        }
        if self.swa_full {
            f.push("--swa-full".into());
        }
        if self.kv_unified {
            f.push("-kvu".into());
        }
        if self.no_kv_offload {
            f.push("-nkvo".into());
        }
        if self.no_mmap || matches!(self.load_mode.as_str(), "none" | "mlock") {
            f.push("--no-mmap".into());
        }
        f
    }

    /// The llama.cpp arguments these flags set away from its defaults, as a person types
    /// them, `-c` and `-ngl` left out.
    pub fn args(&self) -> Vec<String> {
        let mut f = self.args_beside_fitted();
        if !self.tensor_split.is_empty() {
            f.push(format!("-ts {}", self.tensor_split.iter().map(|v| short_number(*v)).collect::<Vec<_>>().join(",")));
        }
        if !self.override_tensor.is_empty() {
            f.push(format!("-ot \"{}\"", self.override_tensor.join(",")));
        }
        if self.cpu_moe {
            f.push("-cmoe".into());
        }
        if self.n_cpu_moe != 0 {
            f.push(format!("-ncmoe {}", self.n_cpu_moe));
        }
        f
    }
}

/// llama.cpp's default `-fitt`, MiB.
pub const DEFAULT_FIT_TARGET: u64 = 1024;

/// Why there is nothing to project.
pub const NO_GGUF: &str = "no GGUF model among the files (fit reads a GGUF header: its architecture and tensors)";

/// What the flags ask for: the plan, the fitted arguments (`fit`: `Err` says why fitting
/// gave up), the largest context with every layer offloaded.
#[derive(Clone, Debug)]
pub struct Projection {
    pub plan: Plan,
    pub fitted: Option<Result<Fitted, String>>,
    pub largest: Option<u64>,
}

impl Projection {
    /// Whether llama.cpp would load the model with these settings on these devices.
    pub fn runs(&self) -> bool {
        self.plan.refused.is_none() && fit::fits(&self.plan, &[0])
    }
}

/// The projection of `tensorpeek fit` (and the library's `fit`) for settings `s` made from
/// `flags`.
pub fn project(desc: &Description, tensors: &ModelTensors, s: &Settings, flags: &Flags) -> Result<Projection, NoPlan> {
    let plan = super::plan(desc, tensors, s)?;
    let margins = flags.margins(s.devices.len());
    let fitted = flags
        .fit
        .then(|| fit::fit_params(desc, tensors, s, &margins, flags.fit_ctx, flags.ctx_size == 0, flags.user_ngl()));
    let largest = fit::largest_context(desc, tensors, s, &margins).ok().flatten();
    Ok(Projection { plan, fitted, largest })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensor_split_as_llama_cpp_splits_it() {
        assert_eq!(parse_tensor_split("3,1"), Ok(vec![3.0, 1.0]));
        assert_eq!(parse_tensor_split(" 3/1 "), Ok(vec![3.0, 1.0]));
        assert_eq!(parse_tensor_split("0.5,,0.5"), Ok(vec![0.5, 0.5]));
        assert_eq!(parse_tensor_split(""), Ok(vec![]));
        assert_eq!(parse_tensor_split("3,x"), Err("-ts: x is not a proportion such as 3 or 0.5".to_string()));
        assert!(parse_tensor_split("-1,2").is_err());
        assert!(parse_tensor_split(&vec!["1"; MAX_DEVICES + 1].join(",")).is_err());
    }

    #[test]
    fn ngl_words() {
        assert_eq!(parse_ngl("auto"), Ok(-1));
        assert_eq!(parse_ngl("all"), Ok(-2));
        assert_eq!(parse_ngl(" 12 "), Ok(12));
        assert!(parse_ngl("most").is_err());
        let f = |n| Flags { n_gpu_layers: n, ..Flags::default() };
        assert_eq!([None, Some(-1), Some(-2), Some(0), Some(99)].map(|n| f(n).user_ngl()), [None, None, Some(-2), Some(0), Some(99)]);
    }

    #[test]
    fn args_are_the_flags_away_from_the_defaults() {
        assert!(Flags::default().args().is_empty());
        let f = Flags {
            ctx_size: 8192,
            n_gpu_layers: Some(10),
            parallel: 2,
            batch_size: 1024,
            cache_type_v: "q8_0".into(),
            flash_attn: "on".into(),
            kv_unified: true,
            no_kv_offload: true,
            load_mode: "none".into(),
            tensor_split: vec![3.0, 0.5],
            override_tensor: vec![r"blk\.1\.ffn_up_exps=CPU".into(), r"blk\.2\..*=CUDA1".into()],
            cpu_moe: true,
            n_cpu_moe: 4,
            gpu: vec!["24GiB".into()],
            ..Flags::default()
        };
        assert_eq!(
            f.args(),
            ["-np 2", "-b 1024", "-ctv q8_0", "-fa on", "-kvu", "-nkvo", "--no-mmap", "-ts 3,0.5", r#"-ot "blk\.1\.ffn_up_exps=CPU,blk\.2\..*=CUDA1""#, "-cmoe", "-ncmoe 4"]
        );
        assert_eq!(f.args_beside_fitted(), ["-np 2", "-b 1024", "-ctv q8_0", "-fa on", "-kvu", "-nkvo", "--no-mmap"]);
        // What the arguments say is what the flags say.
        let s = f.settings().unwrap();
        assert_eq!((s.n_batch, s.kv_unified, s.offload_kqv, s.mmap, s.n_cpu_moe), (1024, true, false, false, 4));
        assert_eq!(s.overrides.len(), 3, "two -ot and -cmoe's");
    }
}
