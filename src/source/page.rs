//! A file the page reads, whichever way it was opened: a local `Blob` ([`blob`]) or a URL
//! read with range requests ([`http`]) — one byte source type for the app's reads on request
//! and the values worker's conversion audit (wasm only).
//!
//! [`blob`]: super::blob
//! [`http`]: super::http

use super::blob::BlobSource;
use super::http::HttpSource;
use super::delegate_byte_source;
use std::rc::Rc;

/// A page's file opened for reading: a local `Blob` or a URL (the app's open tabs,
/// `web::sources::FileSource::reader`, and the audit worker's files).
pub enum PageSource {
    Blob(Rc<BlobSource>),
    Http(HttpSource),
}

delegate_byte_source!(PageSource { Blob, Http });
