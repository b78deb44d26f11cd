//! The library's inputs as byte sources: a JavaScript reader (`{ name, size, read(offset,
//! length) }`, built by the package's JavaScript for a `Blob`/`File` or a Node path) or a
//! URL, read by [`HttpSource`] — the page's range requests, with `source::remote`'s rules
//! for what an answer means.

use crate::error::SourceError;
use crate::source::http::{FetchCount, HttpSource};
use crate::source::remote::file_name_of;
use crate::source::set::SetInput;
use crate::source::ByteSource;
use js_sys::{Function, Promise, Reflect, Uint8Array};
use std::rc::Rc;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// One input's bytes.
pub enum JsSource {
    /// `read(offset, length) → Promise<Uint8Array>` of exactly `length` bytes.
    Reader { len: u64, read: Function },
    Http(HttpSource),
}

/// A JS error's message (an `Error`'s `message`, or the value as text).
pub fn message(e: &JsValue) -> String {
    e.as_string()
        .or_else(|| Reflect::get(e, &JsValue::from_str("message")).ok().and_then(|m| m.as_string()))
        .unwrap_or_else(|| "unknown error".to_string())
}

impl ByteSource for JsSource {
    fn len(&self) -> u64 {
        match self {
            JsSource::Reader { len, .. } => *len,
            JsSource::Http(h) => h.len(),
        }
    }

    async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        let read = match self {
            JsSource::Http(h) => return h.read_at(start, len).await,
            JsSource::Reader { read, .. } => read,
        };
        // f64 holds every offset below 2^53 bytes (8 PiB) exactly.
        let p = read
            .call2(&JsValue::NULL, &JsValue::from_f64(start as f64), &JsValue::from_f64(len as f64))
            .map_err(|e| SourceError::new(format!("read of {len} bytes at {start}: {}", message(&e))))?;
        let v = JsFuture::from(Promise::resolve(&p))
            .await
            .map_err(|e| SourceError::new(format!("read of {len} bytes at {start}: {}", message(&e))))?;
        let bytes: Uint8Array = v
            .dyn_into()
            .map_err(|_| SourceError::new(format!("read of {len} bytes at {start}: the reader did not give a Uint8Array")))?;
        if u64::from(bytes.length()) != len {
            return Err(SourceError::new(format!("read of {len} bytes at {start}: got {}", bytes.length())));
        }
        Ok(bytes.to_vec())
    }
}

fn field(obj: &JsValue, key: &str) -> Option<JsValue> {
    Reflect::get(obj, &JsValue::from_str(key)).ok().filter(|v| !v.is_undefined() && !v.is_null())
}

/// Opens one input descriptor: `{ url, name? }` (one request for the first bytes, as the
/// page opens a URL) or `{ name, size, read, explain? }`.
pub async fn open(desc: &JsValue) -> Result<SetInput<JsSource>, String> {
    let name = field(desc, "name").and_then(|n| n.as_string());
    let explain = field(desc, "explain").and_then(|e| e.as_bool()).unwrap_or(true);
    if let Some(url) = field(desc, "url").and_then(|u| u.as_string()) {
        let src = HttpSource::open(&url, Rc::new(FetchCount::default())).await.map_err(|e| e.to_string())?;
        return Ok(SetInput { name: name.unwrap_or_else(|| file_name_of(&url)), src: JsSource::Http(src), explain });
    }
    let read: Function = field(desc, "read").and_then(|r| r.dyn_into().ok()).ok_or("an input is neither { url } nor { name, size, read }")?;
    let size = field(desc, "size").and_then(|s| s.as_f64()).filter(|s| s.is_finite() && *s >= 0.0).ok_or("an input's size is not a length in bytes")?;
    Ok(SetInput { name: name.unwrap_or_else(|| "file".to_string()), src: JsSource::Reader { len: size as u64, read }, explain })
}

/// Opens every descriptor of an array, in order.
pub async fn open_all(descs: &js_sys::Array) -> Result<Vec<SetInput<JsSource>>, String> {
    let mut out = Vec::new();
    for d in descs.iter() {
        out.push(open(&d).await?);
    }
    Ok(out)
}
