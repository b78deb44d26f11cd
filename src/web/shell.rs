//! The first view is plain HTML (index.html's `#shell`), shown before this app has loaded;
//! `www/loader.js` starts the app on the first sign that a file is coming and keeps what
//! the person chose, dropped or typed meanwhile in `window.__tensorpeek.pending`. Here the
//! app takes that hand-off and removes the shell before it renders its own first view (the
//! same markup, so nothing moves).

use js_sys::Reflect;
use wasm_bindgen::{JsCast, JsValue};

/// What reached the shell before the app ran.
pub enum Handoff {
    /// Files from the file or folder button (`folder`: the folder button).
    Picked { files: Vec<web_sys::File>, folder: bool },
    /// A drop: its entries (walked when one is a folder) and its files.
    Dropped { entries: Vec<web_sys::FileSystemEntry>, files: Vec<web_sys::File>, directory: bool },
    /// The URL field's text.
    Url(String),
}

fn get(v: &JsValue, key: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

fn list<T: JsCast>(v: &JsValue) -> Vec<T> {
    match v.dyn_ref::<js_sys::Array>() {
        Some(a) => a.iter().filter_map(|x| x.dyn_into::<T>().ok()).collect(),
        None => Vec::new(),
    }
}

/// `window.__tensorpeek`, the loader's object, when the loader ran.
fn loader() -> Option<JsValue> {
    let window = web_sys::window()?;
    let tp = get(&window, "__tensorpeek");
    (!tp.is_undefined() && !tp.is_null()).then_some(tp)
}

/// What the loader holds for the app (`pending`), when it holds something.
fn pending(tp: &JsValue) -> Option<JsValue> {
    let p = get(tp, "pending");
    (!p.is_undefined() && !p.is_null()).then_some(p)
}

/// Whether the loader set `key` (`named`: the address names files; `embedded`: `?embed`).
pub fn loader_says(key: &str) -> bool {
    loader().is_some_and(|tp| get(&tp, key).is_truthy())
}

/// Whether the loader's early job (a file given before the app took over, read by the
/// loader's parse worker or its first stage) has yet to put its first rows on screen: it
/// has neither shown them nor answered, nor failed.
pub fn early_rows_coming() -> bool {
    let Some(tp) = loader() else { return false };
    let early = get(&tp, "early");
    early.is_object() && !get(&tp, "firstRows").is_truthy() && !get(&early, "answered").is_truthy() && !get(&early, "failed").is_truthy()
}

/// Whether something waits to be handed over (without taking it).
pub fn has_pending() -> bool {
    loader().is_some_and(|tp| pending(&tp).is_some())
}

/// Takes the hand-off (once).
pub fn take() -> Option<Handoff> {
    let tp = loader()?;
    let p = pending(&tp);
    let _ = Reflect::set(&tp, &JsValue::from_str("pending"), &JsValue::NULL);
    let p = p?;
    if let Some(url) = get(&p, "url").as_string() {
        return Some(Handoff::Url(url));
    }
    let files = list::<web_sys::File>(&get(&p, "files"));
    let entries = get(&p, "entries");
    if !entries.is_undefined() {
        // What webkitGetAsEntry() returned, taken as it is (as the app's own drop handler
        // takes it): the walker uses only the entries' methods.
        let entries = match entries.dyn_ref::<js_sys::Array>() {
            Some(a) => a.iter().filter(|x| x.is_object()).map(|x| x.unchecked_into::<web_sys::FileSystemEntry>()).collect(),
            None => Vec::new(),
        };
        return Some(Handoff::Dropped { entries, files, directory: get(&p, "directory").is_truthy() });
    }
    Some(Handoff::Picked { files, folder: get(&p, "folder").is_truthy() })
}

/// What a person had begun in the first view when the app took over: the URL field's
/// text and which control had the focus (by id; the app's controls have the same ids).
pub struct Carry {
    url: String,
    focus: Option<String>,
}

fn document() -> Option<web_sys::Document> {
    web_sys::window().and_then(|w| w.document())
}

thread_local! {
    /// What [`remove`] found begun in the first view, until the app's controls exist.
    static CARRIED: std::cell::RefCell<Option<Carry>> = const { std::cell::RefCell::new(None) };
}

/// Removes the first view's plain-HTML copy (just before the app mounts: Yew takes over
/// `<body>`; the page paints the app's own copy next) and keeps what was begun in it for
/// [`restore`].
pub fn remove() {
    let carry = take_over();
    CARRIED.with(|c| *c.borrow_mut() = Some(carry));
}

fn take_over() -> Carry {
    let mut carry = Carry { url: String::new(), focus: None };
    let Some(doc) = document() else { return carry };
    let Some(shell) = doc.get_element_by_id("shell") else { return carry };
    if let Ok(Some(input)) = shell.query_selector("#url-input") {
        if let Some(input) = input.dyn_ref::<web_sys::HtmlInputElement>() {
            carry.url = input.value();
        }
    }
    if let Some(active) = doc.active_element() {
        if shell.contains(Some(&active)) && !active.id().is_empty() {
            carry.focus = Some(active.id());
        }
    }
    shell.remove();
    carry
}

/// Puts what was begun in the first view into the app's own controls (once they are all
/// in the document).
pub fn restore() {
    let Some(carry) = CARRIED.with(|c| c.borrow_mut().take()) else { return };
    let Some(doc) = document() else { return };
    if !carry.url.is_empty() {
        if let Some(input) = doc.get_element_by_id("url-input").and_then(|e| e.dyn_into::<web_sys::HtmlInputElement>().ok()) {
            if input.value().is_empty() {
                input.set_value(&carry.url);
            }
        }
    }
    if let Some(id) = carry.focus {
        if let Some(el) = doc.get_element_by_id(&id).and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok()) {
            let _ = el.focus();
        }
    }
}
