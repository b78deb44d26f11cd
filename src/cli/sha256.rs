//! `tensorpeek sha256 FILE|URL|hf://……`: each file's SHA-256, one `sha256sum`-compatible line each
//! (`HEX  PATH`), read in 8 MiB chunks through the same loop as the page's "Verify file".

use super::exit::{EXIT_SOUND, EXIT_USAGE};
use super::inputs::{open_inputs, Remote, Src};
use crate::fmt::human_bytes;
use crate::source::hash::hash_source;
use crate::source::SCAN_CHUNK_BYTES;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Instant;

pub fn run(args: &[String], remote: &Remote) -> ExitCode {
    let mut status = EXIT_SOUND;
    let show_progress = std::io::stderr().is_terminal();
    for arg in args {
        // A local path is printed as given (as sha256sum does); a URL's files by their URL.
        let opened = match open_inputs(std::slice::from_ref(arg), remote, false) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("tensorpeek: {e}");
                status = EXIT_USAGE;
                continue;
            }
        };
        for input in opened.files.iter().filter(|f| !matches!(f.src, Src::Memory(_))) {
            let label = match &input.src {
                Src::Url(u) => u.url().to_string(),
                _ if opened.files.len() == 1 => arg.clone(),
                _ => format!("{}/{}", arg.trim_end_matches('/'), input.name),
            };
            if hash_one(&input.src, &label, show_progress).is_err() {
                status = EXIT_USAGE;
            }
        }
        opened.report_fetched();
    }
    ExitCode::from(status)
}

/// One input's hash, printed as `HEX  LABEL`.
fn hash_one(src: &Src, label: &str, show_progress: bool) -> Result<(), ()> {
    let started = Instant::now();
    let mut last = Instant::now();
    let r = pollster::block_on(hash_source(src, SCAN_CHUNK_BYTES, |done, total| {
        if show_progress && (last.elapsed().as_millis() >= 200 || done == total) {
            last = Instant::now();
            let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-9);
            eprint!("\r  {} / {} ({})   ", human_bytes(done), human_bytes(total), crate::fmt::rate(rate));
            let _ = std::io::stderr().flush();
        }
        true
    }));
    if show_progress {
        eprint!("\r\x1b[2K");
    }
    match r {
        Ok(hex) => {
            println!("{hex}  {label}");
            Ok(())
        }
        Err(e) => {
            eprintln!("tensorpeek: {label}: {e}");
            Err(())
        }
    }
}
