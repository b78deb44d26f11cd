//! A browser `Blob` (a dropped or picked `File`) as a byte source. Each read is
//! `blob.slice(start, end).arrayBuffer()`: only the requested range is read. Offsets go to
//! `slice` as f64 (exact up to 2^53), never as i32.

use super::ByteSource;
use crate::error::SourceError;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

pub struct BlobSource {
    blob: web_sys::Blob,
}

impl BlobSource {
    pub fn new(blob: web_sys::Blob) -> Self {
        BlobSource { blob }
    }

    pub fn blob(&self) -> &web_sys::Blob {
        &self.blob
    }
}

/// Largest offset a JS number represents exactly.
const MAX_SAFE_OFFSET: u64 = (1 << 53) - 1;

fn js_err(what: &str, e: JsValue) -> SourceError {
    let detail = e
        .as_string()
        // Error and DOMException (NotReadableError when the file changed) carry `message`;
        // read it by reflection so a thrown non-Error value cannot trip a conversion.
        .or_else(|| {
            js_sys::Reflect::get(&e, &JsValue::from_str("message"))
                .ok()
                .and_then(|m| m.as_string())
        })
        .unwrap_or_else(|| "unknown error".to_string());
    SourceError::new(format!("{what}: {detail}"))
}

impl ByteSource for BlobSource {
    fn len(&self) -> u64 {
        let size = self.blob.size();
        if size.is_finite() && size >= 0.0 {
            size as u64
        } else {
            0
        }
    }

    async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        let end = start
            .checked_add(len)
            .filter(|&e| e <= MAX_SAFE_OFFSET)
            .ok_or_else(|| SourceError::new(format!("range {start}+{len} is out of reach")))?;
        let slice = self
            .blob
            .slice_with_f64_and_f64(start as f64, end as f64)
            .map_err(|e| js_err("Blob.slice failed", e))?;
        let buf = JsFuture::from(slice.array_buffer())
            .await
            .map_err(|e| js_err(&format!("reading bytes {start}..{end} failed"), e))?;
        let bytes = js_sys::Uint8Array::new(&buf).to_vec();
        if bytes.len() as u64 != len {
            return Err(SourceError::new(format!(
                "asked for {len} bytes at {start}, got {} (the file changed?)",
                bytes.len()
            )));
        }
        Ok(bytes)
    }
}
