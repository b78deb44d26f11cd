//! Files given by URL, and the page's address.
//!
//! - [`Address`]: what the page was opened with — `?url=` (repeated), `?hf=ORG/REPO[@REV]`
//!   with `&hub=BASE`, `?embed=1`, and the deep link in the fragment
//!   (`#file=…&tab=…&tensor=…&filter=…`, see [`Link`]).
//! - [`resolve`]: what was given (URLs, a Hub repository) → the files to open: a
//!   `*.safetensors.index.json` brings its shards and the `config.json` beside it; a Hub
//!   repository is listed through the model-info API and its checkpoint (or its GGUF
//!   models, to choose from) opened by URL. Only what was given, and the files it names,
//!   is ever fetched. The index and config are read here (they are small JSON, read whole)
//!   and handed to the open job as companions; the model files are read header-only by
//!   the parse worker.

use super::hooks::OpenRequest;
use super::state::HubChoices;
use crate::model::files::MAX_COMPANION_BYTES;
use crate::source::http::{get_small, FetchCount, HttpSource};
use crate::source::remote::{is_http_url, DEFAULT_HUB, MAX_LISTING_BYTES};
use crate::source::resolve::Fetch;
use crate::source::ByteSource;
use std::rc::Rc;

/// The state a link keeps in the fragment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Link {
    /// URLs to open (each file's own, or the index it came with).
    pub files: Vec<String>,
    /// The tab shown: a file's name, or `model` for the merged Model tab.
    pub tab: Option<String>,
    /// The selected tensor's name.
    pub tensor: Option<String>,
    /// The tensor table's name filter.
    pub filter: Option<String>,
    /// The "Will it run?" card's settings (`fit.c=8192&fit.gpu=rtx4090…`), as (key without
    /// `fit.`, value); only those that differ from the card's defaults.
    pub fit: Vec<(String, String)>,
}

impl Link {
    /// Reads `file=…&tab=…&tensor=…&filter=…` (form-encoded, as [`Link::fragment`] writes).
    pub fn parse(fragment: &str) -> Link {
        let text = fragment.strip_prefix('#').unwrap_or(fragment);
        let Ok(params) = web_sys::UrlSearchParams::new_with_str(text) else {
            return Link::default();
        };
        let one = |k: &str| params.get(k).filter(|v| !v.is_empty());
        let files = params.get_all("file").iter().filter_map(|v| v.as_string()).filter(|u| is_http_url(u)).collect();
        // The card's keys, in the order given (each once, at most MAX_FIT_KEYS).
        let mut fit: Vec<(String, String)> = Vec::new();
        for part in text.split('&') {
            let key = part.split_once('=').map_or(part, |(k, _)| k);
            let Some(name) = key.strip_prefix(FIT_PREFIX) else { continue };
            if fit.len() >= MAX_FIT_KEYS || fit.iter().any(|(k, _)| k == name) {
                continue;
            }
            if let Some(v) = params.get(key) {
                fit.push((name.to_string(), v));
            }
        }
        Link { files, tab: one("tab"), tensor: one("tensor"), filter: one("filter"), fit }
    }

    /// The fragment (without `#`); empty when there is nothing to link.
    pub fn fragment(&self) -> String {
        let Ok(params) = web_sys::UrlSearchParams::new() else {
            return String::new();
        };
        if self.files.is_empty() {
            return String::new();
        }
        for f in &self.files {
            params.append("file", f);
        }
        for (k, v) in [("tab", &self.tab), ("tensor", &self.tensor), ("filter", &self.filter)] {
            if let Some(v) = v {
                params.append(k, v);
            }
        }
        for (k, v) in &self.fit {
            params.append(&format!("{FIT_PREFIX}{k}"), v);
        }
        params.to_string().into()
    }
}

/// The prefix of the "Will it run?" card's keys in the fragment.
pub const FIT_PREFIX: &str = "fit.";
/// Most `fit.` keys read from a fragment (the card has 13; a longer link is not its own).
pub const MAX_FIT_KEYS: usize = 32;

/// The "Will it run?" card's settings in the page's address, outside the page state: the
/// card changes them on every input (a slider drag), and dispatching each change would
/// render the whole app. The app writes the view's link here ([`FitLink::set_view`]); the
/// card its settings ([`FitLink::set_fit`]); either writes the fragment (when the view can
/// be linked) and tells the Copy link button. A context (`use_context::<FitLink>()`); a
/// view rendered without it (the warm-up) keeps its settings to itself.
#[derive(Clone, Default)]
pub struct FitLink(Rc<FitLinkInner>);

#[derive(Default)]
struct FitLinkInner {
    /// The view's link, without the card's settings.
    view: std::cell::RefCell<Link>,
    fit: std::cell::RefCell<Vec<(String, String)>>,
    /// Whether the app writes the fragment now (not while a link waits to be applied).
    writing: std::cell::Cell<bool>,
    listeners: std::cell::RefCell<Vec<(u32, yew::Callback<()>)>>,
    next_id: std::cell::Cell<u32>,
}

impl PartialEq for FitLink {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl FitLink {
    /// Starts with the settings the page's address gave.
    pub fn new(fit: Vec<(String, String)>) -> FitLink {
        let l = FitLink::default();
        *l.0.fit.borrow_mut() = fit;
        l
    }
    /// The card's settings as last written (or as the address gave them).
    pub fn fit(&self) -> Vec<(String, String)> {
        self.0.fit.borrow().clone()
    }
    /// The view's link with the card's settings.
    pub fn link(&self) -> Link {
        let mut l = self.0.view.borrow().clone();
        l.fit = self.fit();
        l
    }
    /// The card's settings changed.
    pub fn set_fit(&self, fit: Vec<(String, String)>) {
        if *self.0.fit.borrow() == fit {
            return;
        }
        *self.0.fit.borrow_mut() = fit;
        self.publish();
    }
    /// The view changed: its link, and whether the fragment is written (not while a link
    /// the page was opened with waits to be applied). The card's settings go with it.
    pub fn set_view(&self, view: Link, write: bool) {
        self.0.writing.set(write);
        let changed = *self.0.view.borrow() != view;
        *self.0.view.borrow_mut() = view;
        if changed {
            self.publish();
        } else if write {
            set_fragment(&self.link().fragment());
        }
    }
    /// The fragment is written from now on (the link the page was opened with is applied).
    pub fn start_writing(&self) {
        self.0.writing.set(true);
    }
    fn publish(&self) {
        if self.0.writing.get() {
            set_fragment(&self.link().fragment());
        }
        let listeners: Vec<yew::Callback<()>> = self.0.listeners.borrow().iter().map(|(_, c)| c.clone()).collect();
        for c in listeners {
            c.emit(());
        }
    }
    /// Calls `cb` after each change of the link; returns the id for [`FitLink::unsubscribe`].
    pub fn subscribe(&self, cb: yew::Callback<()>) -> u32 {
        let id = self.0.next_id.get().wrapping_add(1);
        self.0.next_id.set(id);
        self.0.listeners.borrow_mut().push((id, cb));
        id
    }
    pub fn unsubscribe(&self, id: u32) {
        self.0.listeners.borrow_mut().retain(|(i, _)| *i != id);
    }
}

/// What the page's address asks for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Address {
    /// `?url=` values and the link's `file=` values, each once, in order.
    pub urls: Vec<String>,
    /// `?hf=ORG/REPO[@REV]`.
    pub hf: Option<String>,
    /// `&hub=BASE` (default: the public Hub).
    pub hub: String,
    /// `?embed=1`: the compact layout for an `<iframe>`.
    pub embed: bool,
    pub link: Link,
}

impl Address {
    /// Reads the page's own address.
    pub fn current() -> Address {
        let loc = web_sys::window().map(|w| w.location());
        let search = loc.as_ref().and_then(|l| l.search().ok()).unwrap_or_default();
        let hash = loc.as_ref().and_then(|l| l.hash().ok()).unwrap_or_default();
        let params = web_sys::UrlSearchParams::new_with_str(&search).ok();
        let get = |k: &str| params.as_ref().and_then(|p| p.get(k)).filter(|v| !v.is_empty());
        let link = Link::parse(&hash);
        let mut urls: Vec<String> = Vec::new();
        let given = params.as_ref().map(|p| p.get_all("url").iter().filter_map(|v| v.as_string()).collect::<Vec<_>>()).unwrap_or_default();
        for u in given.into_iter().chain(link.files.iter().cloned()) {
            let u = u.trim().to_string();
            if !u.is_empty() && !urls.contains(&u) {
                urls.push(u);
            }
        }
        Address {
            urls,
            hf: get("hf"),
            hub: get("hub").unwrap_or_else(|| DEFAULT_HUB.to_string()),
            embed: get("embed").as_deref() == Some("1"),
            link,
        }
    }
}

/// This page's address with `fragment` (and `?embed=1` when `embed`), for a link.
pub fn page_url(fragment: &str, embed: bool) -> String {
    let loc = web_sys::window().map(|w| w.location());
    let origin = loc.as_ref().and_then(|l| l.origin().ok()).unwrap_or_default();
    let path = loc.as_ref().and_then(|l| l.pathname().ok()).unwrap_or_default();
    let query = if embed { "?embed=1" } else { "" };
    if fragment.is_empty() {
        format!("{origin}{path}{query}")
    } else {
        format!("{origin}{path}{query}#{fragment}")
    }
}

/// Writes the fragment into the address bar without a new history entry (and without
/// scrolling). Nothing happens when it is already there.
pub fn set_fragment(fragment: &str) {
    let Some(w) = web_sys::window() else { return };
    let now = w.location().hash().unwrap_or_default();
    let now = now.strip_prefix('#').unwrap_or(&now);
    if now == fragment {
        return;
    }
    let search = w.location().search().unwrap_or_default();
    let path = w.location().pathname().unwrap_or_default();
    let url = if fragment.is_empty() { format!("{path}{search}") } else { format!("{path}{search}#{fragment}") };
    if let Ok(h) = w.history() {
        let _ = h.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&url));
    }
}

pub use crate::source::resolve::{parse_field, Given};

/// What [`resolve`] found.
#[derive(Default)]
pub struct Resolved {
    pub request: OpenRequest,
    /// Files that could not be read: (name, why).
    pub failed: Vec<(String, String)>,
    pub notes: Vec<String>,
    /// A Hub repository's GGUF models, when there are several to choose from.
    pub choices: Option<HubChoices>,
}

/// The browser's `fetch` for [`crate::source::resolve`].
struct PageFetch;

impl Fetch for PageFetch {
    /// A JSON companion behind a URL, read whole (≤ [`MAX_COMPANION_BYTES`]).
    async fn read_json(&self, url: &str) -> Result<Vec<u8>, String> {
        let src = HttpSource::open(url, Rc::new(FetchCount::default())).await.map_err(|e| e.to_string())?;
        if src.len() > MAX_COMPANION_BYTES {
            return Err(format!("it is larger than the {MAX_COMPANION_BYTES} bytes read for a JSON file"));
        }
        src.read_at(0, src.len()).await.map_err(|e| e.to_string())
    }

    async fn listing(&self, url: &str) -> Result<Vec<u8>, String> {
        get_small(url, MAX_LISTING_BYTES, &FetchCount::default()).await.map_err(|e| e.to_string())
    }
}

/// Turns what was given into the files to open ([`crate::source::resolve::resolve`]).
/// `hub` is the Hub's base URL.
pub async fn resolve(given: Vec<Given>, hub: &str) -> Resolved {
    let r = crate::source::resolve::resolve(given, hub, &PageFetch).await;
    let request = OpenRequest { urls: r.urls, companions: r.companions, title: r.title, ..OpenRequest::default() };
    Resolved { request, failed: r.failed, notes: r.notes, choices: r.choices }
}

/// The files of a chosen GGUF model, as an open request.
pub fn chosen(urls: &[String], files: &[String]) -> OpenRequest {
    OpenRequest { urls: crate::source::resolve::chosen(urls, files), ..OpenRequest::default() }
}
