//! The native command line, one file per command: `tensorpeek inspect FILE|DIR… [--json]`
//! ([`inspect`]), `tensorpeek stats FILE --tensor NAME [--json]` ([`stats`]),
//! `tensorpeek scan PATH… [--format text|json|sarif] [--fail-on …]` ([`scan`]),
//! `tensorpeek sha256 FILE…` ([`sha256`]), `tensorpeek convert FILE… -o OUT` ([`convert`]:
//! pickle-based checkpoints to safetensors), `tensorpeek audit SRC… --against DST… [--json]
//! [--first-mismatch]` ([`audit`]) and the hidden benchmarks `bench-values` ([`bench`]) and
//! `bench-audit` ([`audit::bench`]). Text output is in [`print`]; the exit status in [`exit`]:
//! 0 every file sound (warnings allowed), 1 some file has errors, 2 usage.

mod audit;
mod bench;
mod convert;
pub mod exit;
mod fit;
mod inputs;
mod inspect;
mod print;
mod scan;
mod sha256;
mod stats;

use clap::{Parser, Subcommand};
use exit::{EXIT_SOUND, EXIT_USAGE};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "tensorpeek", version, about = "Inspect safetensors, GGUF, PyTorch and pickle model files from their headers")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// The Hub that hf://ORG/REPO addresses are read from (a mirror; default the public
    /// Hub). HF_TOKEN in the environment is sent to it, and only to it, for gated or
    /// private repositories.
    #[arg(long, global = true, default_value = crate::source::remote::DEFAULT_HUB)]
    hub: String,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List every tensor, the metadata and the findings of each file (only headers are read).
    Inspect {
        /// Files to inspect, or folders holding a checkpoint (shards, index, config.json,
        /// tokenizer files); or URLs (http://, https://: a file, or a
        /// model.safetensors.index.json with its shards and config.json) and Hub
        /// repositories (hf://ORG/REPO[@REV][/PATH]).
        #[arg(required = true)]
        files: Vec<String>,
        /// Print the JSON report (docs/report.md) instead of tables.
        #[arg(long)]
        json: bool,
    },
    /// Scan folders and files for model files — header-only, several at once — and judge
    /// each (safe, suspicious, dangerous, error): one line per file and a summary, JSON
    /// lines, or SARIF for code scanning. Exits 1 when a file counts under --fail-on.
    Scan(scan::ScanArgs),
    /// Read one tensor's bytes and print its value statistics, histogram and preview.
    Stats {
        /// The model file (a path, a URL, or hf://ORG/REPO[@REV][/PATH]; a checkpoint's
        /// shards are searched for the tensor).
        file: String,
        /// The tensor's name, as listed by `inspect`.
        #[arg(long)]
        tensor: String,
        /// Print the JSON report with this tensor's `stats` filled in.
        #[arg(long)]
        json: bool,
    },
    /// Audit a conversion: pair every source tensor with its target (by role for
    /// safetensors → GGUF, by name for two files of one format), undo the converter's
    /// transformations and compare the values, tensor by tensor.
    Audit {
        /// The source: a checkpoint folder, its shards (+ config.json), or one file; or their
        /// URLs, an index URL, or hf://ORG/REPO.
        #[arg(required = true)]
        source: Vec<String>,
        /// The target: a GGUF, all parts of a split GGUF, or safetensors / GGUF of the
        /// source's format (pairing by name).
        #[arg(long, required = true, num_args = 1..)]
        against: Vec<String>,
        /// Print the JSON report with its `audit` object (docs/report.md).
        #[arg(long)]
        json: bool,
        /// Stop at the first mismatching or missing tensor (the audit is then incomplete).
        #[arg(long)]
        first_mismatch: bool,
    },
    /// Benchmark: the audit's throughput (source bytes per second) and peak memory.
    #[command(hide = true)]
    BenchAudit {
        #[arg(required = true)]
        source: Vec<String>,
        #[arg(long, required = true, num_args = 1..)]
        against: Vec<String>,
    },
    /// The SHA-256 of whole files, as `sha256sum` prints it (`HEX  PATH`): compare a
    /// download with its published hash.
    Sha256 {
        /// Files (a folder: each of its files), URLs or hf://ORG/REPO[@REV][/PATH].
        #[arg(required = true)]
        files: Vec<String>,
    },
    /// Convert PyTorch / pickle / numpy files to one safetensors file, without loading them
    /// (never a file judged dangerous or unreadable; tensor bytes copied as stored).
    Convert {
        /// The input files (several: their tensors go into one output); paths, URLs or
        /// hf://ORG/REPO[@REV][/PATH].
        #[arg(required = true)]
        files: Vec<String>,
        /// The safetensors file to write.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Will it run here? The memory llama.cpp would allocate to run a GGUF model — weights,
    /// KV cache, compute buffers — per device, from the header alone. Takes llama.cpp's own
    /// flags (-c, -np, -b, -ub, -ctk, -ctv, -fa, --swa-full, -ngl, -ts, -ot, -ncmoe,
    /// --no-mmap); --gpu and --ram give the devices, --fit prints the arguments that fit.
    Fit(fit::FitArgs),
    /// Benchmark: BF16 → stats throughput over a synthetic 128256×3072 tensor (in memory).
    #[command(hide = true)]
    BenchValues {
        /// Elements (default: 128256 × 3072, a Llama-3 embedding table).
        #[arg(long, default_value_t = crate::bench::BENCH_ROWS * crate::bench::BENCH_ROW)]
        elements: u64,
        /// Element type to benchmark (BF16, F16, F32, F8_E4M3, …, or a ggml type).
        #[arg(long, default_value = "BF16")]
        dtype: String,
        /// Read --dtype as a ggml type name first.
        #[arg(long)]
        gguf: bool,
        /// Which runs: with the SHA-256 ("on"), without ("off"), or "both".
        #[arg(long, default_value = "both")]
        sha: String,
    },
}

pub fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("fit") {
        args = fit::rewrite_args(args);
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { EXIT_SOUND });
        }
    };
    let remote = inputs::Remote { hub: cli.hub };
    match cli.command {
        Command::Inspect { files, json } => inspect::run(&files, json, &remote),
        Command::Scan(a) => scan::run(&a, &remote),
        Command::Stats { file, tensor, json } => stats::stats(&file, &tensor, json, &remote),
        Command::Audit { source, against, json, first_mismatch } => audit::run(&source, &against, json, first_mismatch, &remote),
        Command::BenchAudit { source, against } => audit::bench(&source, &against, &remote),
        Command::Sha256 { files } => sha256::run(&files, &remote),
        Command::Convert { files, output } => convert::run(&files, &output, &remote),
        Command::Fit(a) => fit::run(&a, &remote),
        Command::BenchValues { elements, dtype, gguf, sha } => bench::bench(elements, &dtype, gguf, &sha),
    }
}

/// The name a file goes by in the report: its last path component.
fn file_name(path: &std::path::Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}
