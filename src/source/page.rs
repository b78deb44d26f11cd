//! A file the page reads, whichever way it was opened: a local `Blob` ([`blob`]) or a URL
//! read with range requests ([`http`]) — one byte source type for the app's reads on request
//! and the values worker's conversion audit (wasm only).
//!
//! [`blob`]: super::blob
//! [`http`]: super::http

use super::blob::BlobSource;
use super::http::HttpSource;
use super::ByteSource;
use crate::error::SourceError;
use std::rc::Rc;

/// A page's file opened for reading: a local `Blob` or a URL (the app's open tabs,
/// `web::sources::FileSource::reader`, and the audit worker's files).
pub enum PageSource {
    Blob(Rc<BlobSource>),
    Http(HttpSource),
}

impl ByteSource for PageSource {
    fn len(&self) -> u64 {
        match self {
            PageSource::Blob(b) => b.len(),
            PageSource::Http(h) => h.len(),
        }
    }

    async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        match self {
            PageSource::Blob(b) => b.read_at(start, len).await,
            PageSource::Http(h) => h.read_at(start, len).await,
        }
    }

    async fn read_into(&self, start: u64, len: u64, buf: &mut Vec<u8>) -> Result<(), SourceError> {
        match self {
            PageSource::Blob(b) => b.read_into(start, len, buf).await,
            PageSource::Http(h) => h.read_into(start, len, buf).await,
        }
    }
}
