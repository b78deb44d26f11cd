//! The native command line: `tensorpeek inspect FILE|DIR… [--json]` and
//! `tensorpeek stats FILE --tensor NAME [--json]`. A folder (or several files) forming a
//! checkpoint is merged into one model (`formats::checkpoint`); so are split GGUF parts.
//! Exit status: 0 every file sound (warnings allowed), 1 some file has errors, 2 usage.

use crate::fmt::{human_bytes, human_count, shape, thousands};
use crate::formats::checkpoint::{self, ModelReport};
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
        /// Files to inspect, or folders holding a checkpoint (shards, index, config.json,
        /// tokenizer files).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print the JSON report (docs/report.md) instead of tables.
        #[arg(long)]
        json: bool,
    },
    /// Read one tensor's bytes and print its value statistics, histogram and preview.
    Stats {
        /// The model file.
        file: PathBuf,
        /// The tensor's name, as listed by `inspect`.
        #[arg(long)]
        tensor: String,
        /// Print the JSON report with this tensor's `stats` filled in.
        #[arg(long)]
        json: bool,
    },
    /// Benchmark: BF16 → stats throughput over a synthetic 128256×3072 tensor (in memory).
    #[command(hide = true)]
    BenchValues {
        /// Elements (default: 128256 × 3072, a Llama-3 embedding table).
        #[arg(long, default_value_t = crate::bench::BENCH_ROWS * crate::bench::BENCH_ROW)]
        elements: u64,
        /// Element type to benchmark (BF16, F16, F32, F8_E4M3, …, or a ggml type with --gguf).
        #[arg(long, default_value = "BF16")]
        dtype: String,
        /// Treat --dtype as a ggml type.
        #[arg(long)]
        gguf: bool,
        /// Which runs: with the SHA-256 ("on"), without ("off"), or "both".
        #[arg(long, default_value = "both")]
        sha: String,
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
        Command::Stats { file, tensor, json } => crate::cli_values::stats(&file, &tensor, json),
        Command::BenchValues { elements, dtype, gguf, sha } => crate::cli_values::bench(elements, &dtype, gguf, &sha),
    }
}

/// One input after classification.
struct Input {
    path: PathBuf,
    name: String,
    kind: checkpoint::Kind,
}

fn file_name(path: &std::path::Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

fn classify_path(path: &std::path::Path) -> std::io::Result<Input> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let mut first = Vec::new();
    file.take(checkpoint::CLASSIFY_LEN).read_to_end(&mut first)?;
    let name = file_name(path);
    Ok(Input {
        kind: checkpoint::classify(&name, &first, len),
        path: path.to_path_buf(),
        name,
    })
}

/// Expands folders (one level, sorted by name) and classifies every file.
fn collect(paths: &[PathBuf]) -> Result<(Vec<Input>, Vec<String>), String> {
    let mut inputs = Vec::new();
    let mut ignored = Vec::new();
    for path in paths {
        if path.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let mut files: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect();
            files.sort();
            for f in files {
                let input = classify_path(&f).map_err(|e| format!("cannot open {}: {e}", f.display()))?;
                if input.kind.is_tensor_file() || input.kind.is_companion() {
                    inputs.push(input);
                } else {
                    ignored.push(input.name);
                }
            }
        } else {
            inputs.push(classify_path(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?);
        }
    }
    Ok((inputs, ignored))
}

fn inspect(paths: &[PathBuf], json: bool) -> ExitCode {
    let (inputs, ignored) = match collect(paths) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("tensorpeek: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let mut sources = Vec::new();
    for input in &inputs {
        match FileSource::open(&input.path) {
            Ok(src) => sources.push((input.name.clone(), src)),
            Err(e) => {
                eprintln!("tensorpeek: cannot open {}: {e}", input.path.display());
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    // Unrecognised files named on the command line are inspected (to say why they are
    // not model files); those found in a folder were already left out by `collect`.
    let set = pollster::block_on(source::checkpoint::inspect_set(&sources, true));
    let model = set.model;
    let files = set.files;
    let ggufs: Vec<Option<&GgufFile>> = set
        .parsed
        .iter()
        .map(|p| match p {
            Parsed::Gguf(g) => Some(g.as_ref()),
            _ => None,
        })
        .collect();
    // Several parts of a split GGUF: one merged model.
    let parts: Vec<(&str, &GgufFile)> = files
        .iter()
        .zip(&ggufs)
        .filter_map(|(f, g)| g.filter(|g| gguf_split::is_split_part(g)).map(|g| (f.name.as_str(), g)))
        .collect();
    let split = (parts.len() > 1).then(|| gguf_split::merge(&parts));
    let skipped: Vec<String> = set
        .skipped
        .iter()
        .map(|s| format!("{} ({} bytes): {}", s.name, thousands(s.len), s.reason))
        .collect();
    let mut report = Report::new(files);
    report.model = model
        .as_ref()
        .map(ModelReport::to_value)
        .or_else(|| split.as_ref().map(gguf_split::SplitModel::to_json));
    if json {
        println!("{}", report.to_json_pretty());
    } else {
        for (f, g) in report.files.iter().zip(&ggufs) {
            print_file(f, model.is_none(), *g);
        }
        if let Some(m) = &model {
            print_model(m);
        }
        if let Some(m) = &split {
            print_split(m);
        }
        for name in &ignored {
            println!("ignored: {name} (not a model file or a JSON companion)");
        }
        for s in &skipped {
            println!("skipped: {s}");
        }
    }
    ExitCode::from(if report.ok() { EXIT_SOUND } else { EXIT_FINDINGS })
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "?".into(), thousands)
}

fn print_model(m: &ModelReport) {
    println!(
        "model — {} shard(s), {} tensors, {} parameters ({})",
        m.shards.len(),
        thousands(m.totals.tensors),
        thousands(m.totals.params),
        human_count(m.totals.params)
    );
    if let Some(a) = &m.architecture {
        let ty = a.model_type.as_deref().unwrap_or("unknown");
        println!("  architecture      {ty} ({}), family {:?}", a.architectures.join(", "), a.family);
        if a.family != crate::audit::Family::Unknown {
            println!(
                "  layers {} · hidden {} · intermediate {} · head_dim {} · vocab {}",
                opt(a.layers),
                opt(a.hidden_size),
                opt(a.intermediate_size),
                opt(a.head_dim),
                opt(a.vocab_size)
            );
            if let Some(att) = &a.attention {
                println!("  attention         {att}");
            }
            println!("  tied embeddings   {}", a.tie_word_embeddings);
            if let Some(t) = a.rope_theta {
                println!("  rope_theta        {t}");
            }
            if let Some(r) = &a.rope_scaling {
                println!("  rope_scaling      {r}");
            }
            if let Some(d) = &a.torch_dtype {
                println!("  dtype             {d}");
            }
        }
        if a.family == crate::audit::Family::Unknown {
            println!("  config (raw, family not known to tensorpeek):");
            for (k, v) in &a.raw {
                println!("    {k} = {v}");
            }
        }
    }
    if let Some(a) = &m.audit {
        if a.checked {
            println!(
                "  inventory         {} expected ({} per layer), {} matched, {} missing, {} unexpected, {} wrong shape",
                thousands(a.expected_tensors),
                opt(a.tensors_per_layer),
                thousands(a.matched),
                thousands(a.missing),
                thousands(a.unexpected),
                thousands(a.shape_mismatches)
            );
            if let Some(p) = a.expected_params {
                println!("  params by config  {}", thousands(p));
            }
        }
        if let Some(share) = a.embedding_share_percent {
            println!("  embedding share   {share:.2} % of all parameters");
        }
    }
    let r = &m.reconciliation;
    println!(
        "  files             {} bytes = {} tensor bytes + {} header bytes + {} prefix bytes{}",
        thousands(r.file_bytes),
        thousands(r.tensor_bytes),
        thousands(r.header_bytes),
        thousands(r.prefix_bytes),
        if r.balanced { String::new() } else { format!(" + {} unaccounted", r.unaccounted_bytes) }
    );
    if let Some(idx) = &m.index {
        println!(
            "  index             {}: {} tensors in {} shard(s), total_size {}{}",
            idx.file,
            thousands(idx.tensors),
            idx.shards.len(),
            opt(idx.total_size),
            if idx.total_size_checked { "" } else { " (not checked)" }
        );
    }
    if !m.shards.is_empty() {
        println!("  {:<40} {:>16} {:>10} {:>8} {:>16}", "shard", "size", "header N", "tensors", "tensor bytes");
        for s in &m.shards {
            println!(
                "  {:<40} {:>16} {:>10} {:>8} {:>16}",
                s.name,
                thousands(s.size),
                opt(s.header_len),
                thousands(s.tensors),
                thousands(s.tensor_bytes)
            );
        }
    }
    for s in &m.missing_shards {
        println!("  {:<40} {:>16}", s, "not provided");
    }
    if let Some(t) = &m.tokenizer {
        println!(
            "  tokenizer         {} · vocab {} · merges {} · {} added tokens · {} special",
            t.model_type.as_deref().unwrap_or("?"),
            opt(t.vocab),
            opt(t.merges),
            thousands(t.added_tokens),
            t.special_tokens.len()
        );
        for (role, tok) in &t.roles {
            println!("    {role:<10} {tok:?}");
        }
        for c in &t.chat_templates {
            println!("  chat template ({}), shown as text:", c.name);
            for line in c.template.lines() {
                println!("    | {line}");
            }
        }
    }
    if !m.tensors.is_empty() {
        let w = m.tensors.iter().map(|t| t.tensor.name.chars().count()).max().unwrap_or(4).clamp(4, 60);
        println!("  {:<w$}  {:<8} {:<22} {:>14}  file", "name", "dtype", "shape", "bytes");
        for t in &m.tensors {
            println!(
                "  {:<w$}  {:<8} {:<22} {:>14}  {}",
                t.tensor.name,
                t.tensor.dtype,
                shape(&t.tensor.shape),
                opt(t.tensor.bytes),
                t.file
            );
        }
    }
    let verdict = if !m.errors.is_empty() {
        "errors"
    } else if !m.warnings.is_empty() {
        "sound with warnings"
    } else {
        "sound"
    };
    println!("  model verdict: {verdict}");
    for finding in m.findings() {
        println!("  - {finding}");
    }
    println!();
}

fn print_file(f: &FileReport, with_tensors: bool, gguf: Option<&GgufFile>) {
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
    if with_tensors && !f.tensors.is_empty() {
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

fn opt_s<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "—".into(), |v| v.to_string())
}

fn opt_n(v: Option<u64>) -> String {
    v.map_or_else(|| "—".into(), thousands)
}

/// The GGUF-specific sections: header, model card, tokenizer, layout, metadata.
fn print_gguf(g: &GgufFile) {
    let h = &g.header;
    println!("  GGUF header:");
    println!("    byte order        {}", opt_s(h.endian.map(|e| format!("{e:?}").to_lowercase())));
    println!("    tensor count      {}", opt_n(h.tensor_count));
    println!("    KV count          {}", opt_n(h.kv_count));
    println!("    alignment         {}", h.alignment);
    println!("    tensor infos at   {}", opt_n(h.tensor_infos_start));
    let c = &g.card;
    println!("  model card:");
    println!("    architecture      {}", opt_s(c.architecture.as_deref()));
    println!("    name              {}", opt_s(c.name.as_deref()));
    println!("    file type         {}", opt_s(c.file_type_name.as_deref()));
    println!("    context length    {}", opt_n(c.context_length));
    println!("    embedding length  {}", opt_n(c.embedding_length));
    println!("    blocks            {}", opt_n(c.block_count));
    println!("    heads / KV heads  {} / {}", opt_n(c.head_count), opt_n(c.head_count_kv));
    println!("    vocab size        {}", opt_n(c.vocab_size));
    println!(
        "    RoPE              freq base {}, dims {}, scaling {} ×{} (orig. ctx {})",
        opt_s(c.rope_freq_base),
        opt_n(c.rope_dimension_count),
        opt_s(c.rope_scaling_type.as_deref()),
        opt_s(c.rope_scaling_factor),
        opt_n(c.rope_original_context_length)
    );
    println!("    parameters        {} ({})", thousands(c.parameter_count), human_count(c.parameter_count));
    println!("    bits per weight   {}", opt_s(c.bits_per_weight.map(|b| format!("{b:.2}"))));
    let t = &g.tokenizer;
    if t.model.is_some() || t.token_count.is_some() {
        println!("  tokenizer:");
        println!("    model / pre       {} / {}", opt_s(t.model.as_deref()), opt_s(t.pre.as_deref()));
        println!("    tokens / merges   {} / {}", opt_n(t.token_count), opt_n(t.merge_count));
        let types: Vec<String> = t.token_type_counts.iter().map(|(_, n, c)| format!("{n} {}", thousands(*c))).collect();
        if !types.is_empty() {
            println!("    token types       {}", types.join(", "));
        }
        for (label, s) in [("BOS", &t.bos), ("EOS", &t.eos), ("PAD", &t.pad), ("UNK", &t.unk)] {
            if let Some(s) = s {
                println!("    {label:<17} {} {}", s.id, opt_s(s.text.as_ref().map(|x| format!("{x:?}"))));
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
        opt_s(m.architecture.as_deref()),
        m.parts.len(),
        opt_n(m.split_count)
    );
    for p in &m.parts {
        let n = m.tensors.iter().filter(|(f, _)| *f == p.name).count();
        println!("  part {}  {}  {} tensors", opt_s(p.split_no.map(|n| n + 1)), p.name, n);
    }
    println!("  tensors           {}", thousands(m.totals.tensors));
    println!("  parameters        {}", thousands(m.totals.params));
    println!("  tensor bytes      {} ({})", thousands(m.totals.bytes), human_bytes(m.totals.bytes));
    for f in &m.findings {
        println!("  - {f}");
    }
    println!();
}
