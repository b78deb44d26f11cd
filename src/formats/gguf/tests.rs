//! Hand-built GGUF byte buffers: every value type, every version and byte order, and one
//! buffer per finding.

use super::*;
use crate::dtype::ggml::GgmlType;
use crate::error::{Code, Finding};
use crate::formats::Step;
use crate::vocab::{SpecialToken, TokenTypeCount};
use proptest::prelude::*;
use serde_json::json;
use std::collections::HashSet;

/// A small GGUF writer for tests (our own; the fixtures from gguf-py check it against a
/// third-party writer).
#[derive(Clone, Debug)]
pub(super) struct Builder {
    pub version: u32,
    pub big: bool,
    pub kvs: Vec<(Vec<u8>, Value)>,
    /// (name, dims, type id, offset)
    pub tensors: Vec<(Vec<u8>, Vec<u64>, u32, u64)>,
    pub alignment: u64,
    /// Bytes of the data section (zeros).
    pub data_len: u64,
}

impl Builder {
    pub fn new() -> Self {
        Builder {
            version: 3,
            big: false,
            kvs: Vec::new(),
            tensors: Vec::new(),
            alignment: 32,
            data_len: 0,
        }
    }

    pub fn kv(mut self, k: &str, v: Value) -> Self {
        self.kvs.push((k.as_bytes().to_vec(), v));
        self
    }

    /// A tensor placed after the previous one (aligned), with data.
    pub fn tensor(mut self, name: &str, dims: &[u64], ty: u32) -> Self {
        let t = GgmlType::from_id(ty).unwrap();
        let bytes = dims.iter().product::<u64>() / t.block_size * t.type_size;
        let off = self.data_len.div_ceil(self.alignment) * self.alignment;
        self.tensors.push((name.as_bytes().to_vec(), dims.to_vec(), ty, off));
        self.data_len = off + bytes;
        self
    }

    fn u32(&self, out: &mut Vec<u8>, v: u32) {
        out.extend_from_slice(&if self.big { v.to_be_bytes() } else { v.to_le_bytes() });
    }
    fn u64(&self, out: &mut Vec<u8>, v: u64) {
        out.extend_from_slice(&if self.big { v.to_be_bytes() } else { v.to_le_bytes() });
    }
    fn len(&self, out: &mut Vec<u8>, v: u64) {
        if self.version == 1 {
            self.u32(out, v as u32)
        } else {
            self.u64(out, v)
        }
    }
    fn str(&self, out: &mut Vec<u8>, s: &[u8]) {
        self.len(out, s.len() as u64);
        out.extend_from_slice(s);
    }

    pub fn value(&self, out: &mut Vec<u8>, v: &Value) {
        let b = self.big;
        macro_rules! n {
            ($x:expr) => {
                out.extend_from_slice(&if b { $x.to_be_bytes() } else { $x.to_le_bytes() })
            };
        }
        match v {
            Value::U8(x) => n!(x),
            Value::I8(x) => n!(x),
            Value::U16(x) => n!(x),
            Value::I16(x) => n!(x),
            Value::U32(x) => n!(x),
            Value::I32(x) => n!(x),
            Value::F32(x) => n!(x),
            Value::Bool(x) => n!(x),
            Value::U64(x) => n!(x),
            Value::I64(x) => n!(x),
            Value::F64(x) => n!(x),
            Value::String(s) => self.str(out, s.as_bytes()),
            Value::Array(a) => {
                self.u32(out, a.elem_type.id());
                self.len(out, a.len);
                for e in &a.head {
                    self.value(out, e);
                }
            }
        }
    }

    /// (bytes, offset of the tensor infos, data start)
    pub fn build_parts(&self) -> (Vec<u8>, u64, u64) {
        let mut out = b"GGUF".to_vec();
        self.u32(&mut out, self.version);
        self.len(&mut out, self.tensors.len() as u64);
        self.len(&mut out, self.kvs.len() as u64);
        for (k, v) in &self.kvs {
            self.str(&mut out, k);
            self.u32(&mut out, v.value_type().id());
            self.value(&mut out, v);
        }
        let ti = out.len() as u64;
        for (name, dims, ty, off) in &self.tensors {
            self.str(&mut out, name);
            self.u32(&mut out, dims.len() as u32);
            for d in dims {
                self.len(&mut out, *d);
            }
            self.u32(&mut out, *ty);
            self.u64(&mut out, *off);
        }
        let ds = (out.len() as u64).div_ceil(self.alignment) * self.alignment;
        out.resize((ds + self.data_len) as usize, 0);
        (out, ti, ds)
    }

    pub fn build(&self) -> Vec<u8> {
        self.build_parts().0
    }
}

pub(super) fn arr(elem: ValueType, items: Vec<Value>) -> Value {
    Value::Array(Array {
        elem_type: elem,
        len: items.len() as u64,
        head: items,
    })
}

fn done(bytes: &[u8]) -> GgufFile {
    match parse(bytes, bytes.len() as u64) {
        Step::Done(g) => g,
        Step::Need(n) => panic!("full buffer asked for {n}"),
    }
}

fn codes(g: &GgufFile) -> Vec<Code> {
    g.findings.iter().map(|f| f.code).collect()
}

fn finding(g: &GgufFile, code: Code) -> &Finding {
    g.findings
        .iter()
        .find(|f| f.code == code)
        .unwrap_or_else(|| panic!("no {code:?} in {:#?}", g.findings))
}

fn every_value() -> Vec<(&'static str, Value)> {
    vec![
        ("t.u8", Value::U8(200)),
        ("t.i8", Value::I8(-7)),
        ("t.u16", Value::U16(65000)),
        ("t.i16", Value::I16(-30000)),
        ("t.u32", Value::U32(4_000_000_000)),
        ("t.i32", Value::I32(-2_000_000_000)),
        ("t.f32", Value::F32(1.5)),
        ("t.bool", Value::Bool(1)),
        ("t.string", Value::String("héllo".into())),
        ("t.array", arr(ValueType::I32, vec![Value::I32(1), Value::I32(-2)])),
        ("t.u64", Value::U64(u64::MAX)),
        ("t.i64", Value::I64(i64::MIN)),
        ("t.f64", Value::F64(-2.25)),
        ("t.strings", arr(ValueType::String, vec![Value::String("a".into()), Value::String("".into())])),
    ]
}

fn sample(version: u32, big: bool) -> Builder {
    let mut b = Builder::new();
    b.version = version;
    b.big = big;
    b = b.kv("general.architecture", Value::String("llama".into()));
    for (k, v) in every_value() {
        b = b.kv(k, v);
    }
    b.tensor("token_embd.weight", &[64, 10], 8) // Q8_0
        .tensor("blk.0.attn_norm.weight", &[64], 0)
        .tensor("output.weight", &[256, 2], 12)
}

/// The codes besides `LlamaCppIncompatible` (a version 1 or big-endian file gets one).
fn codes_but_llama(g: &GgufFile) -> Vec<Code> {
    codes(g).into_iter().filter(|c| *c != Code::LlamaCppIncompatible).collect()
}

fn check_sample(g: &GgufFile, b: &Builder) {
    assert_eq!(codes_but_llama(g), vec![], "{:#?}", g.findings);
    let llama = g.findings.iter().filter(|f| f.code == Code::LlamaCppIncompatible).count();
    assert_eq!(llama, usize::from(b.version == 1) + usize::from(b.big), "{:#?}", g.findings);
    assert_eq!(g.kvs.len(), b.kvs.len());
    for (kv, (k, v)) in g.kvs.iter().zip(&b.kvs) {
        assert_eq!(kv.key.as_bytes(), k.as_slice());
        assert_eq!(&kv.value, v);
    }
    let names: Vec<&str> = g.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["token_embd.weight", "blk.0.attn_norm.weight", "output.weight"]);
    assert_eq!(g.tensors[0].bytes, Some(10 * 2 * 34));
    assert_eq!(g.tensors[0].shape, vec![10, 64]);
    assert_eq!(g.tensors[1].block(), Some(0));
    assert_eq!(g.tensors[2].bytes, Some(2 * 144));
    assert!(g.layout.adds_up, "{:#?}", g.layout);
}

#[test]
fn every_value_type_every_version_and_byte_order() {
    for (version, big) in [(3, false), (2, false), (3, true), (1, false), (1, true)] {
        let b = sample(version, big);
        let (bytes, ti, ds) = b.build_parts();
        let g = done(&bytes);
        assert_eq!(g.header.version, Some(version));
        assert_eq!(g.header.endian, Some(if big { Endian::Big } else { Endian::Little }));
        assert_eq!(g.header.fixed_header_bytes, if version == 1 { 16 } else { 24 });
        assert_eq!(g.header.tensor_infos_start, Some(ti));
        assert_eq!(g.header.data_start, Some(ds));
        check_sample(&g, &b);
    }
}

#[test]
fn report_fields() {
    let b = sample(3, false)
        .kv("general.file_type", Value::U32(15))
        .kv("llama.context_length", Value::U32(4096))
        .kv("llama.attention.head_count", arr(ValueType::I32, vec![Value::I32(4), Value::I32(12), Value::I32(8)]));
    let bytes = b.build();
    let g = done(&bytes);
    assert_eq!(g.card.file_type_name.as_deref(), Some("MOSTLY_Q4_K_M"));
    assert_eq!(g.card.context_length, Some(4096));
    assert_eq!(g.card.head_count, Some(12), "per-layer head counts: the largest");
    assert_eq!(g.card.parameter_count, 640 + 64 + 512);
    assert!(g.findings.is_empty());
    assert_eq!(g.tensors[2].dtype.name(), "Q4_K");
    assert_eq!(g.tensors[2].shape, vec![2, 256]);
    assert_eq!(g.tensors[2].ggml_dims, Some(vec![256, 2]));
    assert_eq!(g.tensors[2].abs_start, g.header.data_start.map(|d| d + g.tensors[2].start));
    assert_eq!(serde_json::to_value(ValueJson(g.kv("t.u64").unwrap())).unwrap(), json!(u64::MAX));
    assert_eq!(serde_json::to_value(ValueJson(g.kv("t.array").unwrap())).unwrap(), json!([1, -2]));
    assert_eq!(serde_json::to_value(ValueJson(g.kv("t.bool").unwrap())).unwrap(), json!(true));
    assert!(g.layout.adds_up);
}

#[test]
fn long_arrays_keep_a_head_and_summaries() {
    let tokens: Vec<Value> = (0..1000).map(|i| Value::String(format!("tok{i}"))).collect();
    let types: Vec<Value> = (0..1000).map(|i| Value::I32(if i < 3 { 3 } else { 1 })).collect();
    let b = Builder::new()
        .kv("general.architecture", Value::String("llama".into()))
        .kv("tokenizer.ggml.model", Value::String("gpt2".into()))
        .kv("tokenizer.ggml.tokens", arr(ValueType::String, tokens))
        .kv("tokenizer.ggml.token_type", arr(ValueType::I32, types))
        .kv("tokenizer.ggml.bos_token_id", Value::U32(1))
        .kv("tokenizer.ggml.eos_token_id", Value::U32(999))
        .kv("tokenizer.chat_template", Value::String("<b>{{ x }}</b>".into()));
    let bytes = b.build();
    let g = done(&bytes);
    let Value::Array(a) = g.kv("tokenizer.ggml.tokens").unwrap() else { panic!() };
    assert_eq!((a.len, a.head.len()), (1000, ARRAY_HEAD_LEN));
    let t = &g.tokenizer;
    assert_eq!(t.tokens, Some(1000));
    let types = |id, name: &'static str, count| TokenTypeCount { id, name: name.into(), count };
    assert_eq!(t.token_types, vec![types(1, "NORMAL", 997), types(3, "CONTROL", 3)]);
    let special = |role: &str, id, text: &str| SpecialToken { role: Some(role.into()), id: Some(id), text: Some(text.into()) };
    assert_eq!(t.special_tokens, vec![special("bos", 1, "tok1"), special("eos", 999, "tok999")]);
    assert_eq!(t.role("pad"), None);
    assert_eq!(t.chat_template(), Some("<b>{{ x }}</b>"));
    assert_eq!(g.card.vocab_size, Some(1000));
    let j = serde_json::to_value(ValueJson(g.kv("tokenizer.ggml.tokens").unwrap())).unwrap();
    assert_eq!(j["len"], json!(1000));
    assert_eq!(j["head"][2], json!("tok2"));
    let tok_bytes: u64 = g.kvs.iter().filter(|k| k.group == KvGroup::Tokenizer).map(|k| k.bytes).sum();
    assert_eq!(t.metadata_bytes, Some(tok_bytes));
    assert!(g.layout.terms.iter().any(|t| t.label == "tokenizer metadata" && t.bytes == tok_bytes));
}

/// Every prefix either finishes with the same result or asks for more, within the file.
#[test]
fn growing_prefix_converges() {
    let b = sample(3, false)
        .kv("tokenizer.ggml.tokens", arr(ValueType::String, (0..300).map(|i| Value::String(format!("t{i}"))).collect()))
        .kv("t.u8", Value::U8(3))
        .kv("bad", arr(ValueType::Bool, vec![Value::Bool(0), Value::Bool(9), Value::Bool(1)]))
        .kv("n", arr(ValueType::Array, vec![arr(ValueType::U8, vec![Value::U8(1)])]));
    let bytes = b.build();
    let full = done(&bytes);
    assert_eq!(codes(&full), vec![Code::DuplicateMetadataKey, Code::InvalidBool, Code::NestedArray, Code::LlamaCppIncompatible]);
    let len = bytes.len() as u64;
    for k in 0..bytes.len() {
        match parse(&bytes[..k], len) {
            Step::Need(n) => assert!(n > k as u64 && n <= len, "prefix {k} asked for {n}"),
            Step::Done(g) => assert_eq!(g, full, "prefix {k}"),
        }
    }
    // The same with one resume point carried across growing prefixes.
    let mut resume = Resume::default();
    for k in 0..=bytes.len() {
        match parse_resumable(&bytes[..k], len, &mut resume) {
            Step::Need(n) => assert!(n > k as u64 && n <= len, "prefix {k} asked for {n}"),
            Step::Done(g) => assert_eq!(g, full, "resumed at prefix {k}"),
        }
    }
    // The driver's loop: few rounds thanks to the lower-bound hint.
    let mut have = 8usize;
    let mut rounds = 0;
    loop {
        rounds += 1;
        match parse(&bytes[..have], len) {
            Step::Need(n) => have = n as usize,
            Step::Done(g) => {
                assert_eq!(g, full);
                break;
            }
        }
    }
    // Exact reads (no granularity): at worst about one round per small entry; the 300
    // strings take a few rounds, not 300.
    assert!(rounds < 30, "{rounds} rounds");
    assert!((have as u64) <= full.header.tensor_infos_end.unwrap());
}

fn header(version: u32, n_tensors: u64, n_kv: u64) -> Vec<u8> {
    let mut v = b"GGUF".to_vec();
    v.extend_from_slice(&version.to_le_bytes());
    v.extend_from_slice(&n_tensors.to_le_bytes());
    v.extend_from_slice(&n_kv.to_le_bytes());
    v
}

#[test]
fn lying_counts_are_immediate_findings() {
    // 2^62 tensors.
    let mut b = header(3, 1 << 62, 0);
    b.resize(4096, 0);
    let g = done(&b);
    let f = finding(&g, Code::CountTooLarge);
    assert_eq!((f.offset, f.field.as_deref()), (Some(8), Some("tensor_count")));
    // 2^62 KVs.
    let g = done(&header(3, 0, 1 << 62));
    assert_eq!(finding(&g, Code::CountTooLarge).offset, Some(16));
    // A 2^63-byte key string.
    let mut b = header(3, 0, 1);
    b.extend_from_slice(&(1u64 << 63).to_le_bytes());
    b.resize(1000, b'a');
    let g = done(&b);
    assert_eq!(finding(&g, Code::CountTooLarge).offset, Some(24));
    // A 2^63-byte string value, on a prefix: a finding, not a Need.
    let mut b = header(3, 0, 1);
    b.extend_from_slice(&1u64.to_le_bytes());
    b.push(b'k');
    b.extend_from_slice(&8u32.to_le_bytes());
    b.extend_from_slice(&(1u64 << 63).to_le_bytes());
    let Step::Done(g) = parse(&b, 10_000_000_000) else { panic!("must not ask for more") };
    assert_eq!(finding(&g, Code::CountTooLarge).offset, Some(24 + 8 + 1 + 4));
    // A 2^62-element array of u64 (and of u8: 2^62 bytes still exceed the file).
    for elem in [10u32, 0] {
        let mut b = header(3, 0, 1);
        b.extend_from_slice(&1u64.to_le_bytes());
        b.push(b'k');
        b.extend_from_slice(&9u32.to_le_bytes());
        b.extend_from_slice(&elem.to_le_bytes());
        b.extend_from_slice(&(1u64 << 62).to_le_bytes());
        let Step::Done(g) = parse(&b, 1 << 40) else { panic!("must not ask for more") };
        assert_eq!(finding(&g, Code::CountTooLarge).offset, Some(24 + 8 + 1 + 4 + 4));
    }
    // Counts that overflow u64 when multiplied.
    let g = done(&header(3, u64::MAX, u64::MAX));
    assert_eq!(finding(&g, Code::CountTooLarge).offset, Some(8));
}

#[test]
fn magic_version_and_truncation() {
    let g = done(b"GGML\x03\0\0\0");
    assert_eq!(finding(&g, Code::BadMagic).offset, Some(0));
    let g = done(b"GGUF\x04\0\0\0");
    assert_eq!(finding(&g, Code::UnsupportedVersion).offset, Some(4));
    let g = done(b"GG");
    assert_eq!(codes(&g), vec![Code::FileTooShort]);
    let g = done(b"");
    assert_eq!(codes(&g), vec![Code::FileTooShort]);
    let (bytes, ti, _) = sample(3, false).build_parts();
    let cut = &bytes[..ti as usize - 20];
    let g = done(cut);
    assert!(codes(&g).contains(&Code::FileTooShort) || codes(&g).contains(&Code::CountTooLarge), "{:?}", codes(&g));
    assert!(g.layout.adds_up);
    assert!(!g.kvs.is_empty(), "what could be read is kept");
}

#[test]
fn value_findings() {
    // Unknown value type.
    let mut b = header(3, 0, 1);
    b.extend_from_slice(&1u64.to_le_bytes());
    b.push(b'k');
    b.extend_from_slice(&13u32.to_le_bytes());
    b.extend_from_slice(&[0; 8]);
    let g = done(&b);
    assert_eq!(finding(&g, Code::UnknownValueType).offset, Some(33));
    // Unknown array element type.
    let mut b = header(3, 0, 1);
    b.extend_from_slice(&1u64.to_le_bytes());
    b.push(b'k');
    b.extend_from_slice(&9u32.to_le_bytes());
    b.extend_from_slice(&77u32.to_le_bytes());
    b.extend_from_slice(&[0; 8]);
    assert_eq!(finding(&done(&b), Code::UnknownValueType).offset, Some(37));

    let g = done(&Builder::new().kv("b", Value::Bool(2)).kv("a", arr(ValueType::Bool, vec![Value::Bool(0), Value::Bool(5)])).build());
    let bools: Vec<_> = g.findings.iter().filter(|f| f.code == Code::InvalidBool).collect();
    assert_eq!(bools.len(), 2);
    assert_eq!(bools[0].offset, Some(24 + 8 + 1 + 4));

    let g = done(&Builder::new().kv("", Value::U8(1)).kv("k", Value::U8(1)).kv("k", Value::U8(2)).build());
    assert_eq!(finding(&g, Code::EmptyKey).offset, Some(24));
    assert_eq!(finding(&g, Code::DuplicateMetadataKey).offset, Some(24 + 13 + 14));

    let mut b = Builder::new().kv("x", Value::U8(1));
    b.kvs[0].0 = vec![0xff, 0xfe];
    let g = done(&b.build());
    assert_eq!(finding(&g, Code::InvalidUtf8).offset, Some(24));
    assert!(finding(&g, Code::InvalidUtf8).is_error());

    let mut bytes = Builder::new().kv("s", Value::String("\u{e9}".into())).build();
    let at = 24 + 8 + 1 + 4 + 8;
    bytes[at] = 0xff;
    assert_eq!(finding(&done(&bytes), Code::InvalidUtf8).severity, crate::error::Severity::Warning);
}

#[test]
fn nested_arrays() {
    let inner = arr(ValueType::U8, vec![Value::U8(1), Value::U8(2)]);
    let g = done(&Builder::new().kv("n", arr(ValueType::Array, vec![inner.clone(), inner.clone()])).build());
    assert_eq!(codes(&g), vec![Code::NestedArray, Code::LlamaCppIncompatible]);
    assert!(g.findings[1].message.contains("1 metadata entry is an array of arrays (first: n)"), "{}", g.findings[1].message);
    assert_eq!(g.kvs[0].value, arr(ValueType::Array, vec![inner.clone(), inner]));
    assert!(!g.findings[0].is_error());
    // Too deep.
    let mut v = arr(ValueType::U8, vec![]);
    for _ in 0..MAX_ARRAY_DEPTH {
        v = arr(ValueType::Array, vec![v]);
    }
    let g = done(&Builder::new().kv("deep", v).build());
    assert!(codes(&g).contains(&Code::NestingTooDeep), "{:?}", codes(&g));
}

#[test]
fn alignment_findings() {
    for (v, ok) in [(Value::U32(64), true), (Value::U32(0), false), (Value::U32(48), false), (Value::U64(32), false), (Value::String("32".into()), false)] {
        let mut b = Builder::new();
        b.alignment = 64;
        let b = b.kv("general.alignment", v.clone()).tensor("a", &[4], 0);
        let g = done(&b.build());
        if ok {
            assert_eq!(g.header.alignment, 64);
            assert_eq!(codes(&g), vec![]);
            assert_eq!(g.header.data_start.unwrap() % 64, 0);
        } else {
            assert_eq!(finding(&g, Code::InvalidAlignment).offset, Some(24), "{v:?}");
            assert_eq!(g.header.alignment, DEFAULT_ALIGNMENT);
        }
    }
}

#[test]
fn tensor_findings() {
    let long = "x".repeat(64);
    let b = Builder::new()
        .tensor("a", &[32], 0)
        .tensor("a", &[32], 0)
        .tensor(&long, &[32], 0)
        .tensor(&"y".repeat(63), &[32], 0);
    let g = done(&b.build());
    assert_eq!(codes(&g), vec![Code::DuplicateTensor, Code::NameTooLong]);
    assert_eq!(g.findings[1].tensor.as_deref(), Some(long.as_str()));

    let mut b = Builder::new().tensor("five", &[1, 1, 1, 1, 1], 0).tensor("zero", &[0, 3], 0).tensor("q", &[33, 2], 8);
    b.data_len += 64;
    let g = done(&b.build());
    assert!(finding(&g, Code::TooManyDims).is_error());
    assert!(!finding(&g, Code::ZeroDim).is_error());
    assert_eq!(finding(&g, Code::BlockMisaligned).tensor.as_deref(), Some("q"));

    let mut b = Builder::new().tensor("big", &[1], 0);
    b.tensors[0].1 = vec![1 << 32, 1 << 32];
    assert!(codes(&done(&b.build())).contains(&Code::ShapeOverflow));
    let mut b = Builder::new().tensor("big", &[1], 0);
    b.tensors[0].1 = vec![1 << 62, 2];
    assert!(codes(&done(&b.build())).contains(&Code::ShapeOverflow), "elements fit, bytes overflow");

    let mut b = Builder::new().tensor("u", &[32], 0).tensor("r", &[32], 0);
    b.tensors[0].2 = 99;
    b.tensors[1].2 = 4;
    let g = done(&b.build());
    assert!(finding(&g, Code::UnknownGgmlType).is_error());
    assert_eq!(finding(&g, Code::RemovedGgmlType).tensor.as_deref(), Some("r"));
    assert_eq!(g.tensors[1].bytes, Some(2 * 10), "removed types are still sized");

    // n_dims beyond what we read.
    let mut bytes = header(3, 1, 0);
    bytes.extend_from_slice(&1u64.to_le_bytes());
    bytes.push(b't');
    bytes.extend_from_slice(&100u32.to_le_bytes());
    bytes.resize(2000, 1);
    let g = done(&bytes);
    assert!(codes(&g).contains(&Code::TooManyDims));
}

#[test]
fn offset_findings() {
    let base = Builder::new().tensor("a", &[16], 0).tensor("b", &[16], 0).tensor("c", &[16], 0);
    assert_eq!(codes(&done(&base.build())), vec![]);

    let mut b = base.clone();
    b.tensors[1].3 = 40;
    let g = done(&b.build());
    assert_eq!(finding(&g, Code::UnalignedOffset).tensor.as_deref(), Some("b"));

    let mut b = base.clone();
    b.tensors[1].3 = 32;
    b.tensors[0].1 = vec![32]; // a: 128 bytes from 0, b at 32
    let g = done(&b.build());
    assert_eq!(finding(&g, Code::TensorOverlap).tensor.as_deref(), Some("b"));

    let mut b = base.clone();
    b.tensors[2].3 = 192;
    b.data_len = 192 + 64;
    let (bytes, _, ds) = b.build_parts();
    let g = done(&bytes);
    let f = finding(&g, Code::TensorGap);
    assert_eq!((f.tensor.as_deref(), f.offset), (Some("c"), Some(ds + 128)));

    let mut b = base.clone();
    b.data_len -= 10;
    let g = done(&b.build());
    assert_eq!(finding(&g, Code::TensorPastEnd).tensor.as_deref(), Some("c"));
    assert!(g.layout.adds_up);

    let mut b = base;
    b.data_len += 1000;
    let g = done(&b.build());
    assert_eq!(codes(&g), vec![Code::TrailingBytes]);
    assert!(g.layout.adds_up);
}

fn value_strategy() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<u8>().prop_map(Value::U8),
        any::<i8>().prop_map(Value::I8),
        any::<u16>().prop_map(Value::U16),
        any::<i16>().prop_map(Value::I16),
        any::<u32>().prop_map(Value::U32),
        any::<i32>().prop_map(Value::I32),
        (-1e6f32..1e6).prop_map(Value::F32),
        (0u8..2).prop_map(Value::Bool),
        "[a-z<>é{}]{0,12}".prop_map(Value::String),
        any::<u64>().prop_map(Value::U64),
        any::<i64>().prop_map(Value::I64),
        (-1e9f64..1e9).prop_map(Value::F64),
    ];
    prop_oneof![
        3 => leaf,
        1 => proptest::collection::vec(any::<u16>(), 0..80).prop_map(|v| arr(ValueType::U16, v.into_iter().map(Value::U16).collect())),
        1 => proptest::collection::vec("[a-z]{0,5}", 0..80).prop_map(|v| arr(ValueType::String, v.into_iter().map(Value::String).collect())),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn random_files_round_trip(
        version in 1u32..4,
        big in any::<bool>(),
        kvs in proptest::collection::vec(("[a-z.]{1,10}", value_strategy()), 0..12),
        tensors in proptest::collection::vec((1u64..5, 1u64..4, prop_oneof![Just(0u32), Just(1), Just(8), Just(12), Just(30)]), 0..6),
        align_pow in 3u32..8,
    ) {
        let mut b = Builder::new();
        b.version = version;
        b.big = big;
        b.alignment = 1 << align_pow;
        b = b.kv("general.alignment", Value::U32(1 << align_pow));
        let mut keys = HashSet::new();
        for (k, v) in kvs {
            if keys.insert(k.clone()) && k != "general.alignment" {
                b = b.kv(&k, v);
            }
        }
        for (i, (rows, blocks, ty)) in tensors.into_iter().enumerate() {
            let t = GgmlType::from_id(ty).unwrap();
            b = b.tensor(&format!("blk.{i}.w"), &[blocks * t.block_size.max(32), rows], ty);
        }
        let (bytes, ti, ds) = b.build_parts();
        let g = done(&bytes);
        prop_assert_eq!(codes_but_llama(&g), vec![]);
        prop_assert_eq!(g.header.tensor_infos_start, Some(ti));
        prop_assert_eq!(g.header.data_start, Some(ds));
        prop_assert_eq!(g.kvs.len(), b.kvs.len());
        for (kv, (k, v)) in g.kvs.iter().zip(&b.kvs) {
            prop_assert_eq!(kv.key.as_bytes(), k.as_slice());
            match (&kv.value, v) {
                (Value::Array(got), Value::Array(want)) => {
                    prop_assert_eq!(got.len, want.len);
                    prop_assert_eq!(&got.head[..], &want.head[..got.head.len()]);
                    prop_assert_eq!(got.head.len(), want.head.len().min(top_level_keep(&kv.key, want.elem_type, want.len)));
                }
                (got, want) => prop_assert_eq!(got, want),
            }
        }
        prop_assert_eq!(g.tensors.len(), b.tensors.len());
        for (t, (name, dims, ty, off)) in g.tensors.iter().zip(&b.tensors) {
            prop_assert_eq!(t.name.as_bytes(), name.as_slice());
            prop_assert_eq!(t.ggml_dims.as_ref(), Some(dims));
            prop_assert_eq!(&t.dtype, &crate::dtype::TensorDtype::Ggml(*ty));
            prop_assert_eq!(t.start, *off);
        }
        prop_assert!(g.layout.adds_up);
    }

    /// Arbitrary bytes after a valid start never panic and always finish on the full file.
    #[test]
    fn garbage_never_panics(tail in proptest::collection::vec(any::<u8>(), 0..300), version in 1u32..4, n in 0u64..4) {
        let mut b = b"GGUF".to_vec();
        b.extend_from_slice(&version.to_le_bytes());
        b.extend_from_slice(&n.to_le_bytes());
        b.extend_from_slice(&n.to_le_bytes());
        b.extend_from_slice(&tail);
        let g = done(&b);
        prop_assert!(g.layout.adds_up);
    }
}

#[test]
fn array_elements_on_demand() {
    let tokens: Vec<Value> = (0..500).map(|i| Value::String(format!("tok{i}"))).collect();
    let nums: Vec<Value> = (0..500).map(Value::I32).collect();
    for (version, big) in [(3, false), (1, true)] {
        let mut b = Builder::new();
        b.version = version;
        b.big = big;
        let b = b
            .kv("general.architecture", Value::String("llama".into()))
            .kv("tokenizer.ggml.tokens", arr(ValueType::String, tokens.clone()))
            .kv("nums", arr(ValueType::I32, nums.clone()));
        let bytes = b.build();
        let g = done(&bytes);
        for (i, want) in [(1usize, &tokens), (2, &nums)] {
            let kv = &g.kvs[i];
            let entry = &bytes[kv.offset as usize..(kv.offset + kv.bytes) as usize];
            let got = array_elements(entry, kv, &g.header, 100, 5).unwrap();
            assert_eq!(got, want[100..105].to_vec());
            let tail = array_elements(entry, kv, &g.header, 498, 10).unwrap();
            assert_eq!(tail, want[498..].to_vec());
            assert_eq!(array_elements(&entry[..entry.len() - 1], kv, &g.header, 499, 1), None);
        }
        assert_eq!(array_elements(&bytes, &g.kvs[0], &g.header, 0, 1), None, "not an array");
    }
}
