//! The hidden `tensorpeek bench-values`: decode + stats throughput over a synthetic tensor
//! held in memory (scripts/bench_values.sh prints it beside numpy's figure).

use super::exit::{EXIT_SOUND, EXIT_USAGE};
use crate::bench::BenchTensor;
use crate::dtype::ggml::GgmlType;
use crate::dtype::TensorDtype;
use crate::fmt::{human_bytes, thousands};
use crate::source::SCAN_CHUNK_BYTES;
use crate::stats::Stats;
use crate::values::ScanError;
use std::process::ExitCode;
use std::time::Instant;

/// `gguf`: read `dtype` as a ggml type name first (names shared by both families decode
/// the same either way).
pub fn bench(elements: u64, dtype: &str, gguf: bool, sha_runs: &str) -> ExitCode {
    let typed = match GgmlType::from_name(dtype) {
        Some(t) if gguf => TensorDtype::Ggml(t.id),
        _ => TensorDtype::from_name(dtype),
    };
    let tensor = match BenchTensor::new(&typed, elements) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("tensorpeek: {}", e.message());
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let total = tensor.total;
    println!(
        "bench-values: {dtype}, {} elements, {} bytes ({}), fed from a {} in-memory buffer in {} chunks",
        thousands(elements),
        thousands(total),
        human_bytes(total),
        human_bytes(tensor.bytes.len() as u64),
        human_bytes(SCAN_CHUNK_BYTES)
    );
    let runs: &[bool] = match sha_runs {
        "on" => &[true],
        "off" => &[false],
        _ => &[true, false],
    };
    for &sha in runs {
        let t0 = Instant::now();
        let mut scanner = tensor.scanner(sha);
        for r in tensor.chunks() {
            scanner.feed(tensor.bytes.get(r).unwrap_or_default());
        }
        let r: Result<Stats, ScanError> = scanner.finish();
        let secs = t0.elapsed().as_secs_f64();
        match r {
            Ok(s) => println!(
                "  sha256 {:<3}  {:.3} s  {:.2} GB/s  (count {}, mean {:.3e}, std {:.3e})",
                if sha { "on" } else { "off" },
                secs,
                total as f64 / secs / 1e9,
                s.count,
                s.mean.unwrap_or(f64::NAN),
                s.std.unwrap_or(f64::NAN)
            ),
            Err(e) => println!("  error: {e}"),
        }
    }
    ExitCode::from(EXIT_SOUND)
}
