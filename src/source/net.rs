//! Files behind URLs for the CLI: HTTP range requests through `ureq` (rustls, no OpenSSL),
//! judged by the same rules as the page's ([`super::remote`]: Range only; a server that
//! ignores `Range` is read only while the file fits in [`MAX_UNASKED_BYTES`]; a length or
//! `Last-Modified` that changes between two answers is an error; every body counted and
//! never read past what was asked). [`UrlSource`] is a [`ByteSource`]; [`Net`] holds the
//! client, the optional Hub token and the counts; [`NetFetch`] is the resolver's
//! [`Fetch`] (an index, a config.json, a Hub listing).
//!
//! `HF_TOKEN` (when set) is sent as `Authorization: Bearer …` to the Hub's own host only —
//! never to another host, nor on a redirect to another host (the Hub's CDN URLs are signed
//! instead) — and never printed.

use super::remote::{
    host_label, host_of, is_http_url, judge_range_answer, RangeAnswer, RemoteError, HEAD_BYTES, MAX_LISTING_BYTES, MAX_UNASKED_BYTES,
};
use super::resolve::Fetch;
use super::ByteSource;
use crate::error::SourceError;
use crate::model::files::MAX_COMPANION_BYTES;
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// No answer within this long (connect, headers, or a pause in a body) is an error: a
/// stalled server must not hang a CI job.
pub const NET_TIMEOUT: Duration = Duration::from_secs(60);

/// Redirects followed per request (the Hub sends one, to its CDN).
pub const MAX_REDIRECTS: u32 = 10;

/// The client, the Hub token and what was fetched, shared by every URL of one command.
pub struct Net {
    agent: ureq::Agent,
    /// `(host, token)`: the token from `HF_TOKEN`, for the Hub's host only.
    token: Option<(String, String)>,
    /// Requests made and bytes received, over every URL.
    pub requests: AtomicU64,
    pub bytes: AtomicU64,
}

impl std::fmt::Debug for Net {
    /// Never the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Net").field("requests", &self.requests).field("bytes", &self.bytes).finish_non_exhaustive()
    }
}

impl Net {
    /// A client for `hub` (the Hub's base URL); `token` (from `HF_TOKEN`) is sent to its
    /// host only.
    pub fn new(hub: &str, token: Option<String>) -> Net {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(NET_TIMEOUT))
            .timeout_recv_response(Some(NET_TIMEOUT))
            .timeout_recv_body(Some(NET_TIMEOUT))
            .max_redirects(MAX_REDIRECTS)
            // The token goes to the Hub's own host, also after a redirect within it; the
            // CDN it redirects to gets signed URLs, never the token.
            .redirect_auth_headers(ureq::config::RedirectAuthHeaders::SameHost)
            .user_agent(concat!("tensorpeek/", env!("CARGO_PKG_VERSION")))
            .build();
        let token = token.filter(|t| !t.trim().is_empty()).and_then(|t| host_of(hub).map(|h| (h.to_ascii_lowercase(), t.trim().to_string())));
        Net { agent: config.into(), token, requests: AtomicU64::new(0), bytes: AtomicU64::new(0) }
    }

    /// The token for `url`, when it goes to the Hub's host.
    fn token_for(&self, url: &str) -> Option<&str> {
        let (host, token) = self.token.as_ref()?;
        (host_of(url).map(str::to_ascii_lowercase).as_deref() == Some(host.as_str())).then_some(token.as_str())
    }

    fn get(&self, url: &str, range: Option<(u64, u64)>) -> Result<Answer, RemoteError> {
        let host = host_label(url);
        let mut req = self.agent.get(url);
        if let Some((first, last)) = range {
            req = req.header("Range", format!("bytes={first}-{last}"));
        }
        let token = self.token_for(url);
        if let Some(t) = token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        self.requests.fetch_add(1, Ordering::Relaxed);
        let resp = req.call().map_err(|e| RemoteError::Unreachable { host: host.clone(), detail: e.to_string() })?;
        let status = resp.status();
        if matches!(status.as_u16(), 401 | 403) {
            return Err(RemoteError::Denied {
                host,
                status: status.as_u16(),
                text: status.canonical_reason().unwrap_or("").to_string(),
                token: token.is_some(),
            });
        }
        let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
        Ok(Answer {
            status: status.as_u16(),
            text: status.canonical_reason().unwrap_or("").to_string(),
            content_range: header("content-range"),
            content_length: header("content-length"),
            modified: header("last-modified"),
            body: Box::new(resp.into_body().into_reader()),
        })
    }

    /// Reads up to `limit` bytes of `body`, counting them; `Ok(None)` when there is more.
    fn read_up_to(&self, url: &str, body: &mut dyn Read, limit: u64, at: u64, want: u64) -> Result<Option<Vec<u8>>, RemoteError> {
        let mut out = Vec::new();
        let mut taken = body.take(limit.saturating_add(1));
        let got = taken.read_to_end(&mut out);
        self.bytes.fetch_add(out.len() as u64, Ordering::Relaxed);
        if let Err(e) = got {
            return Err(RemoteError::Broken { url: url.to_string(), at, got: out.len() as u64, want, detail: e.to_string() });
        }
        Ok((out.len() as u64 <= limit).then_some(out))
    }
}

struct Answer {
    status: u16,
    text: String,
    content_range: Option<String>,
    content_length: Option<String>,
    modified: Option<String>,
    body: Box<dyn Read + Send + Sync>,
}

/// One file behind a URL.
pub struct UrlSource {
    url: String,
    len: u64,
    /// The file's first bytes, from the opening request (the whole file when the server
    /// sent it whole).
    head: Vec<u8>,
    net: Arc<Net>,
    /// `Last-Modified` of the first answer that had one (a change is an error).
    modified: Mutex<Option<String>>,
}

impl UrlSource {
    /// Opens `url` with one request for its first [`HEAD_BYTES`]: the answer says whether
    /// the server serves ranges and how long the file is, and its bytes are kept.
    pub fn open(url: &str, net: Arc<Net>) -> Result<UrlSource, RemoteError> {
        if !is_http_url(url) {
            return Err(RemoteError::BadUrl { url: url.to_string() });
        }
        let host = host_label(url);
        let asked = (0, HEAD_BYTES - 1);
        let mut a = net.get(url, Some(asked))?;
        let kind = judge_range_answer(&host, a.status, &a.text, a.content_range.as_deref(), a.content_length.as_deref(), asked)?;
        let (head, len) = match kind {
            RangeAnswer::Partial { total } => {
                let want = total.min(HEAD_BYTES);
                let head = net.read_up_to(url, &mut a.body, want, 0, want)?.unwrap_or_default();
                if head.len() as u64 != want {
                    return Err(RemoteError::Broken { url: url.to_string(), at: 0, got: head.len() as u64, want, detail: "the body ended early".into() });
                }
                (head, total)
            }
            RangeAnswer::Whole { len } => {
                // A server without ranges: the whole file, as long as it is small.
                let body = net.read_up_to(url, &mut a.body, MAX_UNASKED_BYTES, 0, len.unwrap_or(MAX_UNASKED_BYTES))?;
                let Some(body) = body else {
                    return Err(RemoteError::NoRangeSupport { host, len, received: MAX_UNASKED_BYTES });
                };
                if len.is_some_and(|l| l != body.len() as u64) {
                    let want = len.unwrap_or_default();
                    return Err(RemoteError::Broken { url: url.to_string(), at: 0, got: body.len() as u64, want, detail: "the body ended early".into() });
                }
                let n = body.len() as u64;
                (body, n)
            }
        };
        Ok(UrlSource { url: url.to_string(), len, head, net, modified: Mutex::new(a.modified) })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Checks an answer's `Last-Modified` against the first one seen.
    fn check_modified(&self, now: Option<String>) -> Result<(), RemoteError> {
        let Some(now) = now else { return Ok(()) };
        let mut seen = self.modified.lock().map_err(|_| RemoteError::Unreachable { host: host_label(&self.url), detail: "a lock was poisoned".into() })?;
        match seen.as_ref() {
            Some(was) if *was != now => Err(RemoteError::Modified { url: self.url.clone(), was: was.clone(), now }),
            Some(_) => Ok(()),
            None => {
                *seen = Some(now);
                Ok(())
            }
        }
    }

    fn fetch(&self, start: u64, len: u64) -> Result<Vec<u8>, RemoteError> {
        let host = host_label(&self.url);
        let last = start.checked_add(len).and_then(|e| e.checked_sub(1)).ok_or(RemoteError::TooLong { host: host.clone(), want: len })?;
        let asked = (start, last);
        let mut a = self.net.get(&self.url, Some(asked))?;
        let kind = judge_range_answer(&host, a.status, &a.text, a.content_range.as_deref(), a.content_length.as_deref(), asked)?;
        self.check_modified(a.modified.take())?;
        match kind {
            RangeAnswer::Partial { total } if total != self.len => Err(RemoteError::Changed { url: self.url.clone(), was: self.len, now: total }),
            RangeAnswer::Partial { .. } => {
                let got = self.net.read_up_to(&self.url, &mut a.body, len, start, len)?.unwrap_or_default();
                if got.len() as u64 != len {
                    return Err(RemoteError::Broken { url: self.url.clone(), at: start, got: got.len() as u64, want: len, detail: "the body ended early".into() });
                }
                Ok(got)
            }
            RangeAnswer::Whole { len: whole } => {
                // A server that served ranges before now sends the whole file: usable only
                // when it is small, and the same length as before.
                let body = self.net.read_up_to(&self.url, &mut a.body, MAX_UNASKED_BYTES, start, len)?;
                let Some(body) = body else {
                    return Err(RemoteError::NoRangeSupport { host, len: whole, received: MAX_UNASKED_BYTES });
                };
                if body.len() as u64 != self.len {
                    return Err(RemoteError::Changed { url: self.url.clone(), was: self.len, now: body.len() as u64 });
                }
                let (s, e) = (usize::try_from(start).ok(), usize::try_from(start.saturating_add(len)).ok());
                s.zip(e).and_then(|(s, e)| body.get(s..e)).map(<[u8]>::to_vec).ok_or(RemoteError::TooLong { host, want: len })
            }
        }
    }
}

impl ByteSource for UrlSource {
    fn len(&self) -> u64 {
        self.len
    }

    async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        let end = start.checked_add(len).filter(|&e| e <= self.len).ok_or_else(|| {
            SourceError::new(format!("a read of {len} bytes at {start} runs past the {} bytes of {}", self.len, self.url))
        })?;
        // The part the opening request brought is not asked for again.
        let held = self.head.len() as u64;
        let mut out = Vec::new();
        if start < held {
            let (from, to) = (usize::try_from(start).ok(), usize::try_from(end.min(held)).ok());
            out.extend_from_slice(from.zip(to).and_then(|(f, t)| self.head.get(f..t)).unwrap_or_default());
        }
        let first = start.max(held);
        if first < end {
            out.extend_from_slice(&self.fetch(first, end - first)?);
        }
        Ok(out)
    }
}

/// The resolver's reads, natively.
pub struct NetFetch(pub Arc<Net>);

impl Fetch for NetFetch {
    async fn read_json(&self, url: &str) -> Result<Vec<u8>, String> {
        let src = UrlSource::open(url, self.0.clone()).map_err(|e| e.to_string())?;
        if src.len() > MAX_COMPANION_BYTES {
            return Err(format!("it is larger than the {MAX_COMPANION_BYTES} bytes read for a JSON file"));
        }
        src.read_at(0, src.len()).await.map_err(|e| e.to_string())
    }

    async fn listing(&self, url: &str) -> Result<Vec<u8>, String> {
        let host = host_label(url);
        let mut a = self.0.get(url, None).map_err(|e| e.to_string())?;
        if a.status != 200 {
            return Err(RemoteError::Status { host, status: a.status, text: a.text }.to_string());
        }
        match self.0.read_up_to(url, &mut a.body, MAX_LISTING_BYTES, 0, MAX_LISTING_BYTES).map_err(|e| e.to_string())? {
            Some(b) => Ok(b),
            None => Err(format!("{host}'s listing is longer than the {MAX_LISTING_BYTES} bytes read for one")),
        }
    }
}
