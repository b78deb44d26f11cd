//! `tensorpeek audit SRC… --against DST… [--json] [--first-mismatch]`: did the values
//! survive the conversion? Both sides are opened through the set driver (a checkpoint
//! folder, shards, one file; a GGUF or all parts of a split GGUF), planned
//! ([`crate::model::audit::plan`]) and read side by side ([`crate::source::audit`]).
//!
//! A safetensors file named on its own brings the `config.json` of its folder along.
//!
//! Text: the summary line ("20/20 exact"), the pairing table with transforms and
//! verdicts, the largest differences, the reconciliation. Exit 0 when every pair is
//! exact, close or generated_ok; 1 otherwise (a mismatch, a missing tensor, a stopped
//! audit); 2 for usage errors.

use super::exit::{EXIT_FINDINGS, EXIT_SOUND, EXIT_USAGE};
use super::inputs::{is_address, open_file, open_inputs, Inputs, Remote};
use crate::fmt::{human_bytes, rate, short, signed, thousands};
use crate::model::audit::reconcile::Balance;
use crate::model::audit::{Audit, PairReport, Verdict};
use crate::source::audit::{audit_report, audit_sides, AuditOptions, AuditProgress, OpenedSide};
use crate::source::set::{open_set, OpenedSet, SetOptions};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Rows of the "largest differences" list.
pub const LARGEST_DIFFERENCES: usize = 10;

/// One side: what was given (a folder's files, URLs, a Hub repository), plus the
/// `config.json` beside a safetensors file named on its own, local or by URL (the audit
/// needs the config for the Q/K head counts and the generated tensors).
fn open_side(args: &[String], remote: &Remote) -> Result<(Inputs, OpenedSet), String> {
    let mut inputs = open_inputs(args, remote, true)?;
    let has_config = inputs.files.iter().any(|f| f.name == "config.json");
    let first_st = args.iter().filter(|a| !is_address(a)).map(PathBuf::from).find(|p| p.extension().is_some_and(|x| x == "safetensors"));
    if let (false, Some(st)) = (has_config, first_st) {
        let sibling = st.with_file_name("config.json");
        if sibling.is_file() {
            inputs.files.push(open_file(&sibling, false)?);
        }
    }
    let set = pollster::block_on(open_set(&inputs.files, SetOptions { classify_by_content: true }, |_, _| {}));
    Ok((inputs, set))
}

pub fn run(source: &[String], against: &[String], json: bool, first_mismatch: bool, remote: &Remote) -> ExitCode {
    let opened = open_side(source, remote).and_then(|s| open_side(against, remote).map(|t| (s, t)));
    let ((s_inputs, s_set), (t_inputs, t_set)) = match opened {
        Ok(x) => x,
        Err(e) => {
            eprintln!("tensorpeek: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let show_progress = !json && std::io::stderr().is_terminal();
    let started = Instant::now();
    let mut last = Instant::now();
    let options = AuditOptions { first_mismatch, ..AuditOptions::default() };
    let sides = (OpenedSide { inputs: &s_inputs.files, set: &s_set }, OpenedSide { inputs: &t_inputs.files, set: &t_set });
    let result = pollster::block_on(audit_sides(&sides.0, &sides.1, options, |p: &AuditProgress| {
        if show_progress && last.elapsed().as_millis() >= 200 {
            last = Instant::now();
            let secs = started.elapsed().as_secs_f64().max(1e-9);
            let speed = p.bytes_done as f64 / secs;
            let eta = if speed > 0.0 { p.bytes_total.saturating_sub(p.bytes_done) as f64 / speed } else { 0.0 };
            eprint!(
                "\r  auditing: {}/{} pairs, {} / {} ({}, ETA {:.0} s)   ",
                p.pairs_done,
                p.pairs,
                human_bytes(p.bytes_done),
                human_bytes(p.bytes_total),
                rate(speed),
                eta
            );
            let _ = std::io::stderr().flush();
        }
        true
    }));
    let (audit, bytes) = match result {
        Ok(x) => x,
        Err(e) => {
            eprintln!("tensorpeek: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let secs = started.elapsed().as_secs_f64();
    if show_progress {
        eprintln!();
    }
    s_inputs.report_fetched();
    t_inputs.report_fetched();
    if json {
        println!("{}", audit_report(&s_set, &t_set, &audit).to_json_pretty());
    } else {
        print_audit(&audit, bytes, secs);
    }
    ExitCode::from(if audit.ok { EXIT_SOUND } else { EXIT_FINDINGS })
}

/// Peak resident memory of this process in bytes (Linux `VmHWM`), if known.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The hidden `bench-audit`: the same audit, then its throughput (source bytes per second)
/// and the process's peak memory (scripts/bench_audit.sh runs it over the sparse
/// Llama-3.2-3B-shaped pair).
pub fn bench(source: &[String], against: &[String], remote: &Remote) -> ExitCode {
    let opened = open_side(source, remote).and_then(|s| open_side(against, remote).map(|t| (s, t)));
    let ((s_inputs, s_set), (t_inputs, t_set)) = match opened {
        Ok(x) => x,
        Err(e) => {
            eprintln!("tensorpeek: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let started = Instant::now();
    let mut target_bytes = 0;
    let sides = (OpenedSide { inputs: &s_inputs.files, set: &s_set }, OpenedSide { inputs: &t_inputs.files, set: &t_set });
    let result = pollster::block_on(audit_sides(&sides.0, &sides.1, AuditOptions::default(), |p| {
        target_bytes = p.target_bytes_done;
        true
    }));
    let (audit, bytes) = match result {
        Ok(x) => x,
        Err(e) => {
            eprintln!("tensorpeek: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let secs = started.elapsed().as_secs_f64();
    println!("bench-audit: {}", audit.summary_line);
    println!(
        "  source {} bytes ({}) + target {} bytes read in {secs:.2} s: {:.2} GB/s of source bytes",
        thousands(bytes),
        human_bytes(bytes),
        thousands(target_bytes),
        bytes as f64 / secs.max(1e-9) / 1e9
    );
    match peak_rss() {
        Some(rss) => println!("  peak RSS {} ({} bytes)", human_bytes(rss), thousands(rss)),
        None => println!("  peak RSS: not available on this system"),
    }
    ExitCode::from(if audit.ok { EXIT_SOUND } else { EXIT_FINDINGS })
}

fn opt_num(v: Option<f64>) -> String {
    v.map_or_else(|| "—".into(), short)
}

/// What a pair's last column says.
fn detail(p: &PairReport) -> String {
    let mut parts = Vec::new();
    if let Some(part) = p.part.as_ref().filter(|_| p.verdict != Verdict::Exact) {
        parts.push(part.label());
    }
    match p.verdict {
        Verdict::Exact => parts.push(format!("{} values", thousands(p.count.unwrap_or(0)))),
        Verdict::Close | Verdict::Mismatch | Verdict::GeneratedOk | Verdict::GeneratedMismatch => {
            if p.count.is_some_and(|c| c > 0) {
                parts.push(format!("max_abs {} rmse {} max_rel {}", opt_num(p.max_abs), opt_num(p.rmse), opt_num(p.max_rel)));
            }
            if let Some(r) = p.requant_exact {
                parts.push(format!("requant_exact {r}"));
            }
            if let Some(m) = &p.first_mismatch {
                parts.push(format!("first at [{}]: {} vs {}", thousands(m.index), short(m.source), short(m.target)));
            }
        }
        _ => {}
    }
    if let Some(r) = &p.reason {
        parts.push(r.clone());
    }
    if let Some(h) = &p.hint {
        parts.push(format!("hint: {h}"));
    }
    if let Some(g) = &p.generated {
        parts.push(format!("checked against {}{}", g.from, if g.parameters.is_empty() { String::new() } else { format!(": {}", g.parameters) }));
    }
    parts.join("; ")
}

fn print_balance(title: &str, b: &Balance) {
    println!(
        "  {title}: source {} → target {} ({}){}",
        thousands(b.source),
        thousands(b.target),
        signed(i128::from(b.difference)),
        if b.adds_up { ", adds up" } else { ", DOES NOT add up" }
    );
    for t in &b.terms {
        println!("    {:>16}  {}", signed(i128::from(t.bytes)), t.what);
    }
}

pub fn print_audit(a: &Audit, bytes: u64, secs: f64) {
    println!(
        "audit ({}{}) — {}{}",
        a.mode,
        a.architecture.as_deref().map_or_else(String::new, |x| format!(", {x}")),
        a.summary_line,
        if a.complete { "" } else { " (incomplete: stopped early)" }
    );
    println!("  source  {} {}: {} tensors, {} bytes", a.source.format, a.source.files.join(", "), thousands(a.source.tensors), thousands(a.source.bytes));
    println!("  target  {} {}: {} tensors, {} bytes", a.target.format, a.target.files.join(", "), thousands(a.target.tensors), thousands(a.target.bytes));
    println!("  read {} of source tensor data in {secs:.2} s ({})", human_bytes(bytes), rate(bytes as f64 / secs.max(1e-9)));
    for n in &a.notes {
        println!("  note: {n}");
    }
    let name = |s: &Option<String>| s.clone().unwrap_or_else(|| "—".into());
    let ws = a.pairs.iter().map(|p| name(&p.source).chars().count()).max().unwrap_or(6).clamp(6, 48);
    let wt = a.pairs.iter().map(|p| name(&p.target).chars().count()).max().unwrap_or(6).clamp(6, 32);
    println!();
    println!("  {:<18} {:<ws$} {:<wt$} {:<14} transforms / details", "verdict", "source", "target", "dtypes");
    for p in &a.pairs {
        let dtypes = format!("{}→{}", p.source_dtype.as_deref().unwrap_or("—"), p.target_dtype.as_deref().unwrap_or("—"));
        let transforms = if p.transforms.is_empty() { String::new() } else { format!("[{}] ", p.transforms.join(", ")) };
        println!("  {:<18} {:<ws$} {:<wt$} {:<14} {transforms}{}", p.verdict.name(), name(&p.source), name(&p.target), dtypes, detail(p));
    }
    let mut diffs: Vec<&PairReport> = a.pairs.iter().filter(|p| matches!(p.verdict, Verdict::Mismatch | Verdict::Close)).collect();
    if !diffs.is_empty() {
        diffs.sort_by(|x, y| y.max_abs.unwrap_or(f64::INFINITY).total_cmp(&x.max_abs.unwrap_or(f64::INFINITY)));
        println!();
        println!("  largest differences first:");
        for p in diffs.iter().take(LARGEST_DIFFERENCES) {
            println!("    {:<10} max_abs {:<12} {}", p.verdict.name(), opt_num(p.max_abs), name(&p.source));
        }
    }
    println!();
    println!("  size reconciliation");
    print_balance("tensor data", &a.reconciliation.tensor_bytes);
    print_balance("files", &a.reconciliation.file_bytes);
    println!();
    println!("{}: {}", if a.ok { "ok" } else { "NOT OK" }, a.summary_line);
}
