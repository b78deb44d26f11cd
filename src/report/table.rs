//! The tensor table as text: CSV (RFC 4180) and a Markdown table (the form pasted into
//! model cards and issues). The page exports the rows as its table shows them (filtered
//! and sorted), every one of them — not only those rendered.
//!
//! Columns: `#` (header order), `name`, `file` (merged tables only), `dtype`, `shape`
//! (outermost first), `params`, `bytes`, `begin`, `end` (relative to the data section, as
//! in the header), `abs_start`. A number that overflowed is left empty.

use crate::vocab::TensorEntry;

/// One row: the tensor's index in header order, the tensor, and its file (merged tables).
pub type Row<'a> = (usize, &'a TensorEntry, Option<&'a str>);

fn header(with_file: bool) -> Vec<&'static str> {
    let mut h = vec!["#", "name"];
    if with_file {
        h.push("file");
    }
    h.extend(["dtype", "shape", "params", "bytes", "begin", "end", "abs_start"]);
    h
}

fn cells(row: &Row<'_>, with_file: bool) -> Vec<String> {
    let (i, t, file) = row;
    let opt = |v: Option<u64>| v.map(|n| n.to_string()).unwrap_or_default();
    let mut c = vec![i.to_string(), t.name.clone()];
    if with_file {
        c.push(file.unwrap_or("").to_string());
    }
    c.extend([t.dtype.to_string(), crate::fmt::shape(&t.shape), opt(t.params), opt(t.bytes), t.start.to_string(), t.end.to_string(), opt(t.abs_start)]);
    c
}

/// A CSV field: quoted when it holds a comma, a quote or a line break (quotes doubled).
/// Text that a spreadsheet would run as a formula (starting with `=`, `+`, `-`, `@`, a
/// tab or a carriage return) gets a leading `'`, so that a tensor name read from a file
/// can never become a formula.
fn csv_field(s: &str, text: bool) -> String {
    let guarded = if text && s.starts_with(['=', '+', '-', '@', '\t', '\r']) { format!("'{s}") } else { s.to_string() };
    if guarded.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", guarded.replace('"', "\"\""))
    } else {
        guarded
    }
}

/// The rows as CSV with a header line, lines ended by CRLF (RFC 4180).
pub fn csv<'a>(rows: impl IntoIterator<Item = Row<'a>>, with_file: bool) -> String {
    let mut out = header(with_file).join(",");
    out.push_str("\r\n");
    for row in rows {
        let cells = cells(&row, with_file);
        let line: Vec<String> = cells.iter().enumerate().map(|(k, c)| csv_field(c, k == 1 || (with_file && k == 2))).collect();
        out.push_str(&line.join(","));
        out.push_str("\r\n");
    }
    out
}

/// Inline code holding `s` exactly (CommonMark: a fence longer than any run of backticks
/// inside, padded when `s` starts or ends with one), with `|` escaped for a table cell
/// and line breaks as spaces.
fn md_code(s: &str) -> String {
    let flat: String = s.chars().map(|c| if c == '\n' || c == '\r' { ' ' } else { c }).collect();
    let mut longest = 0usize;
    let mut run = 0usize;
    for c in flat.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if flat.starts_with('`') || flat.ends_with('`') || flat.is_empty() { " " } else { "" };
    format!("{fence}{pad}{}{pad}{fence}", flat.replace('|', "\\|"))
}

/// The rows as a GitHub-flavoured Markdown table (names and dtypes as code, numbers
/// right-aligned).
pub fn markdown<'a>(rows: impl IntoIterator<Item = Row<'a>>, with_file: bool) -> String {
    let head = header(with_file);
    let mut out = format!("| {} |\n", head.join(" | "));
    let align: Vec<&str> = head.iter().map(|h| if matches!(*h, "#" | "params" | "bytes" | "begin" | "end" | "abs_start") { "---:" } else { "---" }).collect();
    out.push_str(&format!("| {} |\n", align.join(" | ")));
    for row in rows {
        let c = cells(&row, with_file);
        let shown: Vec<String> = c
            .iter()
            .enumerate()
            .map(|(k, v)| {
                let code = k == 1 || (with_file && k == 2) || k == if with_file { 3 } else { 2 };
                if code && !v.is_empty() { md_code(v) } else { v.replace('|', "\\|") }
            })
            .collect();
        out.push_str(&format!("| {} |\n", shown.join(" | ")));
    }
    out
}

/// Tensors shown in a first inventory at most ([`first_rows`]): the first view's screen of
/// them (the app's table shows the rest, virtualized, once it has loaded).
pub const MAX_FIRST_ROWS: usize = 100;

/// The first [`MAX_FIRST_ROWS`] tensors as the app's table shows them — name, dtype, shape,
/// parameters, bytes (human) — for the first view's inventory before the app has loaded:
/// the parse worker's `rows` answer and the first stage's (`crate::peek`) alike.
pub fn first_rows(tensors: &[TensorEntry]) -> Vec<[String; 5]> {
    use crate::fmt;
    tensors
        .iter()
        .take(MAX_FIRST_ROWS)
        .map(|t| {
            [
                t.name.clone(),
                t.dtype.to_string(),
                fmt::shape(&t.shape),
                t.params.map_or_else(|| "overflow".to_string(), fmt::thousands),
                t.bytes.map_or_else(|| "invalid".to_string(), fmt::human_bytes),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields() {
        assert_eq!(csv_field("a,b", true), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\"", true), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("=1+1", true), "'=1+1");
        assert_eq!(csv_field("-5", false), "-5");
    }

    #[test]
    fn md_code_spans() {
        assert_eq!(md_code("a.b"), "`a.b`");
        assert_eq!(md_code("a`b"), "``a`b``");
        assert_eq!(md_code("`x"), "`` `x ``");
        assert_eq!(md_code("a|b"), "`a\\|b`");
    }
}

