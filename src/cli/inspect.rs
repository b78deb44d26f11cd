//! `tensorpeek inspect FILE|DIR… [--json]`: every file through the set driver
//! ([`crate::source::set::open_set`], the page's loop too), then tables or the report.

use super::exit::{EXIT_FINDINGS, EXIT_SOUND, EXIT_USAGE};
use super::file_name;
use super::print::{print_file, print_model, print_split};
use crate::fmt::thousands;
use crate::formats::pickle::Verdict as SafetyVerdict;
use crate::report::{FileReport, ModelSection, Report};
use crate::source::file::FileSource;
use crate::source::set::{open_set, SetInput, SetOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The files to open: each path named, and the files of each folder named (one level,
/// sorted by name). Files named explicitly are inspected even when they are not model
/// files (to say why); a folder's other files are classified and skipped.
pub(super) fn collect(paths: &[PathBuf]) -> Result<Vec<(PathBuf, bool)>, String> {
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let mut files: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_file()).collect();
            files.sort();
            out.extend(files.into_iter().map(|f| (f, false)));
        } else {
            out.push((path.clone(), true));
        }
    }
    Ok(out)
}

pub(super) fn open(path: &Path, explain: bool) -> Result<SetInput<FileSource>, String> {
    let src = FileSource::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    Ok(SetInput { name: file_name(path), src, explain })
}

pub fn run(paths: &[PathBuf], json: bool) -> ExitCode {
    let inputs = match collect(paths).and_then(|c| c.iter().map(|(p, e)| open(p, *e)).collect::<Result<Vec<_>, _>>()) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("tensorpeek: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let set = pollster::block_on(open_set(&inputs, SetOptions { classify_by_content: true }, |_, _| {}));
    let mut report = Report::new(set.inspections().map(|i| FileReport::borrowed(i, &BTreeMap::new())).collect());
    report.model = match (&set.checkpoint, set.splits.first()) {
        (Some(c), _) => Some(ModelSection::Checkpoint(Box::new(c.clone()))),
        (None, Some(s)) => Some(ModelSection::Split(Box::new(s.clone()))),
        (None, None) => None,
    };
    if json {
        if let Err(code) = super::print::print_report(&report) {
            return code;
        }
    } else {
        for f in set.inspections() {
            print_file(f, set.checkpoint.is_none());
        }
        if let Some(m) = &set.checkpoint {
            print_model(m);
        }
        for m in &set.splits {
            print_split(m);
        }
        for s in &set.skipped {
            println!("skipped: {} ({} bytes, {}): {}", s.name, thousands(s.len), s.kind.name(), s.reason);
        }
    }
    let splits_ok = set.splits.iter().all(|s| s.ok());
    // a file judged dangerous fails like one with errors (a pickle's dangerous import is an
    // error anyway; a GGUF's unsafe chat template is a warning that makes it dangerous)
    let dangerous = set.inspections().any(|f| f.safety() == SafetyVerdict::Dangerous);
    ExitCode::from(if report.ok() && splits_ok && !dangerous { EXIT_SOUND } else { EXIT_FINDINGS })
}
