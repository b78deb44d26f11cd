//! Every finding code the core can produce, triggered by an input through the public API:
//! a safetensors or GGUF file (hand-built bytes), a set of checkpoint files, the parts of a
//! split GGUF, a tensor scan. The test fails if a code has no trigger, if a trigger does not
//! produce its code, or if `Code::ALL` misses a variant (the exhaustive match below).

use tensorpeek::error::{Code, Finding, SourceError};
use tensorpeek::formats::Inspection;
use tensorpeek::model::{checkpoint::build_model, gguf_split};
use tensorpeek::source::scan::{scan_chunks, ChunkStream};
use tensorpeek::source::{self, scan_tensor, ByteSource, MemorySource};
use tensorpeek::values::plan;
use tensorpeek::vocab::TensorEntry;

/// Fails to compile when a variant is added to `Code` but not listed here (and so, by the
/// test below, not in `Code::ALL` either).
fn _every_variant_is_listed(c: Code) {
    use Code::*;
    match c {
        FileTooShort | UnknownFormat | ReadFailed | DuplicateTensor | SuspiciousName | ShapeOverflow | TensorOverlap | TensorGap
        | TensorPastEnd | TrailingBytes | HeaderTooLarge | HeaderPastEnd | HeaderNotUtf8 | HeaderNotJson | HeaderNotObject
        | JsonTooDeep | DuplicateKey | LeadingWhitespace | InvalidMetadata | MissingField | InvalidField | UnknownField
        | UnknownDtype | InvalidOffsets | SizeMismatch | PartialByte | BadMagic | UnsupportedVersion | CountTooLarge
        | InvalidUtf8 | UnknownValueType | NestingTooDeep | NestedArray | InvalidBool | EmptyKey | DuplicateMetadataKey
        | NameTooLong | TooManyDims | ZeroDim | BlockMisaligned | UnknownGgmlType | RemovedGgmlType | UnalignedOffset
        | InvalidAlignment | MissingShard | TensorNotInShard | TensorNotInIndex | TensorInWrongShard | TotalSizeMismatch
        | MissingTensor | UnexpectedTensor | ShapeMismatch | InvalidIndex | InvalidConfig | SplitMissing | SplitMismatch
        | InvalidTokenizer | VocabMismatch | CompanionTooLarge | DuplicateCompanion | ValuesNotDecoded | FileChanged
        | PickleTruncated | PickleMalformed | PickleLimit | DangerousGlobal | UnknownGlobal | UnexpectedPersistentId
        | ZipMalformed | CompressedMember | MissingStorage | TensorPastStorage | StorageSizeMismatch | NpyMalformed
        | UnsupportedDtype | NonContiguous | NotConvertible | SuspiciousText | ChatTemplateUnsafe | LimitExceeded
        | LlamaCppIncompatible => {}
    }
}

const LISTED: usize = 81;

fn inspect(bytes: Vec<u8>, name: &str) -> Inspection {
    pollster::block_on(source::inspect(&MemorySource::new(bytes), name))
}

fn codes(findings: impl IntoIterator<Item = Finding>) -> Vec<Code> {
    findings.into_iter().map(|f| f.code).collect()
}

fn inspection_codes(i: &Inspection) -> Vec<Code> {
    codes(i.findings().cloned())
}

/// `[N][header][data_len zeros]`.
fn st(header: &str, data_len: usize) -> Vec<Code> {
    let mut v = (header.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(header.as_bytes());
    v.resize(v.len() + data_len, 0);
    inspection_codes(&inspect(v, "x.safetensors"))
}

/// A GGUF v3 file, little-endian: raw KV entries (key, type id, value bytes), tensor infos
/// (name, dims, type, offset) and `data_len` bytes of data after the 32-byte alignment.
struct Gguf {
    kvs: Vec<(Vec<u8>, u32, Vec<u8>)>,
    tensors: Vec<(Vec<u8>, Vec<u64>, u32, u64)>,
    data_len: usize,
}

fn gstr(s: &[u8]) -> Vec<u8> {
    let mut v = (s.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(s);
    v
}

impl Gguf {
    fn new() -> Self {
        Gguf { kvs: Vec::new(), tensors: Vec::new(), data_len: 0 }
    }
    fn kv(mut self, key: &str, ty: u32, value: Vec<u8>) -> Self {
        self.kvs.push((key.as_bytes().to_vec(), ty, value));
        self
    }
    fn u32kv(self, key: &str, v: u32) -> Self {
        self.kv(key, 4, v.to_le_bytes().to_vec())
    }
    fn tensor(mut self, name: &str, dims: &[u64], ty: u32, offset: u64) -> Self {
        self.tensors.push((name.as_bytes().to_vec(), dims.to_vec(), ty, offset));
        self
    }
    fn data(mut self, n: usize) -> Self {
        self.data_len = n;
        self
    }
    fn bytes(&self) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend_from_slice(&3u32.to_le_bytes());
        out.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.kvs.len() as u64).to_le_bytes());
        for (k, ty, v) in &self.kvs {
            out.extend(gstr(k));
            out.extend_from_slice(&ty.to_le_bytes());
            out.extend_from_slice(v);
        }
        for (name, dims, ty, off) in &self.tensors {
            out.extend(gstr(name));
            out.extend_from_slice(&(dims.len() as u32).to_le_bytes());
            for d in dims {
                out.extend_from_slice(&d.to_le_bytes());
            }
            out.extend_from_slice(&ty.to_le_bytes());
            out.extend_from_slice(&off.to_le_bytes());
        }
        out.resize(out.len().div_ceil(32) * 32 + self.data_len, 0);
        out
    }
    fn codes(&self) -> Vec<Code> {
        inspection_codes(&inspect(self.bytes(), "x.gguf"))
    }
}

/// An array value: element type, count, elements' bytes.
fn arr(elem: u32, n: u64, elems: &[u8]) -> Vec<u8> {
    let mut v = elem.to_le_bytes().to_vec();
    v.extend_from_slice(&n.to_le_bytes());
    v.extend_from_slice(elems);
    v
}

/// A safetensors shard of F32 tensors `(name, elements)`, inspected.
fn shard(name: &str, tensors: &[(&str, u64)]) -> Inspection {
    let mut off = 0;
    let mut entries = Vec::new();
    for (t, n) in tensors {
        entries.push(format!(r#""{t}":{{"dtype":"F32","shape":[{n}],"data_offsets":[{off},{}]}}"#, off + n * 4));
        off += n * 4;
    }
    let header = format!("{{{}}}", entries.join(","));
    let mut v = (header.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(header.as_bytes());
    v.resize(v.len() + off as usize, 0);
    inspect(v, name)
}

fn model_codes(files: &[Inspection], companions: &[(&str, &str)]) -> Vec<Code> {
    let companions: Vec<(String, Vec<u8>)> = companions.iter().map(|(n, b)| (n.to_string(), b.as_bytes().to_vec())).collect();
    let refs: Vec<&Inspection> = files.iter().collect();
    codes(build_model(&refs, &companions).findings().cloned())
}

fn split_codes(parts: &[(&str, Gguf)]) -> Vec<Code> {
    let inspections: Vec<Inspection> = parts.iter().map(|(n, g)| inspect(g.bytes(), n)).collect();
    let refs: Vec<&Inspection> = inspections.iter().collect();
    codes(gguf_split::merge(&refs).findings().cloned())
}

fn split_part(no: u32, count: u32) -> Gguf {
    Gguf::new().kv("split.no", 2, (no as u16).to_le_bytes().to_vec()).kv("split.count", 2, (count as u16).to_le_bytes().to_vec())
}

struct Failing;
impl ByteSource for Failing {
    fn len(&self) -> u64 {
        100
    }
    async fn read_at(&self, _: u64, _: u64) -> Result<Vec<u8>, SourceError> {
        Err(SourceError::new("device went away"))
    }
}

/// A stream that ends before the tensor does (the file shrank).
struct Short(Vec<u8>, bool);
impl ChunkStream for Short {
    async fn next_chunk(&mut self) -> Result<Option<&[u8]>, SourceError> {
        if self.1 {
            return Ok(None);
        }
        self.1 = true;
        Ok(Some(&self.0))
    }
}

fn scan_codes(header: &str, data: usize, tensor: usize) -> Vec<Code> {
    let mut v = (header.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(header.as_bytes());
    v.resize(v.len() + data, 0);
    let i = inspect(v.clone(), "x.safetensors");
    let t: TensorEntry = i.tensors().get(tensor).cloned().unwrap();
    match pollster::block_on(scan_tensor(&MemorySource::new(v), &t, 0, false, |_, _| true)) {
        Ok(_) => vec![],
        Err(e) => e.finding().map(|f| vec![f.code]).unwrap_or_default(),
    }
}

/// A pickle-based file's findings (`formats::torch`), from a fixture or from bytes.
fn torch_codes(bytes: &[u8]) -> Vec<Code> {
    codes(tensorpeek::formats::torch::parse_all(bytes).0.findings)
}

fn pickle_fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/tests/fixtures/pickle/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// The legacy torch file with its first storage's recorded element count lowered by one.
fn legacy_short_storage() -> Vec<u8> {
    let b = pickle_fixture("state_dict_legacy.pt");
    let (i, _) = tensorpeek::formats::torch::parse_all(&b);
    let start = i.tensors.iter().filter(|t| t.storage_offset == 0).filter_map(|t| t.start).min().unwrap() as usize;
    let mut v = b.clone();
    let count = u64::from_le_bytes(b[start - 8..start].try_into().unwrap());
    v[start - 8..start].copy_from_slice(&(count - 1).to_le_bytes());
    v
}

fn trigger(code: Code) -> Vec<Code> {
    use Code::*;
    let llama = r#"{"model_type":"llama","hidden_size":4,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1,"vocab_size":8,"tie_word_embeddings":true}"#;
    match code {
        FileTooShort => inspection_codes(&inspect(vec![1, 2, 3], "x.safetensors")),
        UnknownFormat => inspection_codes(&inspect(b"hello world, not a model".to_vec(), "notes.txt")),
        ReadFailed => inspection_codes(&pollster::block_on(source::inspect(&Failing, "x.safetensors"))),
        DuplicateTensor => Gguf::new().tensor("a", &[4], 0, 0).tensor("a", &[4], 0, 32).data(48).codes(),
        SuspiciousName => st(r#"{"a\u202eb":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#, 1),
        ShapeOverflow => st(r#"{"a":{"dtype":"U8","shape":[9223372036854775808,4],"data_offsets":[0,1]}}"#, 1),
        TensorOverlap => st(r#"{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}"#, 3),
        TensorGap => st(r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}}"#, 3),
        TensorPastEnd => st(r#"{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}"#, 2),
        TrailingBytes => st(r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#, 5),
        SuspiciousText => {
            let mut out = Gguf::new().kv("general.name", 8, gstr("Llama\u{202e}3".as_bytes())).codes();
            out.extend(st(r#"{"__metadata__":{"note":"<script>alert(1)</script>"}}"#, 0));
            out
        }
        LimitExceeded => {
            // One metadata entry past the limit (each a 1-byte U8).
            let n = tensorpeek::formats::MAX_METADATA_ENTRIES + 1;
            let mut g = Gguf::new();
            for i in 0..n {
                g = g.kv(&format!("k{i}"), 0, vec![1]);
            }
            g.codes()
        }
        ChatTemplateUnsafe => {
            let t = "{{ cycler.__init__.__globals__.os.popen('id').read() }}";
            let mut out = Gguf::new().kv("tokenizer.chat_template", 8, gstr(t.as_bytes())).codes();
            let cfg = format!(r#"{{"chat_template": {}}}"#, serde_json::to_string(t).unwrap());
            out.extend(model_codes(&[], &[("tokenizer_config.json", cfg.as_str())]));
            out
        }
        HeaderTooLarge => {
            let mut v = 100_000_001u64.to_le_bytes().to_vec();
            v.extend_from_slice(b"{}");
            inspection_codes(&inspect(v, "x.safetensors"))
        }
        HeaderPastEnd => {
            let mut v = 50u64.to_le_bytes().to_vec();
            v.extend_from_slice(b"{}");
            inspection_codes(&inspect(v, "x.safetensors"))
        }
        HeaderNotUtf8 => {
            let mut v = 3u64.to_le_bytes().to_vec();
            v.extend_from_slice(&[b'{', 0xff, b'}']);
            inspection_codes(&inspect(v, "x.safetensors"))
        }
        HeaderNotJson => st("{x", 0),
        HeaderNotObject => st("{}", 0).into_iter().chain(st(" []", 0)).collect(),
        JsonTooDeep => st(&format!(r#"{{"a":{}{}}}"#, "[".repeat(100), "]".repeat(100)), 0),
        DuplicateKey => st(r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#, 1),
        LeadingWhitespace => st(" {}", 0),
        InvalidMetadata => st(r#"{"__metadata__":{"a":1}}"#, 0),
        MissingField => st(r#"{"a":{"dtype":"U8","data_offsets":[0,1]}}"#, 1),
        InvalidField => st(r#"{"a":{"dtype":"U8","shape":"x","data_offsets":[0,1]}}"#, 1),
        UnknownField => st(r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":1}}"#, 1),
        UnknownDtype => st(r#"{"a":{"dtype":"F12","shape":[1],"data_offsets":[0,1]}}"#, 1),
        InvalidOffsets => st(r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,0]}}"#, 1),
        SizeMismatch => st(r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}"#, 4),
        PartialByte => st(r#"{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}"#, 2),
        BadMagic => inspection_codes(&inspect(b"GGUX\x03\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0".to_vec(), "x.gguf")),
        UnsupportedVersion => inspection_codes(&inspect(b"GGUF\x09\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0".to_vec(), "x.gguf")),
        CountTooLarge => {
            let mut v = b"GGUF\x03\0\0\0".to_vec();
            v.extend_from_slice(&(1u64 << 62).to_le_bytes());
            v.extend_from_slice(&0u64.to_le_bytes());
            inspection_codes(&inspect(v, "x.gguf"))
        }
        InvalidUtf8 => Gguf::new().kv("k", 8, gstr(&[0xff, 0xfe])).codes(),
        UnknownValueType => Gguf::new().kv("k", 99, vec![0]).codes(),
        NestingTooDeep => {
            let mut v = arr(0, 1, &[7]);
            for _ in 0..5 {
                v = arr(9, 1, &v);
            }
            Gguf::new().kv("k", 9, v).codes()
        }
        NestedArray => Gguf::new().kv("k", 9, arr(9, 1, &arr(0, 1, &[7]))).codes(),
        InvalidBool => Gguf::new().kv("k", 7, vec![2]).codes(),
        EmptyKey => Gguf::new().kv("", 0, vec![1]).codes(),
        DuplicateMetadataKey => Gguf::new().kv("k", 0, vec![1]).kv("k", 0, vec![2]).codes(),
        NameTooLong => Gguf::new().tensor(&"n".repeat(64), &[4], 0, 0).data(16).codes(),
        TooManyDims => Gguf::new().tensor("t", &[1, 1, 1, 1, 1], 0, 0).data(4).codes(),
        ZeroDim => Gguf::new().tensor("t", &[0, 4], 0, 0).codes(),
        BlockMisaligned => Gguf::new().tensor("t", &[31], 2, 0).codes(),
        UnknownGgmlType => Gguf::new().tensor("t", &[4], 99, 0).codes(),
        RemovedGgmlType => Gguf::new().tensor("t", &[16], 4, 0).data(10).codes(),
        UnalignedOffset => Gguf::new().tensor("t", &[4], 0, 1).data(17).codes(),
        InvalidAlignment => Gguf::new().u32kv("general.alignment", 3).codes(),
        LlamaCppIncompatible => Gguf::new().tensor("t", &[4, 0], 0, 0).codes(),
        MissingShard => model_codes(&[shard("a.safetensors", &[("x", 1)])], &[("model.safetensors.index.json", r#"{"weight_map":{"x":"a.safetensors","y":"b.safetensors"}}"#)]),
        TensorNotInShard => model_codes(&[shard("a.safetensors", &[("x", 1)])], &[("model.safetensors.index.json", r#"{"weight_map":{"x":"a.safetensors","y":"a.safetensors"}}"#)]),
        TensorNotInIndex => model_codes(&[shard("a.safetensors", &[("x", 1), ("y", 1)])], &[("model.safetensors.index.json", r#"{"weight_map":{"x":"a.safetensors"}}"#)]),
        TensorInWrongShard => model_codes(
            &[shard("a.safetensors", &[("x", 1)]), shard("b.safetensors", &[("y", 1)])],
            &[("model.safetensors.index.json", r#"{"weight_map":{"x":"b.safetensors","y":"b.safetensors"}}"#)],
        ),
        TotalSizeMismatch => model_codes(&[shard("a.safetensors", &[("x", 1)])], &[("model.safetensors.index.json", r#"{"metadata":{"total_size":99},"weight_map":{"x":"a.safetensors"}}"#)]),
        MissingTensor | ShapeMismatch | UnexpectedTensor => model_codes(
            &[shard("model.safetensors", &[("model.embed_tokens.weight", 7), ("extra.weight", 1)])],
            &[("config.json", llama)],
        ),
        InvalidIndex => model_codes(&[], &[("model.safetensors.index.json", r#"{"weight_map": ["#)]),
        InvalidConfig => model_codes(&[], &[("config.json", "[1, 2]")]),
        SplitMissing => split_codes(&[("m-00001-of-00003.gguf", split_part(0, 3)), ("m-00003-of-00003.gguf", split_part(2, 3))]),
        SplitMismatch => split_codes(&[("m-00001-of-00002.gguf", split_part(0, 2)), ("m-00002-of-00002.gguf", split_part(1, 3))]),
        InvalidTokenizer => model_codes(&[], &[("tokenizer.json", "{not json")]),
        VocabMismatch => model_codes(&[], &[("config.json", llama), ("tokenizer.json", r#"{"added_tokens":[{"id":9,"content":"<x>","special":true}],"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}"#)]),
        CompanionTooLarge => {
            let big = vec![b' '; 64 * 1024 * 1024 + 1];
            let refs: Vec<&Inspection> = Vec::new();
            codes(build_model(&refs, &[("tokenizer.json".to_string(), big)]).findings().cloned())
        }
        DuplicateCompanion => model_codes(&[], &[("config.json", llama), ("config2.json", llama)]),
        ValuesNotDecoded => {
            // A removed ggml type (IQ4_NL_4_4: 18 bytes per 32 values) is sized, never decoded.
            let g = Gguf::new().tensor("t", &[32], 36, 0).data(18);
            let i = inspect(g.bytes(), "x.gguf");
            let t = i.tensors().first().cloned().unwrap();
            let r = pollster::block_on(scan_tensor(&MemorySource::new(g.bytes()), &t, 0, false, |_, _| true));
            r.err().and_then(|e| e.finding().map(|f| vec![f.code])).unwrap_or_default()
        }
        FileChanged => {
            let header = r#"{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}}"#;
            let mut v = (header.len() as u64).to_le_bytes().to_vec();
            v.extend_from_slice(header.as_bytes());
            v.resize(v.len() + 8, 0);
            let i = inspect(v.clone(), "x.safetensors");
            let t = i.tensors().first().cloned().unwrap();
            let (codec, range) = plan(&t, v.len() as u64).unwrap();
            let mut stream = Short(vec![0; 3], false);
            let r = pollster::block_on(scan_chunks(&mut stream, codec, range, &t, false, |_, _| true));
            let mut out = r.err().and_then(|e| e.finding().map(|f| vec![f.code])).unwrap_or_default();
            // And through a source: a tensor whose range was fine is fine.
            out.extend(scan_codes(header, 8, 0));
            out
        }
        PickleTruncated => torch_codes(&pickle_fixture("truncated.pkl")),
        PickleMalformed | DangerousGlobal => torch_codes(&pickle_fixture("mal__pickle_loads.pkl")),
        PickleLimit => torch_codes(&[b"(".repeat(70_000), b".".to_vec()].concat()),
        UnknownGlobal => torch_codes(&pickle_fixture("obf_ext.pkl")),
        UnexpectedPersistentId => torch_codes(b"\x80\x02X\x01\x00\x00\x00aQ."),
        ZipMalformed => torch_codes(&pickle_fixture("truncated_zip.pt")),
        CompressedMember => torch_codes(&pickle_fixture("compressed.npz")),
        MissingStorage => torch_codes(&pickle_fixture("missing_storage.pt")),
        TensorPastStorage | StorageSizeMismatch => torch_codes(&legacy_short_storage()),
        NpyMalformed => torch_codes(b"\x93NUMPY\x01\x00\x10\x00{'descr': 'zz'\n"),
        UnsupportedDtype => torch_codes(&pickle_fixture("be_i32.npy")),
        NonContiguous => torch_codes(&pickle_fixture("f64_fortran.npy")),
        NotConvertible => {
            let (i, _) = tensorpeek::formats::torch::parse_all(&pickle_fixture("mal_os_system.pkl"));
            tensorpeek::formats::torch::convert::plan(&i).err().map(|f| vec![f.code]).unwrap_or_default()
        }
    }
}

#[test]
fn every_code_is_triggered() {
    assert_eq!(Code::ALL.len(), LISTED, "Code::ALL and the exhaustive list above must name the same codes");
    let mut missing = Vec::new();
    for &code in Code::ALL {
        let got = trigger(code);
        if !got.contains(&code) {
            missing.push(format!("{code}: got {got:?}"));
        }
    }
    assert!(missing.is_empty(), "codes not triggered:\n{}", missing.join("\n"));
}

/// A finding about one of several files names it.
#[test]
fn multi_file_findings_name_their_file() {
    let files = [shard("a.safetensors", &[("x", 1)])];
    let refs: Vec<&Inspection> = files.iter().collect();
    let m = build_model(&refs, &[("model.safetensors.index.json".into(), br#"{"weight_map":{"x":"a.safetensors","y":"b.safetensors"}}"#.to_vec())]);
    assert!(m.findings().all(|f| f.file.is_some()), "{:#?}", m.errors);
}
