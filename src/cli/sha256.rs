//! `tensorpeek sha256 FILE…`: each file's SHA-256, one `sha256sum`-compatible line each
//! (`HEX  PATH`), read in 8 MiB chunks through the same loop as the page's "Verify file".

use super::exit::{EXIT_SOUND, EXIT_USAGE};
use crate::fmt::human_bytes;
use crate::source::file::FileSource;
use crate::source::hash::hash_source;
use crate::source::SCAN_CHUNK_BYTES;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

pub fn run(paths: &[PathBuf]) -> ExitCode {
    let mut status = EXIT_SOUND;
    let show_progress = std::io::stderr().is_terminal();
    for path in paths {
        let src = match FileSource::open(path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("tensorpeek: cannot open {}: {e}", path.display());
                status = EXIT_USAGE;
                continue;
            }
        };
        let started = Instant::now();
        let mut last = Instant::now();
        let r = pollster::block_on(hash_source(&src, SCAN_CHUNK_BYTES, |done, total| {
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
            Ok(hex) => println!("{hex}  {}", path.display()),
            Err(e) => {
                eprintln!("tensorpeek: {}: {e}", path.display());
                status = EXIT_USAGE;
            }
        }
    }
    ExitCode::from(status)
}
