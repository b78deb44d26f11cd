//! A file behind a URL as a byte source, read with HTTP range requests (`Range:
//! bytes=a-b`, answered `206 Partial Content`). Used by the page's "open a URL" box, so a
//! hosted checkpoint can be inspected from its header alone, like a dropped file.
//!
//! A server that ignores `Range` and starts sending the whole file is refused at once and
//! the request is aborted: a 5–150 GB download is never what the person asked for.

use super::ByteSource;
use crate::error::SourceError;
use gloo::net::http::{Request, Response};
use web_sys::AbortController;

pub struct HttpSource {
    url: String,
    len: u64,
}

/// The status a server answers a satisfiable range request with.
const PARTIAL_CONTENT: u16 = 206;

impl HttpSource {
    /// Opens `url`: one request for its first byte tells whether the server serves ranges
    /// and how long the file is (from `Content-Range: bytes 0-0/LEN`).
    pub async fn open(url: &str) -> Result<Self, SourceError> {
        let resp = range_request(url, 0, 0).await?;
        let total = resp
            .headers()
            .get("content-range")
            .and_then(|v| content_range_total(&v))
            .ok_or_else(|| {
                SourceError::new(
                    "the server did not say the file's length (no Content-Range total); is the URL readable cross-origin with Range requests allowed?",
                )
            })?;
        Ok(HttpSource {
            url: url.to_string(),
            len: total,
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }
}

/// Sends `Range: bytes=first-last` and insists on a 206; anything else is aborted before
/// its body is read.
async fn range_request(url: &str, first: u64, last: u64) -> Result<Response, SourceError> {
    let controller = AbortController::new().map_err(|_| SourceError::new("AbortController is unavailable"))?;
    let signal = controller.signal();
    let resp = Request::get(url)
        .header("Range", &format!("bytes={first}-{last}"))
        .abort_signal(Some(&signal))
        .send()
        .await
        .map_err(|e| SourceError::new(format!("fetching {url} failed: {e}")))?;
    if resp.status() != PARTIAL_CONTENT {
        controller.abort();
        return Err(SourceError::new(format!(
            "{url} answered {} {} to a range request; only servers that support HTTP range requests (206) can be read without downloading the whole file",
            resp.status(),
            resp.status_text()
        )));
    }
    Ok(resp)
}

/// `bytes 0-0/6425529048` → 6425529048 (`*` or garbage → None).
pub fn content_range_total(value: &str) -> Option<u64> {
    value.trim().rsplit_once('/')?.1.trim().parse().ok()
}

impl ByteSource for HttpSource {
    fn len(&self) -> u64 {
        self.len
    }

    async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        if len == 0 {
            return Ok(Vec::new());
        }
        let last = start
            .checked_add(len - 1)
            .ok_or_else(|| SourceError::new(format!("range {start}+{len} overflows")))?;
        let resp = range_request(&self.url, start, last).await?;
        let bytes = resp
            .binary()
            .await
            .map_err(|e| SourceError::new(format!("reading bytes {start}..={last} of {} failed: {e}", self.url)))?;
        if bytes.len() as u64 != len {
            return Err(SourceError::new(format!(
                "asked {} for {len} bytes at {start}, got {}",
                self.url,
                bytes.len()
            )));
        }
        Ok(bytes)
    }
}
