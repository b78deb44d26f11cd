//! PyTorch, pickle and numpy files in the product: through the driver (`source::inspect`,
//! the range loop of `source::ranges`), the report, the checkpoint merge, the values and
//! the CLI (`inspect`, `stats`, `convert`). Expected values come from the reference tools
//! (tests/fixtures/pickle/expected.json: torch.load, pickletools, zipfile, numpy, the PyPI
//! safetensors writer; sharded_llama/expected.json and many_storages.json: transformers and
//! torch.load — written by make_pickle.py / make_torch_product.py).

use serde_json::Value as J;
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::Command;
use tensorpeek::error::{Code, SourceError};
use tensorpeek::formats::pickle::Verdict;
use tensorpeek::formats::Inspection;
use tensorpeek::report::{FileReport, Report};
use tensorpeek::source::file::FileSource;
use tensorpeek::source::scan::scan_strided;
use tensorpeek::source::set::{open_set, SetInput, SetOptions};
use tensorpeek::source::{self, scan_tensor, ByteSource, MemorySource};
use tensorpeek::values::StridedView;
use tensorpeek::vocab::Format;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pickle")
}

fn json(path: &Path) -> J {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn sha(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// A byte source that records every range read from it.
struct Counting<S> {
    inner: S,
    reads: RefCell<Vec<(u64, u64)>>,
}

impl<S: ByteSource> Counting<S> {
    fn new(inner: S) -> Self {
        Counting {
            inner,
            reads: RefCell::new(Vec::new()),
        }
    }
    fn bytes(&self) -> u64 {
        self.reads.borrow().iter().map(|(_, n)| n).sum()
    }
}

impl<S: ByteSource> ByteSource for Counting<S> {
    fn len(&self) -> u64 {
        self.inner.len()
    }
    async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        self.reads.borrow_mut().push((start, len));
        self.inner.read_at(start, len).await
    }
}

fn inspect(name: &str) -> (Inspection, Counting<MemorySource>, Vec<u8>) {
    let bytes = std::fs::read(dir().join(name)).unwrap();
    let src = Counting::new(MemorySource::new(bytes.clone()));
    let i = pollster::block_on(source::inspect(&src, name));
    (i, src, bytes)
}

fn fixture_names() -> Vec<String> {
    let exp = json(&dir().join("expected.json"));
    exp.as_object()
        .unwrap()
        .keys()
        .filter(|k| !k.starts_with('_') && !k.ends_with(".safetensors"))
        .cloned()
        .collect()
}

/// The file name without its extension (what a one-tensor file's tensor is called).
fn stem(name: &str) -> &str {
    let base = name.rsplit('/').next().unwrap();
    base.rsplit_once('.').map_or(base, |(s, _)| s)
}

#[test]
fn every_fixture_through_the_driver_matches_the_reference_tools() {
    let exp = json(&dir().join("expected.json"));
    for name in fixture_names() {
        let e = &exp[&name];
        let (i, src, bytes) = inspect(&name);
        let ctx = format!("{name}: {:#?}", i.findings().collect::<Vec<_>>());
        let t = i
            .parsed
            .torch()
            .unwrap_or_else(|| panic!("{name} is not read as a pickle-based file"));
        // the format, the verdict and ok
        assert_eq!(
            i.format.name(),
            e["format"].as_str().unwrap_or("unknown"),
            "{ctx}"
        );
        let want = e
            .get("expect_verdict")
            .and_then(J::as_str)
            .unwrap_or("safe");
        assert_eq!(t.inspection.safety.verdict.name(), want, "{ctx}");
        assert_eq!(i.ok(), want == "safe" || want == "suspicious", "{ctx}");
        // the driver's count is what the source served
        assert_eq!(i.bytes_read, src.bytes(), "{ctx}");
        // torch.load's tensors: names, dtypes, shapes, strides, storages, bytes
        for (k, want) in e
            .get("tensors")
            .and_then(J::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let wname = want["name"].as_str().unwrap();
            let wname = if wname.is_empty() { stem(&name) } else { wname };
            let j = i
                .tensors()
                .iter()
                .position(|x| x.name == wname)
                .unwrap_or_else(|| panic!("{name}: no tensor {wname}"));
            assert_eq!(j, k, "{name}: {wname} is in torch.load's order");
            let (entry, layout) = (&i.tensors()[j], t.layout(j).unwrap());
            assert_eq!(
                entry.dtype.to_string(),
                want["dtype"].as_str().unwrap(),
                "{name} {wname}"
            );
            assert_eq!(
                serde_json::to_value(&entry.shape).unwrap(),
                want["shape"],
                "{name} {wname}"
            );
            assert_eq!(
                serde_json::to_value(&layout.stride).unwrap(),
                want["stride"],
                "{name} {wname}"
            );
            assert_eq!(
                layout.storage_offset,
                want["storage_offset"].as_u64().unwrap(),
                "{name} {wname}"
            );
            assert_eq!(
                layout.contiguous,
                want["contiguous"].as_bool().unwrap(),
                "{name} {wname}"
            );
            let mut shares = layout.shares_storage_with.clone();
            shares.sort();
            assert_eq!(
                serde_json::to_value(&shares).unwrap(),
                want["shares_storage_with"],
                "{name} {wname}"
            );
            assert_eq!(
                entry.abs_start,
                Some(entry.start),
                "{name} {wname}: offsets are absolute"
            );
            if layout.contiguous {
                let (s, n) = (entry.start as usize, entry.bytes.unwrap() as usize);
                assert_eq!(n as u64, want["nbytes"].as_u64().unwrap(), "{name} {wname}");
                assert_eq!(
                    sha(&bytes[s..s + n]),
                    want["sha256"].as_str().unwrap(),
                    "{name} {wname}: the bytes at its range"
                );
            }
        }
        // numpy: the array's data offset and bytes
        if e["format"] == "npy" {
            let entry = &i.tensors()[0];
            assert_eq!(entry.name, stem(&name));
            assert_eq!(entry.abs_start, e["data_offset"].as_u64(), "{name}");
            let (s, n) = (entry.start as usize, e["nbytes"].as_u64().unwrap() as usize);
            assert_eq!(
                sha(&bytes[s..s + n]),
                e["sha256"].as_str().unwrap(),
                "{name}"
            );
        }
        for a in e
            .get("arrays")
            .and_then(J::as_array)
            .into_iter()
            .flatten()
            .filter(|a| a["descr"] != "|O")
        {
            let member = a["member"].as_str().unwrap().trim_end_matches(".npy");
            let entry = i
                .tensors()
                .iter()
                .find(|x| x.name == member)
                .unwrap_or_else(|| panic!("{name}: no array {member}"));
            assert_eq!(
                entry.abs_start,
                a["data_offset"].as_u64(),
                "{name} {member}"
            );
        }
        // the inspection crosses to the page (postcard) unchanged
        let back = Inspection::from_bytes(&i.to_bytes().unwrap()).unwrap();
        let mut sent = t.clone();
        sent.inspection.members.clear(); // the zip directory stays with the reader
        assert_eq!(
            back.parsed.torch(),
            Some(&sent),
            "{name}: postcard round trip"
        );
        assert_eq!(back.format, i.format);
        // the report: data_start 0, the safety object, each tensor's layout
        let r = serde_json::to_value(FileReport::of(&i, &Default::default())).unwrap();
        assert_eq!(r["ok"], i.ok());
        assert_eq!(r["safety"]["verdict"], want, "{name}");
        let globals = r["safety"]["globals"].as_array().unwrap();
        assert_eq!(globals.len(), t.inspection.safety.globals.len());
        for g in globals {
            let mut keys: Vec<&str> = g.as_object().unwrap().keys().map(String::as_str).collect();
            keys.sort();
            assert_eq!(
                keys,
                ["count", "member", "module", "name", "offset", "opcode", "verdict", "why"],
                "{name}"
            );
            assert!(g["count"].as_u64().is_some_and(|n| n >= 1), "{name}: {g}");
            assert!(["allowed", "unknown", "dangerous"].contains(&g["verdict"].as_str().unwrap()));
        }
        if i.format != Format::Unknown {
            assert_eq!(r["data_start"], 0, "{name}");
        }
        for (rt, entry) in r["tensors"].as_array().unwrap().iter().zip(i.tensors()) {
            for k in ["stride", "storage", "storage_offset", "contiguous"] {
                assert!(
                    rt.get(k).is_some(),
                    "{name}: tensor {} lacks {k}",
                    entry.name
                );
            }
            if !rt["abs_start"].is_null() {
                assert_eq!(rt["start"], rt["abs_start"]);
            }
        }
    }
}

#[test]
fn reference_globals_reach_the_report_with_absolute_offsets() {
    // pickletools' offsets and names, as the report lists them (GLOBAL / STACK_GLOBAL / INST)
    let exp = json(&dir().join("expected.json"));
    for name in [
        "mal_torch.pt",
        "obf_in_zip.pt",
        "mal_os_system.pkl",
        "plain_evil.bin",
        "state_dict.pt",
    ] {
        let (i, _, _) = inspect(name);
        let r = serde_json::to_value(FileReport::of(&i, &Default::default())).unwrap();
        let ours: Vec<(J, J, J)> = r["safety"]["globals"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| g["opcode"] != "REDUCE")
            .map(|g| {
                (
                    g["opcode"].clone(),
                    g["offset"].clone(),
                    g["member"].clone(),
                )
            })
            .collect();
        let want: Vec<(J, J, J)> = exp[name]["globals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                (
                    g["opcode"].clone(),
                    g["offset"].clone(),
                    g.get("member").cloned().unwrap_or(J::Null),
                )
            })
            .collect();
        assert_eq!(ours, want, "{name}");
        if exp[name].get("expect_verdict").and_then(J::as_str) == Some("dangerous") {
            assert!(
                i.errors()
                    .any(|f| f.code == Code::DangerousGlobal && f.offset.is_some()),
                "{name}"
            );
            assert!(
                !Report::of(std::slice::from_ref(&i)).ok(),
                "{name}: a dangerous file makes the report not ok"
            );
        }
    }
}

#[test]
fn a_torch_zip_is_inventoried_from_the_pickle_plus_at_most_128_kib_and_no_tensor_byte() {
    let exp = json(&dir().join("expected.json"));
    let mut names: Vec<String> = fixture_names()
        .into_iter()
        .filter(|n| exp[n]["format"] == "pytorch-zip" && exp[n].get("tensors").is_some())
        .collect();
    names.push("many_storages.pt".into());
    for name in names {
        let (i, src, _) = inspect(&name);
        let t = i.parsed.torch().unwrap();
        let (_, pickle_len) = t.inspection.pickle.unwrap();
        let read = src.bytes();
        assert!(
            read <= pickle_len + 128 * 1024,
            "{name}: read {read} bytes for a {pickle_len}-byte pickle"
        );
        // no read touches any tensor's bytes
        for (start, len) in src.reads.borrow().iter() {
            for e in i.tensors() {
                let (s, n) = (e.abs_start.unwrap(), e.bytes.unwrap());
                assert!(
                    start + len <= s || *start >= s + n || n == 0,
                    "{name}: the read {start}+{len} touches tensor {}",
                    e.name
                );
            }
        }
        eprintln!(
            "{name}: {} bytes, {pickle_len}-byte pickle, {} reads, {} bytes read",
            i.size,
            src.reads.borrow().len(),
            read
        );
    }
}

#[test]
fn a_thousand_storages_are_placed_in_a_few_read_rounds() {
    let want = json(&dir().join("many_storages.json"));
    let bytes = std::fs::read(dir().join("many_storages.pt")).unwrap();
    let src = MemorySource::new(bytes.clone());
    let head = &bytes[..8];
    let (r, cost) = pollster::block_on(source::ranges::read_ranges(&src, head));
    let i = r.unwrap();
    assert!(cost.rounds <= 8, "{cost:?}");
    let tensors = want["tensors"].as_array().unwrap();
    assert_eq!(i.tensors.len(), tensors.len());
    for (t, w) in i.tensors.iter().zip(tensors) {
        assert_eq!(t.name, w["name"].as_str().unwrap());
        let s = t.start.unwrap() as usize;
        assert_eq!(
            sha(&bytes[s..s + 4]),
            w["sha256"].as_str().unwrap(),
            "{}",
            t.name
        );
        assert_eq!(
            f32::from_le_bytes(bytes[s..s + 4].try_into().unwrap()) as f64,
            w["value"].as_f64().unwrap()
        );
    }
}

#[test]
fn values_of_contiguous_and_strided_tensors_have_torch_bytes() {
    let exp = json(&dir().join("expected.json"));
    for name in [
        "state_dict.pt",
        "state_dict_legacy.pt",
        "shared_views.pt",
        "shared_views_legacy.pt",
        "v3_dtypes.pt",
    ] {
        let (i, _, bytes) = inspect(name);
        let t = i.parsed.torch().unwrap();
        let src = MemorySource::new(bytes);
        for want in exp[name]["tensors"].as_array().unwrap() {
            let j = i
                .tensors()
                .iter()
                .position(|e| e.name == want["name"].as_str().unwrap())
                .unwrap();
            let (entry, layout) = (&i.tensors()[j], t.layout(j).unwrap());
            let stats = if layout.contiguous {
                pollster::block_on(scan_tensor(&src, entry, 0, true, |_, _| true))
            } else {
                let view = StridedView {
                    stride: layout.stride.clone(),
                    element_size: layout.element_size,
                };
                pollster::block_on(scan_strided(&src, entry, &view, true, |_, _| true)).map(
                    |(s, n)| {
                        assert!(n >= want["nbytes"].as_u64().unwrap() || want["nbytes"] == 0);
                        assert!(s.note.as_deref().unwrap().contains("strided view"));
                        s
                    },
                )
            };
            match stats {
                // torch's sha256 is of `tensor.contiguous()`'s bytes: the gathered view
                Ok(s) => assert_eq!(
                    s.sha256,
                    want["sha256"].as_str().unwrap(),
                    "{name} {}",
                    entry.name
                ),
                Err(e) => assert_eq!(
                    e.finding().map(|f| f.code),
                    Some(Code::ValuesNotDecoded),
                    "{name} {}: {e}",
                    entry.name
                ),
            }
        }
    }
}

#[test]
fn a_sharded_pytorch_checkpoint_merges_like_safetensors_shards() {
    let d = dir().join("sharded_llama");
    let want = json(&d.join("expected.json"));
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap() != "expected.json")
        .collect();
    paths.sort();
    let inputs: Vec<SetInput<FileSource>> = paths
        .iter()
        .map(|p| SetInput {
            name: p.file_name().unwrap().to_string_lossy().into_owned(),
            src: FileSource::open(p).unwrap(),
            explain: false,
        })
        .collect();
    let set = pollster::block_on(open_set(&inputs, SetOptions::default(), |_, _| {}));
    let m = set.checkpoint.as_ref().expect("a model");
    assert_eq!(m.format, "pytorch-checkpoint");
    assert!(m.ok, "{:#?}", m.errors);
    assert_eq!(m.safety, Some(Verdict::Safe));
    assert_eq!(
        m.index.as_ref().unwrap().total_size,
        want["total_size"].as_u64()
    );
    assert!(m.index.as_ref().unwrap().total_size_checked);
    assert!(m.warnings.is_empty(), "{:#?}", m.warnings);
    assert!(m.reconciliation.balanced);
    for (shard, tensors) in want["shards"].as_object().unwrap() {
        let ours: Vec<(&str, String)> = m
            .tensors
            .iter()
            .filter(|t| t.file == *shard)
            .map(|t| (t.tensor.name.as_str(), t.tensor.dtype.to_string()))
            .collect();
        let theirs: Vec<(&str, String)> = tensors
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t.as_object().unwrap()["name"].as_str().unwrap(),
                    t["dtype"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(ours, theirs, "{shard}");
    }
    for (tensor, shard) in want["index"].as_object().unwrap() {
        assert!(
            m.tensors
                .iter()
                .any(|t| t.tensor.name == *tensor && t.file == shard.as_str().unwrap()),
            "{tensor}"
        );
    }
    assert_eq!(
        m.architecture
            .as_ref()
            .and_then(|a| a.model_type.as_deref()),
        Some("llama")
    );
    assert_eq!(m.inventory.as_ref().map(|c| c.missing), Some(0));

    // one shard replaced by a dangerous file: the model is marked, and not ok
    let mal = std::fs::read(dir().join("mal_torch.pt")).unwrap();
    let mut mem: Vec<SetInput<MemorySource>> = paths
        .iter()
        .map(|p| SetInput {
            name: p.file_name().unwrap().to_string_lossy().into_owned(),
            src: MemorySource::new(std::fs::read(p).unwrap()),
            explain: false,
        })
        .collect();
    let second = mem
        .iter_mut()
        .find(|i| i.name == "pytorch_model-00002-of-00002.bin")
        .unwrap();
    second.src = MemorySource::new(mal);
    let set = pollster::block_on(open_set(&mem, SetOptions::default(), |_, _| {}));
    let m = set.checkpoint.as_ref().unwrap();
    assert_eq!(m.safety, Some(Verdict::Dangerous));
    let files: Vec<Inspection> = set.inspections().cloned().collect();
    assert!(!m.ok_with(&files));
    assert!(
        m.errors.iter().any(|f| f.code == Code::TensorNotInShard),
        "the index's tensors are not in the replaced shard"
    );
}

#[test]
fn a_folder_with_both_families_merges_the_safetensors_and_still_reads_the_bin() {
    let d = dir().join("tiny_llama");
    let names = [
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "pytorch_model.bin",
    ];
    let inputs: Vec<SetInput<FileSource>> = names
        .iter()
        .map(|n| SetInput {
            name: n.to_string(),
            src: FileSource::open(&d.join(n)).unwrap(),
            explain: false,
        })
        .collect();
    let set = pollster::block_on(open_set(&inputs, SetOptions::default(), |_, _| {}));
    let m = set.checkpoint.as_ref().unwrap();
    assert_eq!(m.format, "safetensors-checkpoint");
    assert_eq!(
        m.shards.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        ["model.safetensors"]
    );
    assert!(
        m.ok && m.errors.is_empty() && m.warnings.is_empty(),
        "{:#?}",
        m.findings().collect::<Vec<_>>()
    );
    let bin = set
        .inspections()
        .find(|i| i.name == "pytorch_model.bin")
        .unwrap();
    assert_eq!(bin.format, Format::PytorchZip);
    assert_eq!(bin.totals.tensors, m.totals.tensors);
}

// ---------------------------------------------------------------- the CLI

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tensorpeek"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tensorpeek-torch-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn cli_inspect_puts_the_verdict_first_and_exits_1_for_dangerous_and_error() {
    for (name, verdict, code) in [
        ("state_dict.pt", "SAFE", 0),
        ("obf_ext.pkl", "SUSPICIOUS", 0),
        ("mal_torch_legacy.pt", "DANGEROUS", 1),
        ("obf_nested_loads.pkl", "DANGEROUS", 1),
        ("truncated_zip.pt", "ERROR", 1),
        ("random.bin", "ERROR", 1),
    ] {
        let out = bin().arg("inspect").arg(dir().join(name)).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{name}");
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // the title, then at once the verdict block
        assert!(
            lines[1].trim_start().chars().all(|c| c == '-' || c == '!'),
            "{name}:\n{text}"
        );
        assert_eq!(
            lines[2].trim(),
            format!(
                "{} SAFETY: {verdict}",
                if verdict == "SAFE" { '-' } else { '!' }
            ),
            "{name}:\n{text}"
        );
        let out = bin()
            .args(["inspect", "--json"])
            .arg(dir().join(name))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{name}");
        let v: J = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["files"][0]["safety"]["verdict"], verdict.to_lowercase());
    }
    // a dangerous import is listed with its opcode, offset and member
    let out = bin()
        .arg("inspect")
        .arg(dir().join("obf_in_zip.pt"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.lines().any(|l| l.contains("DANGEROUS")
            && l.contains("os.system")
            && l.contains("STACK_GLOBAL at byte")
            && l.contains("data.pkl")),
        "{text}"
    );
}

#[test]
fn cli_stats_reads_a_tensor_and_a_strided_view() {
    let exp = json(&dir().join("expected.json"));
    for (file, tensor) in [
        ("state_dict.pt", "a"),
        ("shared_views.pt", "wt"),
        ("shared_views_legacy.pt", "wt"),
        ("tiny_llama/pytorch_model.bin", "lm_head.weight"),
    ] {
        let out = bin()
            .args(["stats", "--json", "--tensor", tensor])
            .arg(dir().join(file))
            .output()
            .unwrap();
        let v: J = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{file}: {e} {}", String::from_utf8_lossy(&out.stderr)));
        let t = v["files"][0]["tensors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == tensor)
            .unwrap();
        let want = exp[file]["tensors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == tensor)
            .unwrap();
        assert_eq!(t["stats"]["sha256"], want["sha256"], "{file} {tensor}");
        assert_eq!(t["stats"]["count"], t["params"]);
        assert_eq!(t["contiguous"], want["contiguous"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{file}: only warnings (NonContiguous)"
        );
    }
}

#[test]
fn cli_convert_writes_transformers_safetensors_byte_for_byte() {
    let twin = std::fs::read(dir().join("tiny_llama/model.safetensors")).unwrap();
    // one file
    let out = tmp("tiny.safetensors");
    let r = bin()
        .arg("convert")
        .arg(dir().join("tiny_llama/pytorch_model.bin"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(
        std::fs::read(&out).unwrap() == twin,
        "pytorch_model.bin → model.safetensors"
    );
    // two shards into one file
    let want = json(&dir().join("sharded_llama/expected.json"));
    assert_eq!(sha(&twin), want["twin"]["sha256"].as_str().unwrap());
    let out = tmp("sharded.safetensors");
    let shards = want["shards"]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| dir().join("sharded_llama").join(k));
    let r = bin()
        .arg("convert")
        .args(shards)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(
        std::fs::read(&out).unwrap() == twin,
        "the shards → the single-file twin"
    );
}

#[test]
fn cli_convert_writes_what_safetensors_writes_for_every_safe_fixture() {
    let exp = json(&dir().join("expected.json"));
    for name in fixture_names() {
        let Some(st) = exp[&name].get("safetensors") else {
            continue;
        };
        let out = tmp(&format!("{}.safetensors", stem(&name)));
        let r = bin()
            .arg("convert")
            .arg(dir().join(&name))
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        let bytes = std::fs::read(&out)
            .unwrap_or_else(|e| panic!("{name}: {e} {}", String::from_utf8_lossy(&r.stderr)));
        // `len`: the whole file PyPI safetensors writes; `header`: its JSON header
        let n = st["header"].as_str().unwrap().len();
        assert_eq!(
            bytes.len() as u64,
            st["len"].as_u64().unwrap(),
            "{name}: {}",
            String::from_utf8_lossy(&r.stdout)
        );
        assert_eq!(
            &bytes[8..8 + n],
            st["header"].as_str().unwrap().as_bytes(),
            "{name}: the header PyPI safetensors writes"
        );
        assert_eq!(u64::from_le_bytes(bytes[..8].try_into().unwrap()), n as u64);
        // each tensor's bytes are torch's
        let header: J = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
        let written = st["tensors"].as_array().unwrap();
        for t in exp[&name]["tensors"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| written.contains(&t["name"]))
        {
            let offs = &header[t["name"].as_str().unwrap()]["data_offsets"];
            let (s, e) = (
                8 + n + offs[0].as_u64().unwrap() as usize,
                8 + n + offs[1].as_u64().unwrap() as usize,
            );
            assert_eq!(
                sha(&bytes[s..e]),
                t["sha256"].as_str().unwrap(),
                "{name} {}",
                t["name"]
            );
        }
        // a tensor left out (a view, a dtype safetensors lacks) is said, and the exit
        // status says the output lacks it
        let left_out = exp[&name]["tensors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| !written.contains(&t["name"]));
        assert_eq!(r.status.code(), Some(if left_out { 1 } else { 0 }), "{name}");
    }
}

#[test]
fn cli_convert_refuses_dangerous_and_broken_files_and_writes_nothing() {
    for name in [
        "mal_torch.pt",
        "mal_torch_legacy.pt",
        "obf_in_zip.pt",
        "truncated_zip.pt",
        "missing_storage.pt",
        "plain_evil.bin",
    ] {
        let out = tmp(&format!("refused-{}.safetensors", stem(name)));
        let r = bin()
            .arg("convert")
            .arg(dir().join(name))
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(r.status.code(), Some(1), "{name}");
        assert!(!out.exists(), "{name}: nothing written");
        assert!(!out.with_extension("safetensors.part").exists(), "{name}");
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(err.contains("not converted"), "{name}: {err}");
    }
    // not a pickle-based file at all: refused too
    let r = bin()
        .arg("convert")
        .arg(dir().join("tiny_llama/model.safetensors"))
        .arg("-o")
        .arg(tmp("st.safetensors"))
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(1));
}

/// Issue 24: a complex128 tensor is C128 in the CLI's report, and the converter leaves it
/// out, saying why (safetensors has no complex128), writes the rest and exits 1.
#[test]
fn cli_names_complex128_c128_and_convert_leaves_it_out() {
    for name in ["complex128.pt", "complex128_legacy.pt"] {
        let out = bin().args(["inspect", "--json"]).arg(dir().join(name)).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{name}: a warning");
        let v: J = serde_json::from_slice(&out.stdout).unwrap();
        let z = v["files"][0]["tensors"].as_array().unwrap().iter().find(|t| t["name"] == "z").unwrap().clone();
        assert_eq!(z["dtype"], "C128", "{name}: {z}");
        let out = tmp(&format!("{}.safetensors", stem(name)));
        let r = bin().arg("convert").arg(dir().join(name)).arg("-o").arg(&out).output().unwrap();
        let said = format!("{}{}", String::from_utf8_lossy(&r.stdout), String::from_utf8_lossy(&r.stderr));
        assert_eq!(r.status.code(), Some(1), "{name}: the output lacks z\n{said}");
        assert!(said.contains("C128") && said.contains("safetensors has no complex128"), "{name}:\n{said}");
        let bytes = std::fs::read(&out).unwrap();
        let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let header: J = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
        assert!(header.get("z").is_none() && header["z64"]["dtype"] == "C64", "{name}: {header}");
    }
}

/// Issue 24: a tensor under two keys (the second a memo GET of the first) is in the CLI's
/// table and the JSON report under both keys, at the same bytes.
#[test]
fn cli_lists_a_tensor_under_both_keys() {
    for name in ["same_tensor_twice.pt", "same_tensor_twice_legacy.pt"] {
        let out = bin().arg("inspect").arg(dir().join(name)).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{name}");
        let text = String::from_utf8(out.stdout).unwrap();
        let row = |key: &str| text.lines().find(|l| l.split_whitespace().next() == Some(key)).unwrap_or_else(|| panic!("{name}: no row {key}:\n{text}")).to_string();
        let (a, again) = (row("a"), row("a_again"));
        assert!(a.contains("F32") && again.contains("F32"), "{name}:\n{text}");
        let out = bin().args(["inspect", "--json"]).arg(dir().join(name)).output().unwrap();
        let v: J = serde_json::from_slice(&out.stdout).unwrap();
        let ts = v["files"][0]["tensors"].as_array().unwrap();
        let names: Vec<&str> = ts.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["a", "a_again", "b"], "{name}");
        for k in ["dtype", "shape", "start", "end", "storage", "storage_offset", "stride"] {
            assert_eq!(ts[0][k], ts[1][k], "{name}: {k}");
        }
        assert_eq!(ts[0]["shares_storage_with"], serde_json::json!(["a_again"]), "{name}");
        assert_eq!(ts[1]["shares_storage_with"], serde_json::json!(["a"]), "{name}");
    }
}
