//! One hand-built byte buffer per finding, plus the happy paths.

use super::*;
use crate::error::Severity;

/// `[N][header]` plus `data_len` zero bytes of data (built in memory: only small ones).
fn file(header: &str, data_len: usize) -> Vec<u8> {
    let mut v = (header.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(header.as_bytes());
    v.extend(std::iter::repeat_n(0u8, data_len));
    v
}

fn done(bytes: &[u8]) -> Header {
    match parse(bytes, bytes.len() as u64) {
        Step::Done(h) => h,
        Step::Need(n) => panic!("parser asked for {n} bytes of a complete file"),
    }
}

fn codes(h: &Header) -> Vec<Code> {
    h.findings.iter().map(|f| f.code).collect()
}

fn only(h: &Header, code: Code) -> &Finding {
    let hits: Vec<&Finding> = h.findings.iter().filter(|f| f.code == code).collect();
    assert_eq!(hits.len(), 1, "expected one {code:?}, got {:?}", h.findings);
    hits[0]
}

#[test]
fn sound_file() {
    let hdr = r#"{"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},"a":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]}}"#;
    let bytes = file(hdr, 16);
    let h = done(&bytes);
    assert!(h.findings.is_empty(), "{:?}", h.findings);
    assert_eq!(h.header_len, Some(hdr.len() as u64));
    assert_eq!(h.data_start, Some(8 + hdr.len() as u64));
    assert_eq!(h.metadata, vec![("format".to_string(), "pt".to_string())]);
    assert_eq!(h.tensors.len(), 2);
    let b = &h.tensors[0];
    assert_eq!((b.name.as_str(), b.dtype.name().as_ref()), ("b", "F32"));
    assert_eq!((b.start, b.end, b.bytes, b.params), (8, 16, Some(8), Some(2)));
    assert_eq!(b.abs_start, Some(8 + hdr.len() as u64 + 8));
    assert_eq!(b.header_offset, Some(8 + hdr.find(r#"{"dtype":"F32""#).unwrap() as u64));
    let totals = crate::vocab::Totals::of(&h.tensors);
    assert_eq!((totals.tensors, totals.params, totals.bytes), (2, 6, 16));
    assert_eq!(totals.by_dtype["BF16"].bytes, 8);
}

#[test]
fn empty_header_and_zero_sized_tensors_are_sound() {
    assert!(done(&file("{}", 0)).findings.is_empty());
    let h = done(&file(r#"{"z":{"dtype":"F32","shape":[0,5],"data_offsets":[0,0]}}"#, 0));
    assert!(h.findings.is_empty(), "{:?}", h.findings);
    assert_eq!(h.tensors[0].params, Some(0));
}

#[test]
fn asks_for_exactly_the_header() {
    let bytes = file(r#"{"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}}"#, 3);
    let len = bytes.len() as u64;
    assert_eq!(parse(&[], len), Step::Need(8));
    assert_eq!(parse(&bytes[..5], len), Step::Need(8));
    let n = bytes.len() as u64 - 3;
    assert_eq!(parse(&bytes[..8], len), Step::Need(n));
    assert_eq!(parse(&bytes[..(n as usize - 1)], len), Step::Need(n));
    assert!(matches!(parse(&bytes[..n as usize], len), Step::Done(h) if h.findings.is_empty()));
}

#[test]
fn offsets_past_4_gib_are_u64() {
    // A 6.4 GB file: only the header exists in memory, the length is given.
    let big = 6_400_000_000u64;
    let hdr = format!(
        r#"{{"a":{{"dtype":"U8","shape":[{big}],"data_offsets":[0,{big}]}},"b":{{"dtype":"F32","shape":[2],"data_offsets":[{big},{}]}}}}"#,
        big + 8
    );
    let prefix = file(&hdr, 0);
    let file_len = prefix.len() as u64 + big + 8;
    let Step::Done(h) = parse(&prefix, file_len) else { panic!("need") };
    assert!(h.findings.is_empty(), "{:?}", h.findings);
    assert_eq!(h.tensors[1].abs_start, Some(prefix.len() as u64 + big));
}

#[test]
fn file_too_short() {
    let h = done(b"\x02\0\0");
    assert_eq!(codes(&h), vec![Code::FileTooShort]);
}

#[test]
fn header_too_large() {
    let mut v = (MAX_HEADER_LEN + 1).to_le_bytes().to_vec();
    v.extend_from_slice(b"{}");
    let h = match parse(&v, u64::MAX) {
        Step::Done(h) => h,
        Step::Need(n) => panic!("must not ask for {n} bytes"),
    };
    assert_eq!(only(&h, Code::HeaderTooLarge).offset, Some(0));
}

#[test]
fn header_past_end() {
    let mut v = 100u64.to_le_bytes().to_vec();
    v.extend_from_slice(b"{}");
    let h = done(&v);
    assert_eq!(codes(&h), vec![Code::HeaderPastEnd]);
}

#[test]
fn header_not_utf8() {
    let mut v = file(r#"{"a":1}"#, 0);
    v[10] = 0xff;
    let h = done(&v);
    assert_eq!(only(&h, Code::HeaderNotUtf8).offset, Some(10));
}

#[test]
fn header_not_json() {
    let h = done(&file(r#"{"a": {"dtype":"F32",}"#, 0));
    let f = only(&h, Code::HeaderNotJson);
    assert!(f.offset.is_some_and(|o| o > 8));
}

#[test]
fn header_not_object() {
    let h = done(&file("[1,2]", 0));
    assert_eq!(codes(&h), vec![Code::HeaderNotObject]);
}

#[test]
fn json_too_deep_is_a_finding_not_a_stack_overflow() {
    let deep = format!("{{\"a\":{}{}}}", "[".repeat(10_000), "]".repeat(10_000));
    let h = done(&file(&deep, 0));
    let f = only(&h, Code::JsonTooDeep);
    assert_eq!(f.offset, Some(8 + 5 + MAX_JSON_DEPTH as u64 - 1));
}

#[test]
fn brackets_inside_strings_do_not_count_as_depth() {
    let name = "[".repeat(200);
    let h = done(&file(&format!(r#"{{"{name}":{{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}}}"#), 1));
    assert!(h.findings.is_empty(), "{:?}", h.findings);
}

#[test]
fn duplicate_tensor_key() {
    let h = done(&file(
        r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}"#,
        2,
    ));
    let f = only(&h, Code::DuplicateKey);
    assert_eq!(f.tensor.as_deref(), Some("a"));
    assert_eq!(f.severity, Severity::Error);
    assert_eq!(h.tensors.len(), 2, "both entries stay visible");
}

#[test]
fn duplicate_field_inside_a_tensor() {
    let h = done(&file(r#"{"a":{"dtype":"U8","dtype":"F32","shape":[1],"data_offsets":[0,1]}}"#, 1));
    assert_eq!(only(&h, Code::DuplicateKey).field.as_deref(), Some("dtype"));
}

#[test]
fn leading_whitespace_is_a_warning() {
    let h = done(&file(r#"  {"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#, 1));
    let f = only(&h, Code::LeadingWhitespace);
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(f.offset, Some(8));
    assert_eq!(h.tensors.len(), 1);
}

#[test]
fn trailing_padding_spaces_are_fine() {
    let h = done(&file(r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}      "#, 1));
    assert!(h.findings.is_empty(), "{:?}", h.findings);
}

#[test]
fn metadata_must_map_strings_to_strings() {
    let h = done(&file(r#"{"__metadata__":{"ok":"yes","n":5}}"#, 0));
    let f = only(&h, Code::InvalidMetadata);
    assert_eq!(f.field.as_deref(), Some("__metadata__.n"));
    assert_eq!(h.metadata, vec![("ok".to_string(), "yes".to_string())]);
    let h = done(&file(r#"{"__metadata__":[1]}"#, 0));
    only(&h, Code::InvalidMetadata);
}

#[test]
fn missing_fields() {
    let h = done(&file(r#"{"a":{"shape":[1],"data_offsets":[0,1]}}"#, 1));
    assert_eq!(only(&h, Code::MissingField).field.as_deref(), Some("dtype"));
    assert!(h.tensors.is_empty());
    let h = done(&file(r#"{"a":{"dtype":"U8","data_offsets":[0,1]}}"#, 1));
    assert_eq!(only(&h, Code::MissingField).field.as_deref(), Some("shape"));
    let h = done(&file(r#"{"a":{"dtype":"U8","shape":[1]}}"#, 1));
    assert_eq!(only(&h, Code::MissingField).field.as_deref(), Some("data_offsets"));
    let h = done(&file(r#"{"a":7}"#, 0));
    assert_eq!(only(&h, Code::MissingField).tensor.as_deref(), Some("a"));
}

#[test]
fn invalid_fields() {
    for (hdr, field) in [
        (r#"{"a":{"dtype":5,"shape":[1],"data_offsets":[0,1]}}"#, "dtype"),
        (r#"{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}"#, "shape"),
        (r#"{"a":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}}"#, "shape"),
        (r#"{"a":{"dtype":"U8","shape":"1","data_offsets":[0,1]}}"#, "shape"),
        (r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}}"#, "data_offsets"),
        (r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[-1,1]}}"#, "data_offsets"),
        (r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,18446744073709551616]}}"#, "data_offsets"),
    ] {
        let h = done(&file(hdr, 1));
        assert_eq!(only(&h, Code::InvalidField).field.as_deref(), Some(field), "{hdr}");
    }
}

#[test]
fn unknown_field_is_a_warning() {
    let h = done(&file(r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"extra":true}}"#, 1));
    let f = only(&h, Code::UnknownField);
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(f.field.as_deref(), Some("extra"));
}

#[test]
fn unknown_dtype() {
    let h = done(&file(r#"{"a":{"dtype":"F12","shape":[1],"data_offsets":[0,1]}}"#, 1));
    let f = only(&h, Code::UnknownDtype);
    assert_eq!(f.tensor.as_deref(), Some("a"));
    assert_eq!(h.tensors[0].dtype, crate::dtype::TensorDtype::Unknown("F12".into()));
}

#[test]
fn every_current_dtype_is_known() {
    for d in Dtype::all() {
        let n = 16u64; // a whole number of bytes for every bit width
        let bytes = d.byte_size(n).unwrap();
        let hdr = format!(r#"{{"t":{{"dtype":"{}","shape":[{n}],"data_offsets":[0,{bytes}]}}}}"#, d.name());
        let h = done(&file(&hdr, bytes as usize));
        assert!(h.findings.is_empty(), "{}: {:?}", d.name(), h.findings);
    }
}

#[test]
fn begin_after_end() {
    let h = done(&file(r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[2,1]}}"#, 2));
    let f = only(&h, Code::InvalidOffsets);
    assert!(f.offset.is_some());
}

#[test]
fn size_mismatch() {
    let h = done(&file(r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}"#, 4));
    let f = only(&h, Code::SizeMismatch);
    assert_eq!(f.tensor.as_deref(), Some("a"));
}

#[test]
fn partial_byte() {
    let h = done(&file(r#"{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}"#, 2));
    only(&h, Code::PartialByte);
}

#[test]
fn shape_overflow() {
    let h = done(&file(
        r#"{"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,1]}}"#,
        1,
    ));
    only(&h, Code::ShapeOverflow);
    assert_eq!(h.tensors[0].params, None);
    // elements fit, bytes do not
    let h = done(&file(r#"{"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,1]}}"#, 1));
    only(&h, Code::ShapeOverflow);
}

#[test]
fn gap_between_tensors() {
    let h = done(&file(
        r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[1],"data_offsets":[3,4]}}"#,
        4,
    ));
    let f = only(&h, Code::TensorGap);
    assert_eq!(f.tensor.as_deref(), Some("b"));
    let hdr_len = 8 + h.header_len.unwrap();
    assert_eq!(f.offset, Some(hdr_len + 1));
}

#[test]
fn gap_at_start() {
    let h = done(&file(r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}"#, 2));
    only(&h, Code::TensorGap);
}

#[test]
fn overlap() {
    let h = done(&file(
        r#"{"a":{"dtype":"U16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"U16","shape":[1],"data_offsets":[2,4]}}"#,
        4,
    ));
    let f = only(&h, Code::TensorOverlap);
    assert_eq!(f.tensor.as_deref(), Some("b"));
}

#[test]
fn past_end() {
    let h = done(&file(r#"{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}"#, 2));
    let f = only(&h, Code::TensorPastEnd);
    assert_eq!(f.tensor.as_deref(), Some("a"));
    assert!(!h.findings.iter().any(|f| f.code == Code::TrailingBytes));
}

#[test]
fn trailing_bytes() {
    let h = done(&file(r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#, 5));
    let f = only(&h, Code::TrailingBytes);
    assert_eq!(f.offset, Some(8 + h.header_len.unwrap() + 1));
}

#[test]
fn suspicious_names_are_warnings() {
    for name in ["a\\u0007b", "evil\u{202E}txt", "x\u{2066}y"] {
        let hdr = format!(r#"{{"{name}":{{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}}}"#);
        let h = done(&file(&hdr, 1));
        assert_eq!(only(&h, Code::SuspiciousName).severity, Severity::Warning, "{name}");
    }
}

#[test]
fn findings_carry_offsets_of_the_entry() {
    let hdr = r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"F12","shape":[1],"data_offsets":[1,2]}}"#;
    let h = done(&file(hdr, 2));
    let f = only(&h, Code::UnknownDtype);
    let at = hdr.find("\"F12\"").unwrap() as u64 + 8;
    assert_eq!(f.offset, Some(at));
}

#[test]
fn garbage_never_panics() {
    // A cheap deterministic fuzz: every prefix and a few byte flips of a valid file.
    let base = file(
        r#"{"__metadata__":{"k":"v"},"a":{"dtype":"F4","shape":[2,2],"data_offsets":[0,2]},"b":{"dtype":"BF16","shape":[1],"data_offsets":[2,4]}}"#,
        4,
    );
    for cut in 0..base.len() {
        let _ = parse(&base[..cut], cut as u64);
        let _ = parse(&base[..cut], base.len() as u64);
    }
    for i in 0..base.len() {
        for b in [0u8, b'"', b'{', b']', 0xff, b'9'] {
            let mut v = base.clone();
            v[i] = b;
            let _ = parse(&v, v.len() as u64);
        }
    }
}
