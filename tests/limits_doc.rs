//! Every named limit in `src/` is listed in docs/limits.md with the value the source gives
//! it: a `pub const` (or `pub(crate) const`) named `MAX_…` / `MIN_…`, or holding `LIMIT`,
//! `BUDGET`, `TIMEOUT` or `GRANULARITY`, or one of the sizes below that bound what a file
//! makes us read, keep or show. Each must have a row in docs/limits.md that names it in
//! backticks, gives its file (relative to `src/`) in the "where" column and quotes its value
//! expression as written in the source (spaces ignored). Limits of the same name in different
//! files each need their own row.

use std::path::{Path, PathBuf};

/// Limits whose names do not say so.
const ALSO_LIMITS: &[&str] = &[
    "ARRAY_HEAD_LEN",
    "NESTED_HEAD_LEN",
    "GGML_MAX_DIMS",
    "GGML_MAX_NAME",
    "SNIFF_LEN",
    "CLASSIFY_LEN",
    "SCAN_CHUNK_BYTES",
    "DECODE_BATCH_VALUES",
    "CODE_FLUSH_ELEMENTS",
    "HISTOGRAM_BINS",
    "PREVIEW_ROWS",
    "PREVIEW_COLS",
    "ARRAY_PAGE",
    "DIMS_PAGE",
    "PAGE_ROWS",
    "FIRST_ROWS",
    "SPECIAL_TOKENS_SHOWN",
    "HASH_AHEAD",
    "PROGRESS_INTERVAL_MS",
    "MEMORY_PER_BYTE",
    "MEMORY_SLACK",
    "COLLECT_FLOOR",
    "NAMES_SLACK",
    "REPEAT_NAMES_SLACK",
    "REPEAT_NAME_STREAM_BYTES",
    "SHARED_NAMES_SLACK",
    "SHARED_NAME_CLIP",
];

fn is_limit(name: &str) -> bool {
    name.starts_with("MAX_")
        || name.starts_with("MIN_")
        || ["LIMIT", "BUDGET", "TIMEOUT", "GRANULARITY"].iter().any(|w| name.contains(w))
        || ALSO_LIMITS.contains(&name)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") && p.file_name().is_some_and(|n| n != "tests.rs") {
            out.push(p);
        }
    }
}

/// (name, value expression without spaces, file) of every `pub const` limit in `src/`
/// (test modules left out).
fn limits() -> Vec<(String, String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for stmt in code.split(';') {
            let s = stmt.trim_start();
            let Some(rest) = s.strip_prefix("pub const ").or_else(|| s.strip_prefix("pub(crate) const ")) else {
                // A doc comment or attribute may precede the item on its lines.
                let Some(at) = s.find("\npub const ").or_else(|| s.find("\npub(crate) const ")) else { continue };
                let item = &s[at + 1..];
                let rest = item.split_once("const ").map(|(_, r)| r).unwrap_or("");
                push(rest, &f, &mut out);
                continue;
            };
            push(rest, &f, &mut out);
        }
    }
    out
}

fn push(rest: &str, file: &Path, out: &mut Vec<(String, String, String)>) {
    let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    if !is_limit(&name) {
        return;
    }
    let value = rest.split_once('=').map(|(_, v)| v).unwrap_or("");
    let value: String = value.chars().filter(|c| !c.is_whitespace()).collect();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let file = file.strip_prefix(&src).unwrap_or(file);
    let file: Vec<String> = file.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    out.push((name, value, file.join("/")));
}

/// The cells of a table row, split at every `|` not escaped as `\|`, each trimmed; the
/// leading and trailing empty cells are dropped.
fn cells(row: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cell = String::new();
    let mut chars = row.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => cell.push(chars.next().unwrap()),
            '|' => out.push(std::mem::take(&mut cell).trim().to_string()),
            _ => cell.push(c),
        }
    }
    out.push(cell.trim().to_string());
    if out.first().is_some_and(|c| c.is_empty()) {
        out.remove(0);
    }
    if out.last().is_some_and(|c| c.is_empty()) {
        out.pop();
    }
    out
}

#[test]
fn every_limit_is_in_docs_limits_md_with_its_value() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/limits.md")).unwrap();
    // (row without spaces, its "where" column)
    let rows: Vec<(String, String)> = doc
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| (l.chars().filter(|c| !c.is_whitespace()).collect(), cells(l).get(2).cloned().unwrap_or_default()))
        .collect();
    let found = limits();
    assert!(found.len() > 40, "the scan finds the limits: {found:?}");
    for must in ["MAX_GGUF_HEADER_BYTES", "MAX_TENSORS", "MAX_QUOTED_BYTES", "MIN_BIN_WIDTH", "GGUF_READ_GRANULARITY", "ARRAY_HEAD_LEN"] {
        assert!(found.iter().any(|(n, _, _)| n == must), "{must} not found by the scan");
    }
    let mut missing = Vec::new();
    for (name, value, file) in &found {
        let named = |r: &&(String, String)| r.0.starts_with(&format!("|`{name}`|"));
        let row = rows.iter().filter(named).find(|(_, at)| at == file);
        match row {
            None => match rows.iter().filter(named).map(|(_, at)| at.as_str()).collect::<Vec<_>>() {
                elsewhere if elsewhere.is_empty() => missing.push(format!("{name} ({file}) has no row in docs/limits.md")),
                elsewhere => missing.push(format!("{name} ({file}) has no row in docs/limits.md whose where-column is {file} (its rows name: {})", elsewhere.join("; "))),
            },
            Some((r, _)) if !r.contains(&format!("`{value}`")) => missing.push(format!("{name} ({file}) = `{value}`, which its row does not quote: {r}")),
            Some(_) => {}
        }
    }
    assert!(missing.is_empty(), "\n{}", missing.join("\n"));
}
