//! `tensorpeek inspect FILE|DIR|URL|hf://…… [--json]`: every file through the set driver
//! ([`crate::source::set::open_set`], the page's loop too), then tables or the report.

use super::exit::{EXIT_FINDINGS, EXIT_SOUND, EXIT_USAGE};
use super::inputs::{open_inputs, Remote};
use super::print::{print_file, print_model, print_split};
use crate::fmt::thousands;
use crate::formats::pickle::Verdict as SafetyVerdict;
use crate::report::{FileReport, Report};
use crate::source::set::{open_set, SetOptions};
use std::collections::BTreeMap;
use std::process::ExitCode;

pub fn run(args: &[String], json: bool, remote: &Remote) -> ExitCode {
    let opened = match open_inputs(args, remote, false) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("tensorpeek: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let inputs = &opened.files;
    let set = pollster::block_on(open_set(inputs, SetOptions { classify_by_content: true }, |_, _| {}));
    opened.report_fetched();
    let mut report = Report::new(set.inspections().map(|i| FileReport::borrowed(i, &BTreeMap::new())).collect());
    report.model = set.model_section();
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
