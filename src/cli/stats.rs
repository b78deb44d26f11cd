//! `tensorpeek stats FILE|URL|hf://… --tensor NAME [--json]`: one tensor's values.

use super::exit::{EXIT_FINDINGS, EXIT_SOUND, EXIT_USAGE};
use crate::fmt::{human_bytes, shape, thousands};
use crate::report::{FileReport, Report};
use super::inputs::{open_inputs, Remote, Src};
use crate::source::scan::tensor_stats;
use crate::source;
use crate::stats::Stats;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Instant;

/// Rows of the text histogram (bins are summed in groups to fit).
pub const TEXT_HISTOGRAM_ROWS: usize = 16;
/// Width of the longest bar of the text histogram, in characters.
pub const TEXT_HISTOGRAM_WIDTH: usize = 50;

pub fn stats(arg: &str, tensor: &str, json: bool, remote: &Remote) -> ExitCode {
    let opened = match open_inputs(&[arg.to_string()], remote, false) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("tensorpeek: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    // The model file that holds the tensor (a repository or an index brings several).
    let mut found = None;
    let mut listed = Vec::new();
    for input in opened.files.iter().filter(|f| !matches!(f.src, Src::Memory(_))) {
        let inspection = pollster::block_on(source::inspect(&input.src, &input.name));
        match inspection.tensors().iter().position(|t| t.name == tensor) {
            Some(idx) => {
                found = Some((&input.src, inspection, idx));
                break;
            }
            None => {
                // A file that could not be read says why.
                for e in inspection.errors() {
                    eprintln!("tensorpeek: {}: {e}", input.name);
                }
                listed.push(format!("{} ({} tensors)", input.name, inspection.tensors().len()))
            }
        }
    }
    let Some((src, mut inspection, idx)) = found else {
        eprintln!("tensorpeek: no tensor named {tensor:?} in {} (`tensorpeek inspect` lists them)", listed.join(", "));
        return ExitCode::from(EXIT_USAGE);
    };
    let Some(entry) = inspection.tensors().get(idx).cloned() else {
        return ExitCode::from(EXIT_USAGE);
    };
    let show_progress = !json && std::io::stderr().is_terminal();
    let started = Instant::now();
    let mut last = Instant::now();
    let read = pollster::block_on(tensor_stats(src, &mut inspection, idx, |done, total| {
        if show_progress && (last.elapsed().as_millis() >= 200 || done == total) {
            last = Instant::now();
            let secs = started.elapsed().as_secs_f64().max(1e-9);
            eprint!(
                "\r  reading {} / {} ({:.0} MB/s)   ",
                human_bytes(done),
                human_bytes(total),
                done as f64 / secs / 1e6
            );
            let _ = std::io::stderr().flush();
        }
        true
    }));
    if show_progress {
        eprintln!();
    }
    let elapsed = started.elapsed().as_secs_f64();
    opened.report_fetched();
    let (bytes_read, scan_failed) = (read.bytes_read, read.failed);
    let stats: BTreeMap<usize, Stats> = read.stats.into_iter().map(|s| (idx, s)).collect();
    let full = Report::new(vec![FileReport::of(&inspection, &stats)]);
    if json {
        println!("{}", full.to_json_pretty());
    } else {
        println!(
            "{} — tensor {} ({}, shape {}, {} bytes at offset {})",
            inspection.name,
            entry.name,
            entry.dtype,
            shape(&entry.shape),
            entry.bytes.map_or_else(|| "?".into(), thousands),
            entry.abs_start.map_or_else(|| "?".into(), thousands)
        );
        if let Some(s) = stats.get(&idx) {
            print_stats(s, &entry.shape);
            let bytes = bytes_read;
            println!(
                "  read {} in {:.2} s ({:.2} GB/s)",
                human_bytes(bytes),
                elapsed,
                bytes as f64 / elapsed.max(1e-9) / 1e9
            );
        }
        for finding in inspection.findings() {
            println!("  - {finding}");
        }
    }
    let ok = full.ok() && !scan_failed;
    ExitCode::from(if ok { EXIT_SOUND } else { EXIT_FINDINGS })
}

fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "—".to_string(), |x| format!("{x:.9e}"))
}

fn print_stats(s: &Stats, dims: &[u64]) {
    if let Some(n) = &s.note {
        println!("  note        {n}");
    }
    println!("  count       {}", thousands(s.count));
    println!("  min         {}", num(s.min));
    println!("  max         {}", num(s.max));
    println!("  mean        {}", num(s.mean));
    println!("  std         {}  (population, finite values)", num(s.std));
    println!(
        "  NaN {}   +Inf {}   -Inf {}   zeros {}   subnormals {}",
        thousands(s.nan),
        thousands(s.pos_inf),
        thousands(s.neg_inf),
        thousands(s.zeros),
        thousands(s.subnormals)
    );
    println!("  sha256      {}", s.sha256);
    if let Some(h) = &s.histogram {
        println!("  histogram ({} bins over [{:.6e}, {:.6e}), grouped):", h.counts.len(), h.lo, h.hi);
        let group = h.counts.len().div_ceil(TEXT_HISTOGRAM_ROWS).max(1);
        let width = (h.hi - h.lo) / h.counts.len().max(1) as f64;
        let rows: Vec<(f64, f64, u64)> = h
            .counts
            .chunks(group)
            .enumerate()
            .map(|(i, c)| {
                let lo = h.lo + (i * group) as f64 * width;
                (lo, lo + c.len() as f64 * width, c.iter().sum())
            })
            .collect();
        let peak = rows.iter().map(|r| r.2).max().unwrap_or(1).max(1);
        for (lo, hi, n) in rows {
            let bar = ((n as f64 / peak as f64) * TEXT_HISTOGRAM_WIDTH as f64).round() as usize;
            let bar = if n > 0 { bar.max(1) } else { 0 };
            println!("    [{lo:>13.5e}, {hi:>13.5e})  {:>14}  {}", thousands(n), "#".repeat(bar));
        }
    }
    if let Some(p) = &s.preview {
        let lead: Vec<u64> = dims.iter().rev().skip(1).rev().copied().collect();
        println!("  preview (first {} rows × {} columns; row length {}):", p.rows, p.cols, p.row_len);
        let mut header = format!("    {:>12}", "");
        for c in 0..p.cols {
            header.push_str(&format!(" {:>12}", format!("[{c}]")));
        }
        println!("{header}");
        for (r, row) in p.values.chunks(usize::try_from(p.cols).unwrap_or(1).max(1)).enumerate() {
            // The row's multi-index over the leading dimensions.
            let mut idx = Vec::new();
            let mut rem = r as u64;
            for d in lead.iter().rev() {
                idx.push(rem % d.max(&1));
                rem /= d.max(&1);
            }
            idx.reverse();
            let label = if lead.is_empty() {
                String::new()
            } else {
                format!("[{}]", idx.iter().map(u64::to_string).collect::<Vec<_>>().join(","))
            };
            let mut line = format!("    {label:>12}");
            for v in row {
                line.push_str(&format!(" {:>12}", format!("{v:.5e}")));
            }
            println!("{line}");
        }
    }
}

