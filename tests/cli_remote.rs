//! The CLI over URLs and Hub repositories (issue 24): every command that takes a file takes
//! `http://…` too, an index URL brings its shards and config.json, `hf://ORG/REPO` is
//! listed and opened as the page opens it; the answers of a misbehaving server get the
//! page's messages; `HF_TOKEN` goes to the Hub's host only and is never printed. Each
//! result is compared with the same command on the local file.

#[path = "support/http.rs"]
mod http;

use http::{serve, serve_on_localhost, Options, Repo};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(p: &str) -> PathBuf {
    root().join("tests/fixtures").join(p)
}

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tensorpeek"));
    c.args(args).env_remove("HF_TOKEN");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn json(out: &Output) -> Value {
    assert!(out.status.code().is_some_and(|c| c < 2), "exit {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A server of `files`: URL path → fixture path.
fn files(pairs: &[(&str, PathBuf)]) -> Options {
    Options { files: pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(), ..Options::default() }
}

fn folder(dir: &Path, prefix: &str) -> Vec<(String, PathBuf)> {
    let mut v: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| (format!("{prefix}{}", p.file_name().unwrap().to_string_lossy()), p))
        .collect();
    v.sort();
    v
}

#[test]
fn inspect_by_url_is_inspect_of_the_local_file_and_says_what_it_fetched() {
    let gguf = fixture("stories260K.gguf");
    let s = serve(files(&[("/m/stories260K.gguf", gguf.clone()), ("/m/tiny_model.safetensors", fixture("tiny_model.safetensors"))]));
    for name in ["stories260K.gguf", "tiny_model.safetensors"] {
        let url = format!("{}m/{name}", s.url);
        let remote = run(&["inspect", "--json", &url], &[]);
        let local = run(&["inspect", "--json", fixture(name).to_str().unwrap()], &[]);
        assert_eq!(json(&remote)["files"], json(&local)["files"], "{name}");
        let e = stderr(&remote);
        assert!(e.contains("fetched ") && e.contains(" request"), "{e}");
    }
    // Header-only: an 8 GiB GGUF (the fixture's header, then a sparse tail) costs what the
    // page's GGUF read plan asks for — the first 64 KiB, then 1 MiB steps — not the file.
    let dir = std::env::temp_dir().join(format!("tensorpeek-remote-big-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.gguf");
    std::fs::copy(&gguf, &big).unwrap();
    std::fs::OpenOptions::new().write(true).open(&big).unwrap().set_len(8 << 30).unwrap();
    let b = serve(files(&[("/big.gguf", big.clone())]));
    let remote = run(&["inspect", "--json", &format!("{}big.gguf", b.url)], &[]);
    let local = run(&["inspect", "--json", big.to_str().unwrap()], &[]);
    assert_eq!(json(&remote)["files"], json(&local)["files"]);
    let sent: u64 = b.requests().iter().map(|r| r.sent).sum();
    assert!(sent <= (1 << 20) + 65536, "{sent} bytes sent for the GGUF's inventory: {:?}", b.requests());
    assert_eq!(json(&remote)["files"][0]["bytes_read"].as_u64(), Some(sent));
    std::fs::remove_file(&big).unwrap();
    // Text output names the file too.
    let text = run(&["inspect", &format!("{}m/stories260K.gguf", s.url)], &[]);
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    assert!(String::from_utf8_lossy(&text.stdout).contains("stories260K.gguf"));
}

#[test]
fn an_index_url_brings_its_shards_and_config_as_the_folder_does() {
    let dir = fixture("checkpoint/good");
    let served = folder(&dir, "/ckpt/");
    let s = serve(Options { files: served.into_iter().collect(), ..Options::default() });
    let remote = json(&run(&["inspect", "--json", &format!("{}ckpt/model.safetensors.index.json", s.url)], &[]));
    let local = json(&run(&["inspect", "--json", dir.to_str().unwrap()], &[]));
    assert_eq!(remote["model"]["tensors"], local["model"]["tensors"]);
    assert_eq!(remote["model"]["totals"], local["model"]["totals"]);
    assert_eq!(remote["model"]["architecture"], local["model"]["architecture"]);
    assert!(!remote["model"]["architecture"].is_null(), "config.json beside the index was read");
    // Only the index, the config and the shards were asked for — not the tokenizer files.
    let mut asked: Vec<String> = s.requests().iter().map(|r| r.path.clone()).collect();
    asked.sort();
    asked.dedup();
    assert_eq!(
        asked,
        ["/ckpt/config.json", "/ckpt/model-00001-of-00002.safetensors", "/ckpt/model-00002-of-00002.safetensors", "/ckpt/model.safetensors.index.json"]
    );
}

/// A Hub with `org/ckpt` (a sharded checkpoint), `org/ggufs` (two GGUF models), and the
/// gated `org/gated`; its CDN on another host (`localhost`).
fn hub(token: &str) -> (http::Server, http::Server) {
    let mut cdn_files = BTreeMap::new();
    let mut repos = BTreeMap::new();
    let ckpt = folder(&fixture("checkpoint/good"), "");
    for (name, p) in &ckpt {
        cdn_files.insert(format!("/cdn/org/ckpt/{name}"), p.clone());
    }
    repos.insert("org/ckpt".to_string(), Repo { files: ckpt.into_iter().collect(), token: None });
    let ggufs: BTreeMap<String, PathBuf> =
        [("stories260K.gguf".to_string(), fixture("stories260K.gguf")), ("q/values.gguf".to_string(), fixture("values.gguf"))].into_iter().collect();
    for (name, p) in &ggufs {
        cdn_files.insert(format!("/cdn/org/ggufs/{name}"), p.clone());
        cdn_files.insert(format!("/cdn/org/gated/{name}"), p.clone());
    }
    repos.insert("org/ggufs".to_string(), Repo { files: ggufs.clone(), token: None });
    repos.insert("org/gated".to_string(), Repo { files: ggufs, token: Some(token.to_string()) });
    let cdn = serve_on_localhost(Options { files: cdn_files, ..Options::default() });
    let hub = serve(Options { hub: repos, cdn: Some(cdn.url.clone()), ..Options::default() });
    (hub, cdn)
}

#[test]
fn hub_repositories_open_as_the_page_opens_them() {
    let (hub, _cdn) = hub("t0ken");
    let base = hub.url.trim_end_matches('/').to_string();
    // A checkpoint repository: its index, shards and config.
    let remote = json(&run(&["--hub", &base, "inspect", "--json", "hf://org/ckpt"], &[]));
    let local = json(&run(&["inspect", "--json", fixture("checkpoint/good").to_str().unwrap()], &[]));
    assert_eq!(remote["model"]["tensors"], local["model"]["tensors"]);
    // Two GGUF models: a usage error that lists them; a path picks one.
    let two = run(&["--hub", &base, "inspect", "hf://org/ggufs"], &[]);
    assert_eq!(two.status.code(), Some(2));
    let e = stderr(&two);
    assert!(e.contains("org/ggufs has 2 GGUF models") && e.contains("q/values.gguf") && e.contains("stories260K.gguf"), "{e}");
    let one = json(&run(&["--hub", &base, "inspect", "--json", "hf://org/ggufs@main/q/values.gguf"], &[]));
    let local = json(&run(&["inspect", "--json", fixture("values.gguf").to_str().unwrap()], &[]));
    assert_eq!(one["files"][0]["tensors"], local["files"][0]["tensors"]);
    assert_eq!(one["files"][0]["name"], "q/values.gguf");
    // A file the repository does not have, and a repository that does not exist.
    let none = run(&["--hub", &base, "inspect", "hf://org/ggufs/nope.gguf"], &[]);
    assert_eq!(none.status.code(), Some(2));
    assert!(stderr(&none).contains("org/ggufs has no file nope.gguf"), "{}", stderr(&none));
    let missing = run(&["--hub", &base, "inspect", "hf://org/missing"], &[]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("answered 404"), "{}", stderr(&missing));
}

#[test]
fn hf_token_reaches_the_hub_only_and_is_never_printed() {
    let token = "hf_s3cr3tT0kenValue";
    let (hub, cdn) = hub(token);
    let base = hub.url.trim_end_matches('/').to_string();
    let url = "hf://org/gated/stories260K.gguf";
    let without = run(&["--hub", &base, "inspect", url], &[]);
    assert_eq!(without.status.code(), Some(2));
    assert!(stderr(&without).contains("answered 401 Unauthorized") && stderr(&without).contains("set HF_TOKEN"), "{}", stderr(&without));
    let wrong = run(&["--hub", &base, "inspect", url], &[("HF_TOKEN", "hf_wrong")]);
    assert!(stderr(&wrong).contains("the token in HF_TOKEN has no access"), "{}", stderr(&wrong));
    assert!(!stderr(&wrong).contains("hf_wrong"));
    let with = run(&["--hub", &base, "inspect", "--json", url], &[("HF_TOKEN", token)]);
    let v = json(&with);
    assert_eq!(v["files"][0]["name"], "stories260K.gguf");
    for out in [&without, &wrong, &with] {
        assert!(!String::from_utf8_lossy(&out.stdout).contains(token) && !stderr(out).contains(token));
    }
    // The Hub saw the token; the CDN (another host) never did.
    assert!(hub.requests().iter().any(|r| r.headers.get("authorization").map(String::as_str) == Some(&format!("Bearer {token}"))));
    assert!(!cdn.requests().is_empty());
    assert!(cdn.requests().iter().all(|r| !r.headers.contains_key("authorization")), "{:?}", cdn.requests());
    // A plain URL on another host never gets it either.
    let other = serve(files(&[("/stories260K.gguf", fixture("stories260K.gguf"))]));
    let out = run(&["--hub", &base, "inspect", &format!("{}stories260K.gguf", other.url)], &[("HF_TOKEN", token)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(other.requests().iter().all(|r| !r.headers.contains_key("authorization")));
}

#[test]
fn a_server_that_ignores_range_is_stopped_within_a_mebibyte() {
    let s = serve(Options { range: false, ..files(&[("/big.gguf", fixture("stories260K.gguf")), ("/small.safetensors", fixture("tiny_model.safetensors"))]) });
    let out = run(&["inspect", &format!("{}big.gguf", s.url)], &[]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(e.contains("ignores Range requests") && e.contains("1,185,376 bytes"), "{e}");
    // A small file is simply used whole.
    let out = run(&["inspect", "--json", &format!("{}small.safetensors", s.url)], &[]);
    let local = json(&run(&["inspect", "--json", fixture("tiny_model.safetensors").to_str().unwrap()], &[]));
    assert_eq!(json(&out)["files"][0]["tensors"], local["files"][0]["tensors"]);
}

#[test]
fn a_file_that_changes_or_a_connection_that_breaks_is_said_plainly() {
    // The 1.1 MB GGUF's header needs a second request (past the first 64 KiB): the file
    // grew in between, or the connection drops after 1,000 bytes of it.
    let grows = serve(Options { grow: 100, ..files(&[("/m.gguf", fixture("stories260K.gguf"))]) });
    let out = run(&["inspect", &format!("{}m.gguf", grows.url)], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("changed while it was being read") && text.contains("1,185,376 bytes, now 1,185,476"), "{text}");
    let breaks = serve(Options { break_after: Some(1000), ..files(&[("/m.gguf", fixture("stories260K.gguf"))]) });
    let out = run(&["inspect", &format!("{}m.gguf", breaks.url)], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("broke after 1,000 of"), "{text}");
    // stats says why the file has no tensors to read.
    let out = run(&["stats", &format!("{}m.gguf", breaks.url), "--tensor", "output.weight"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("broke after 1,000 of"), "{}", stderr(&out));
    let missing = serve(files(&[]));
    let out = run(&["inspect", &format!("{}nothing.gguf", missing.url)], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("answered 404 Not Found: there is no file at this address"), "{}", stderr(&out));
}

#[test]
fn stats_sha256_fit_and_convert_take_urls() {
    let s = serve(files(&[
        ("/stories260K.gguf", fixture("stories260K.gguf")),
        ("/plain_p4.pkl", fixture("pickle/plain_p4.pkl")),
        ("/mal_os_system.pkl", fixture("pickle/mal_os_system.pkl")),
    ]));
    let gguf = fixture("stories260K.gguf");
    let url = format!("{}stories260K.gguf", s.url);
    // stats: the same statistics (the whole report) as the local file's.
    let local = json(&run(&["inspect", "--json", gguf.to_str().unwrap()], &[]));
    let tensor = local["files"][0]["tensors"][3]["name"].as_str().unwrap().to_string();
    let a = json(&run(&["stats", "--json", &url, "--tensor", &tensor], &[]));
    let b = json(&run(&["stats", "--json", gguf.to_str().unwrap(), "--tensor", &tensor], &[]));
    assert_eq!(a["files"][0]["tensors"], b["files"][0]["tensors"]);
    assert!(!a["files"][0]["tensors"][3]["stats"].is_null());
    // sha256: the local file's hash, labelled by the URL.
    let h = run(&["sha256", &url], &[]);
    let l = run(&["sha256", gguf.to_str().unwrap()], &[]);
    let (h, l) = (String::from_utf8_lossy(&h.stdout).into_owned(), String::from_utf8_lossy(&l.stdout).into_owned());
    assert_eq!(h.split_whitespace().next(), l.split_whitespace().next());
    assert_eq!(h.split_whitespace().nth(1), Some(url.as_str()));
    // fit: the same plan.
    let a = json(&run(&["fit", "--json", &url, "-c", "256"], &[]));
    let b = json(&run(&["fit", "--json", gguf.to_str().unwrap(), "-c", "256"], &[]));
    assert_eq!(a["memory"], b["memory"]);
    assert!(!a["memory"].is_null());
    // convert: the same bytes out; a dangerous pickle by URL is refused as a local one is.
    let dir = std::env::temp_dir().join(format!("tensorpeek-remote-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (ra, la) = (dir.join("remote.safetensors"), dir.join("local.safetensors"));
    let out = run(&["convert", &format!("{}plain_p4.pkl", s.url), "-o", ra.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = run(&["convert", fixture("pickle/plain_p4.pkl").to_str().unwrap(), "-o", la.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read(&ra).unwrap(), std::fs::read(&la).unwrap());
    let out = run(&["convert", &format!("{}mal_os_system.pkl", s.url), "-o", dir.join("x.safetensors").to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!dir.join("x.safetensors").exists());
}

#[test]
fn audit_takes_urls_and_brings_the_config_beside_a_safetensors_file() {
    let hf = fixture("families/hf/qwen3");
    let mut served: Vec<(String, PathBuf)> = folder(&hf, "/hf/");
    served.push(("/qwen3-BF16.gguf".to_string(), fixture("families/gguf/qwen3-BF16.gguf")));
    let s = serve(Options { files: served.into_iter().collect(), ..Options::default() });
    let remote = run(&["audit", "--json", &format!("{}hf/model.safetensors", s.url), "--against", &format!("{}qwen3-BF16.gguf", s.url)], &[]);
    let local = run(&["audit", "--json", hf.join("model.safetensors").to_str().unwrap(), "--against", fixture("families/gguf/qwen3-BF16.gguf").to_str().unwrap()], &[]);
    assert_eq!(local.status.code(), Some(0), "{}", stderr(&local));
    assert_eq!(remote.status.code(), Some(0), "{}", stderr(&remote));
    let (r, l) = (json(&remote), json(&local));
    assert_eq!(r["audit"]["pairs"], l["audit"]["pairs"]);
    assert_eq!(r["audit"]["summary"], l["audit"]["summary"]);
    assert_eq!(r["audit"]["ok"], true);
    assert!(s.requests().iter().any(|q| q.path == "/hf/config.json"));
}

#[test]
fn addresses_other_than_http_are_usage_errors() {
    for arg in ["ftp://h/model.gguf", "hf://only-org", "hf://org/repo/../x.gguf"] {
        let out = run(&["inspect", arg], &[]);
        assert_eq!(out.status.code(), Some(2), "{arg}");
    }
    // Nothing listens here: a connection error, said as such.
    let out = run(&["inspect", "http://127.0.0.1:9/m.gguf"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("127.0.0.1:9 could not be reached"), "{}", stderr(&out));
}

#[test]
fn scan_takes_urls_and_hub_repositories() {
    let (hub, _cdn) = hub("t0ken");
    let base = hub.url.trim_end_matches('/').to_string();
    // A repository: every model file and the JSON beside it, merged as a folder is.
    let out = run(&["--hub", &base, "scan", "hf://org/ckpt", "--format", "json"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let scanned: Vec<&str> = lines.iter().filter(|l| l["kind"] == "file").map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(scanned, ["hf://org/ckpt/model-00001-of-00002.safetensors", "hf://org/ckpt/model-00002-of-00002.safetensors"]);
    assert!(lines.iter().all(|l| l["kind"] != "file" || l["verdict"] == "safe"));
    let local = run(&["inspect", "--json", fixture("checkpoint/good").to_str().unwrap()], &[]);
    let model = lines.iter().find(|l| l["kind"] == "model").expect("the checkpoint merged");
    assert_eq!(model["model"]["tensors"], json(&local)["model"]["tensors"]);
    assert_eq!(lines.last().unwrap()["kind"], "summary");
    // A dangerous pickle by URL fails the scan, and SARIF locates it by its URL.
    let s = serve(files(&[("/evil/mal_os_system.pkl", fixture("pickle/mal_os_system.pkl")), ("/ok/plain_p4.pkl", fixture("pickle/plain_p4.pkl"))]));
    let evil = format!("{}evil/mal_os_system.pkl", s.url);
    let out = run(&["scan", &evil, &format!("{}ok/plain_p4.pkl", s.url), "--format", "sarif"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let log: Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = log["runs"][0]["results"].as_array().unwrap();
    let located: Vec<&str> = results.iter().map(|r| r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].as_str().unwrap()).collect();
    assert!(!located.is_empty() && located.iter().all(|u| *u == evil), "{located:?}");
    assert!(results.iter().all(|r| r["locations"][0]["physicalLocation"]["artifactLocation"].get("uriBaseId").is_none()));
    assert!(results.iter().any(|r| r["ruleId"] == "DangerousGlobal"));
    // The same file scanned locally gives the same rules at the same offsets.
    let local = run(&["scan", fixture("pickle/mal_os_system.pkl").to_str().unwrap(), "--format", "sarif"], &[]);
    let llog: Value = serde_json::from_slice(&local.stdout).unwrap();
    let key = |rs: &Value| -> Vec<(String, u64)> {
        rs.as_array().unwrap().iter().map(|r| (r["ruleId"].as_str().unwrap().to_string(), r["locations"][0]["physicalLocation"]["region"]["byteOffset"].as_u64().unwrap_or(0))).collect()
    };
    assert_eq!(key(&log["runs"][0]["results"]), key(&llog["runs"][0]["results"]));
    // A gated repository without a token: its listing is public, its files answer 401 —
    // each an error line that says what to do; with the token they are read.
    let out = run(&["--hub", &base, "scan", "hf://org/gated", "--format", "json"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let first: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(first["verdict"], "error");
    assert!(first["errors"][0]["message"].as_str().unwrap().contains("set HF_TOKEN"), "{first}");
    let out = run(&["--hub", &base, "scan", "hf://org/gated"], &[("HF_TOKEN", "t0ken")]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
}
