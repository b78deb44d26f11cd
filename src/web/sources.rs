//! The open files' byte sources, by tab id: a local file's `Blob`, or the URL a file was
//! opened from — the web handles the page state must not hold. The app owns one registry
//! and hands it down as a context; a view that reads on request (a GGUF array's further
//! elements, a tensor's values) looks its file up here, and closing a tab drops the handle.

use crate::source::blob::BlobSource;
use crate::source::http::{FetchCount, HttpSource};
use crate::source::page::PageSource;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use yew::prelude::*;

/// Where a tab's file is read from.
#[derive(Clone)]
pub enum FileSource {
    Blob(Rc<BlobSource>),
    /// Opened by URL: later reads are range requests to it.
    Url(Rc<str>),
}

impl FileSource {
    /// The local file, if it is one.
    pub fn blob(&self) -> Option<&Rc<BlobSource>> {
        match self {
            FileSource::Blob(b) => Some(b),
            FileSource::Url(_) => None,
        }
    }

    /// A byte source for reads on request; `len` is the file's length as inspected (each
    /// HTTP answer is checked against it).
    pub fn reader(&self, len: u64) -> PageSource {
        match self {
            FileSource::Blob(b) => PageSource::Blob(b.clone()),
            FileSource::Url(u) => PageSource::Http(HttpSource::known(u, len, Rc::new(FetchCount::default()))),
        }
    }
}

#[derive(Clone, Default)]
pub struct Sources(Rc<RefCell<HashMap<u32, FileSource>>>);

/// One registry per app: equal by identity.
impl PartialEq for Sources {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl Sources {
    pub fn insert(&self, id: u32, src: FileSource) {
        self.0.borrow_mut().insert(id, src);
    }

    pub fn get(&self, id: u32) -> Option<FileSource> {
        self.0.borrow().get(&id).cloned()
    }

    pub fn remove(&self, id: u32) {
        self.0.borrow_mut().remove(&id);
    }
}

/// The registry from the app's context (an empty one outside it).
#[hook]
pub fn use_sources() -> Sources {
    use_context::<Sources>().unwrap_or_default()
}
