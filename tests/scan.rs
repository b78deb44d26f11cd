//! `tensorpeek scan`: verdicts against what the fixtures' writers meant (the pickle corpus's
//! expected.json from pickletools, the GGUF templates' from gguf-py), exit codes under
//! --fail-on, the folder walk, JSON lines, and the SARIF log validated against the SARIF
//! 2.1.0 schema; docs/codes.md kept current (`BLESS=1 cargo test --test tests scan::` rewrites it).

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn scan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tensorpeek")).arg("scan").args(args).current_dir(ROOT).output().unwrap()
}

fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8(out.stdout.clone()).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn fixture_json(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(Path::new(ROOT).join(path)).unwrap()).unwrap()
}

/// The pickle corpus's verdicts as its writer meant them: `expect_verdict`, and `safe` for
/// the files torch / numpy / safetensors wrote from plain tensors (no `expect_verdict`).
fn pickle_expected() -> BTreeMap<String, (String, Vec<u64>)> {
    let e = fixture_json("tests/fixtures/pickle/expected.json");
    e.as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| *k != "_versions")
        .map(|(k, v)| {
            let verdict = v["expect_verdict"].as_str().unwrap_or("safe").to_string();
            let offsets = v["globals"].as_array().map(|g| g.iter().map(|x| x["offset"].as_u64().unwrap()).collect()).unwrap_or_default();
            (format!("tests/fixtures/pickle/{k}"), (verdict, offsets))
        })
        .chain(
            // make_torch_product.py's: torch.save / save_pretrained of plain tensors
            ["many_storages.pt", "sharded_llama/pytorch_model-00001-of-00002.bin", "sharded_llama/pytorch_model-00002-of-00002.bin"]
                .map(|k| (format!("tests/fixtures/pickle/{k}"), ("safe".to_string(), Vec::new()))),
        )
        .collect()
}

#[test]
fn pickle_corpus_verdicts_are_the_writers_and_json_lines_carry_the_report() {
    let out = scan(&["tests/fixtures/pickle", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "dangerous files fail by default");
    let lines = json_lines(&out);
    let files: BTreeMap<String, &Value> = lines.iter().filter(|l| l["kind"] == "file").map(|l| (l["name"].as_str().unwrap().to_string(), l)).collect();
    let expected = pickle_expected();
    for (name, (verdict, _)) in &expected {
        let line = files.get(name).unwrap_or_else(|| panic!("{name} not scanned"));
        assert_eq!(line["verdict"], verdict.as_str(), "{name}");
        assert_eq!(line["safety"]["verdict"], verdict.as_str(), "{name}: the report's safety says the same");
        assert_eq!(line["fails"], verdict == "dangerous" || verdict == "error" || !line["errors"].as_array().unwrap().is_empty(), "{name}");
        assert!(line["tensors"].is_array() && line["totals"].is_object() && line["bytes_read"].is_u64(), "{name}: the report's fields");
    }
    assert_eq!(files.len(), expected.len(), "every model file, nothing else: {:?}", files.keys().filter(|k| !expected.contains_key(*k)).collect::<Vec<_>>());
    let models: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "model").collect();
    let paths: Vec<&str> = models.iter().map(|m| m["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["tests/fixtures/pickle/sharded_llama/ (2 shard(s))", "tests/fixtures/pickle/tiny_llama/ (1 shard(s))"]);
    assert_eq!(models[0]["model"]["format"], "pytorch-checkpoint");
    let summary = lines.last().unwrap();
    assert_eq!(summary["kind"], "summary");
    let count = |v: &str| expected.values().filter(|(x, _)| x == v).count() as u64;
    assert_eq!(summary["files"], expected.len() as u64);
    assert_eq!(summary["dangerous"], count("dangerous"));
    assert_eq!(summary["suspicious"], count("suspicious"));
    assert_eq!(summary["error"], count("error"));
    assert_eq!(summary["safe"].as_u64().unwrap(), count("safe") + 2, "and the two merged models");
    assert_eq!(summary["exit"], 1);
}

#[test]
fn sarif_points_at_each_import_and_template() {
    let out = scan(&["tests/fixtures/pickle", "tests/fixtures/scan", "--format", "sarif", "--docs-url", "https://example.org/tensorpeek/blob/main/"]);
    assert_eq!(out.status.code(), Some(1));
    let log: Value = serde_json::from_slice(&out.stdout).unwrap();
    // This very log (the same arguments) is validated against the SARIF 2.1.0 schema by
    // scripts/test_integrations.sh, with the `jsonschema` package its GitHub Action check
    // installs anyway (a broken copy rejected too): a Rust validator here compiled 36 of the
    // native tests' 208 unit-seconds of compiling, 2026-12-07.

    let run = &log["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(rules.len(), tensorpeek::error::Code::ALL.len(), "one rule per finding code");
    for (i, r) in rules.iter().enumerate() {
        let code = tensorpeek::error::Code::ALL[i];
        assert_eq!(r["id"], code.as_str());
        assert_eq!(r["shortDescription"]["text"], code.doc().short);
        assert_eq!(r["fullDescription"]["text"], code.doc().full);
        assert_eq!(r["helpUri"], format!("https://example.org/tensorpeek/blob/main/docs/codes.md#{}", code.as_str().to_lowercase()));
    }
    let artifacts = run["artifacts"].as_array().unwrap();
    let uri_of = |i: &Value| artifacts[i.as_u64().unwrap() as usize]["location"]["uri"].as_str().unwrap().to_string();
    // results by file: (rule, level, byte offset)
    let mut by_file: BTreeMap<String, Vec<(String, String, Option<u64>)>> = BTreeMap::new();
    for r in run["results"].as_array().unwrap() {
        let loc = &r["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uriBaseId"], "SRCROOT");
        let uri = uri_of(&loc["artifactLocation"]["index"]);
        assert_eq!(loc["artifactLocation"]["uri"], uri.as_str());
        let rule = r["ruleId"].as_str().unwrap().to_string();
        assert_eq!(rules[r["ruleIndex"].as_u64().unwrap() as usize]["id"], rule.as_str());
        by_file.entry(uri).or_default().push((rule, r["level"].as_str().unwrap().to_string(), loc["region"]["byteOffset"].as_u64()));
    }
    let verdict_of: BTreeMap<String, String> = artifacts.iter().map(|a| (a["location"]["uri"].as_str().unwrap().to_string(), a["properties"]["verdict"].as_str().unwrap().to_string())).collect();
    for (name, (verdict, offsets)) in pickle_expected() {
        assert_eq!(verdict_of.get(&name), Some(&verdict), "{name}");
        let results = by_file.get(&name).cloned().unwrap_or_default();
        let levels: BTreeSet<&str> = results.iter().map(|r| r.1.as_str()).collect();
        match verdict.as_str() {
            "dangerous" => {
                let at: Vec<u64> = results.iter().filter(|r| r.0 == "DangerousGlobal").filter_map(|r| r.2).collect();
                assert!(!at.is_empty(), "{name}: a DangerousGlobal result");
                // each at an import pickletools saw (or a nested pickle's import, deeper)
                assert!(at.iter().all(|o| offsets.contains(o) || *o > offsets[0]), "{name}: {at:?} vs {offsets:?}");
                assert!(results.iter().any(|r| r.0 == "DangerousGlobal" && r.1 == "error" && offsets.contains(&r.2.unwrap())), "{name}: one at a top-level import");
            }
            "suspicious" => {
                // an EXT opcode's import is no global to pickletools: then anywhere
                assert!(results.iter().any(|r| r.0 == "UnknownGlobal" && r.1 == "warning" && (offsets.is_empty() || offsets.contains(&r.2.unwrap()))), "{name}");
                assert!(!levels.contains("error"), "{name}");
            }
            "error" => assert!(levels.contains("error"), "{name}"),
            _ => assert!(!levels.contains("error") && !levels.contains("warning"), "{name}: {results:?}"),
        }
    }
    // exactly, for the plainest ones (offsets from pickletools)
    assert_eq!(by_file["tests/fixtures/pickle/mal_os_system.pkl"], [("DangerousGlobal".into(), "error".into(), Some(2))]);
    assert_eq!(by_file["tests/fixtures/pickle/mal_builtins_print.pkl"], [("UnknownGlobal".into(), "warning".into(), Some(2))]);
    // the GGUF templates: the unsafe one at its key (offset from gguf-py's reader), the clean one clean
    let g = fixture_json("tests/fixtures/scan/expected.json");
    let at = g["template_unsafe.gguf"]["chat_template_offset"].as_u64();
    assert_eq!(by_file["tests/fixtures/scan/template_unsafe.gguf"], [("ChatTemplateUnsafe".into(), "error".into(), at)]);
    assert_eq!(verdict_of["tests/fixtures/scan/template_unsafe.gguf"], g["template_unsafe.gguf"]["verdict"].as_str().unwrap());
    assert_eq!(verdict_of["tests/fixtures/scan/template_clean.gguf"], g["template_clean.gguf"]["verdict"].as_str().unwrap());
    assert!(!by_file.contains_key("tests/fixtures/scan/template_clean.gguf"));
}

#[test]
fn fail_on_decides_exit_1_and_usage_errors_exit_2() {
    let code = |args: &[&str]| scan(args).status.code();
    let unsafe_t = "tests/fixtures/scan/template_unsafe.gguf";
    assert_eq!(code(&["tests/fixtures/scan/template_clean.gguf"]), Some(0));
    assert_eq!(code(&[unsafe_t]), Some(1), "dangerous fails by default");
    assert_eq!(code(&[unsafe_t, "--fail-on", "error"]), Some(0));
    assert_eq!(code(&[unsafe_t, "--fail-on", "dangerous"]), Some(1));
    let suspicious = "tests/fixtures/gguf/all_types.gguf"; // <script> in its chat template
    assert_eq!(code(&[suspicious]), Some(0));
    assert_eq!(code(&[suspicious, "--fail-on", "warning"]), Some(1));
    assert_eq!(code(&["tests/fixtures/truncated.safetensors"]), Some(1));
    assert_eq!(code(&["tests/fixtures/truncated.safetensors", "--fail-on", "dangerous"]), Some(0));
    assert_eq!(code(&["tests/fixtures/truncated.safetensors", "--fail-on", "dangerous,error"]), Some(1));
    assert_eq!(code(&["tests/fixtures/one_tensor.safetensors", "--fail-on", "warning,error,dangerous"]), Some(0));
    assert_eq!(code(&["tests/fixtures/no-such-folder"]), Some(2));
    assert_eq!(code(&["tests/fixtures/scan", "--fail-on", "bogus"]), Some(2));
    assert_eq!(code(&["tests/fixtures/scan", "--jobs", "0"]), Some(2));
    assert_eq!(code(&["tests/fixtures/scan", "--format", "xml"]), Some(2));
    assert_eq!(code(&[]), Some(2));
}

fn copy(from: &str, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(Path::new(ROOT).join(from), to).unwrap();
}

#[test]
fn a_mixed_folder_is_walked_recursively_and_merged_per_folder() {
    let dir = std::env::temp_dir().join(format!("tensorpeek-scan-mixed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = |p: &str| dir.join(p);
    copy("tests/fixtures/one_tensor.safetensors", &d("a/one.safetensors"));
    copy("tests/fixtures/truncated.safetensors", &d("a/truncated.safetensors"));
    copy("tests/fixtures/scan/template_unsafe.gguf", &d("b/deep/er/t.gguf"));
    copy("tests/fixtures/pickle/mal_os_system.pkl", &d("b/evil.PKL"));
    copy("tests/fixtures/pickle/state_dict.pt", &d("c/weights.pth"));
    for f in ["pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin", "pytorch_model.bin.index.json", "config.json"] {
        copy(&format!("tests/fixtures/pickle/sharded_llama/{f}"), &d(&format!("ckpt/{f}")));
    }
    // never read: a version-control store, a file whose name is no model file's, a JSON alone
    copy("tests/fixtures/pickle/mal_os_system.pkl", &d(".git/objects/evil.pkl"));
    copy("tests/fixtures/pickle/mal_os_system.pkl", &d("c/notes.txt"));
    std::fs::create_dir_all(d("web")).unwrap();
    std::fs::write(d("web/package.json"), "{\"name\": \"x\"}").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&dir, d("c/loop")).unwrap();
    let arg = dir.to_str().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tensorpeek")).args(["scan", arg, "--format", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = json_lines(&out);
    let got: Vec<(String, String, String)> = lines
        .iter()
        .filter(|l| l["kind"] != "summary")
        .map(|l| {
            let name = l["name"].as_str().or(l["path"].as_str()).unwrap();
            (l["kind"].as_str().unwrap().to_string(), name.strip_prefix(arg).unwrap().to_string(), l["verdict"].as_str().unwrap().to_string())
        })
        .collect();
    let want: Vec<(String, String, String)> = [
        ("file", "/a/one.safetensors", "safe"),
        ("file", "/a/truncated.safetensors", "error"),
        ("model", "/a/ (2 shard(s))", "error"),
        ("file", "/b/deep/er/t.gguf", "dangerous"), // folders in the order the walk meets them
        ("file", "/b/evil.PKL", "dangerous"),
        ("file", "/c/weights.pth", "safe"),
        ("file", "/ckpt/pytorch_model-00001-of-00002.bin", "safe"),
        ("file", "/ckpt/pytorch_model-00002-of-00002.bin", "safe"),
        ("model", "/ckpt/ (2 shard(s))", "safe"),
    ]
    .iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect();
    assert_eq!(got, want);
    let summary = lines.last().unwrap();
    assert_eq!((summary["files"].as_u64(), summary["models"].as_u64(), summary["failing"].as_u64()), (Some(7), Some(2), Some(4)));
    // the same with one thread and with eight: the order is the walk's, not the pool's
    let text = |jobs: &str| Command::new(env!("CARGO_BIN_EXE_tensorpeek")).args(["scan", arg, "--jobs", jobs]).output().unwrap().stdout;
    let one = text("1");
    assert_eq!(one, text("8"));
    let one = String::from_utf8(one).unwrap();
    assert!(one.lines().any(|l| l.starts_with("dangerous") && l.ends_with("/b/evil.PKL  DangerousGlobal")), "{one}");
    assert!(one.lines().last().unwrap().starts_with("scanned 7 file(s), 2 merged model(s): 5 safe, 0 suspicious, 2 dangerous, 2 error; 4 failing --fail-on error,dangerous;"), "{one}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_fuzz_regression_input_gets_the_verdict_inspect_gives() {
    let dir = Path::new(ROOT).join("tests/fuzz_regressions");
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
    inputs.sort();
    assert!(inputs.len() >= 10);
    let out = Command::new(env!("CARGO_BIN_EXE_tensorpeek")).arg("scan").args(&inputs).args(["--format", "json"]).output().unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = json_lines(&out);
    let files: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "file").collect();
    assert_eq!(files.len(), inputs.len(), "a verdict for each, named explicitly, whatever its name");
    for (f, p) in files.iter().zip(&inputs) {
        let inspect = Command::new(env!("CARGO_BIN_EXE_tensorpeek")).args(["inspect", "--json"]).arg(p).output().unwrap();
        let report: Value = serde_json::from_slice(&inspect.stdout).unwrap();
        assert_eq!(f["verdict"], report["files"][0]["safety"]["verdict"], "{}", p.display());
        assert_eq!(f["errors"], report["files"][0]["errors"], "{}", p.display());
    }
}

#[test]
fn inspect_judges_every_format_and_fails_a_dangerous_gguf() {
    let inspect = |p: &str| Command::new(env!("CARGO_BIN_EXE_tensorpeek")).args(["inspect", "--json", p]).current_dir(ROOT).output().unwrap();
    for (file, verdict, exit) in [
        ("tests/fixtures/one_tensor.safetensors", "safe", 0),
        ("tests/fixtures/truncated.safetensors", "error", 1),
        ("tests/fixtures/scan/template_clean.gguf", "safe", 0),
        ("tests/fixtures/gguf/all_types.gguf", "suspicious", 0),
        ("tests/fixtures/scan/template_unsafe.gguf", "dangerous", 1),
        ("tests/fixtures/pickle/mal_os_system.pkl", "dangerous", 1),
    ] {
        let out = inspect(file);
        assert_eq!(out.status.code(), Some(exit), "{file}");
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r["files"][0]["safety"]["verdict"], verdict, "{file}");
        let text = Command::new(env!("CARGO_BIN_EXE_tensorpeek")).args(["inspect", file]).current_dir(ROOT).output().unwrap();
        assert!(String::from_utf8_lossy(&text.stdout).contains(&format!("  safety: {verdict}\n")), "{file}");
    }
}

/// docs/codes.md: one section per code, from `Code::doc` (the SARIF rules' text).
fn codes_page() -> String {
    use tensorpeek::error::Code;
    let mut s = String::from(
        "# Finding codes\n\nEvery finding tensorpeek reports has one of these codes (the JSON report's `code`, the SARIF\nlog's `ruleId`). Generated from `src/error/docs.rs` by `BLESS=1 cargo test --test tests scan::`;\n`tests/scan.rs` checks that it is current.\n",
    );
    for c in Code::ALL {
        let d = c.doc();
        s.push_str(&format!("\n### {c}\n\n{}\n\n{}\n\nMore: [{}]({})\n", d.short, d.full, d.page, relative_to_docs(d.page)));
    }
    s
}

fn relative_to_docs(page: &str) -> String {
    page.strip_prefix("docs/").map_or_else(|| format!("../{page}"), str::to_string)
}

#[test]
fn docs_codes_page_is_current_and_every_code_is_documented_where_it_points() {
    let path = Path::new(ROOT).join("docs/codes.md");
    let now = codes_page();
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, &now).unwrap();
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), now, "docs/codes.md is stale: BLESS=1 cargo test --test tests scan::");
    for c in tensorpeek::error::Code::ALL {
        let d = c.doc();
        assert!(!d.short.is_empty() && !d.full.is_empty(), "{c}");
        let file = d.page.split('#').next().unwrap();
        let text = std::fs::read_to_string(Path::new(ROOT).join(file)).unwrap_or_else(|_| panic!("{c}: {file}"));
        if let Some(anchor) = d.page.split('#').nth(1) {
            let heading = text.lines().filter(|l| l.starts_with('#')).any(|l| github_anchor(l) == anchor);
            assert!(heading, "{c}: no heading for #{anchor} in {file}");
        }
    }
}

/// GitHub's heading anchor: lowercased, punctuation dropped, spaces as dashes.
fn github_anchor(heading: &str) -> String {
    heading.trim_start_matches('#').trim().to_lowercase().chars().filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_').map(|c| if c == ' ' { '-' } else { c }).collect()
}

#[test]
fn sarif_file_beside_the_text_is_the_same_log() {
    let file = std::env::temp_dir().join(format!("tensorpeek-scan-{}.sarif", std::process::id()));
    let text = scan(&["tests/fixtures/scan", "--sarif", file.to_str().unwrap()]);
    assert_eq!(text.status.code(), Some(1));
    let stdout = String::from_utf8(text.stdout).unwrap();
    assert!(stdout.lines().next().unwrap().starts_with("safe        gguf"), "{stdout}");
    let sarif = scan(&["tests/fixtures/scan", "--format", "sarif"]);
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(written, serde_json::from_slice::<Value>(&sarif.stdout).unwrap());
    std::fs::remove_file(&file).unwrap();
}
