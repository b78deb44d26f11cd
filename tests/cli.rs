//! The CLI's contract: commands, JSON report shape and exit codes (0 sound, 1 errors, 2 usage).

use std::path::PathBuf;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tensorpeek"))
}

fn temp(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tensorpeek-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn st(header: &str, data: usize) -> Vec<u8> {
    let mut v = (header.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(header.as_bytes());
    v.resize(v.len() + data, 0);
    v
}

#[test]
fn sound_file_exits_0_with_json_report() {
    let p = temp("good.safetensors", &st(r#"{"__metadata__":{"format":"pt"},"w":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]}}"#, 12));
    let out = bin().args(["inspect", "--json"]).arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["tool"], "tensorpeek");
    let f = &v["files"][0];
    assert_eq!(f["name"], "good.safetensors");
    assert_eq!(f["format"], "safetensors");
    assert_eq!(f["ok"], true);
    assert_eq!(f["metadata"]["format"], "pt");
    assert_eq!(f["tensors"][0]["shape"], serde_json::json!([2, 3]));
    assert_eq!(f["tensors"][0]["params"], 6);
    assert_eq!(f["totals"]["bytes"], 12);
    assert_eq!(f["bytes_read"], f["data_start"]);
    assert!(v["model"].is_null());
}

#[test]
fn broken_file_exits_1_and_names_the_finding() {
    let p = temp("bad.safetensors", &st(r#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}"#, 4));
    let out = bin().arg("inspect").arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("SizeMismatch"), "{text}");
    assert!(text.contains("verdict: errors"), "{text}");
}

#[test]
fn warnings_only_exit_0() {
    let p = temp("warn.safetensors", &st(r#" {"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#, 1));
    let out = bin().args(["inspect", "--json"]).arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["files"][0]["warnings"][0]["code"], "LeadingWhitespace");
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(bin().output().unwrap().status.code(), Some(2));
    assert_eq!(bin().arg("inspect").output().unwrap().status.code(), Some(2));
    assert_eq!(bin().args(["frobnicate", "x"]).output().unwrap().status.code(), Some(2));
    assert_eq!(bin().args(["inspect", "/nonexistent/file.safetensors"]).output().unwrap().status.code(), Some(2));
}

/// `tensorpeek sha256` prints what `sha256sum` prints (checked against Python's hashlib).
#[test]
fn sha256_lines_match_sha256sum() {
    let files = ["tiny_model.safetensors", "stories260K.gguf"];
    let paths: Vec<String> = files.iter().map(|f| format!("{}/tests/fixtures/{f}", env!("CARGO_MANIFEST_DIR"))).collect();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tensorpeek")).arg("sha256").args(&paths).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let want = std::process::Command::new("python3")
        .arg("-c")
        .arg("import hashlib, sys\nfor p in sys.argv[1:]: print(hashlib.sha256(open(p, 'rb').read()).hexdigest() + '  ' + p)")
        .args(&paths)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), String::from_utf8(want.stdout).unwrap());
    let missing = std::process::Command::new(env!("CARGO_BIN_EXE_tensorpeek")).args(["sha256", "/no/such/file"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    // `tensorpeek inspect FILE --json | head -c 1`: the reader goes away; the CLI must end
    // without a panic or a backtrace on stderr. The report (474 KB) is larger than a pipe
    // holds (64 KiB), so the CLI meets the closed pipe whether it began writing before the
    // close or after (a small report could fit in the pipe before the close: a flaky test).
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pickle/many_storages.pt");
    let mut child = bin()
        .args(["inspect", fixture, "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    // killed by SIGPIPE, as `cat` would be (no exit code), not the exit code of a panic
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}", out.status);
    }
}
