//! The audit against the fixture oracle: every case of tests/fixtures/audit/expected/*.json
//! (written by tests/fixtures/audit/audit_ref.py from the safetensors package's and
//! gguf-py's readers, over files made by transformers and llama.cpp's real converter) is
//! audited by the CLI (`tensorpeek audit … --json`), and every field the oracle gives is compared:
//! sides, summary, each pair (verdict, dtypes, transforms, count, max_abs, rmse, max_rel,
//! requant_exact, first_mismatch, hint, the generated check), the reconciliation terms.
//! Pairs are matched by (source, target); `reason` strings are informative text, so only
//! their presence is compared; `rmse` (a sum in another order) to 1e-9 relative; `max_rel`
//! to 1e-15 (numpy's division lands one unit in the last place off in three cases).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/audit")
}

/// Runs `tensorpeek audit SRC… --against DST… --json` in the fixture folder and returns
/// the report's `audit` object and the exit status.
fn audit(case: &Value) -> (Value, i32) {
    let paths = |k: &str| case["inputs"][k].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect::<Vec<_>>();
    let out = Command::new(env!("CARGO_BIN_EXE_tensorpeek"))
        .current_dir(root())
        .arg("audit")
        .args(paths("source"))
        .arg("--against")
        .args(paths("target"))
        .arg("--json")
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (report["audit"].clone(), out.status.code().unwrap_or(-1))
}

fn close(a: &Value, b: &Value, rel: f64) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y || (x - y).abs() <= rel * x.abs().max(y.abs()),
        _ => a == b,
    }
}

fn check_pair(case: &str, want: &Value, got: &Value, errors: &mut Vec<String>) {
    let id = format!("{case}: {} ↔ {}", want["source"], want["target"]);
    for k in ["source_dtype", "target_dtype", "transforms", "verdict", "count", "max_abs", "requant_exact", "first_mismatch"] {
        if want[k] != got[k] {
            errors.push(format!("{id}: {k} {} ≠ expected {}", got[k], want[k]));
        }
    }
    if !close(&want["rmse"], &got["rmse"], 1e-9) {
        errors.push(format!("{id}: rmse {} ≠ expected {}", got["rmse"], want["rmse"]));
    }
    if !close(&want["max_rel"], &got["max_rel"], 1e-15) {
        errors.push(format!("{id}: max_rel {} ≠ expected {}", got["max_rel"], want["max_rel"]));
    }
    if want["reason"].is_null() != got["reason"].is_null() {
        errors.push(format!("{id}: reason {} where expected {}", got["reason"], want["reason"]));
    }
    if want.get("hint").is_some() && want["hint"] != got["hint"] {
        errors.push(format!("{id}: hint {} ≠ expected {}", got["hint"], want["hint"]));
    }
    if let Some(g) = want.get("generated") {
        let mine = &got["generated"];
        let exp_ok = g["expected"].as_array().zip(mine["expected"].as_array()).is_some_and(|(a, b)| {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| close(x, y, 1e-12))
        });
        if g["from"] != mine["from"] || g["rel_tol"] != mine["rel_tol"] || !exp_ok {
            errors.push(format!("{id}: generated {mine} ≠ expected {g}"));
        }
    }
}

fn check_terms(case: &str, what: &str, want: &Value, got: &Value, errors: &mut Vec<String>) {
    for k in ["source", "target"] {
        if want[k] != got[k] {
            errors.push(format!("{case}: reconciliation.{what}.{k} {} ≠ expected {}", got[k], want[k]));
        }
    }
    let (w, g) = (want["terms"].as_array().unwrap(), got["terms"].as_array().unwrap());
    if w.len() != g.len() {
        errors.push(format!("{case}: {what} has {} terms, expected {}: {g:?}", g.len(), w.len()));
    }
    for t in w {
        let Some(m) = g.iter().find(|x| x["key"] == t["key"] && x["what"] == t["what"]) else {
            errors.push(format!("{case}: {what}: no term {t}; ours: {g:?}"));
            continue;
        };
        for (k, v) in t.as_object().unwrap() {
            if m[k] != *v {
                errors.push(format!("{case}: {what} term {}: {k} {} ≠ expected {v}", t["what"], m[k]));
            }
        }
    }
    if got["adds_up"] != Value::Bool(true) {
        errors.push(format!("{case}: {what} does not add up"));
    }
}

#[test]
fn every_fixture_case_matches_the_oracle() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(root().join("expected"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && !p.file_name().unwrap().to_string_lossy().starts_with('_'))
        .collect();
    cases.sort();
    assert_eq!(cases.len(), 18, "the oracle has 18 cases");
    let mut errors = Vec::new();
    for path in &cases {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let case = doc["case"].as_str().unwrap();
        let want = &doc["audit"];
        let (got, status) = audit(&doc);
        let want_status = if want["ok"] == Value::Bool(true) { 0 } else { 1 };
        if status != want_status {
            errors.push(format!("{case}: exit status {status}, expected {want_status}"));
        }
        let line = format!("{} ({})", got["summary_line"].as_str().unwrap(), if got["ok"] == Value::Bool(true) { "ok" } else { "not ok" });
        if line != doc["summary_line"] {
            errors.push(format!("{case}: summary line {line:?} ≠ expected {}", doc["summary_line"]));
        }
        for k in ["ok", "complete", "architecture", "source", "target", "summary"] {
            if want[k] != got[k] {
                errors.push(format!("{case}: {k} {} ≠ expected {}", got[k], want[k]));
            }
        }
        let (wp, gp) = (want["pairs"].as_array().unwrap(), got["pairs"].as_array().unwrap());
        if wp.len() != gp.len() {
            errors.push(format!("{case}: {} pairs, expected {}", gp.len(), wp.len()));
        }
        for w in wp {
            match gp.iter().find(|g| g["source"] == w["source"] && g["target"] == w["target"]) {
                Some(g) => check_pair(case, w, g, &mut errors),
                None => errors.push(format!("{case}: no pair {} ↔ {}", w["source"], w["target"])),
            }
        }
        for what in ["tensor_bytes", "file_bytes"] {
            check_terms(case, what, &want["reconciliation"][what], &got["reconciliation"][what], &mut errors);
        }
    }
    assert!(errors.is_empty(), "{} differences from the oracle:\n{}", errors.len(), errors.join("\n"));
}
