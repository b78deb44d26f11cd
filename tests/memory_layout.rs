//! The compute-buffer simulation against ggml-alloc itself: for the runs in
//! tests/fixtures/memory/galloc_layouts.json (recorded with llama.cpp's ggml-base built with
//! GGML_ALLOCATOR_DEBUG, tests/fixtures/memory/README.md), every compute buffer's size and the
//! tensors live at its peak — their names and their offsets in the buffer — must be the ones
//! ggml-alloc printed.

use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use tensorpeek::formats::gguf;
use tensorpeek::formats::Step;
use tensorpeek::model::memory::{self, flags::Flags};

#[path = "support/generated.rs"]
mod generated;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The GGUF header of a (sparse, multi-GB) file, read a prefix at a time.
fn header(path: &Path) -> gguf::GgufFile {
    let len = std::fs::metadata(path).unwrap().len();
    let mut want = 1u64 << 20;
    loop {
        let mut buf = Vec::new();
        std::fs::File::open(path).unwrap().take(want.min(len)).read_to_end(&mut buf).unwrap();
        match gguf::parse(&buf, len) {
            Step::Done(g) => return g,
            Step::Need(n) => want = n.max(want * 2),
        }
    }
}

/// llama.cpp's arguments of the recorded runs as `tensorpeek fit`'s flags (`--rpc` with one or
/// two servers: as many RPC devices).
fn flags(args: &[String]) -> Flags {
    let mut f = Flags::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-c" => f.ctx_size = it.next().unwrap().parse().unwrap(),
            "-ngl" => f.n_gpu_layers = Some(it.next().unwrap().parse().unwrap()),
            "-ot" => f.override_tensor.push(it.next().unwrap().clone()),
            "-cmoe" => f.cpu_moe = true,
            "-ctk" => f.cache_type_k = it.next().unwrap().clone(),
            "-ctv" => f.cache_type_v = it.next().unwrap().clone(),
            "-fa" => f.flash_attn = it.next().unwrap().clone(),
            "--rpc" => {
                let n = it.next().unwrap().split(',').count();
                f.backend = "rpc".to_string();
                f.gpu = vec!["20GiB".to_string(); n];
            }
            other => panic!("an argument the test does not map: {other}"),
        }
    }
    f
}

#[test]
fn peak_layouts_match_ggml_alloc() {
    let text = std::fs::read_to_string(root().join("tests/fixtures/memory/galloc_layouts.json")).unwrap();
    let rec: Value = serde_json::from_str(&text).unwrap();
    // Each generated file's header, read and parsed once (five runs share one).
    let mut made: BTreeMap<String, gguf::GgufFile> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut compared = 0;
    for run in rec["runs"].as_array().unwrap() {
        let fixture = run["fixture"].as_str().unwrap().to_string();
        let gen: Vec<String> = run["generator"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
        let g = made.entry(fixture.clone()).or_insert_with(|| header(&generated::generated(&gen[0], &gen[1..], &fixture)));
        let args: Vec<String> = run["args"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
        let label = format!("{fixture} {}", args.join(" "));
        let (desc, _) = memory::from_gguf_files(&[&*g]).unwrap();
        let s = flags(&args).settings().unwrap();
        let Some(ours) = memory::compute_layouts(&desc, &s) else {
            failures.push(format!("{label}: not simulated"));
            continue;
        };
        let n_dev = s.devices.len();
        for a in run["allocators"].as_array().unwrap() {
            let device = a["device"].as_str().unwrap();
            // RPC<i> is device i; the host is the last backend.
            let b = device.strip_prefix("RPC").map_or(n_dev, |i| i.parse::<usize>().unwrap());
            let (size, live) = &ours[b];
            let mib = *size as f64 / 1048576.0;
            if (mib - a["mib"].as_f64().unwrap()).abs() > 0.00006 {
                failures.push(format!("{label}: {device} {mib:.4} MiB, ggml-alloc {}", a["mib"]));
            }
            // Our copies are named by backend index (`DEV<i>#…`), llama.cpp's by device.
            let mut ours: Vec<(String, u64, u64)> = live.iter().map(|(n, o, e)| (n.replacen("DEV", "RPC", 1), *o, *e)).collect();
            let mut theirs: Vec<(String, u64, u64)> =
                a["peak"].as_array().unwrap().iter().map(|t| (t[0].as_str().unwrap().to_string(), t[1].as_u64().unwrap(), t[2].as_u64().unwrap())).collect();
            ours.sort_by_key(|t| (t.1, t.0.clone()));
            theirs.sort_by_key(|t| (t.1, t.0.clone()));
            if ours != theirs {
                failures.push(format!("{label}: {device} peak layout\n  ours   {ours:?}\n  theirs {theirs:?}"));
            }
            compared += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(compared >= 14, "only {compared} buffers compared");
}

/// The weight pass adds up groups of alike tensors when no `-ot` is given and matches every
/// tensor's name when one is: on every committed GGUF fixture, for placements over one and two
/// devices of either backend, mmap on and off and `-ncmoe`, the two give the same buffers (an
/// `-ot` whose pattern finds no tensor sends the pass down the per-tensor path).
#[test]
fn grouped_weight_pass_equals_the_per_tensor_one() {
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in ["tests/fixtures/families/gguf", "tests/fixtures/memory/extra", "tests/fixtures/audit/gguf"] {
        for e in std::fs::read_dir(root().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "gguf") {
                files.push(p);
            }
        }
    }
    files.push(root().join("tests/fixtures/stories260K.gguf"));
    files.sort();
    let mut compared = 0;
    let mut distinct = std::collections::BTreeSet::new();
    for path in &files {
        let g = header(path);
        let Some((desc, tensors)) = memory::from_gguf_files(&[&g]) else { continue };
        let n = desc.n_layer_all() as i64 + 1;
        for backend in ["cuda", "rpc"] {
            for gpus in [0usize, 1, 2] {
                for ngl in [None, Some(0), Some(n / 2), Some(n - 1)] {
                    for no_mmap in [false, true] {
                        for n_cpu_moe in [0, 1] {
                            let mut f = Flags { backend: backend.to_string(), n_gpu_layers: ngl, no_mmap, n_cpu_moe, ..Flags::default() };
                            f.gpu = vec!["20GiB".to_string(); gpus];
                            // No -ot; patterns the block index narrows (`blk\.N\.`) and
                            // ones it must not (a quantifier after the dot, an alternation
                            // at the top, no block), to the host and to the second device.
                            for ot in [
                                "",
                                r"blk\.0\.=CPU",
                                r"blk\.1\.ffn_(up|down|gate|gate_up)_(ch|)exps=CPU,blk\.0\.ffn_down=GPU1",
                                r"blk\.1\.*attn=CPU",
                                r"blk\.2\.|output=CPU",
                                r"attn_(q|k)=CPU,blk\.1\.=GPU1",
                            ] {
                                let ot = ot.replace("GPU1", if backend == "cuda" { "CUDA1" } else { "RPC1" });
                                f.override_tensor = ot.split(',').filter(|o| !o.is_empty()).map(str::to_string).collect();
                                let s = f.settings().unwrap();
                                let grouped = memory::weight_buffers(&desc, &tensors, &s);
                                let each = memory::weight_buffers_each(&desc, &tensors, &s);
                                assert_eq!(grouped, each, "{} {backend} {gpus} GPUs -ngl {ngl:?} no_mmap {no_mmap} -ncmoe {n_cpu_moe} -ot {ot}", path.display());
                                distinct.insert(format!("{grouped:?}"));
                                compared += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(compared >= 40 * 96 * 6, "only {compared} placements compared over {} files", files.len());
    assert!(distinct.len() > 500, "only {} distinct weight layouts", distinct.len());
}
