//! Made-up model files: a small safetensors file and a GGUF file with a tokenizer, built
//! in memory. The page warms its first view, its parse worker and its first stage with them
//! (`web/warm.rs`, `web/worker/entry.rs`, `bin/peek.rs`): V8 compiles a wasm function on its first call, and these make the
//! functions a real file needs compiled before a real file comes. Nothing here reads a file.
//!
//! The app's view is warmed with the samples' inspections as the parse worker would hand
//! them over, encoded once here and committed (`src/web/warm_view.postcard`), so that the
//! app's wasm does not carry the parsers (the worker does the parsing): `tests/samples.rs`
//! fails when that file no longer equals what the parsers make of the samples now, and
//! `BLESS=1 cargo test --test tests samples::` writes it anew.

use crate::formats::Inspection;

/// A made-up file's inspection, by the core's own driver (`source::inspect`, as the parse
/// worker reads a file), over the bytes in memory.
#[cfg(not(target_arch = "wasm32"))]
pub fn inspect(name: &str, bytes: &[u8]) -> Inspection {
    let src = crate::source::MemorySource::new(bytes.to_vec());
    pollster::block_on(crate::source::inspect::inspect(&src, name))
}

/// The inspections of [`samples`], encoded as the app reads them back
/// ([`decode_view_inspections`]).
#[cfg(not(target_arch = "wasm32"))]
pub fn encode_view_inspections() -> Result<Vec<u8>, String> {
    let all: Vec<Inspection> = samples().iter().map(|(name, bytes)| inspect(name, bytes)).collect();
    postcard::to_stdvec(&all).map_err(|e| e.to_string())
}

/// The inspections [`encode_view_inspections`] encoded.
pub fn decode_view_inspections(bytes: &[u8]) -> Result<Vec<Inspection>, String> {
    postcard::from_bytes(bytes).map_err(|e| e.to_string())
}

/// The made-up files the view is warmed with, by name: 120 tensors (the table's row code
/// runs a hundred times: V8 moves a function to its optimizing tier after enough work).
pub fn samples() -> [(&'static str, Vec<u8>); 2] {
    [("warm.safetensors", safetensors(120)), ("warm.gguf", gguf(8))]
}

/// The files the parse worker warms up with: the same, with a GGUF vocabulary of 40,000
/// tokens and merges (~0.6 MB), so that the header parser's loops run long enough in the
/// worker's first second to be optimized before a real 10 MB header arrives.
pub fn worker_samples() -> [(&'static str, Vec<u8>); 2] {
    [("warm.safetensors", safetensors(120)), ("warm.gguf", gguf(40_000))]
}

/// A safetensors file of `n` small tensors of the common dtypes, with metadata (the page's
/// first stage warms up with one too: src/bin/peek.rs).
pub fn safetensors(n: usize) -> Vec<u8> {
    let mut header = String::from(r#"{"__metadata__":{"format":"pt"}"#);
    let mut at = 0u64;
    for (i, (dtype, size)) in [("F32", 4u64), ("BF16", 2), ("F16", 2), ("I64", 8)].iter().cycle().take(n).enumerate() {
        let bytes = 4 * 8 * size;
        header.push_str(&format!(r#","model.layers.{i}.weight":{{"dtype":"{dtype}","shape":[4,8],"data_offsets":[{at},{}]}}"#, at + bytes));
        at += bytes;
    }
    header.push('}');
    while !(header.len() + 8).is_multiple_of(8) {
        header.push(' ');
    }
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.resize(out.len() + at as usize, 0);
    out
}

/// A GGUF v3 file with the keys and tokenizer arrays a model has (`vocab` tokens and as
/// many merges), and a few tensors.
pub fn gguf(vocab: usize) -> Vec<u8> {
    fn string(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }
    fn kv(out: &mut Vec<u8>, key: &str, ty: u32, value: &[u8]) {
        string(out, key);
        out.extend_from_slice(&ty.to_le_bytes());
        out.extend_from_slice(value);
    }
    fn strings(items: &[String]) -> Vec<u8> {
        let mut v = 8u32.to_le_bytes().to_vec();
        v.extend_from_slice(&(items.len() as u64).to_le_bytes());
        for s in items {
            string(&mut v, s);
        }
        v
    }
    const STRING: u32 = 8;
    const ARRAY: u32 = 9;
    const U32: u32 = 4;
    // byte-level BPE-looking tokens ("Ġ" + letters) after three special ones
    let letters = b"etaoinshrdlucmfw";
    let tokens: Vec<String> = ["<unk>", "<s>", "</s>"]
        .iter()
        .map(|t| t.to_string())
        .chain((0..vocab.saturating_sub(3)).map(|i| {
            let word: String = (0..1 + i % 7).map(|k| char::from(letters[(i >> (k * 2)) % letters.len()])).collect();
            format!("\u{120}{word}{i}")
        }))
        .collect();
    let merges: Vec<String> = tokens.iter().skip(3).map(|t| format!("{t} {t}")).collect();
    let mut s = Vec::new();
    string(&mut s, "llama");
    let mut kvs = Vec::new();
    kv(&mut kvs, "general.architecture", STRING, &s);
    let mut n = Vec::new();
    string(&mut n, "warm");
    kv(&mut kvs, "general.name", STRING, &n);
    kv(&mut kvs, "llama.block_count", U32, &2u32.to_le_bytes());
    kv(&mut kvs, "llama.embedding_length", U32, &8u32.to_le_bytes());
    let mut t = Vec::new();
    string(&mut t, "llama");
    kv(&mut kvs, "tokenizer.ggml.model", STRING, &t);
    kv(&mut kvs, "tokenizer.ggml.tokens", ARRAY, &strings(&tokens));
    kv(&mut kvs, "tokenizer.ggml.merges", ARRAY, &strings(&merges));
    let mut types = 5u32.to_le_bytes().to_vec();
    types.extend_from_slice(&(tokens.len() as u64).to_le_bytes());
    for i in 0..tokens.len() {
        let ty: i32 = match i {
            0 => 2,
            1 | 2 => 3,
            _ => 1,
        };
        types.extend_from_slice(&ty.to_le_bytes());
    }
    kv(&mut kvs, "tokenizer.ggml.token_type", ARRAY, &types);
    let mut tmpl = Vec::new();
    string(&mut tmpl, "{% for m in messages %}{{ m.content }}{% endfor %}");
    kv(&mut kvs, "tokenizer.chat_template", STRING, &tmpl);
    // tensors: (name, dims, ggml type, bytes) — F32, F16, Q8_0 (32 values in 34 bytes)
    let tensors = [("token_embd.weight", 0u32, 4 * 64u64), ("blk.0.attn_q.weight", 1, 2 * 64), ("blk.0.ffn_up.weight", 8, 2 * 34)];
    let mut out = b"GGUF".to_vec();
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
    out.extend_from_slice(&9u64.to_le_bytes());
    out.extend_from_slice(&kvs);
    let mut at = 0u64;
    for (name, ty, bytes) in tensors {
        string(&mut out, name);
        out.extend_from_slice(&2u32.to_le_bytes());
        for d in [32u64, 2] {
            out.extend_from_slice(&d.to_le_bytes());
        }
        out.extend_from_slice(&ty.to_le_bytes());
        out.extend_from_slice(&at.to_le_bytes());
        at += bytes.div_ceil(32) * 32;
    }
    out.resize(out.len().div_ceil(32) * 32 + at as usize, 0);
    out
}
