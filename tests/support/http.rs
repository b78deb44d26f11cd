//! Test servers for the CLI's URLs, on 127.0.0.1 (and `localhost` for a second host):
//! files served with HTTP range requests — or, to test the failures, without Range
//! support, with a length that changes, or with a connection that breaks mid-way — and an
//! imitation of the Hugging Face Hub (`/api/models/ORG/REPO[/revision/REV]`,
//! `/ORG/REPO/resolve/REV/FILE` redirecting to a "CDN" on another host, gated repositories
//! that want a token). Every request is logged with its headers and the body bytes
//! written.
//!
//! Written over `std::net` rather than with a server crate: the tests need a server that
//! misbehaves on purpose (ignores `Range`, lies about lengths, drops the connection after
//! N bytes), which a correct server library does not offer.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// One request as the server saw it.
#[derive(Clone, Debug, Default)]
pub struct Logged {
    pub path: String,
    pub headers: BTreeMap<String, String>,
    pub status: u16,
    /// Body bytes written (or attempted before the client went away).
    pub sent: u64,
}

/// A Hub repository: file paths in the repository → files on disk; `token`: the
/// repository is gated and wants `Authorization: Bearer TOKEN`.
#[derive(Clone, Debug, Default)]
pub struct Repo {
    pub files: BTreeMap<String, PathBuf>,
    pub token: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Options {
    /// URL path → file on disk.
    pub files: BTreeMap<String, PathBuf>,
    /// Answer `Range` with 206 (else 200 with the whole file).
    pub range: bool,
    /// Bytes added to every length after the first answer (a file that changes).
    pub grow: u64,
    /// Drop the connection after this many body bytes of a response that does not start
    /// at byte 0 (the file opens, its values break).
    pub break_after: Option<u64>,
    /// Answer as the Hub: repositories by `ORG/REPO`, resolve URLs redirecting to `cdn`.
    pub hub: BTreeMap<String, Repo>,
    pub cdn: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options { files: BTreeMap::new(), range: true, grow: 0, break_after: None, hub: BTreeMap::new(), cdn: None }
    }
}

pub struct Server {
    /// `http://127.0.0.1:PORT/` (or `http://localhost:PORT/` from [`serve_on_localhost`]).
    pub url: String,
    pub log: Arc<Mutex<Vec<Logged>>>,
}

impl Server {
    pub fn requests(&self) -> Vec<Logged> {
        self.log.lock().unwrap().clone()
    }
}

pub fn serve(options: Options) -> Server {
    start(options, "127.0.0.1")
}

/// The same server named `localhost`: another host to the client than 127.0.0.1.
pub fn serve_on_localhost(options: Options) -> Server {
    start(options, "localhost")
}

fn start(options: Options, name: &str) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let log = Arc::new(Mutex::new(Vec::new()));
    let answered = Arc::new(AtomicU64::new(0));
    let options = Arc::new(options);
    {
        let log = log.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (log, options, answered) = (log.clone(), options.clone(), answered.clone());
                std::thread::spawn(move || handle(stream, &options, &log, &answered));
            }
        });
    }
    Server { url: format!("http://{name}:{port}/"), log }
}

fn handle(mut stream: TcpStream, o: &Options, log: &Mutex<Vec<Logged>>, answered: &AtomicU64) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let target = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut headers = BTreeMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let path = target.split('?').next().unwrap_or("/").to_string();
    let mut entry = Logged { path: path.clone(), headers: headers.clone(), ..Logged::default() };
    let mut reply = |status: u16, extra: &[(&str, String)], body: &[u8], entry: &mut Logged| {
        entry.status = status;
        let mut head = format!("HTTP/1.1 {status} {}\r\nconnection: close\r\n", reason(status));
        for (k, v) in extra {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if !extra.iter().any(|(k, _)| *k == "content-length") {
            head.push_str(&format!("content-length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let _ = stream.write_all(head.as_bytes());
        entry.sent = write_counted(&mut stream, body, None);
    };
    // The Hub: listings and resolve redirects.
    if !o.hub.is_empty() {
        if let Some(rest) = path.strip_prefix("/api/models/") {
            let repo_id = rest.split("/revision/").next().unwrap_or("");
            let Some(repo) = o.hub.get(repo_id) else {
                reply(404, &[], br#"{"error":"Repository not found"}"#, &mut entry);
                return log.lock().unwrap().push(entry);
            };
            let siblings: Vec<String> = repo
                .files
                .iter()
                .map(|(name, p)| format!(r#"{{"rfilename":"{name}","size":{}}}"#, std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)))
                .collect();
            let body = format!(r#"{{"id":"{repo_id}","sha":"abc123","siblings":[{}]}}"#, siblings.join(","));
            reply(200, &[("content-type", "application/json".into())], body.as_bytes(), &mut entry);
            return log.lock().unwrap().push(entry);
        }
        let parts: Vec<&str> = path.trim_start_matches('/').splitn(5, '/').collect();
        if let [org, name, "resolve", _rev, file] = parts.as_slice() {
            let repo_id = format!("{org}/{name}");
            let file = percent_decode(file);
            let Some(repo) = o.hub.get(&repo_id).filter(|r| r.files.contains_key(&file)) else {
                reply(404, &[], b"Entry not found", &mut entry);
                return log.lock().unwrap().push(entry);
            };
            if let Some(t) = &repo.token {
                if headers.get("authorization") != Some(&format!("Bearer {t}")) {
                    reply(401, &[], b"Access to this repository is restricted", &mut entry);
                    return log.lock().unwrap().push(entry);
                }
            }
            let cdn = o.cdn.clone().unwrap_or_default();
            reply(302, &[("location", format!("{cdn}cdn/{repo_id}/{file}?sig=test"))], b"", &mut entry);
            return log.lock().unwrap().push(entry);
        }
    }
    let key = percent_decode(&path);
    let Some(file) = o.files.get(&key).filter(|p| p.is_file()) else {
        reply(404, &[], b"not found", &mut entry);
        return log.lock().unwrap().push(entry);
    };
    let real = std::fs::metadata(file).unwrap().len();
    let size = real + if answered.fetch_add(1, Ordering::SeqCst) > 0 { o.grow } else { 0 };
    let range = headers.get("range").and_then(|r| r.strip_prefix("bytes=")).and_then(|r| r.split_once('-'));
    let (status, start, end) = match range.filter(|_| o.range) {
        Some((a, b)) => {
            let start: u64 = a.parse().unwrap();
            let end: u64 = if b.is_empty() { size - 1 } else { b.parse::<u64>().unwrap().min(size - 1) };
            (206, start, end)
        }
        None => (200, 0, size - 1),
    };
    // Only the range asked for is read from disk (a sparse file of many GB is served too);
    // a server ignoring Range streams the whole file, as far as the client takes it.
    let body_len = end.min(real - 1).saturating_sub(start) + 1;
    let mut extra = vec![("content-length", (end - start + 1).to_string()), ("last-modified", "Tue, 01 Dec 2026 00:00:00 GMT".to_string())];
    if status == 206 {
        extra.push(("content-range", format!("bytes {start}-{end}/{size}")));
    }
    entry.status = status;
    let mut head = format!("HTTP/1.1 {status} {}\r\nconnection: close\r\n", reason(status));
    for (k, v) in &extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let cut = o.break_after.filter(|_| start > 0);
    entry.sent = copy_counted(&mut stream, file, start, body_len, cut);
    if cut.is_some() {
        let _ = stream.shutdown(std::net::Shutdown::Both);
    }
    log.lock().unwrap().push(entry);
}

/// Writes `body` in 16 KiB pieces (at most `cut` bytes), counting what the socket took.
fn write_counted(stream: &mut TcpStream, body: &[u8], cut: Option<u64>) -> u64 {
    let limit = cut.map_or(body.len(), |c| (c as usize).min(body.len()));
    let mut sent = 0usize;
    for piece in body[..limit].chunks(16 * 1024) {
        if stream.write_all(piece).is_err() {
            break;
        }
        sent += piece.len();
    }
    let _ = stream.flush();
    sent as u64
}

/// Sends `len` bytes of `file` from `start` (at most `cut`), counting what the socket took.
fn copy_counted(stream: &mut TcpStream, file: &std::path::Path, start: u64, len: u64, cut: Option<u64>) -> u64 {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(file).unwrap();
    f.seek(SeekFrom::Start(start)).unwrap();
    let limit = cut.map_or(len, |c| c.min(len));
    let mut sent = 0u64;
    let mut buf = vec![0u8; 16 * 1024];
    while sent < limit {
        let n = ((limit - sent) as usize).min(buf.len());
        if f.read_exact(&mut buf[..n]).is_err() || stream.write_all(&buf[..n]).is_err() {
            break;
        }
        sent += n as u64;
    }
    let _ = stream.flush();
    sent
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        206 => "Partial Content",
        302 => "Found",
        401 => "Unauthorized",
        404 => "Not Found",
        _ => "",
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() + 0 && i + 2 <= b.len() - 1 {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
