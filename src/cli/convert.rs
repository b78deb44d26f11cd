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
use super::file_name;
use crate::fmt::{human_bytes, thousands};
use crate::formats::torch::{convert, Inspection as TorchInspection};
use crate::formats::Inspection;
use crate::source::{self, file::FileSource};
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

pub fn run(inputs: &[PathBuf], out: &Path) -> ExitCode {
    let started = Instant::now();
    let mut files: Vec<(PathBuf, Inspection)> = Vec::new();
    for path in inputs {
        let src = match FileSource::open(path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("tensorpeek: cannot open {}: {e}", path.display());
                return ExitCode::from(EXIT_USAGE);
            }
        };
        let name = file_name(path);
        files.push((
            path.clone(),
            pollster::block_on(source::inspect(&src, &name)),
        ));
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

/// Writes the header, then each piece copied from its input.
fn write(
    plan: &convert::Plan,
    files: &[(PathBuf, Inspection)],
    origin: &HashMap<String, usize>,
    to: &Path,
) -> Result<(), String> {
    let mut out = File::create(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    out.write_all(&plan.header)
        .map_err(|e| format!("writing {}: {e}", to.display()))?;
    let mut open: HashMap<usize, File> = HashMap::new();
    for piece in &plan.pieces {
        let k = *origin
            .get(&piece.name)
            .ok_or_else(|| format!("tensor {:?} has no input", piece.name))?;
        let (path, _) = files.get(k).ok_or("an input vanished")?;
        let input = match open.get_mut(&k) {
            Some(f) => f,
            None => {
                let f =
                    File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
                open.entry(k).or_insert(f)
            }
        };
        input
            .seek(SeekFrom::Start(piece.src_start))
            .map_err(|e| format!("seek in {}: {e}", path.display()))?;
        // `&File` readers: std copies file to file in the kernel (copy_file_range)
        let copied = std::io::copy(&mut (&*input).take(piece.len), &mut out)
            .map_err(|e| format!("copying {} from {}: {e}", piece.name, path.display()))?;
        if copied != piece.len {
            return Err(format!(
                "{} ends before tensor {} does (byte {} of {}): did the file change?",
                path.display(),
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
