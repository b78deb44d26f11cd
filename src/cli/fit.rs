//! `tensorpeek fit FILE… [llama.cpp's flags] [--gpu 24GiB,…] [--ram 64GiB] [--fit] [--json]`:
//! the memory llama.cpp would allocate to run a GGUF model with these settings, buffer by
//! buffer and per device, from the header alone ([`crate::model::memory`]). The flags are
//! llama.cpp's own spellings (`-c`, `-np`, `-ngl`, `-ctk`, `-ot`, …), so that a person can paste
//! those of the command they run.

use super::exit::{EXIT_FINDINGS, EXIT_SOUND, EXIT_USAGE};
use super::inputs::{open_inputs, Remote};
use crate::fmt::{human_bytes, thousands};
use crate::model::description::Description;
use crate::model::memory::flags::{project, Flags, NO_GGUF};
use crate::model::memory::{self, Plan, Settings};
use crate::report::{FileReport, MemorySection, Report};
use crate::source::set::{open_set, SetOptions};
use std::collections::BTreeMap;
use std::process::ExitCode;

/// llama.cpp's short spellings, rewritten to the long ones before parsing (clap takes only
/// one-letter short flags; llama.cpp's `-np`, `-ctk`, … are several letters after one dash).
pub const ALIASES: &[(&str, &str)] = &[
    ("-c", "--ctx-size"),
    ("-np", "--parallel"),
    ("-b", "--batch-size"),
    ("-ub", "--ubatch-size"),
    ("-ctk", "--cache-type-k"),
    ("-ctv", "--cache-type-v"),
    ("-fa", "--flash-attn"),
    ("-ngl", "--n-gpu-layers"),
    ("-ot", "--override-tensor"),
    ("-ts", "--tensor-split"),
    ("-nkvo", "--no-kv-offload"),
    ("-cmoe", "--cpu-moe"),
    ("-ncmoe", "--n-cpu-moe"),
    ("-fitt", "--fit-target"),
    ("-fitc", "--fit-ctx"),
    ("-kvu", "--kv-unified"),
    ("-lm", "--load-mode"),
    ("-sm", "--split-mode"),
];

/// Rewrites `-np 4` to `--parallel 4` (and `-np=4`), leaving everything else alone.
pub fn rewrite_args(args: Vec<String>) -> Vec<String> {
    args.into_iter()
        .map(|a| {
            let (flag, rest) = match a.split_once('=') {
                Some((f, r)) => (f.to_string(), Some(r.to_string())),
                None => (a.clone(), None),
            };
            match ALIASES.iter().find(|(s, _)| *s == flag) {
                Some((_, long)) => match rest {
                    Some(r) => format!("{long}={r}"),
                    None => long.to_string(),
                },
                None => a,
            }
        })
        .collect()
}

/// The flags, as clap parsed them.
#[derive(clap::Args, Debug, Clone)]
pub struct FitArgs {
    /// The GGUF file (all parts of a split model): paths, URLs or hf://ORG/REPO[/FILE].
    #[arg(required = true)]
    pub files: Vec<String>,
    /// `-c`: context length (0 = the model's training context).
    #[arg(long = "ctx-size", default_value_t = 0)]
    pub ctx_size: u64,
    /// `-np`: parallel sequences.
    #[arg(long = "parallel", default_value_t = 1)]
    pub parallel: u64,
    /// `-b`: logical batch size.
    #[arg(long = "batch-size", default_value_t = 2048)]
    pub batch_size: u64,
    /// `-ub`: physical batch size.
    #[arg(long = "ubatch-size", default_value_t = 512)]
    pub ubatch_size: u64,
    /// `-ctk`: K cache type (f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1).
    #[arg(long = "cache-type-k", default_value = "f16")]
    pub cache_type_k: String,
    /// `-ctv`: V cache type.
    #[arg(long = "cache-type-v", default_value = "f16")]
    pub cache_type_v: String,
    /// `-fa`: flash attention, on, off or auto.
    #[arg(long = "flash-attn", default_value = "auto")]
    pub flash_attn: String,
    /// `--swa-full`: a full-size cache for sliding-window layers.
    #[arg(long = "swa-full")]
    pub swa_full: bool,
    /// `-kvu`: one KV stream for all sequences.
    #[arg(long = "kv-unified")]
    pub kv_unified: bool,
    /// `-ngl`: layers to offload (the output layer counts as one), `auto` (the default) or `all`.
    #[arg(long = "n-gpu-layers", value_parser = memory::flags::parse_ngl, allow_hyphen_values = true)]
    pub n_gpu_layers: Option<i64>,
    /// `-ts`: share of layers per GPU, e.g. 3,1.
    #[arg(long = "tensor-split", value_delimiter = ',')]
    pub tensor_split: Vec<f32>,
    /// `-ot PATTERN=BUFT,…`: tensors whose name matches go to that buffer type (CPU or a GPU's).
    #[arg(long = "override-tensor", value_delimiter = ',')]
    pub override_tensor: Vec<String>,
    /// `-cmoe`: every expert tensor on the CPU.
    #[arg(long = "cpu-moe")]
    pub cpu_moe: bool,
    /// `-ncmoe N`: the expert tensors of the first N layers on the CPU.
    #[arg(long = "n-cpu-moe", default_value_t = 0)]
    pub n_cpu_moe: u64,
    /// Load without mmap.
    #[arg(long = "no-mmap")]
    pub no_mmap: bool,
    /// `-lm`: auto or mmap (mapped), none (read into buffers, as --no-mmap).
    #[arg(long = "load-mode", default_value = "auto")]
    pub load_mode: String,
    /// `-nkvo`: keep the KV cache on the host.
    #[arg(long = "no-kv-offload")]
    pub no_kv_offload: bool,
    /// The GPUs' free memory, e.g. 24GiB or 24GiB,8GiB.
    #[arg(long = "gpu", value_delimiter = ',')]
    pub gpu: Vec<String>,
    /// The GPUs' kind: cuda, or rpc (ggml's RPC server: the reference tests' second device).
    #[arg(long = "backend", default_value = "cuda")]
    pub backend: String,
    /// Host memory, e.g. 64GiB.
    #[arg(long = "ram")]
    pub ram: Option<String>,
    /// Print the arguments that fit the devices, as llama-fit-params does.
    #[arg(long = "fit")]
    pub fit: bool,
    /// `-fitt`: memory to keep free on each GPU, MiB (llama.cpp's default 1024); one value for
    /// all, or one per GPU (8000,2000).
    #[arg(long = "fit-target", value_delimiter = ',', default_value = "1024")]
    pub fit_target: Vec<u64>,
    /// `-sm`: how layers are split over the GPUs (layer, llama.cpp's default, is what is modelled).
    #[arg(long = "split-mode", default_value = "layer")]
    pub split_mode: String,
    /// `-fitc`: the smallest context fitting may go down to.
    #[arg(long = "fit-ctx", default_value_t = 4096)]
    pub fit_ctx: u64,
    /// Print the JSON report with its `memory` object (docs/report.md).
    #[arg(long)]
    pub json: bool,
    /// Benchmark (scripts/bench.sh): time N projections and N chart sweeps, print the medians.
    #[arg(long, hide = true)]
    pub bench: Option<usize>,
}

impl FitArgs {
    /// The flags as plain data ([`Flags`]: the conversion to settings and the projection are
    /// the model's, shared with the JavaScript library's `fit`).
    pub fn flags(&self) -> Flags {
        let a = self.clone();
        Flags {
            ctx_size: a.ctx_size,
            parallel: a.parallel,
            batch_size: a.batch_size,
            ubatch_size: a.ubatch_size,
            cache_type_k: a.cache_type_k,
            cache_type_v: a.cache_type_v,
            flash_attn: a.flash_attn,
            swa_full: a.swa_full,
            kv_unified: a.kv_unified,
            n_gpu_layers: a.n_gpu_layers,
            tensor_split: a.tensor_split,
            override_tensor: a.override_tensor,
            cpu_moe: a.cpu_moe,
            n_cpu_moe: a.n_cpu_moe,
            no_mmap: a.no_mmap,
            load_mode: a.load_mode,
            no_kv_offload: a.no_kv_offload,
            gpu: a.gpu,
            backend: a.backend,
            ram: a.ram,
            fit: a.fit,
            fit_target: match a.fit_target.as_slice() {
                [one] => *one,
                _ => crate::model::memory::flags::DEFAULT_FIT_TARGET,
            },
            fit_targets: if a.fit_target.len() > 1 { a.fit_target } else { Vec::new() },
            split_mode: a.split_mode,
            fit_ctx: a.fit_ctx,
        }
    }
}

pub fn run(a: &FitArgs, remote: &Remote) -> ExitCode {
    let flags = a.flags();
    let s = match flags.settings() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("tensorpeek fit: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let opened = match open_inputs(&a.files, remote, false) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("tensorpeek: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let set = pollster::block_on(open_set(&opened.files, SetOptions { classify_by_content: true }, |_, _| {}));
    opened.report_fetched();
    let Some((desc, tensors)) = memory::from_gguf_files(&set.ggufs()) else {
        eprintln!("tensorpeek fit: {NO_GGUF}");
        return ExitCode::from(EXIT_USAGE);
    };
    if let Some(n) = a.bench {
        return bench(&desc, &tensors, &s, n.max(1));
    }
    let p = match project(&desc, &tensors, &s, &flags) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("tensorpeek fit: {e}");
            return ExitCode::from(EXIT_FINDINGS);
        }
    };
    if a.json {
        let mut report = Report::new(set.inspections().map(|i| FileReport::borrowed(i, &BTreeMap::new())).collect());
        report.memory = Some(Box::new(MemorySection::of(&desc, &p)));
        if let Err(code) = super::print::print_report(&report) {
            return code;
        }
    } else {
        print_plan(&desc, &p.plan, p.largest);
        match &p.fitted {
            Some(Ok(f)) => println!("\nfits with: {}", f.args),
            Some(Err(e)) => println!("\ndoes not fit: {e}"),
            None => {}
        }
    }
    ExitCode::from(if p.runs() { EXIT_SOUND } else { EXIT_FINDINGS })
}

fn print_plan(desc: &Description, p: &Plan, largest: Option<u64>) {
    println!(
        "{}: {} layers, context {} ({} per sequence × {} sequences), batch {} / ubatch {}",
        desc.arch,
        desc.n_layer_all(),
        thousands(p.params.n_ctx),
        thousands(p.params.n_ctx_seq),
        p.params.n_seq,
        p.params.n_batch,
        p.params.n_ubatch
    );
    let kv = &p.kv;
    let swa = kv.swa_cells.map(|c| format!(", SWA {} cells", thousands(c))).unwrap_or_default();
    let indexer = if kv.indexer_layers > 0 {
        format!("; indexer cache {} layers, K {}, V {}", kv.indexer_layers, human_bytes(kv.indexer_k_bytes), human_bytes(kv.indexer_v_bytes))
    } else {
        String::new()
    };
    println!(
        "KV cache: {} cells{swa} × {} streams, {} layers, K ({}) {}, V ({}) {}{indexer}{}",
        thousands(kv.cells),
        kv.streams,
        kv.layers,
        kv.type_k.name(),
        human_bytes(kv.k_bytes),
        kv.type_v.name(),
        human_bytes(kv.v_bytes),
        if kv.recurrent_layers > 0 {
            format!("; recurrent state {} layers, R {}, S {}", kv.recurrent_layers, human_bytes(kv.r_bytes), human_bytes(kv.s_bytes))
        } else {
            String::new()
        }
    );
    println!("\n{:<8} {:<24} {:<8} {:>16}", "device", "buffer", "kind", "bytes");
    for b in &p.buffers {
        println!("{:<8} {:<24} {:<8} {:>16}  ({})", b.device, b.buft, format!("{:?}", b.kind).to_lowercase(), thousands(b.bytes), human_bytes(b.bytes));
    }
    println!("\n{:<8} {:>12} {:>12} {:>12} {:>12} {:>12}", "device", "model", "context", "compute", "total", "left");
    for d in &p.devices {
        let left = d.left.map_or_else(|| "-".to_string(), |l| if l < 0 { format!("-{}", human_bytes(l.unsigned_abs())) } else { human_bytes(l as u64) });
        println!("{:<8} {:>12} {:>12} {:>12} {:>12} {:>12}", d.device, human_bytes(d.model), human_bytes(d.context), human_bytes(d.compute), human_bytes(d.total), left);
    }
    if let Some(l) = largest {
        println!("\nlargest context fully offloaded: {}", thousands(l));
    }
    for w in &p.warnings {
        println!("warning: {w}");
    }
    if let Some(r) = &p.refused {
        println!("llama.cpp would refuse: {r}");
    }
}

/// The time of one projection, of one chart's worth (24 contexts up to the training
/// context) and of the fitting, medians of `n` runs each, beside issue 22's targets.
fn bench(desc: &Description, tensors: &memory::ModelTensors, s: &Settings, n: usize) -> ExitCode {
    use std::time::Instant;
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mut one = Vec::with_capacity(n);
    let mut sweep = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let _ = memory::plan(desc, tensors, s);
        one.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let w = memory::weight_buffers(desc, tensors, s);
        for k in 1..=24u64 {
            let mut x = s.clone();
            x.n_ctx = (desc.n_ctx_train * k / 24).max(256);
            let _ = memory::plan_with(desc, &w, &x);
        }
        sweep.push(t.elapsed().as_secs_f64() * 1e3);
    }
    // The fitting the page's card runs at every change (1 GiB margin, a 4096-token floor, the
    // context the model's): the first run matches each override pattern it tries against
    // the names, the later ones find those matches kept.
    let mut fitting = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let _ = memory::fit::fit_params(desc, tensors, s, &[1 << 30], 4096, true, None);
        fitting.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let first = fitting.first().copied().unwrap_or(0.0);
    println!(
        "bench-fit: {} tensors, {} layers: one projection {:.3} ms (target <= 5 ms), a 24-point chart {:.2} ms, \
         the fitting {:.1} ms ({:.1} the first time; target <= 50 ms) (median of {n})",
        thousands(tensors.len() as u64),
        desc.n_layer_all(),
        median(one),
        median(sweep),
        median(fitting),
        first
    );
    ExitCode::from(EXIT_SOUND)
}
