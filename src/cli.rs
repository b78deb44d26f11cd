//! The native command line: `tensorpeek inspect FILE… [--json]`.
//! Exit status: 0 every file sound (warnings allowed), 1 some file has errors, 2 usage.

use crate::fmt::{human_bytes, human_count, shape, thousands};
use crate::formats::gguf::{GgufFile, Value};
use crate::formats::gguf_split;
use crate::report::{FileReport, Report};
use crate::source::{self, file::FileSource, Parsed};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "tensorpeek", version, about = "Inspect safetensors and GGUF model files from their headers")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List every tensor, the metadata and the findings of each file (only headers are read).
    Inspect {
        /// Files to inspect.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print the JSON report (docs/report.md) instead of tables.
        #[arg(long)]
        json: bool,
    },
}

pub const EXIT_SOUND: u8 = 0;
pub const EXIT_FINDINGS: u8 = 1;
pub const EXIT_USAGE: u8 = 2;

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { EXIT_SOUND });
        }
    };
    match cli.command {
        Command::Inspect { files, json } => inspect(&files, json),
    }
}

fn inspect(paths: &[PathBuf], json: bool) -> ExitCode {
    let mut files = Vec::new();
    let mut ggufs: Vec<Option<GgufFile>> = Vec::new();
    for path in paths {
        let src = match FileSource::open(path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("tensorpeek: cannot open {}: {e}", path.display());
                return ExitCode::from(EXIT_USAGE);
            }
        };
        let name = path
            .file_name()
            .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        let inspection = pollster::block_on(source::inspect(&src, &name));
        files.push(inspection.report);
        ggufs.push(match inspection.parsed {
            Parsed::Gguf(g) => Some(*g),
            _ => None,
        });
    }
    // Several parts of a split GGUF: one merged model.
    let parts: Vec<(&str, &GgufFile)> = files
        .iter()
        .zip(&ggufs)
        .filter_map(|(f, g)| g.as_ref().filter(|g| gguf_split::is_split_part(g)).map(|g| (f.name.as_str(), g)))
        .collect();
    let split = (parts.len() > 1).then(|| gguf_split::merge(&parts));
    let mut report = Report::new(files);
    report.model = split.as_ref().map(gguf_split::SplitModel::to_json);
    if json {
        println!("{}", report.to_json_pretty());
    } else {
        for (f, g) in report.files.iter().zip(&ggufs) {
            print_file(f, g.as_ref());
        }
        if let Some(m) = &split {
            print_split(m);
        }
    }
    ExitCode::from(if report.ok() { EXIT_SOUND } else { EXIT_FINDINGS })
}

fn print_file(f: &FileReport, gguf: Option<&GgufFile>) {
    println!("{} — {} ({} bytes, {})", f.name, f.format.name(), thousands(f.size), human_bytes(f.size));
    if let Some(n) = f.header_len {
        println!("  header length N   {}", thousands(n));
    }
    if let Some(v) = f.gguf_version {
        println!("  GGUF version      {v}");
    }
    if let Some(d) = f.data_start {
        println!("  data starts at    {}", thousands(d));
    }
    println!("  tensors           {}", thousands(f.totals.tensors));
    println!("  parameters        {}", thousands(f.totals.params));
    println!("  tensor bytes      {} ({})", thousands(f.totals.bytes), human_bytes(f.totals.bytes));
    println!("  bytes read        {}", thousands(f.bytes_read));
    for (dtype, t) in &f.totals.by_dtype {
        println!(
            "    {dtype:<12} {:>6} tensors {:>18} params {:>18} bytes",
            thousands(t.tensors),
            thousands(t.params),
            thousands(t.bytes)
        );
    }
    if let Some(map) = f.metadata.as_object() {
        if !map.is_empty() && f.format.name() == "safetensors" {
            println!("  metadata:");
            for (k, v) in map {
                println!("    {k} = {}", v.as_str().map_or_else(|| v.to_string(), str::to_string));
            }
        }
    }
    if let Some(g) = gguf {
        print_gguf(g);
    }
    if !f.tensors.is_empty() {
        let w = f.tensors.iter().map(|t| t.name.chars().count()).max().unwrap_or(4).clamp(4, 60);
        let gg = gguf.is_some();
        let dims_head = if gg { format!(" {:<22}", "ggml dims") } else { String::new() };
        println!("  {:<w$}  {:<10} {:<22}{dims_head} {:>16} {:>16}", "name", "dtype", "shape", "bytes", "abs offset");
        for t in &f.tensors {
            let dims = match (&t.ggml_dims, gg) {
                (Some(d), true) => format!(" {:<22}", shape(d)),
                _ => String::new(),
            };
            println!(
                "  {:<w$}  {:<10} {:<22}{dims} {:>16} {:>16}",
                t.name,
                t.dtype,
                shape(&t.shape),
                t.bytes.map_or_else(|| "?".into(), thousands),
                t.abs_start.map_or_else(|| "?".into(), thousands),
            );
        }
    }
    println!("  verdict: {}", f.verdict().label());
    for finding in f.findings() {
        println!("  - {finding}");
    }
    println!();
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "—".into(), |v| v.to_string())
}

fn opt_n(v: Option<u64>) -> String {
    v.map_or_else(|| "—".into(), thousands)
}

/// The GGUF-specific sections: header, model card, tokenizer, layout, metadata.
fn print_gguf(g: &GgufFile) {
    let h = &g.header;
    println!("  GGUF header:");
    println!("    byte order        {}", opt(h.endian.map(|e| format!("{e:?}").to_lowercase())));
    println!("    tensor count      {}", opt_n(h.tensor_count));
    println!("    KV count          {}", opt_n(h.kv_count));
    println!("    alignment         {}", h.alignment);
    println!("    tensor infos at   {}", opt_n(h.tensor_infos_start));
    let c = &g.card;
    println!("  model card:");
    println!("    architecture      {}", opt(c.architecture.as_deref()));
    println!("    name              {}", opt(c.name.as_deref()));
    println!("    file type         {}", opt(c.file_type_name.as_deref()));
    println!("    context length    {}", opt_n(c.context_length));
    println!("    embedding length  {}", opt_n(c.embedding_length));
    println!("    blocks            {}", opt_n(c.block_count));
    println!("    heads / KV heads  {} / {}", opt_n(c.head_count), opt_n(c.head_count_kv));
    println!("    vocab size        {}", opt_n(c.vocab_size));
    println!(
        "    RoPE              freq base {}, dims {}, scaling {} ×{} (orig. ctx {})",
        opt(c.rope_freq_base),
        opt_n(c.rope_dimension_count),
        opt(c.rope_scaling_type.as_deref()),
        opt(c.rope_scaling_factor),
        opt_n(c.rope_original_context_length)
    );
    println!("    parameters        {} ({})", thousands(c.parameter_count), human_count(c.parameter_count));
    println!("    bits per weight   {}", opt(c.bits_per_weight.map(|b| format!("{b:.2}"))));
    let t = &g.tokenizer;
    if t.model.is_some() || t.token_count.is_some() {
        println!("  tokenizer:");
        println!("    model / pre       {} / {}", opt(t.model.as_deref()), opt(t.pre.as_deref()));
        println!("    tokens / merges   {} / {}", opt_n(t.token_count), opt_n(t.merge_count));
        let types: Vec<String> = t.token_type_counts.iter().map(|(_, n, c)| format!("{n} {}", thousands(*c))).collect();
        if !types.is_empty() {
            println!("    token types       {}", types.join(", "));
        }
        for (label, s) in [("BOS", &t.bos), ("EOS", &t.eos), ("PAD", &t.pad), ("UNK", &t.unk)] {
            if let Some(s) = s {
                println!("    {label:<17} {} {}", s.id, opt(s.text.as_ref().map(|x| format!("{x:?}"))));
            }
        }
        if let Some(tpl) = &t.chat_template {
            println!("    chat template     {} bytes (shown as plain text with --json)", thousands(tpl.len() as u64));
        }
        println!("    metadata bytes    {}", thousands(t.metadata_bytes));
    }
    println!("  layout (bytes{}):", if g.layout.adds_up { ", adding up to the file size" } else { ", NOT adding up" });
    for term in &g.layout.terms {
        println!("    {:<48} {:>18}", term.label, thousands(term.bytes));
    }
    println!("  metadata ({} entries):", g.kvs.len());
    for kv in &g.kvs {
        let shown = match &kv.value {
            Value::Array(a) => {
                let head: Vec<String> = a.head.iter().take(4).map(Value::display).collect();
                format!("[{}; {}] {}{}", a.elem_type.name(), thousands(a.len), head.join(", "), if a.len > 4 { ", …" } else { "" })
            }
            Value::String(s) if s.chars().count() > 80 => format!("{:?}… ({} bytes)", s.chars().take(60).collect::<String>(), s.len()),
            v => v.display(),
        };
        println!("    {:<44} {:<6} {}", kv.key, kv.value.value_type().name(), shown);
    }
    println!("  tensors: ggml dims as stored (ne[0] first); shape below is row-major (reversed)");
}

fn print_split(m: &gguf_split::SplitModel) {
    println!(
        "split model — {} ({} of {} parts given)",
        opt(m.architecture.as_deref()),
        m.parts.len(),
        opt_n(m.split_count)
    );
    for p in &m.parts {
        let n = m.tensors.iter().filter(|(f, _)| *f == p.name).count();
        println!("  part {}  {}  {} tensors", opt(p.split_no.map(|n| n + 1)), p.name, n);
    }
    println!("  tensors           {}", thousands(m.totals.tensors));
    println!("  parameters        {}", thousands(m.totals.params));
    println!("  tensor bytes      {} ({})", thousands(m.totals.bytes), human_bytes(m.totals.bytes));
    for f in &m.findings {
        println!("  - {f}");
    }
    println!();
}
