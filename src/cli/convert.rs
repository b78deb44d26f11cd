//! `tensorpeek convert FILE… -o out.safetensors`: pickle-based checkpoints (PyTorch zip or
//! legacy, `.npy`, `.npz`) to one safetensors file, without unpickling anything.
//!
//! Each input is inspected (header-only, `source::inspect`); a file judged `dangerous` or
//! `error` stops the conversion before anything is written. The plan
//! (`formats::torch::convert`) gives the safetensors header and, per tensor, a byte range
//! of an input; the ranges are streamed into the output (`std::io::copy` between files:
//! the kernel copies, memory stays flat), first to `OUT.part`, renamed to `OUT` once
//! complete. Several inputs (the shards of a checkpoint) become one file; a tensor name
//! given twice is refused.

use super::exit::{EXIT_FINDINGS, EXIT_SOUND, EXIT_USAGE};
use super::inputs::{open_inputs, Remote, Src};
use crate::fmt::{human_bytes, thousands};
use crate::formats::torch::{convert, Inspection as TorchInspection};
use crate::formats::Inspection;
use crate::source::set::{role_of, Role};
use crate::source::{self, ByteSource, SCAN_CHUNK_BYTES};
use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

pub fn run(args: &[String], out: &Path, remote: &Remote) -> ExitCode {
    let started = Instant::now();
    let opened = match open_inputs(args, remote, false) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("tensorpeek: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let mut files: Vec<(&Src, Inspection)> = Vec::new();
    // a folder's other files (README, JSON) are not inputs to convert
    let model_files = opened.files.iter().filter(|f| !matches!(f.src, Src::Memory(_)) && (f.explain || role_of(&f.name) == Role::ModelFile));
    for input in model_files {
        files.push((&input.src, pollster::block_on(source::inspect(&input.src, &input.name))));
    }
    // every input must be a pickle-based file that may be converted
    let mut refused = false;
    for (_, i) in &files {
        match i.parsed.torch() {
            None => {
                eprintln!(
                    "tensorpeek: {} is {}, not a PyTorch, pickle or numpy file: nothing to convert",
                    i.name,
                    i.format.name()
                );
                refused = true;
            }
            Some(t) => {
                if let Err(f) = convert::plan(&t.inspection) {
                    eprintln!("tensorpeek: {}: {}", i.name, f.message);
                    eprintln!(
                        "  ({})",
                        crate::report::safety_meaning(t.inspection.safety.verdict)
                    );
                    for e in i.errors() {
                        eprintln!("  - {e}");
                    }
                    refused = true;
                }
            }
        }
    }
    if refused {
        return ExitCode::from(EXIT_FINDINGS);
    }
    // one plan over all inputs: their tensors together, each remembering its file
    let mut merged: Option<TorchInspection> = None;
    let mut origin: HashMap<String, usize> = HashMap::new();
    for (k, (_, i)) in files.iter().enumerate() {
        let Some(t) = i.parsed.torch() else { continue };
        for tensor in &t.inspection.tensors {
            if let Some(first) = origin.insert(tensor.name.clone(), k) {
                let first = files.get(first).map_or("?", |(_, f)| f.name.as_str());
                eprintln!(
                    "tensorpeek: tensor {:?} is in both {first} and {}: refusing to pick one",
                    tensor.name, i.name
                );
                return ExitCode::from(EXIT_FINDINGS);
            }
        }
        match &mut merged {
            None => merged = Some(t.inspection.clone()),
            Some(m) => m.tensors.extend(t.inspection.tensors.iter().cloned()),
        }
    }
    let Some(merged) = merged else {
        return ExitCode::from(EXIT_USAGE);
    };
    let plan = match convert::plan(&merged) {
        Ok(p) => p,
        Err(f) => {
            eprintln!("tensorpeek: {f}");
            return ExitCode::from(EXIT_FINDINGS);
        }
    };
    let part = out.with_extension("safetensors.part");
    if let Err(e) = write(&plan, &files, &origin, &part).and_then(|()| {
        std::fs::rename(&part, out)
            .map_err(|e| format!("cannot rename {} to {}: {e}", part.display(), out.display()))
    }) {
        let _ = std::fs::remove_file(&part);
        eprintln!("tensorpeek: {e}");
        return ExitCode::from(EXIT_USAGE);
    }
    let secs = started.elapsed().as_secs_f64();
    opened.report_fetched();
    println!(
        "{} — {} tensors, {} bytes ({}) written in {secs:.2} s ({:.2} GB/s)",
        out.display(),
        thousands(plan.pieces.len() as u64),
        thousands(plan.len),
        human_bytes(plan.len),
        plan.len as f64 / secs.max(1e-9) / 1e9
    );
    for f in &plan.refused {
        println!("  - left out: {f}");
    }
    if plan.refused.is_empty() {
        ExitCode::from(EXIT_SOUND)
    } else {
        println!(
            "  {} tensor(s) could not be written as they are: the output lacks them",
            plan.refused.len()
        );
        ExitCode::from(EXIT_FINDINGS)
    }
}

/// Writes the header, then each piece copied from its input: a local file by the kernel
/// (`std::io::copy` between files), a URL in range requests of [`SCAN_CHUNK_BYTES`].
fn write(plan: &convert::Plan, files: &[(&Src, Inspection)], origin: &HashMap<String, usize>, to: &Path) -> Result<(), String> {
    let mut out = File::create(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    out.write_all(&plan.header).map_err(|e| format!("writing {}: {e}", to.display()))?;
    let mut buf = Vec::new();
    for piece in &plan.pieces {
        let k = *origin.get(&piece.name).ok_or_else(|| format!("tensor {:?} has no input", piece.name))?;
        let (src, inspection) = files.get(k).ok_or("an input vanished")?;
        let name = &inspection.name;
        let copied = match src {
            Src::File(f) => f.copy_to(piece.src_start, piece.len, &mut out).map_err(|e| format!("copying {} from {name}: {e}", piece.name))?,
            _ => {
                let mut done = 0u64;
                while done < piece.len {
                    let n = (piece.len - done).min(SCAN_CHUNK_BYTES);
                    let at = piece.src_start.saturating_add(done);
                    pollster::block_on(src.read_into(at, n, &mut buf)).map_err(|e| format!("reading {} from {name}: {e}", piece.name))?;
                    out.write_all(&buf).map_err(|e| format!("writing {}: {e}", to.display()))?;
                    done = done.saturating_add(n);
                }
                done
            }
        };
        if copied != piece.len {
            return Err(format!(
                "{name} ends before tensor {} does (byte {} of {}): did the file change?",
                piece.name,
                piece.src_start.saturating_add(copied),
                piece.src_start.saturating_add(piece.len)
            ));
        }
    }
    out.sync_all()
        .map_err(|e| format!("writing {}: {e}", to.display()))?;
    Ok(())
}
