//! The warnings that protect people (issue 12): chat templates that reach Python internals
//! (`ChatTemplateUnsafe`), what llama.cpp refuses although the format allows it
//! (`LlamaCppIncompatible`), and text that hides or disguises what is displayed
//! (`SuspiciousText`, `SuspiciousName`). Hand-built files; each finding is checked for its
//! code, severity, field, offset and the quoted text.

use tensorpeek::error::{Code, Finding};
use tensorpeek::formats::Inspection;
use tensorpeek::model::checkpoint::build_model;
use tensorpeek::source::{self, MemorySource};

fn inspect(bytes: Vec<u8>, name: &str) -> Inspection {
    pollster::block_on(source::inspect(&MemorySource::new(bytes), name))
}

fn with(i: &Inspection, code: Code) -> Vec<Finding> {
    i.findings().filter(|f| f.code == code).cloned().collect()
}

/// A GGUF file: version, byte order, raw KVs (key, type, value bytes in that order),
/// tensor infos (name, dims, type, offset), `data` zero bytes after the aligned start.
struct Gguf {
    version: u32,
    big: bool,
    kvs: Vec<(Vec<u8>, u32, Vec<u8>)>,
    tensors: Vec<(String, Vec<u64>, u32, u64)>,
    data: usize,
}

impl Gguf {
    fn new() -> Self {
        Gguf { version: 3, big: false, kvs: Vec::new(), tensors: Vec::new(), data: 0 }
    }
    fn u32(&self, v: u32) -> Vec<u8> {
        if self.big { v.to_be_bytes().to_vec() } else { v.to_le_bytes().to_vec() }
    }
    fn len(&self, v: u64) -> Vec<u8> {
        match (self.version, self.big) {
            (1, _) => self.u32(v as u32),
            (_, true) => v.to_be_bytes().to_vec(),
            _ => v.to_le_bytes().to_vec(),
        }
    }
    fn str(&self, s: &[u8]) -> Vec<u8> {
        [self.len(s.len() as u64), s.to_vec()].concat()
    }
    fn string_kv(mut self, key: &str, value: &str) -> Self {
        let v = self.str(value.as_bytes());
        self.kvs.push((key.as_bytes().to_vec(), 8, v));
        self
    }
    fn strings_kv(mut self, key: &str, values: &[&str]) -> Self {
        let mut v = self.u32(8);
        v.extend(self.len(values.len() as u64));
        for s in values {
            v.extend(self.str(s.as_bytes()));
        }
        self.kvs.push((key.as_bytes().to_vec(), 9, v));
        self
    }
    fn raw_kv(mut self, key: &str, ty: u32, value: Vec<u8>) -> Self {
        self.kvs.push((key.as_bytes().to_vec(), ty, value));
        self
    }
    fn tensor(mut self, name: &str, dims: &[u64], ty: u32, offset: u64) -> Self {
        self.tensors.push((name.to_string(), dims.to_vec(), ty, offset));
        self
    }
    /// The offset of KV `i`.
    fn kv_offset(&self, i: usize) -> u64 {
        let fixed = if self.version == 1 { 16 } else { 24 };
        let lw = if self.version == 1 { 4 } else { 8 };
        fixed + self.kvs.iter().take(i).map(|(k, _, v)| (lw + k.len() + 4 + v.len()) as u64).sum::<u64>()
    }
    fn bytes(&self) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend(self.u32(self.version));
        out.extend(self.len(self.tensors.len() as u64));
        out.extend(self.len(self.kvs.len() as u64));
        for (k, ty, v) in &self.kvs {
            out.extend(self.str(k));
            out.extend(self.u32(*ty));
            out.extend_from_slice(v);
        }
        for (name, dims, ty, off) in &self.tensors {
            out.extend(self.str(name.as_bytes()));
            out.extend(self.u32(dims.len() as u32));
            for d in dims {
                out.extend(self.len(*d));
            }
            out.extend(self.u32(*ty));
            out.extend(if self.big { off.to_be_bytes() } else { off.to_le_bytes() });
        }
        out.resize(out.len().div_ceil(32) * 32 + self.data, 0);
        out
    }
    fn inspect(&self) -> Inspection {
        inspect(self.bytes(), "x.gguf")
    }
}

/// The CVE-2024-34359 proof of concept, as published with the llama-cpp-python advisory.
const POC: &str = "{% for x in ().__class__.__base__.__subclasses__() %}{% if \"warning\" in x.__name__ %}{{x()._module.__builtins__['__import__']('os').popen(\"touch /tmp/retr0reg\")}}{%endif%}{% endfor %}";
const CHATML: &str = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

#[test]
fn gguf_chat_template_reaching_python_internals_is_a_warning_and_stays_text() {
    let g = Gguf::new()
        .string_kv("general.architecture", "llama")
        .string_kv("tokenizer.chat_template", POC)
        .string_kv("tokenizer.chat_template.tool_use", "{{ joiner.__init__.__globals__.os.popen('id').read() }}")
        .string_kv("tokenizer.chat_template.rag", CHATML);
    let i = g.inspect();
    let found = with(&i, Code::ChatTemplateUnsafe);
    assert_eq!(found.len(), 2, "{found:#?}");
    let f = &found[0];
    assert!(!f.is_error());
    assert_eq!(f.field.as_deref(), Some("tokenizer.chat_template"));
    assert_eq!(f.offset, Some(g.kv_offset(1)));
    // The offending expression is quoted (three tags of the PoC are, the first one first).
    assert!(f.message.contains("\"{% for x in ().__class__.__base__.__subclasses__() %}\" at template byte 0"), "{}", f.message);
    assert!(f.message.contains("CVE-2024-34359"));
    assert_eq!(found[1].field.as_deref(), Some("tokenizer.chat_template.tool_use"));
    assert!(found[1].message.contains("joiner.__init__.__globals__"), "{}", found[1].message);
    // The template is still there, as plain text, byte for byte.
    let t = &i.parsed.gguf().unwrap().tokenizer;
    let names: Vec<&str> = t.chat_templates.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["default", "tool_use", "rag"]);
    assert_eq!(t.chat_template(), Some(POC));
    // Warnings only: the file is sound otherwise.
    assert!(i.ok());
}

#[test]
fn tokenizer_config_chat_template_reaching_python_internals_is_a_warning() {
    let cfg = format!(r#"{{"bos_token": "<s>", "chat_template": {}}}"#, serde_json::to_string(POC).unwrap());
    let m = build_model(&[], &[("tokenizer_config.json".into(), cfg.clone().into_bytes())]);
    let found: Vec<&Finding> = m.findings().filter(|f| f.code == Code::ChatTemplateUnsafe).collect();
    assert_eq!(found.len(), 1, "{:#?}", m.warnings);
    let f = found[0];
    assert_eq!(f.file.as_deref(), Some("tokenizer_config.json"));
    assert_eq!(f.field.as_deref(), Some("chat_template"));
    assert_eq!(f.offset, cfg.find("\"chat_template\"").map(|p| p as u64));
    assert!(f.message.contains("__subclasses__"));
    assert!(m.ok, "a warning, not an error");
    assert_eq!(m.tokenizer.as_ref().and_then(|t| t.chat_template()), Some(POC));

    // The list form: each named template checked; a clean one is left alone.
    let cfg = format!(
        r#"{{"chat_template": [{{"name": "default", "template": {}}}, {{"name": "tool_use", "template": "{{{{ self._TemplateReference__context.cycler }}}}"}}]}}"#,
        serde_json::to_string(CHATML).unwrap()
    );
    let m = build_model(&[], &[("tokenizer_config.json".into(), cfg.into_bytes())]);
    let found: Vec<&Finding> = m.findings().filter(|f| f.code == Code::ChatTemplateUnsafe).collect();
    assert_eq!(found.len(), 1);
    assert!(found[0].message.contains("\"tool_use\"") && found[0].message.contains("_TemplateReference__context"), "{}", found[0].message);
}

/// One file per reason llama.cpp refuses; each warning names it.
#[test]
fn llama_cpp_incompatible_names_each_reason() {
    let llama = |i: &Inspection| with(i, Code::LlamaCppIncompatible);
    let base = || Gguf::new().string_kv("general.architecture", "llama");
    // A clean v3 little-endian file has none.
    assert_eq!(llama(&base().tensor("t", &[4], 0, 0).inspect()), vec![]);

    let mut v1 = base();
    v1.version = 1;
    let f = llama(&v1.inspect());
    assert_eq!(f.len(), 1);
    assert!(f[0].message.contains("GGUF version 1") && f[0].offset == Some(4) && !f[0].is_error(), "{:?}", f[0]);

    let mut be = base();
    be.big = true;
    let f = llama(&be.inspect());
    assert_eq!(f.len(), 1);
    assert!(f[0].message.contains("big-endian"), "{}", f[0].message);

    // Nested arrays: an array of one array of one U8.
    let nested = [8u32.to_le_bytes().to_vec(), 9u32.to_le_bytes().to_vec(), 1u64.to_le_bytes().to_vec(), 0u32.to_le_bytes().to_vec(), 1u64.to_le_bytes().to_vec(), vec![7]].concat();
    let g = base().raw_kv("x.nested", 9, nested[4..].to_vec());
    let i = g.inspect();
    let f = llama(&i);
    assert_eq!(f.len(), 1, "{:?}", i.findings().collect::<Vec<_>>());
    assert!(f[0].message.contains("array of arrays (first: x.nested)"), "{}", f[0].message);
    assert_eq!(f[0].field.as_deref(), Some("x.nested"));

    // A removed type (Q4_2, id 4), a type id past the table (99).
    let f = llama(&base().tensor("old", &[32], 4, 0).tensor("new", &[32], 99, 32).inspect());
    assert_eq!(f.len(), 2, "{f:?}");
    assert!(f[0].message.contains("no longer knows (first: Q4_2)") && f[0].tensor.as_deref() == Some("old"), "{:?}", f[0]);
    assert!(f[1].message.contains("type id past the last one llama.cpp knows") && f[1].tensor.as_deref() == Some("new"), "{:?}", f[1]);

    // A zero dimension after ne[0] (ne[0] = 0 alone never reached the division).
    let f = llama(&base().tensor("a", &[4, 0], 0, 0).tensor("b", &[0], 0, 0).tensor("c", &[2, 3, 0], 0, 0).inspect());
    assert_eq!(f.len(), 1);
    assert!(f[0].message.starts_with("llama.cpp will not load this file: 2 tensors with a dimension of 0 after ne[0]"), "{}", f[0].message);
    assert!(f[0].message.contains("ggml-org/llama.cpp#26366"));
    assert_eq!(f[0].tensor.as_deref(), Some("a"));

    // Dimensions llama.cpp reads as negative int64.
    let f = llama(&base().tensor("huge", &[1 << 63], 1, 0).inspect());
    assert!(f.iter().any(|x| x.message.contains("signed 64-bit")), "{f:?}");
}

#[test]
fn suspicious_text_in_gguf_keys_values_and_tokens_is_counted_and_quoted_escaped() {
    let tokens = ["<s>", "</s>", "<0x0A>", "\n", "\t", "<script", "Ġthe", "ok\u{202E}gnp.exe", "a\u{1}b", "c\u{7}", "d\u{8}", "e\u{1b}[31m"];
    let g = Gguf::new()
        .string_kv("general.name", "Llama\u{202E}3")
        .string_kv("general.description", "line one\nline two\ttabbed <b>bold</b>")
        .string_kv("general.url", "javascript:alert(1)")
        .string_kv("general.archi\u{200F}tecture", "llama")
        .strings_kv("tokenizer.ggml.tokens", &tokens);
    let i = g.inspect();
    let found = with(&i, Code::SuspiciousText);
    let msgs: Vec<&str> = found.iter().map(|f| f.message.as_str()).collect();
    assert_eq!(found.len(), 3, "{msgs:#?}");
    // Keys: the direction mark in a key (a name: marks count too).
    assert!(msgs[0].starts_with("1 metadata keys hold") && msgs[0].contains(r#""general.archi\u{200f}tecture""#), "{}", msgs[0]);
    assert_eq!(found[0].offset, Some(g.kv_offset(3)));
    // Values: the override and the javascript: URL; newlines, tabs and <b> are fine.
    assert!(msgs[1].starts_with("2 metadata string values hold") && msgs[1].contains(r#""Llama\u{202e}3""#) && msgs[1].contains(r#""javascript:alert(1)""#), "{}", msgs[1]);
    assert_eq!(found[1].field.as_deref(), Some("general.name"));
    // Tokens: 5 of the 12, the first 3 quoted escaped with their offsets, the rest counted.
    assert!(msgs[2].starts_with("5 tokenizer tokens hold"), "{}", msgs[2]);
    assert!(msgs[2].contains(r#""ok\u{202e}gnp.exe" (at byte "#) && msgs[2].contains(r#""a\u{1}b""#) && msgs[2].contains(r#""c\u{7}""#), "{}", msgs[2]);
    assert!(msgs[2].ends_with("and 2 more"), "{}", msgs[2]);
    assert!(found.iter().all(|f| !f.is_error()));
}

#[test]
fn suspicious_tensor_names_in_gguf_and_safetensors_metadata() {
    let i = Gguf::new().tensor("blk.0.attn\u{202E}q", &[4], 0, 0).tensor("<svg onload=alert(1)>", &[4], 0, 32).inspect();
    let names: Vec<Option<String>> = with(&i, Code::SuspiciousName).into_iter().map(|f| f.tensor).collect();
    assert_eq!(names, vec![Some("blk.0.attn\u{202E}q".to_string()), Some("<svg onload=alert(1)>".to_string())]);

    let header = r#"{"__metadata__":{"format":"pt","note":"x\u0007y","k\u202eey":"v"},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.push(0);
    let i = inspect(bytes, "a.safetensors");
    let found = with(&i, Code::SuspiciousText);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found[0].message.starts_with("1 __metadata__ keys hold") && found[0].message.contains(r#""k\u{202e}ey""#), "{}", found[0].message);
    assert!(found[1].message.starts_with("1 __metadata__ values hold") && found[1].message.contains(r#""x\u{7}y""#), "{}", found[1].message);
    assert_eq!(found[1].offset, Some(8 + header.find(r#""x\u0007y""#).unwrap() as u64));
    assert!(i.ok());
}
