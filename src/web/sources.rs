//! The open files' byte sources (their `Blob`s), by tab id: the web handles the page state
//! must not hold. The app owns one registry and hands it down as a context; a view that
//! reads on request (a GGUF array's further elements, a tensor's values) looks its file up
//! here, and closing a tab drops the handle.

use crate::source::blob::BlobSource;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use yew::prelude::*;

#[derive(Clone, Default)]
pub struct Sources(Rc<RefCell<HashMap<u32, Rc<BlobSource>>>>);

/// One registry per app: equal by identity.
impl PartialEq for Sources {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl Sources {
    pub fn insert(&self, id: u32, src: Rc<BlobSource>) {
        self.0.borrow_mut().insert(id, src);
    }

    pub fn get(&self, id: u32) -> Option<Rc<BlobSource>> {
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
