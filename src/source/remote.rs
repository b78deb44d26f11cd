//! Files behind URLs, as plain data and rules (both targets; the browser's fetch adapter is
//! [`super::http`]): what a range response means and what to tell a person when it is
//! not what was asked for, URLs of files beside a given one, the Hugging Face Hub's
//! model-info API and resolve URLs, and which files of a repository to open.
//!
//! Nothing here does I/O, so the native tests drive every rule and every message.

use crate::error::Finding;
use crate::model::companions::parse_index;
use crate::model::files::base_name;
use crate::source::set::split_group;
use std::fmt;

/// The first request for a URL asks for this many bytes (`Range: bytes=0-65535`): it
/// tells whether the server serves ranges and how long the file is, and it already holds
/// a safetensors header of up to 64 KiB − 8 (a 3B model's is 29 KiB) and most JSON
/// companions whole, so a typical file's inventory costs one request, a larger header two.
pub const HEAD_BYTES: u64 = 64 * 1024;

/// At most this many bytes are taken from a response that brings what was not asked for
/// (a server ignoring `Range` answers 200 with the whole file): the body is read as a
/// stream and cancelled past this. A file no longer than this is simply used whole.
pub const MAX_UNASKED_BYTES: u64 = 1 << 20;

/// The Hub's model-info answer is read whole up to this (a repository with thousands of
/// files lists them in well under 1 MB; a lying server cannot make us hold more).
pub const MAX_LISTING_BYTES: u64 = 16 << 20;

/// Files of a repository listing considered, at most (the Hub caps a listing far below).
pub const MAX_LISTED_FILES: usize = 100_000;

/// The public Hub, used when `hub=` does not name another.
pub const DEFAULT_HUB: &str = "https://huggingface.co";

/// A `Content-Range: bytes FIRST-LAST/TOTAL` header (`TOTAL` may be `*`: unknown).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContentRange {
    pub first: u64,
    pub last: u64,
    pub total: Option<u64>,
}

/// Parses `bytes 0-65535/6425529048` (and `bytes 0-0/*`); `None` for anything else.
pub fn parse_content_range(value: &str) -> Option<ContentRange> {
    let rest = value.trim().strip_prefix("bytes")?.trim_start();
    let (range, total) = rest.split_once('/')?;
    let (first, last) = range.trim().split_once('-')?;
    let (first, last): (u64, u64) = (first.trim().parse().ok()?, last.trim().parse().ok()?);
    let total = match total.trim() {
        "*" => None,
        t => Some(t.parse().ok()?),
    };
    if last < first || total.is_some_and(|t| last >= t) {
        return None;
    }
    Some(ContentRange { first, last, total })
}

/// What went wrong with a URL, each with the sentence a person reads (what is wrong, what
/// to do).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RemoteError {
    /// Not an `http:`/`https:` URL.
    BadUrl { url: String },
    /// `fetch` failed without a status: a CORS refusal looks exactly like this to a page
    /// (the browser hides the reason), and so does a host that cannot be reached.
    NoAnswer { host: String, detail: String },
    /// An HTTP error status.
    Status { host: String, status: u16, text: String },
    /// The CLI could not connect (no CORS natively: the host is unreachable or the
    /// address wrong).
    Unreachable { host: String, detail: String },
    /// 401/403 to the CLI, which sends `HF_TOKEN` to the Hub when it is set (`token`:
    /// whether one was sent).
    Denied { host: String, status: u16, text: String, token: bool },
    /// 200 with the whole body to a range request, and the body is longer than
    /// [`MAX_UNASKED_BYTES`] (or its length unknown): the transfer was stopped.
    NoRangeSupport { host: String, len: Option<u64>, received: u64 },
    /// 206 without a readable `Content-Range` (not exposed cross-origin, or garbled).
    NoContentRange { host: String },
    /// 206 for another range than the one asked for.
    WrongRange { host: String, asked: (u64, u64), got: (u64, u64) },
    /// The length the server gives changed between two requests.
    Changed { url: String, was: u64, now: u64 },
    /// The `Last-Modified` date the server gives changed between two requests.
    Modified { url: String, was: String, now: String },
    /// The body broke off (a network error mid-way) or ended early.
    Broken { url: String, at: u64, got: u64, want: u64, detail: String },
    /// The body ran past what was asked for.
    TooLong { host: String, want: u64 },
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::fmt::thousands;
        match self {
            RemoteError::BadUrl { url } => write!(f, "{url:?} is not an http: or https: URL"),
            RemoteError::NoAnswer { host, detail } => write!(
                f,
                "{host} gave no answer this page may read ({detail}). This is most likely CORS: the server must allow \
                 cross-origin reads by sending `Access-Control-Allow-Origin` (e.g. `*`), allow the `Range` header \
                 (`Access-Control-Allow-Headers: Range`) and expose the range answer \
                 (`Access-Control-Expose-Headers: Content-Range, Content-Length`). Otherwise the host is unreachable \
                 or the address is mistyped. Or download the file and drop it on the page."
            ),
            RemoteError::Status { host, status, text } => {
                let hint = match status {
                    404 | 410 => "there is no file at this address: check the URL (and, on the Hub, the repository, revision and file name)",
                    401 | 403 => "the file is private or gated: this page does not sign in anywhere; download it and drop it on the page",
                    416 => "the server refused the byte range: the file is shorter than it said",
                    429 => "too many requests: wait a moment and open it again",
                    s if *s >= 500 => "the server failed: try again later",
                    _ => "the file cannot be read from this address",
                };
                write!(f, "{host} answered {status} {text}: {hint}")
            }
            RemoteError::Unreachable { host, detail } => {
                write!(f, "{host} could not be reached ({detail}): check the address and the network")
            }
            RemoteError::Denied { host, status, text, token: true } => write!(
                f,
                "{host} answered {status} {text}: the token in HF_TOKEN has no access to this file (a gated repository \
                 must be accepted on its page first, with the account the token belongs to)"
            ),
            RemoteError::Denied { host, status, text, token: false } => write!(
                f,
                "{host} answered {status} {text}: the file is private or gated; for a Hub repository, set HF_TOKEN to \
                 an access token of an account that may read it"
            ),
            RemoteError::NoRangeSupport { host, len, received } => write!(
                f,
                "{host} ignores Range requests: it answered 200 with the whole file{} instead of 206 Partial Content with \
                 the bytes asked for. The transfer was stopped after {} bytes, so nothing more is downloaded. Serve the \
                 file from a server that supports HTTP range requests (most static hosts and object stores do), or \
                 download it and open the downloaded file.",
                len.map(|l| format!(" ({} bytes)", thousands(l))).unwrap_or_default(),
                thousands(*received)
            ),
            RemoteError::NoContentRange { host } => write!(
                f,
                "{host} answered the range request (206) but its Content-Range header cannot be read from this page, so \
                 the file's length is unknown. The server must send `Access-Control-Expose-Headers: Content-Range, \
                 Content-Length`."
            ),
            RemoteError::WrongRange { host, asked, got } => write!(
                f,
                "{host} answered bytes {}-{} to a request for bytes {}-{}; it does not serve ranges correctly",
                got.0, got.1, asked.0, asked.1
            ),
            RemoteError::Changed { url, was, now } => write!(
                f,
                "the file at {url} changed while it was being read: its length was {} bytes, now {}. Open it again.",
                thousands(*was),
                thousands(*now)
            ),
            RemoteError::Modified { url, was, now } => write!(
                f,
                "the file at {url} changed while it was being read: it was last modified {was}, now {now}. Open it again."
            ),
            RemoteError::Broken { url, at, got, want, detail } => write!(
                f,
                "the connection to {url} broke after {} of {} bytes (at byte {}): {detail}. Try again.",
                thousands(*got),
                thousands(*want),
                thousands(at.saturating_add(*got))
            ),
            RemoteError::TooLong { host, want } => {
                write!(f, "{host} sent more than the {} bytes asked for; the transfer was stopped", thousands(*want))
            }
        }
    }
}

impl From<RemoteError> for crate::error::SourceError {
    fn from(e: RemoteError) -> Self {
        crate::error::SourceError::new(e.to_string())
    }
}

/// What an answer to `Range: bytes=FIRST-LAST` is good for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeAnswer {
    /// 206: exactly the bytes asked for follow; the file is `total` bytes long.
    Partial { total: u64 },
    /// 200: the whole file follows, `len` bytes when the server said so. Usable only while
    /// the body stays within [`MAX_UNASKED_BYTES`].
    Whole { len: Option<u64> },
}

/// Judges a response's status and headers (`content_range` / `content_length` as the page
/// can read them: `None` when missing or not exposed cross-origin).
pub fn judge_range_answer(
    host: &str,
    status: u16,
    status_text: &str,
    content_range: Option<&str>,
    content_length: Option<&str>,
    asked: (u64, u64),
) -> Result<RangeAnswer, RemoteError> {
    match status {
        206 => {
            let Some(cr) = content_range.and_then(parse_content_range) else {
                return Err(RemoteError::NoContentRange { host: host.to_string() });
            };
            // A range running past the end is answered up to the last byte (the opening
            // request asks for HEAD_BYTES of a file that may be shorter); any other
            // difference is an error.
            let at_end = cr.last < asked.1 && cr.total == cr.last.checked_add(1);
            if cr.first != asked.0 || (cr.last != asked.1 && !at_end) {
                return Err(RemoteError::WrongRange { host: host.to_string(), asked, got: (cr.first, cr.last) });
            }
            cr.total.map(|total| RangeAnswer::Partial { total }).ok_or(RemoteError::NoContentRange { host: host.to_string() })
        }
        200 => {
            let len = content_length.and_then(|v| v.trim().parse::<u64>().ok());
            if len.is_some_and(|l| l > MAX_UNASKED_BYTES) {
                return Err(RemoteError::NoRangeSupport { host: host.to_string(), len, received: 0 });
            }
            Ok(RangeAnswer::Whole { len })
        }
        _ => Err(RemoteError::Status { host: host.to_string(), status, text: status_text.to_string() }),
    }
}

/// Whether `s` is an absolute `http:`/`https:` URL.
pub fn is_http_url(s: &str) -> bool {
    let lower = s.trim().to_ascii_lowercase();
    (lower.starts_with("https://") || lower.starts_with("http://")) && host_of(s).is_some_and(|h| !h.is_empty())
}

/// `https://host:8080/a/b?x` → `host:8080`.
pub fn host_of(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let host = rest.get(..end)?;
    // userinfo@host: name the host only.
    Some(host.rsplit_once('@').map_or(host, |(_, h)| h))
}

/// The host to name in messages (the URL itself when it has none).
pub fn host_label(url: &str) -> String {
    host_of(url).unwrap_or(url).to_string()
}

/// The path of a URL without query or fragment (`https://h/a/b.gguf?x` → `/a/b.gguf`).
fn path_of(url: &str) -> &str {
    let Some((_, rest)) = url.split_once("://") else { return "" };
    let start = rest.find('/').unwrap_or(rest.len());
    let path = rest.get(start..).unwrap_or("");
    let end = path.find(['?', '#']).unwrap_or(path.len());
    path.get(..end).unwrap_or("")
}

/// `%XX` decoded (invalid escapes and non-UTF-8 results kept as they were).
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = |j: usize| bytes.get(j).and_then(|c| (*c as char).to_digit(16));
        match (b, hex(i + 1), hex(i + 2)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

/// A path segment for a URL: everything but unreserved characters `%XX`-escaped.
pub fn percent_encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The file name a URL ends in, decoded (`…/resolve/main/model-00001-of-00002.safetensors`
/// → `model-00001-of-00002.safetensors`); the host when the path is empty.
pub fn file_name_of(url: &str) -> String {
    let path = path_of(url);
    let last = path.rsplit('/').find(|s| !s.is_empty()).unwrap_or("");
    if last.is_empty() {
        host_label(url)
    } else {
        percent_decode(last)
    }
}

/// The URL of `name` (a relative path as an index names its shards) in the folder of
/// `base`. `None` for a name that would leave that folder (`..`, absolute, a URL).
pub fn sibling_url(base: &str, name: &str) -> Option<String> {
    if name.is_empty() || name.starts_with('/') || name.contains("://") || name.contains('\\') {
        return None;
    }
    let segments: Vec<&str> = name.split('/').collect();
    if segments.iter().any(|s| s.is_empty() || *s == "." || *s == "..") {
        return None;
    }
    let (scheme, rest) = base.split_once("://")?;
    let cut = rest.find(['?', '#']).unwrap_or(rest.len());
    let no_query = rest.get(..cut)?;
    let folder = match no_query.rfind('/') {
        Some(i) => no_query.get(..=i)?.to_string(),
        None => format!("{no_query}/"),
    };
    let encoded: Vec<String> = segments.iter().map(|s| percent_encode_segment(s)).collect();
    Some(format!("{scheme}://{folder}{}", encoded.join("/")))
}

/// Whether a URL names a safetensors index (`*.safetensors.index.json`).
pub fn is_index_url(url: &str) -> bool {
    file_name_of(url).to_ascii_lowercase().ends_with(".safetensors.index.json")
}

/// The shards an index names, by name (sorted, each once), or why there are none.
pub fn index_shards(file: &str, bytes: &[u8]) -> Result<Vec<String>, String> {
    let mut findings: Vec<Finding> = Vec::new();
    let Some(index) = parse_index(file, bytes, &mut findings) else {
        let why = findings.first().map_or_else(|| "it is not a valid index".to_string(), |f| f.message.clone());
        return Err(why);
    };
    if index.shards.is_empty() {
        return Err(format!("{file} names no shards"));
    }
    Ok(index.shards.into_iter().map(|s| s.name).collect())
}

/// A Hub repository: `ORG/REPO` with an optional `@REVISION`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HubRepo {
    pub repo: String,
    pub revision: Option<String>,
}

/// Characters of a Hub repository id or revision (names, branches, tags, commit ids).
fn hub_name_ok(s: &str) -> bool {
    !s.is_empty() && s.len() <= 256 && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) && !s.starts_with('.')
}

impl HubRepo {
    /// Parses `ORG/REPO` or `ORG/REPO@REV` (a revision may contain `/`, as branch names do).
    pub fn parse(s: &str) -> Result<HubRepo, String> {
        let s = s.trim();
        let (repo, revision) = match s.split_once('@') {
            Some((r, rev)) => (r, Some(rev)),
            None => (s, None),
        };
        let ok_repo = repo.split_once('/').is_some_and(|(o, n)| hub_name_ok(o) && hub_name_ok(n));
        if !ok_repo {
            return Err(format!("{s:?} is not a Hub repository id: write ORG/REPO, optionally with @REVISION"));
        }
        if let Some(rev) = revision {
            if rev.is_empty() || rev.len() > 256 || !rev.split('/').all(hub_name_ok) {
                return Err(format!("{rev:?} is not a revision (a branch, tag or commit id)"));
            }
        }
        Ok(HubRepo { repo: repo.to_string(), revision: revision.map(str::to_string) })
    }

    /// The revision files are resolved at (`main` when none was given).
    pub fn rev(&self) -> &str {
        self.revision.as_deref().unwrap_or("main")
    }

    /// The model-info API: `{hub}/api/models/ORG/REPO[/revision/REV]`, with file sizes.
    pub fn api_url(&self, hub: &str) -> String {
        let hub = hub.trim_end_matches('/');
        match &self.revision {
            Some(rev) => format!("{hub}/api/models/{}/revision/{}?blobs=true", self.repo, encode_path(rev)),
            None => format!("{hub}/api/models/{}?blobs=true", self.repo),
        }
    }

    /// A file's download URL: `{hub}/ORG/REPO/resolve/REV/FILE` (the Hub redirects it to
    /// its CDN, which serves ranges).
    pub fn resolve_url(&self, hub: &str, file: &str) -> String {
        format!("{}/{}/resolve/{}/{}", hub.trim_end_matches('/'), self.repo, encode_path(self.rev()), encode_path(file))
    }
}

/// Each `/`-separated segment percent-encoded.
fn encode_path(p: &str) -> String {
    p.split('/').map(percent_encode_segment).collect::<Vec<_>>().join("/")
}

/// One file of a repository listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedFile {
    pub name: String,
    pub size: Option<u64>,
}

/// The files of a model-info answer (`siblings[].rfilename`, with `size` when given).
pub fn parse_listing(bytes: &[u8]) -> Result<Vec<ListedFile>, String> {
    #[derive(serde::Deserialize)]
    struct Info {
        siblings: Option<Vec<Sibling>>,
    }
    #[derive(serde::Deserialize)]
    struct Sibling {
        rfilename: String,
        #[serde(default)]
        size: Option<u64>,
    }
    let info: Info = serde_json::from_slice(bytes).map_err(|e| format!("the Hub's answer is not the model-info JSON expected: {e}"))?;
    let siblings = info.siblings.ok_or("the Hub's answer lists no files (no \"siblings\")")?;
    Ok(siblings.into_iter().take(MAX_LISTED_FILES).map(|s| ListedFile { name: s.rfilename, size: s.size }).collect())
}

/// A GGUF model of a repository to choose from: one file, or the parts of a split model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GgufChoice {
    /// `model-Q4_K_M.gguf`, or `model-Q8_0-00001-of-00002.gguf (2 parts)`.
    pub label: String,
    /// The files, in order.
    pub files: Vec<String>,
    /// Their total size, when the listing gave every size.
    pub size: Option<u64>,
}

/// What to open of a repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RepoPlan {
    /// A safetensors checkpoint: its index (expanded to the shards it names) or its
    /// loose shards, and `config.json` when listed.
    Safetensors { index: Option<String>, shards: Vec<String>, config: Option<String> },
    /// GGUF models: open the only one, or let the person choose.
    Gguf(Vec<GgufChoice>),
    /// Nothing header-readable at the top of the repository.
    Nothing,
}

/// Chooses what to open from a listing: the top-level safetensors checkpoint (through its
/// index when there is one), else the GGUF models (split parts grouped), else nothing.
/// Files in sub-folders are left out for safetensors (often other variants); GGUF models
/// anywhere are offered.
pub fn plan_repo(files: &[ListedFile]) -> RepoPlan {
    let top = |f: &&ListedFile| !f.name.contains('/');
    let lower = |f: &ListedFile| f.name.to_ascii_lowercase();
    let config = files.iter().filter(top).find(|f| f.name == "config.json").map(|f| f.name.clone());
    let mut indexes: Vec<&ListedFile> = files.iter().filter(top).filter(|f| lower(f).ends_with(".safetensors.index.json")).collect();
    indexes.sort_by_key(|f| (f.name != "model.safetensors.index.json", f.name.clone()));
    let mut shards: Vec<String> = files.iter().filter(top).filter(|f| lower(f).ends_with(".safetensors")).map(|f| f.name.clone()).collect();
    shards.sort();
    if let Some(index) = indexes.first() {
        return RepoPlan::Safetensors { index: Some(index.name.clone()), shards: Vec::new(), config };
    }
    if !shards.is_empty() {
        return RepoPlan::Safetensors { index: None, shards, config };
    }
    let mut ggufs: Vec<&ListedFile> = files.iter().filter(|f| lower(f).ends_with(".gguf")).collect();
    ggufs.sort_by(|a, b| a.name.cmp(&b.name));
    if ggufs.is_empty() {
        return RepoPlan::Nothing;
    }
    let mut choices: Vec<(String, Vec<&ListedFile>)> = Vec::new();
    for f in ggufs {
        let key = match f.name.rsplit_once('/') {
            Some((dir, _)) => format!("{dir}/{}", split_group(&f.name)),
            None => split_group(&f.name),
        };
        match choices.iter_mut().find(|(k, _)| *k == key) {
            Some((_, parts)) => parts.push(f),
            None => choices.push((key, vec![f])),
        }
    }
    RepoPlan::Gguf(
        choices
            .into_iter()
            .map(|(_, parts)| {
                let size = parts.iter().try_fold(0u64, |acc, p| p.size.and_then(|s| acc.checked_add(s)));
                let first = parts.first().map(|p| p.name.clone()).unwrap_or_default();
                let label = if parts.len() > 1 { format!("{first} ({} parts)", parts.len()) } else { first };
                GgufChoice { label, files: parts.iter().map(|p| p.name.clone()).collect(), size }
            })
            .collect(),
    )
}

/// The name a file opened from a URL is shown under: its file name (a Hub file keeps its
/// folder inside the repository, so that two `model.gguf` in different folders differ).
pub fn display_name(url: &str, repo_path: Option<&str>) -> String {
    match repo_path {
        Some(p) if !p.is_empty() => p.to_string(),
        _ => base_name(&file_name_of(url)).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_range() {
        assert_eq!(parse_content_range("bytes 0-65535/6425529048"), Some(ContentRange { first: 0, last: 65535, total: Some(6_425_529_048) }));
        assert_eq!(parse_content_range("bytes 5-5/*"), Some(ContentRange { first: 5, last: 5, total: None }));
        assert_eq!(parse_content_range("bytes 9-3/100"), None);
        assert_eq!(parse_content_range("bytes 0-100/100"), None);
        assert_eq!(parse_content_range("bytes */100"), None);
        assert_eq!(parse_content_range("items 0-1/2"), None);
    }
}
