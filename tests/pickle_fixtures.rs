//! The pickle / PyTorch / numpy fixtures (tests/fixtures/pickle, written by make_pickle.py)
//! against the reference tools' answers in expected.json: torch.load(weights_only=True)
//! for tensors, pickletools.genops for opcode offsets and counts, zipfile for members,
//! numpy for .npy headers, the PyPI safetensors writer for converted headers.

use serde_json::Value as J;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use tensorpeek::formats::pickle::{GlobalVerdict, Verdict};
use tensorpeek::formats::torch::{self, convert, Container, Inspection};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pickle")
}

fn expected() -> serde_json::Map<String, J> {
    let text = std::fs::read_to_string(dir().join("expected.json")).unwrap();
    serde_json::from_str::<J>(&text)
        .unwrap()
        .as_object()
        .unwrap()
        .clone()
}

fn sha(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

fn inspect(name: &str) -> (Inspection, Vec<u8>, u64) {
    let bytes = std::fs::read(dir().join(name)).unwrap();
    let (i, served) = torch::parse_all(&bytes);
    (i, bytes, served)
}

fn fmt_name(c: Container) -> &'static str {
    c.name()
}

/// Our top-level (not nested, not derived) globals as (opcode, offset, module, name,
/// member), names as written in the file (before _compat_pickle renames).
/// (opcode, offset, module, name, member, count): an import performed again is listed
/// once, at its first offset, with how many times.
type G = (String, u64, Option<String>, Option<String>, Option<String>, u64);

fn our_globals(i: &Inspection) -> Vec<G> {
    i.safety
        .globals
        .iter()
        .filter(|g| g.nesting == 0 && g.opcode != "REDUCE" && !g.opcode.starts_with("EXT"))
        .map(|g| {
            let (m, n) = match &g.written {
                Some((m, n)) => (Some(m.clone()), Some(n.clone())),
                None => (g.module.clone(), g.name.clone()),
            };
            (g.opcode.to_string(), g.offset, m, n, g.member.clone(), g.count)
        })
        .collect()
}

/// pickletools' list (one entry per opcode), folded as tensorpeek lists imports: the
/// same opcode, module, name and member again counts on the first.
fn ref_globals(list: &J) -> Vec<G> {
    let mut out: Vec<G> = Vec::new();
    for g in list.as_array().unwrap() {
        let s = |k: &str| g.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let (op, at, m, n, member) = (s("opcode").unwrap(), g["offset"].as_u64().unwrap(), s("module"), s("name"), s("member"));
        match out.iter_mut().find(|o| (&o.0, &o.2, &o.3, &o.4) == (&op, &m, &n, &member)) {
            Some(o) => o.5 += 1,
            None => out.push((op, at, m, n, member, 1)),
        }
    }
    out
}

#[test]
fn every_fixture_matches_the_reference_tools() {
    let exp = expected();
    let mut checked = 0;
    for (name, e) in &exp {
        if name.starts_with('_') || name.ends_with(".safetensors") {
            continue;
        }
        let (i, bytes, served) = inspect(name);
        let ctx = format!(
            "{name}: verdict {:?}, findings {:#?}",
            i.safety.verdict, i.findings
        );
        // format
        let want_fmt = e["format"].as_str().unwrap_or("unknown");
        assert_eq!(fmt_name(i.format), want_fmt, "{ctx}");
        // verdict
        let want = e
            .get("expect_verdict")
            .and_then(|v| v.as_str())
            .unwrap_or("safe");
        assert_eq!(i.safety.verdict.name(), want, "{ctx}");
        assert_eq!(i.ok(), want == "safe" || want == "suspicious", "{ctx}");
        // globals: opcode, absolute offset, module/name, member — pickletools
        if let Some(g) = e.get("globals") {
            if e.get("format").and_then(|f| f.as_str()) == Some("pytorch-legacy") {
                // the legacy expectation lists the main pickle's globals; the other four have none
                assert_eq!(our_globals(&i), ref_globals(g), "{ctx}");
            } else {
                assert_eq!(our_globals(&i), ref_globals(g), "{ctx}");
            }
        }
        // opcode counts — pickletools
        if let Some(n) = e.get("opcodes").and_then(|v| v.as_u64()) {
            if e.get("inner").is_some() {
                assert!(i.opcodes > n, "{ctx}");
            } else if !name.starts_with("obf_nested_codecs") {
                assert_eq!(i.opcodes, n, "{ctx}");
            }
        }
        if let Some(p) = e.get("pickles") {
            let total: u64 = p
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x["opcodes"].as_u64().unwrap())
                .sum();
            assert_eq!(i.opcodes, total, "{ctx}");
            let main = &p[3];
            assert_eq!(
                i.pickle,
                Some((
                    main["offset"].as_u64().unwrap(),
                    main["len"].as_u64().unwrap()
                )),
                "{ctx}"
            );
        }
        // zip members — zipfile
        if let Some(m) = e.get("members") {
            let want: Vec<(String, u64)> = m
                .as_array()
                .unwrap()
                .iter()
                .map(|x| {
                    (
                        x["name"].as_str().unwrap().to_string(),
                        x["header_offset"].as_u64().unwrap(),
                    )
                })
                .collect();
            let got: Vec<(String, u64)> = i
                .members
                .iter()
                .map(|x| (x.name.clone(), x.header_offset))
                .collect();
            assert_eq!(got, want, "{ctx}");
        }
        // torch zip reads: EOCD, directory, local headers, data.pkl — never tensor data
        if i.format == Container::PytorchZip {
            println!("{name}: {} bytes, read {served}", bytes.len());
            if let Some(len) = e.get("pickle_len").and_then(|v| v.as_u64()) {
                assert!(
                    served <= len + 128 * 1024,
                    "{name}: served {served} bytes for a {len}-byte pickle"
                );
            }
            if bytes.len() as u64 > torch::HEAD_LEN + torch::TAIL_LEN + 4096 {
                assert!(served < bytes.len() as u64, "{name}: read the whole file");
            }
        }
        // tensors — torch.load(weights_only=True)
        if let Some(ts) = e.get("tensors").and_then(|v| v.as_array()) {
            if e["format"] != "safetensors" {
                assert_eq!(i.tensors.len(), ts.len(), "{ctx}");
                for (t, r) in i.tensors.iter().zip(ts) {
                    assert_eq!(t.name, r["name"].as_str().unwrap(), "{name}");
                    assert_eq!(t.dtype, r["dtype"].as_str().unwrap(), "{name} {}", t.name);
                    let v = |k: &str| {
                        r[k].as_array()
                            .unwrap()
                            .iter()
                            .map(|x| x.as_u64().unwrap())
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(t.shape, v("shape"), "{name} {}", t.name);
                    assert_eq!(t.stride, v("stride"), "{name} {}", t.name);
                    assert_eq!(
                        t.storage_offset,
                        r["storage_offset"].as_u64().unwrap(),
                        "{name} {}",
                        t.name
                    );
                    assert_eq!(
                        t.contiguous,
                        r["contiguous"].as_bool().unwrap(),
                        "{name} {}",
                        t.name
                    );
                    let shares: Vec<String> = r["shares_storage_with"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_str().unwrap().to_string())
                        .collect();
                    assert_eq!(t.shares_storage_with, shares, "{name} {}", t.name);
                    if t.contiguous {
                        let (s, en) = (t.start.unwrap() as usize, t.end.unwrap() as usize);
                        assert_eq!(
                            en - s,
                            r["nbytes"].as_u64().unwrap() as usize,
                            "{name} {}",
                            t.name
                        );
                        assert_eq!(
                            sha(&bytes[s..en]),
                            r["sha256"].as_str().unwrap(),
                            "{name} {}: bytes at [{s}, {en})",
                            t.name
                        );
                    }
                }
            }
        }
        // .npy — numpy
        if e["format"] == "npy" {
            let t = &i.tensors[0];
            let want_shape: Vec<u64> = e["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect();
            assert_eq!(t.shape, want_shape, "{name}");
            assert_eq!(t.start, e["data_offset"].as_u64(), "{name}");
            assert_eq!(
                t.contiguous,
                !e["fortran_order"].as_bool().unwrap()
                    || want_shape.iter().filter(|&&d| d > 1).count() < 2,
                "{name}"
            );
            let (s, en) = (t.start.unwrap() as usize, t.end.unwrap() as usize);
            assert_eq!(sha(&bytes[s..en]), e["sha256"].as_str().unwrap(), "{name}");
        }
        if let Some(arrays) = e.get("arrays").and_then(|v| v.as_array()) {
            for a in arrays {
                let member = a["member"].as_str().unwrap();
                let stem = member.strip_suffix(".npy").unwrap();
                if a["descr"] == "|O" {
                    let want = ref_globals(&a["globals"]);
                    let got: Vec<_> = our_globals(&i)
                        .into_iter()
                        .filter(|g| g.4.as_deref() == Some(member))
                        .collect();
                    assert_eq!(got, want, "{name} {member}");
                } else {
                    let t = i.tensors.iter().find(|t| t.name == stem).unwrap();
                    assert_eq!(t.start, a["data_offset"].as_u64(), "{name} {member}");
                }
            }
        }
        // nested pickle: the inner globals at their absolute offsets
        if let Some(inner) = e.get("inner") {
            let got: Vec<_> = i
                .safety
                .globals
                .iter()
                .filter(|g| g.nesting == 1)
                .map(|g| {
                    (
                        g.opcode.to_string(),
                        g.offset,
                        g.module.clone(),
                        g.name.clone(),
                        g.member.clone(),
                        g.count,
                    )
                })
                .collect();
            assert_eq!(got, ref_globals(&inner["globals"]), "{ctx}");
        }
        checked += 1;
    }
    assert!(checked >= 70, "only {checked} fixtures checked");
}

#[test]
fn dangerous_globals_are_named_with_offsets() {
    let (i, ..) = inspect("mal_torch.pt");
    let g = i
        .safety
        .globals
        .iter()
        .find(|g| g.verdict == GlobalVerdict::Dangerous)
        .unwrap();
    assert_eq!(
        (g.module.as_deref(), g.name.as_deref()),
        (Some("posix"), Some("system"))
    );
    assert_eq!(g.member.as_deref(), Some("mal_torch/data.pkl"));
    assert!(!i.ok());
    let (i, ..) = inspect("obf_py2_names.pkl");
    let mapped: Vec<_> = i
        .safety
        .globals
        .iter()
        .map(|g| (g.module.clone().unwrap(), g.name.clone().unwrap()))
        .collect();
    assert_eq!(
        mapped,
        [
            ("builtins".to_string(), "eval".to_string()),
            ("subprocess".into(), "getoutput".into())
        ]
    );
    let (i, ..) = inspect("obf_ext.pkl");
    assert_eq!(i.safety.globals[0].opcode, "EXT1");
    assert_eq!(i.safety.verdict, Verdict::Suspicious);
    let (i, ..) = inspect("obf_getattr_import.pkl");
    assert!(i.safety.globals.iter().any(|g| g.opcode == "REDUCE"
        && g.module.as_deref() == Some("os")
        && g.name.as_deref() == Some("system")));
    let (i, ..) = inspect("obf_nested_codecs.pkl");
    assert!(i
        .safety
        .globals
        .iter()
        .any(|g| g.nesting == 1 && g.module.as_deref() == Some("posix")));
}

#[test]
fn broken_files_say_why() {
    use tensorpeek::error::Code;
    let has = |name: &str, code: Code| {
        let (i, ..) = inspect(name);
        assert!(
            i.findings.iter().any(|f| f.code == code),
            "{name}: {:#?}",
            i.findings
        );
        assert_eq!(i.safety.verdict, Verdict::Error, "{name}");
    };
    has("truncated_zip.pt", Code::ZipMalformed);
    has("truncated.pkl", Code::PickleTruncated);
    has("truncated_legacy.pt", Code::TensorPastEnd);
    has("missing_storage.pt", Code::MissingStorage);
    has("empty.bin", Code::FileTooShort);
    has("random.bin", Code::UnknownFormat);
}

/// The converted file: header byte-identical to what the PyPI safetensors writer makes of
/// the tensors torch loads, and every tensor's bytes those torch loads.
#[test]
fn conversion_plans_match_the_safetensors_writer() {
    let exp = expected();
    let mut n = 0;
    for (name, e) in &exp {
        let Some(st) = e.get("safetensors").filter(|_| !name.starts_with('_')) else {
            continue;
        };
        let (i, bytes, _) = inspect(name);
        let plan = convert::plan(&i).unwrap();
        let out = plan.apply(&bytes).unwrap();
        assert_eq!(out.len() as u64, plan.len);
        assert_eq!(out.len() as u64, st["len"].as_u64().unwrap(), "{name}");
        let hn = u64::from_le_bytes(out[..8].try_into().unwrap()) as usize;
        assert_eq!(
            std::str::from_utf8(&out[8..8 + hn]).unwrap(),
            st["header"].as_str().unwrap(),
            "{name}"
        );
        // every tensor's bytes, as torch loaded them
        let refs = e["tensors"].as_array().unwrap();
        for p in &plan.pieces {
            let r = refs.iter().find(|r| r["name"] == p.name.as_str()).unwrap();
            let s = p.dst_start as usize;
            assert_eq!(
                sha(&out[s..s + p.len as usize]),
                r["sha256"].as_str().unwrap(),
                "{name} {}",
                p.name
            );
        }
        let refused: Vec<_> = plan
            .refused
            .iter()
            .map(|f| f.tensor.clone().unwrap())
            .collect();
        // left out: what the writer was not given (views) or refuses (complex128)
        let written: Vec<&str> = st["tensors"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
        let want_refused: Vec<String> = refs
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_string())
            .filter(|n| !written.contains(&n.as_str()))
            .collect();
        assert_eq!(refused, want_refused, "{name}");
        n += 1;
    }
    assert!(n >= 8, "{n}");
    // dangerous files are never converted
    let (i, ..) = inspect("mal_torch.pt");
    assert!(convert::plan(&i).is_err());
}

/// transformers' pytorch_model.bin converted = its model.safetensors twin, header and bytes.
#[test]
fn transformers_twin_is_byte_identical() {
    let (i, bytes, _) = inspect("tiny_llama/pytorch_model.bin");
    assert_eq!(i.safety.verdict, Verdict::Safe);
    let out = convert::plan(&i).unwrap().apply(&bytes).unwrap();
    let twin = std::fs::read(dir().join("tiny_llama/model.safetensors")).unwrap();
    let hn = u64::from_le_bytes(twin[..8].try_into().unwrap()) as usize;
    assert_eq!(
        std::str::from_utf8(&out[..8 + hn]).ok(),
        std::str::from_utf8(&twin[..8 + hn]).ok(),
        "headers differ"
    );
    assert_eq!(out, twin, "the whole file is byte-identical");
}

/// Issue 24: one tensor object under two keys (torch pickles the second as a memo GET of
/// the first) is listed under both, as torch.load gives both: the same storage, offset,
/// shape and bytes, each naming the other as sharing its storage.
#[test]
fn a_tensor_under_two_keys_is_listed_under_both() {
    let exp = expected();
    for name in ["same_tensor_twice.pt", "same_tensor_twice_legacy.pt"] {
        let e = &exp[name];
        let groups = e["same_object"].as_array().unwrap();
        assert_eq!(groups, e["same_data_ptr"].as_array().unwrap(), "{name}");
        assert!(!groups.is_empty(), "{name}");
        let (i, ..) = inspect(name);
        assert!(i.ok() && i.findings.is_empty(), "{name}: {:?}", i.findings);
        let names: Vec<&str> = i.tensors.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "a_again", "b"], "{name}");
        for g in groups {
            let ts: Vec<&torch::Tensor> = g
                .as_array()
                .unwrap()
                .iter()
                .map(|n| i.tensors.iter().find(|t| t.name == n.as_str().unwrap()).unwrap())
                .collect();
            for t in &ts[1..] {
                let first = ts[0];
                let place = |t: &torch::Tensor| (t.storage.clone(), t.storage_offset, t.shape.clone(), t.stride.clone(), t.dtype.clone(), t.start, t.end);
                assert_eq!(place(t), place(first), "{name}: {} and {}", t.name, first.name);
                assert_eq!(t.shares_storage_with, [first.name.as_str()], "{name}");
                assert_eq!(first.shares_storage_with, [t.name.as_str()], "{name}");
            }
        }
        // both are converted, each whole (safetensors has no aliasing), as the writer does
        let plan = convert::plan(&i).unwrap();
        let written: Vec<&str> = plan.pieces.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(written, ["b", "a", "a_again"], "{name}: I64 before F32, then by name");
    }
}

/// Issue 24: torch.complex128 is named C128 (the style of every other name, C64 for
/// complex64), in both containers; safetensors has no such dtype, so the tensor is listed
/// with `dtype_known: false` and an `UnsupportedDtype` warning, and a conversion leaves it
/// out, saying why, and writes the rest.
#[test]
fn a_complex128_tensor_is_c128_and_not_converted() {
    use tensorpeek::error::Code;
    for name in ["complex128.pt", "complex128_legacy.pt"] {
        let (i, bytes, _) = inspect(name);
        let z = i.tensors.iter().find(|t| t.name == "z").unwrap();
        assert_eq!((z.dtype.as_str(), z.dtype_known, z.element_size), ("C128", false, 16), "{name}");
        let z64 = i.tensors.iter().find(|t| t.name == "z64").unwrap();
        assert_eq!((z64.dtype.as_str(), z64.dtype_known, z64.element_size), ("C64", true, 8), "{name}");
        let warned: Vec<&str> = i.findings.iter().filter(|f| f.code == Code::UnsupportedDtype).map(|f| f.message.as_str()).collect();
        assert_eq!(warned.len(), 1, "{name}: {:?}", i.findings);
        assert!(warned[0].contains("C128") && warned[0].contains("complex128"), "{name}: {}", warned[0]);
        assert!(i.ok(), "{name}: a warning, not an error");
        let plan = convert::plan(&i).unwrap();
        assert_eq!(plan.refused.len(), 1, "{name}");
        let r = &plan.refused[0];
        assert_eq!((r.code, r.tensor.as_deref()), (Code::NotConvertible, Some("z")), "{name}");
        assert!(r.message.contains("C128") && r.message.contains("safetensors has no complex128"), "{name}: {}", r.message);
        let written: Vec<&str> = plan.pieces.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(written, ["z64", "f"], "{name}: C64 before F32");
        assert!(plan.apply(&bytes).is_some());
    }
}
