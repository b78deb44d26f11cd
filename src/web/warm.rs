//! Warming the first file view. V8 compiles a wasm function the first time it is called,
//! and runs it in its baseline tier at first: the first file a person dropped paid, between
//! its inspection and its first paint, for compiling every function its view calls (Yew's
//! components, the table, the formatting, the inspection's decoding). So when the app has
//! started, and the page is idle, it renders once a file view of a small made-up
//! safetensors file and of a small made-up GGUF file — inspected by the same core, round
//! tripped through the worker's encoding — into an element that is never in the document,
//! then unmounts it. Nothing of it is seen, read from disk or sent anywhere.

use super::file_view::FileView;
use super::state::{FileEntry, Shared, Status};
use crate::formats::{gguf, safetensors, Inspection, Parsed, Step};
use crate::vocab::Format;
use gloo::timers::future::TimeoutFuture;
use std::rc::Rc;
use yew::prelude::*;

/// How long after the app starts the warm-up begins: its own first render and the spare
/// worker's start come first.
const START_AFTER_MS: u32 = 50;
/// How long a warm view stays mounted: the sections it renders a frame later
/// (`hooks::use_painted`) come in this time.
const MOUNTED_MS: u32 = 60;

#[derive(Properties, PartialEq)]
struct WarmProps {
    file: FileEntry,
}

#[function_component(Warm)]
fn warm_view(p: &WarmProps) -> Html {
    html! { <FileView file={p.file.clone()} /> }
}

/// Starts the warm-up (once per page) — unless a file is already on its way: the app was
/// started by a file chosen or dropped before it ran (the loader holds it), or by an
/// address that names files; then that file warms the view itself, and a warm-up would
/// only run beside it.
pub fn first_view() {
    if file_is_coming() {
        return;
    }
    wasm_bindgen_futures::spawn_local(async {
        TimeoutFuture::new(START_AFTER_MS).await;
        for (name, bytes) in samples() {
            if super::components::stood_down() {
                return;
            }
            let Some(inspection) = inspect(name, &bytes) else { continue };
            // as the worker's answer arrives: encoded, then decoded on this thread
            let Ok(inspection) = inspection.to_bytes().and_then(|b| Inspection::from_bytes(&b)) else { continue };
            let Some(root) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.create_element("div").ok()) else { return };
            let tensors = Shared(Rc::new(inspection.tensors().to_vec()));
            let file = FileEntry {
                id: u32::MAX,
                name: name.to_string(),
                size: inspection.size,
                status: Status::Done(Shared(Rc::new(inspection)), tensors),
                started_ms: 0.0,
                took_ms: Some(0.0),
                link: None,
                fetch: None,
            };
            let handle = yew::Renderer::<Warm>::with_root_and_props(root, WarmProps { file }).render();
            TimeoutFuture::new(MOUNTED_MS).await;
            handle.destroy();
            super::components::mark(&format!("warmed {name}"));
        }
    });
}

fn file_is_coming() -> bool {
    let Some(w) = web_sys::window() else { return true };
    let pending = super::shell::has_pending();
    let loc = w.location();
    let (search, hash) = (loc.search().unwrap_or_default(), loc.hash().unwrap_or_default());
    let named = ["url=", "hf="].iter().any(|k| search.contains(k)) || hash.contains("file=");
    pending || named
}


/// A made-up file's inspection, by its format's parser alone: `source::inspect` would
/// bring every format's reader (the pickle family's too) into the app's wasm, which
/// otherwise leaves parsing to the worker (580 KB gzipped against 518 KB with the two
/// parsers alone; 486 KB without the warm-up).
fn inspect(name: &str, bytes: &[u8]) -> Option<Inspection> {
    let len = bytes.len() as u64;
    let (format, parsed) = if name.ends_with(".gguf") {
        match gguf::parse(bytes, len) {
            Step::Done(g) => (Format::Gguf, Parsed::Gguf(Box::new(g))),
            Step::Need(_) => return None,
        }
    } else {
        match safetensors::parse(bytes, len) {
            Step::Done(h) => (Format::Safetensors, Parsed::Safetensors(h)),
            Step::Need(_) => return None,
        }
    };
    Some(Inspection::new(name, len, format, len, parsed))
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

/// A safetensors file of `n` small tensors of the common dtypes, with metadata.
fn safetensors(n: usize) -> Vec<u8> {
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
fn gguf(vocab: usize) -> Vec<u8> {
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
