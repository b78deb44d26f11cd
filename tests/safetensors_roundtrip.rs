//! Property test: random tensors → written by our own test writer → parsed → the same
//! inventory; and the driver reads exactly 8 + N bytes.

use proptest::prelude::*;
use std::cell::RefCell;
use tensorpeek::dtype::Dtype;
use tensorpeek::error::SourceError;
use tensorpeek::formats::{safetensors, Step};
use tensorpeek::source::{self, ByteSource, MemorySource};

#[derive(Debug, Clone)]
struct Spec {
    name: String,
    dtype: Dtype,
    shape: Vec<u64>,
}

/// Writes a safetensors file the way the reference writer lays it out (tensors packed in
/// order, header padded with spaces to a multiple of 8). Returns the bytes and each
/// tensor's (begin, end).
fn write(specs: &[Spec], metadata: &[(String, String)]) -> (Vec<u8>, Vec<(u64, u64)>) {
    let mut header = serde_json::Map::new();
    if !metadata.is_empty() {
        let m: serde_json::Map<String, serde_json::Value> =
            metadata.iter().map(|(k, v)| (k.clone(), v.clone().into())).collect();
        header.insert("__metadata__".into(), m.into());
    }
    let mut offset = 0u64;
    let mut spans = Vec::new();
    for s in specs {
        let n: u64 = s.shape.iter().product();
        let size = s.dtype.byte_size(n).unwrap();
        spans.push((offset, offset + size));
        header.insert(
            s.name.clone(),
            serde_json::json!({"dtype": s.dtype.name(), "shape": s.shape, "data_offsets": [offset, offset + size]}),
        );
        offset += size;
    }
    let mut text = serde_json::to_string(&header).unwrap().into_bytes();
    while !text.len().is_multiple_of(8) {
        text.push(b' ');
    }
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&text);
    out.resize(out.len() + offset as usize, 0xAB);
    (out, spans)
}

fn spec() -> impl Strategy<Value = Spec> {
    let dtypes: Vec<Dtype> = Dtype::all().collect();
    (
        "[a-z][a-z0-9_.]{0,20}",
        proptest::sample::select(dtypes),
        proptest::collection::vec(0u64..6, 0..4),
    )
        .prop_map(|(name, dtype, mut shape)| {
            // keep sub-byte types whole: an even element count covers F4 and F6 (6·4 bits)
            if dtype.bits() < 8 {
                shape.push(8);
            }
            Spec { name, dtype, shape }
        })
}

proptest! {
    #[test]
    fn write_parse_same_inventory(
        specs in proptest::collection::vec(spec(), 0..12),
        metadata in proptest::collection::vec(("[a-z]{1,8}", "[ -~]{0,12}"), 0..4),
    ) {
        // unique names (duplicates are a separate, tested finding)
        let mut seen = std::collections::HashSet::new();
        let specs: Vec<Spec> = specs.into_iter().filter(|s| seen.insert(s.name.clone())).collect();
        let mut mseen = std::collections::HashSet::new();
        let metadata: Vec<(String, String)> = metadata.into_iter().filter(|(k, _)| mseen.insert(k.clone())).collect();
        let (bytes, spans) = write(&specs, &metadata);
        let Step::Done(h) = safetensors::parse(&bytes, bytes.len() as u64) else {
            panic!("complete file needs more");
        };
        prop_assert!(h.findings.is_empty(), "{:?}", h.findings);
        prop_assert_eq!(h.tensors.len(), specs.len());
        prop_assert_eq!(&h.metadata, &metadata);
        let data_start = h.data_start.unwrap();
        for ((t, s), (b, e)) in h.tensors.iter().zip(&specs).zip(&spans) {
            prop_assert_eq!(&t.name, &s.name);
            prop_assert_eq!(t.dtype.name(), s.dtype.name());
            prop_assert_eq!(&t.shape, &s.shape);
            prop_assert_eq!(t.params, Some(s.shape.iter().product::<u64>()));
            prop_assert_eq!((t.start, t.end), (*b, *e));
            prop_assert_eq!(t.abs_start, Some(data_start + b));
        }
    }
}

/// A memory source that logs every read.
struct Logged {
    inner: MemorySource,
    reads: RefCell<Vec<(u64, u64)>>,
}

impl ByteSource for Logged {
    fn len(&self) -> u64 {
        self.inner.len()
    }
    async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        self.reads.borrow_mut().push((start, len));
        self.inner.read_at(start, len).await
    }
}

fn report(i: tensorpeek::formats::Inspection) -> tensorpeek::report::FileReport {
    tensorpeek::report::FileReport::of(&i, &Default::default())
}

#[test]
fn driver_reads_exactly_the_header() {
    let specs = vec![Spec { name: "w".into(), dtype: Dtype::F32, shape: vec![1000, 100] }];
    let (bytes, _) = write(&specs, &[]);
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap());
    let src = Logged { inner: MemorySource::new(bytes), reads: RefCell::new(Vec::new()) };
    let insp = report(pollster::block_on(source::inspect(&src, "w.safetensors")));
    assert!(insp.ok, "{:?}", insp.errors);
    assert_eq!(insp.bytes_read, 8 + n);
    assert_eq!(*src.reads.borrow(), vec![(0, 8), (8, n)]);
    assert_eq!(insp.totals.bytes, 400_000);
}

#[test]
fn driver_reports_unknown_and_short_files() {
    let src = MemorySource::new(b"hello world, not a model".to_vec());
    let insp = report(pollster::block_on(source::inspect(&src, "notes.txt")));
    assert!(!insp.ok);
    assert_eq!(insp.errors[0].code.as_str(), "UnknownFormat");
    let src = MemorySource::new(vec![1, 2, 3]);
    let insp = report(pollster::block_on(source::inspect(&src, "tiny.safetensors")));
    assert_eq!(insp.errors[0].code.as_str(), "FileTooShort");
}

/// A source whose reads fail: the report says so instead of panicking.
struct Broken(u64);
impl ByteSource for Broken {
    fn len(&self) -> u64 {
        self.0
    }
    async fn read_at(&self, _: u64, _: u64) -> Result<Vec<u8>, SourceError> {
        Err(SourceError::new("device went away"))
    }
}

#[test]
fn read_errors_become_findings() {
    let insp = report(pollster::block_on(source::inspect(&Broken(100), "x.safetensors")));
    assert!(!insp.ok);
    assert_eq!(insp.errors[0].code.as_str(), "ReadFailed");
    assert!(insp.errors[0].message.contains("device went away"));
}
