//! The native command line: `tensorpeek inspect FILE… [--json]`,
//! `tensorpeek stats FILE --tensor NAME [--json]`.
//! Exit status: 0 every file sound (warnings allowed), 1 some file has errors, 2 usage.

use crate::fmt::{human_bytes, shape, thousands};
use crate::report::{FileReport, Report};
use crate::source::{self, file::FileSource};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "tensorpeek", version, about = "Inspect safetensors and GGUF model files from their headers")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List every tensor, the metadata and the findings of each file (only headers are read).
    Inspect {
        /// Files to inspect.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print the JSON report (docs/report.md) instead of tables.
        #[arg(long)]
        json: bool,
    },
    /// Read one tensor's bytes and print its value statistics, histogram and preview.
    Stats {
        /// The model file.
        file: PathBuf,
        /// The tensor's name, as listed by `inspect`.
        #[arg(long)]
        tensor: String,
        /// Print the JSON report with this tensor's `stats` filled in.
        #[arg(long)]
        json: bool,
    },
    /// Benchmark: BF16 → stats throughput over a synthetic 128256×3072 tensor (in memory).
    #[command(hide = true)]
    BenchValues {
        /// Elements (default: 128256 × 3072, a Llama-3 embedding table).
        #[arg(long, default_value_t = 128_256 * 3072)]
        elements: u64,
        /// Element type to benchmark (BF16, F16, F32, F8_E4M3, …, or a ggml type with --gguf).
        #[arg(long, default_value = "BF16")]
        dtype: String,
        /// Treat --dtype as a ggml type.
        #[arg(long)]
        gguf: bool,
        /// Which runs: with the SHA-256 ("on"), without ("off"), or "both".
        #[arg(long, default_value = "both")]
        sha: String,
    },
}

pub const EXIT_SOUND: u8 = 0;
pub const EXIT_FINDINGS: u8 = 1;
pub const EXIT_USAGE: u8 = 2;

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { EXIT_SOUND });
        }
    };
    match cli.command {
        Command::Inspect { files, json } => inspect(&files, json),
        Command::Stats { file, tensor, json } => crate::cli_values::stats(&file, &tensor, json),
        Command::BenchValues { elements, dtype, gguf, sha } => crate::cli_values::bench(elements, &dtype, gguf, &sha),
    }
}

fn inspect(paths: &[PathBuf], json: bool) -> ExitCode {
    let mut files = Vec::new();
    for path in paths {
        let src = match FileSource::open(path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("tensorpeek: cannot open {}: {e}", path.display());
                return ExitCode::from(EXIT_USAGE);
            }
        };
        let name = path
            .file_name()
            .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        let inspection = pollster::block_on(source::inspect(&src, &name));
        files.push(inspection.report);
    }
    let report = Report::new(files);
    if json {
        println!("{}", report.to_json_pretty());
    } else {
        for f in &report.files {
            print_file(f);
        }
    }
    ExitCode::from(if report.ok() { EXIT_SOUND } else { EXIT_FINDINGS })
}

fn print_file(f: &FileReport) {
    println!("{} — {} ({} bytes, {})", f.name, f.format.name(), thousands(f.size), human_bytes(f.size));
    if let Some(n) = f.header_len {
        println!("  header length N   {}", thousands(n));
    }
    if let Some(v) = f.gguf_version {
        println!("  GGUF version      {v}");
    }
    if let Some(d) = f.data_start {
        println!("  data starts at    {}", thousands(d));
    }
    println!("  tensors           {}", thousands(f.totals.tensors));
    println!("  parameters        {}", thousands(f.totals.params));
    println!("  tensor bytes      {} ({})", thousands(f.totals.bytes), human_bytes(f.totals.bytes));
    println!("  bytes read        {}", thousands(f.bytes_read));
    for (dtype, t) in &f.totals.by_dtype {
        println!(
            "    {dtype:<12} {:>6} tensors {:>18} params {:>18} bytes",
            thousands(t.tensors),
            thousands(t.params),
            thousands(t.bytes)
        );
    }
    if let Some(map) = f.metadata.as_object() {
        if !map.is_empty() && f.format.name() == "safetensors" {
            println!("  metadata:");
            for (k, v) in map {
                println!("    {k} = {}", v.as_str().map_or_else(|| v.to_string(), str::to_string));
            }
        }
    }
    if !f.tensors.is_empty() {
        let w = f.tensors.iter().map(|t| t.name.chars().count()).max().unwrap_or(4).clamp(4, 60);
        println!("  {:<w$}  {:<8} {:<22} {:>16} {:>16}", "name", "dtype", "shape", "bytes", "abs offset");
        for t in &f.tensors {
            println!(
                "  {:<w$}  {:<8} {:<22} {:>16} {:>16}",
                t.name,
                t.dtype,
                shape(&t.shape),
                t.bytes.map_or_else(|| "?".into(), thousands),
                t.abs_start.map_or_else(|| "?".into(), thousands),
            );
        }
    }
    println!("  verdict: {}", f.verdict().label());
    for finding in f.findings() {
        println!("  - {finding}");
    }
    println!();
}
