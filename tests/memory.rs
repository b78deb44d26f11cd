//! `tensorpeek fit` against llama.cpp's own figures: every run recorded by
//! tests/fixtures/memory/record.py (llama.cpp's `llama-completion -v` on the committed
//! fixtures and on sparse files of real shapes, CPU backend, a ggml-rpc-server as the second
//! device) is replayed through the CLI, and every weight and cache buffer must equal what
//! llama.cpp printed (to the 0.01 MiB it prints), every compute buffer be within 3 % or
//! 1 MiB, the cell counts match, and every run llama.cpp refused be refused.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const MIB: f64 = 1024.0 * 1024.0;

/// Where ggml-alloc's best-fit placement leaves a gap below the logits, llama.cpp's GPU
/// compute buffer is larger than the sum of what is live: for the Llama-3.2-3B shape with a
/// KQ mask of 4–5 MiB (a 4,096–5,120-token cache) the device's buffer is 278.51 MiB where
/// 256.50 MiB are live at the peak (2,048, 3,840, 6,144 … 131,072 tokens all give 256.50).
/// tensorpeek projects what is live; these runs are held to 10 %, and the fits they decide to
/// one step (256 tokens, or one layer). The other way round, with the tiny gpt-oss's first
/// layer's experts on the host (`-ncmoe 1`), llama.cpp's device buffer holds only the masks
/// and a row (4.88 MiB) where the planner adds layer 1's working set (1.0 MiB): held to 25 %.
/// The named runs are the only exceptions.
const PLACEMENT_GAP: &[(&str, &str, f64)] = &[
    ("llama32-3b-f16-sparse", "-c 4096 -ngl 10", 0.10),
    ("llama32-3b-f16-sparse", "-c 4096 -ngl 29", 0.10),
    ("gptoss-BF16", "-c 4096 -ngl 99 -ncmoe 1", 0.25),
    ("gptoss-Q8_0", "-c 4096 -ngl 99 -ncmoe 1", 0.25),
];
const FIT_PLACEMENT_GAP: &[(&str, &str)] = &[("llama32-3b-f16-sparse", "-fitt 16000"), ("llama32-3b-f16-sparse", "-fitt 22500")];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn recorded() -> Value {
    let text = std::fs::read_to_string(root().join("tests/fixtures/memory/recorded.json")).expect("recorded.json");
    serde_json::from_str(&text).expect("recorded.json is JSON")
}

/// The file a run was recorded on: a committed fixture, or a sparse file written again by
/// its generator into `dir`.
fn fixture(run: &Value, dir: &Path, made: &mut BTreeMap<String, PathBuf>) -> PathBuf {
    if let Some(p) = run["path"].as_str() {
        return root().join(p);
    }
    let gen: Vec<String> = run["generator"].as_array().expect("generator").iter().map(|v| v.as_str().unwrap().to_string()).collect();
    let name = run["fixture"].as_str().unwrap().to_string();
    made.entry(name.clone())
        .or_insert_with(|| {
            let out = dir.join(format!("{name}.gguf"));
            let st = Command::new("python3").arg(root().join(&gen[0])).arg(&out).args(&gen[1..]).status().expect("python3");
            assert!(st.success(), "{} failed", gen[0]);
            out
        })
        .clone()
}

/// The buffers one side lists: (kind, buffer type without the RPC address) → sizes in MiB.
fn llama_buffers(run: &Value) -> BTreeMap<(String, String), Vec<f64>> {
    let mut out: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    let has_compute = run.get("compute").is_some();
    for (kind, key) in [("model", "model"), ("context", "kv_buffer"), ("context", "rs_buffer"), ("compute", "compute"), ("compute", "compute_reserve")] {
        if key == "compute_reserve" && has_compute {
            continue;
        }
        for b in run.get(key).and_then(Value::as_array).into_iter().flatten() {
            let name = b[0].as_str().unwrap().split('[').next().unwrap().to_string();
            out.entry((kind.to_string(), name)).or_default().push(b[1].as_f64().unwrap());
        }
    }
    out
}

fn our_buffers(memory: &Value) -> BTreeMap<(String, String), Vec<f64>> {
    let mut out: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for b in memory["buffers"].as_array().unwrap() {
        let name = b["buft"].as_str().unwrap().to_string();
        out.entry((b["kind"].as_str().unwrap().to_string(), name)).or_default().push(b["bytes"].as_u64().unwrap() as f64 / MIB);
    }
    out
}

fn two_places(v: &[f64]) -> Vec<String> {
    let mut s: Vec<String> = v.iter().map(|x| format!("{x:.2}")).collect();
    s.sort();
    s
}

#[test]
fn fit_matches_what_llama_cpp_allocated() {
    let rec = recorded();
    let runs = rec["runs"].as_array().expect("runs");
    assert!(runs.len() >= 100, "recorded.json has {} runs", runs.len());
    let dir = std::env::temp_dir().join(format!("tensorpeek-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut made = BTreeMap::new();
    let mut failures = Vec::new();
    let mut compared = 0;
    let mut refusals = 0;
    for run in runs {
        let path = fixture(run, &dir, &mut made);
        let mut args: Vec<String> = run["args"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
        if let Some(i) = args.iter().position(|a| a == "--rpc") {
            args.drain(i..i + 2);
            args.extend(["--backend", "rpc", "--gpu", "20GiB"].map(String::from));
        }
        let out = Command::new(env!("CARGO_BIN_EXE_tensorpeek")).arg("fit").arg(&path).args(&args).arg("--json").output().unwrap();
        let label = format!("{} {}", run["fixture"].as_str().unwrap(), args.join(" "));
        let Ok(report) = serde_json::from_slice::<Value>(&out.stdout) else {
            failures.push(format!("{label}: no report ({})", String::from_utf8_lossy(&out.stderr)));
            continue;
        };
        let memory = &report["memory"];
        let refused = memory["refused"].as_str();
        if run["exit"].as_i64() != Some(0) {
            // llama.cpp's own reason is the first error line it printed.
            let reason = run["errors"].as_array().and_then(|e| e.first()).and_then(Value::as_str).unwrap_or("");
            match refused {
                None => failures.push(format!("{label}: llama.cpp refused ({reason}), tensorpeek did not")),
                Some(r) if !reason.contains(r) => failures.push(format!("{label}: refused with {r:?}, llama.cpp said {reason:?}")),
                Some(_) => refusals += 1,
            }
            continue;
        }
        if let Some(r) = refused {
            failures.push(format!("{label}: llama.cpp ran, tensorpeek refused: {r}"));
            continue;
        }
        let (theirs, ours) = (llama_buffers(run), our_buffers(memory));
        if theirs.is_empty() {
            failures.push(format!("{label}: the recorded run has no buffers"));
            continue;
        }
        for key in theirs.keys().chain(ours.keys()).collect::<std::collections::BTreeSet<_>>() {
            let t = theirs.get(key).cloned().unwrap_or_default();
            let o = ours.get(key).cloned().unwrap_or_default();
            if key.0 == "compute" {
                let (ts, os): (f64, f64) = (t.iter().sum(), o.iter().sum());
                let gap = PLACEMENT_GAP.iter().find(|(f, a, _)| *f == run["fixture"].as_str().unwrap() && args.join(" ").starts_with(a));
                let tolerance = match gap {
                    Some((_, _, t)) => t * ts,
                    None => (0.03 * ts).max(1.0),
                };
                if (ts - os).abs() > tolerance {
                    failures.push(format!("{label}: compute {}: {os:.4} MiB, llama.cpp {ts:.4} MiB", key.1));
                }
            } else if two_places(&t) != two_places(&o) {
                failures.push(format!("{label}: {} {}: {:?} MiB, llama.cpp {:?} MiB", key.0, key.1, two_places(&o), two_places(&t)));
            }
        }
        // The cache's cells and layers, as `llama_kv_cache: size = …` printed them.
        if let Some(sizes) = run.get("kv_size").and_then(Value::as_array) {
            let kv = &memory["kv"];
            let cells: Vec<u64> = sizes.iter().map(|s| s["cells"].as_u64().unwrap()).collect();
            let mut ours_cells = vec![kv["cells"].as_u64().unwrap()];
            if let Some(c) = kv["swa_cells"].as_u64() {
                ours_cells.push(c);
            }
            let mut a = cells.clone();
            a.sort();
            ours_cells.sort();
            ours_cells.dedup();
            a.dedup();
            if a != ours_cells {
                failures.push(format!("{label}: cells {ours_cells:?}, llama.cpp {a:?}"));
            }
            let k: f64 = sizes.iter().map(|s| s["k_mib"].as_f64().unwrap()).sum();
            let v: f64 = sizes.iter().map(|s| s["v_mib"].as_f64().unwrap()).sum();
            let (ok, ov) = (kv["k_bytes"].as_u64().unwrap() as f64 / MIB, kv["v_bytes"].as_u64().unwrap() as f64 / MIB);
            if (k - ok).abs() > 0.011 * sizes.len() as f64 || (v - ov).abs() > 0.011 * sizes.len() as f64 {
                failures.push(format!("{label}: K/V {ok:.2}/{ov:.2} MiB, llama.cpp {k:.2}/{v:.2}"));
            }
        }
        // Each block's device and the output layer's, as `load_tensors: layer N assigned to device …`.
        if let Some(assigned) = run.get("layer_device").and_then(Value::as_object) {
            let ours = memory["layer_devices"].as_array().unwrap();
            for (il, dev) in assigned {
                let want = if dev.as_str() == Some("CPU") { "Host" } else { "GPU0" };
                let got = il.parse::<usize>().ok().and_then(|i| ours.get(i)).and_then(Value::as_str);
                if got != Some(want) {
                    failures.push(format!("{label}: layer {il} on {got:?}, llama.cpp {dev}"));
                }
            }
        }
        compared += 1;
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{} of {} runs differ from llama.cpp:\n{}", failures.len(), runs.len(), failures.join("\n"));
    assert!(compared >= 200, "only {compared} runs compared");
    assert!(refusals >= 5, "only {refusals} refusals compared");
}

/// `tensorpeek fit --fit` prints the arguments llama-fit-params printed, for a device of the
/// free memory it saw and the margin it was given.
#[test]
fn fitted_arguments_match_llama_fit_params() {
    let rec = recorded();
    let fits = rec["fits"].as_array().expect("fits");
    assert!(fits.len() >= 6);
    let dir = std::env::temp_dir().join(format!("tensorpeek-fit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut made = BTreeMap::new();
    let mut failures = Vec::new();
    for f in fits {
        let path = fixture(f, &dir, &mut made);
        let args: Vec<String> = f["args"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
        let free = f["free_mib"].as_u64().expect("free_mib");
        let out = Command::new(env!("CARGO_BIN_EXE_tensorpeek"))
            .arg("fit")
            .arg(&path)
            .args(&args)
            .args(["--backend", "rpc", "--gpu", &format!("{free}MiB"), "--fit", "--json"])
            .output()
            .unwrap();
        let label = format!("{} {}", f["fixture"].as_str().unwrap(), args.join(" "));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let ours = report["memory"]["fitted_args"]["args"].as_str();
        let gap = FIT_PLACEMENT_GAP.iter().any(|(fx, a)| *fx == f["fixture"].as_str().unwrap() && args.join(" ") == *a);
        match (f["fitted"].as_str(), ours) {
            (Some(want), Some(got)) if want == got => {}
            (Some(want), Some(got)) if gap && one_step(want, got) => {}
            (None, None) => {}
            (want, got) => failures.push(format!("{label}: tensorpeek {got:?}, llama-fit-params {want:?}")),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `-c A -ngl B` and `-c C -ngl D` one step apart: the same layers and contexts 256 apart, or
/// the same context and one layer apart.
fn one_step(a: &str, b: &str) -> bool {
    let nums = |s: &str| -> Vec<i64> { s.split_whitespace().filter_map(|w| w.parse().ok()).collect() };
    match (nums(a).as_slice(), nums(b).as_slice()) {
        ([c1, n1], [c2, n2]) => (n1 == n2 && (c1 - c2).abs() == 256) || (c1 == c2 && (n1 - n2).abs() == 1),
        _ => false,
    }
}
