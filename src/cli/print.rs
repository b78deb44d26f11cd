//! The text the CLI prints for a file, a merged checkpoint and a split GGUF (`--json`
//! prints the report instead).

use crate::fmt::{human_bytes, human_count, shape, thousands};
use crate::formats::gguf::{GgufFile, Value};
use crate::formats::{Inspection, Verdict};
use crate::model::architecture::Family;
use crate::model::checkpoint::CheckpointModel;
use crate::model::gguf_split::SplitModel;
use crate::formats::pickle::{GlobalVerdict, Verdict as SafetyVerdict};
use crate::formats::torch::TorchFile;
use crate::report::safety_meaning;

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "?".into(), thousands)
}

pub fn print_model(m: &CheckpointModel) {
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
        if a.family != Family::Unknown {
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
        if a.family == Family::Unknown {
            println!("  config (raw, family not known to tensorpeek):");
            for (k, v) in &a.raw {
                println!("    {k} = {v}");
            }
        }
    }
    if let Some(a) = &m.inventory {
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
    if let Some(v) = m.safety {
        println!("  safety            {} (the worst of the shards' verdicts)", v.name().to_uppercase());
    }
    let container = if r.container_bytes > 0 { format!(" + {} container bytes (zip records, pickles)", thousands(r.container_bytes)) } else { String::new() };
    println!(
        "  files             {} bytes = {} tensor bytes + {} header bytes + {} prefix bytes{container}{}",
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
            t.model.as_deref().unwrap_or("?"),
            opt(t.tokens),
            opt(t.merges),
            opt(t.added_tokens),
            t.special_tokens.len()
        );
        for s in t.special_tokens.iter().filter(|s| s.role.is_some()) {
            println!("    {:<10} {:?}", format!("{}_token", s.role.as_deref().unwrap_or("")), s.text.as_deref().unwrap_or(""));
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
    println!("  model verdict: {}", Verdict::of(m.findings()).label());
    for finding in m.findings() {
        println!("  - {finding}");
    }
    println!();
}

pub fn print_file(f: &Inspection, with_tensors: bool) {
    let gguf = f.parsed.gguf();
    let torch = f.parsed.torch();
    println!("{} — {} ({} bytes, {})", f.name, f.format.name(), thousands(f.size), human_bytes(f.size));
    if let Some(t) = torch {
        print_safety(t);
    }
    if let Some(n) = f.header_len() {
        println!("  header length N   {}", thousands(n));
    }
    if let Some(v) = gguf.and_then(|g| g.header.version) {
        println!("  GGUF version      {v}");
    }
    if let Some(d) = f.data_start() {
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
    if let Some(h) = f.parsed.safetensors().filter(|h| !h.metadata.is_empty()) {
        println!("  metadata:");
        for (k, v) in &h.metadata {
            println!("    {k} = {v}");
        }
    }
    if let Some(g) = gguf {
        print_gguf(g);
    }
    if let Some(t) = torch {
        println!("  tensor data       {} bytes (shared storages counted once)", thousands(t.data_bytes));
        if let Some((at, len)) = t.inspection.pickle {
            println!("  pickle            {} bytes at byte {}, {} opcodes", thousands(len), thousands(at), thousands(t.inspection.opcodes));
        }
    }
    if let (true, Some(t)) = (with_tensors && !f.tensors().is_empty(), torch) {
        print_torch_tensors(t);
    } else if with_tensors && !f.tensors().is_empty() {
        let w = f.tensors().iter().map(|t| t.name.chars().count()).max().unwrap_or(4).clamp(4, 60);
        let gg = gguf.is_some();
        let dims_head = if gg { format!(" {:<22}", "ggml dims") } else { String::new() };
        println!("  {:<w$}  {:<10} {:<22}{dims_head} {:>16} {:>16}", "name", "dtype", "shape", "bytes", "abs offset");
        for t in f.tensors() {
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
    println!("  safety: {}", f.safety().name());
    for finding in f.findings() {
        println!("  - {finding}");
    }
    println!();
}

/// Width of the safety block's rules.
const SAFETY_RULE: usize = 72;

/// The safety verdict of a pickle-based file, as a block a person cannot miss, then every
/// import the pickle would perform.
fn print_safety(t: &TorchFile) {
    let s = &t.inspection.safety;
    let mark = if s.verdict == SafetyVerdict::Safe { '-' } else { '!' };
    let rule: String = std::iter::repeat_n(mark, SAFETY_RULE).collect();
    println!("  {rule}");
    println!("  {mark} SAFETY: {}", s.verdict.name().to_uppercase());
    let mut line = String::new();
    for word in safety_meaning(s.verdict).split(' ') {
        if line.len() + word.len() + 1 > SAFETY_RULE - 4 {
            println!("  {mark} {line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        println!("  {mark} {line}");
    }
    println!("  {mark} {}", s.summary());
    println!("  {rule}");
    if !s.globals.is_empty() {
        println!("  imports (in opcode order):");
        for g in &s.globals {
            let what = match (&g.module, &g.name) {
                (Some(m), Some(n)) => format!("{m}.{n}"),
                _ => "(computed at run time)".to_string(),
            };
            let verdict = match g.verdict {
                GlobalVerdict::Dangerous => "DANGEROUS",
                GlobalVerdict::Unknown => "unknown",
                GlobalVerdict::Allowed => "allowed",
            };
            let member = g.member.as_deref().map_or_else(String::new, |m| format!(" in {m}"));
            let times = if g.count > 1 { format!(" ×{}", thousands(g.count)) } else { String::new() };
            println!("    {verdict:<9}  {what}{times}  ({} at byte {}{member}): {}", g.opcode, thousands(g.offset), g.why);
        }
    }
}

/// The inventory of a pickle-based file: with strides, storages and contiguity.
fn print_torch_tensors(t: &TorchFile) {
    let w = t.entries.iter().map(|e| e.name.chars().count()).max().unwrap_or(4).clamp(4, 60);
    println!(
        "  {:<w$}  {:<10} {:<18} {:<18} {:>14} {:>14}  {:<12} {:>8}  contiguous",
        "name", "dtype", "shape", "stride", "bytes", "abs offset", "storage", "st. off."
    );
    let users = crate::formats::torch::storage_users(&t.inspection.tensors);
    for (e, l) in t.entries.iter().zip(&t.inspection.tensors) {
        let others = users.get(l.storage.as_str()).map_or(0, |n| n.saturating_sub(1));
        println!(
            "  {:<w$}  {:<10} {:<18} {:<18} {:>14} {:>14}  {:<12} {:>8}  {}{}",
            e.name,
            e.dtype,
            shape(&e.shape),
            shape(&l.stride),
            e.bytes.map_or_else(|| "?".into(), thousands),
            e.abs_start.map_or_else(|| "?".into(), thousands),
            l.storage,
            thousands(l.storage_offset),
            if l.contiguous { "yes" } else { "no (a view)" },
            if l.shares_storage_with.is_empty() { String::new() } else { format!(", shares its storage with {}", crate::fmt::shared_with(&l.shares_storage_with, others)) }
        );
    }
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
    if let Some(d) = crate::model::description::Description::from_gguf(g) {
        println!("    layers            {} ({})", d.pattern(), pattern_legend(&d));
        if let Some((experts, used)) = d.experts() {
            let shared = d.layers.iter().find_map(|l| match l.ffn {
                crate::model::description::Ffn::Moe { shared, .. } => Some(shared),
                _ => None,
            });
            println!(
                "    experts           {experts}, {used} used per token{}{}",
                shared.filter(|s| *s > 0).map(|s| format!(", {s} shared")).unwrap_or_default(),
                if d.leading_dense > 0 { format!(", {} leading dense layers", d.leading_dense) } else { String::new() }
            );
            if let Some((active, total)) = d.active_params(g.tensors.iter().map(|t| (t.name.as_str(), t.params.unwrap_or(0)))) {
                println!("    active params     {} of {} ({})", human_count(active), human_count(total), thousands(active));
            }
        }
        if let Some(w) = d.swa {
            println!("    sliding window    {} tokens ({:?})", thousands(w.window), w.kind);
        }
        if let Some(m) = d.mla {
            println!("    MLA               kv_lora_rank {}, rope {}, q_lora_rank {}", m.kv_lora_rank, m.rope_dim, m.q_lora_rank);
        }
    }
    let t = &g.tokenizer;
    if t.model.is_some() || t.tokens.is_some() {
        println!("  tokenizer:");
        println!("    model / pre       {} / {}", opt_s(t.model.as_deref()), opt_s(t.pre.as_deref()));
        println!("    tokens / merges   {} / {}", opt_n(t.tokens), opt_n(t.merges));
        let types: Vec<String> = t.token_types.iter().map(|c| format!("{} {}", c.name, thousands(c.count))).collect();
        if !types.is_empty() {
            println!("    token types       {}", types.join(", "));
        }
        for s in &t.special_tokens {
            let label = s.role.as_deref().unwrap_or("special").to_ascii_uppercase();
            println!("    {label:<17} {} {}", opt_n(s.id), opt_s(s.text.as_ref().map(|x| format!("{x:?}"))));
        }
        for c in &t.chat_templates {
            println!("    chat template     {} ({}) bytes (shown as plain text with --json)", thousands(c.template.len() as u64), c.name);
        }
        println!("    metadata bytes    {}", opt_n(t.metadata_bytes));
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

pub fn print_split(m: &SplitModel) {
    println!(
        "split model — {} ({} of {} parts given)",
        opt_s(m.architecture.as_deref()),
        m.parts.len(),
        opt_n(m.split_count)
    );
    for p in &m.parts {
        println!("  part {}  {}  {} tensors", opt_s(p.split_no.map(|n| n.saturating_add(1))), p.name, p.tensors);
    }
    println!("  tensors           {}", thousands(m.totals.tensors));
    println!("  parameters        {}", thousands(m.totals.params));
    println!("  tensor bytes      {} ({})", thousands(m.totals.bytes), human_bytes(m.totals.bytes));
    for f in m.findings() {
        println!("  - {f}");
    }
    println!();
}

/// What the letters of a layer strip stand for, those that occur.
fn pattern_legend(d: &crate::model::description::Description) -> String {
    let p = d.pattern();
    [('F', "full"), ('S', "sliding"), ('C', "chunked"), ('M', "MLA"), ('R', "recurrent"), ('-', "no attention")]
        .iter()
        .filter(|(c, _)| p.contains(*c) || p.contains(c.to_ascii_lowercase()))
        .map(|(c, w)| format!("{c} {w}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Writes the JSON report to standard output; `Err` is the exit status when that failed.
pub(super) fn print_report<F: serde::Serialize>(report: &crate::report::Report<F>) -> Result<(), std::process::ExitCode> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    report.write_json_pretty(&mut out).and_then(|()| std::io::Write::flush(&mut out)).map_err(|e| {
        eprintln!("tensorpeek: writing the report failed: {e}");
        std::process::ExitCode::from(super::exit::EXIT_USAGE)
    })
}
