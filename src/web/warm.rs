//! Warming the first file view. V8 compiles a wasm function the first time it is called,
//! and runs it in its baseline tier at first: the first file a person dropped paid, between
//! its inspection and its first paint, for compiling every function its view calls (Yew's
//! components, the table, the formatting, the inspection's decoding). So when the app has
//! started, and the page is idle, it renders once a file view of a small made-up
//! safetensors file and of a small made-up GGUF file — each first as a drop shows it while
//! its header is read, then whole — (`crate::samples`; their inspections
//! come encoded as the parse worker's answers are, made natively by the parsers and
//! committed) into an element that is never in the document,
//! then unmounts it. Nothing of it is seen, read from disk or sent anywhere.

use super::views::file_view::FileView;
use super::state::{EarlyRows, FileEntry, Shared, Status, Tensors};
use gloo::timers::future::TimeoutFuture;
use std::rc::Rc;
use yew::prelude::*;

/// How long after the app's wasm has started the warm-up begins.
const START_AFTER_MS: u32 = 50;
/// The made-up files' inspections (`crate::samples::samples`), encoded as the parse worker
/// encodes its answers: made by the parsers natively and committed, kept current by
/// `tests/samples.rs`. The parsers stay out of the app's wasm (26 KB gzipped, measured).
const VIEW_INSPECTIONS: &[u8] = include_bytes!("warm_view.postcard");

/// The longest the take-over waits for the loader's first rows of a file given during the
/// warm-up ([`early_rows_first`]): the loader's own limit for an early answer
/// (`EARLY_WAIT_MS` in www/loader.js).
const EARLY_ROWS_WAIT_MS: f64 = 2_000.0;
/// How often it looks whether they are there, about a frame.
const EARLY_ROWS_POLL_MS: u32 = 16;
/// How long a warm view stays mounted: the sections it renders a frame later
/// (`hooks::use_painted`) come in this time.
const MOUNTED_MS: u32 = 60;
/// How long the view of the file being read stays before it is given the whole
/// inspection: a task apart, as at a real drop.
const READING_MOUNTED_MS: u32 = 0;

#[derive(Properties, PartialEq)]
struct WarmProps {
    file: FileEntry,
}

#[function_component(Warm)]
fn warm_view(p: &WarmProps) -> Html {
    html! { <FileView file={p.file.clone()} /> }
}

/// Runs the warm-up (once per page), then `then` (the app's take-over) — at once, without
/// a warm-up, when a file is already on its way: the app was started by a file chosen or
/// dropped before it ran (the loader holds it), or by an address that names files; then
/// that file warms the view itself. A file given while the warm-up runs (the loader keeps
/// it and reads it in its parse worker) ends the warm-up at its next step. An embedded
/// page (`?embed`) keeps its first view hidden until the app shows its own, so there the
/// app takes over first and warms after, standing down when it opens a file
/// (`perf::stand_down`).
pub fn first_view(then: impl FnOnce() + 'static) {
    if file_is_coming() {
        then();
        return;
    }
    // as www/loader.js decided to hide the first view
    let after = if super::shell::loader_says("embedded") {
        then();
        None
    } else {
        Some(then)
    };
    wasm_bindgen_futures::spawn_local(async move {
        TimeoutFuture::new(START_AFTER_MS).await;
        warm_views().await;
        if let Some(then) = after {
            early_rows_first().await;
            then();
        }
    });
}

/// Before the take-over: while the loader is putting the first rows of a file given during
/// the warm-up on screen (its first stage or parse worker), let it — the take-over's render
/// (~75 ms, then the file view's) held the main thread, and removed the first view before
/// those rows were shown (a trace of a cold drop 1 s after the load event, 2026-12-07) —
/// at most until the loader itself would give up on them (`EARLY_WAIT_MS` in
/// www/loader.js), then until a task after the next frame's start (`perf::after_frames`,
/// as the file view's second render waits).
async fn early_rows_first() {
    let since = super::perf::now_ms();
    let mut waited = false;
    while super::shell::early_rows_coming() && super::perf::now_ms() - since < EARLY_ROWS_WAIT_MS {
        waited = true;
        TimeoutFuture::new(EARLY_ROWS_POLL_MS).await;
    }
    if waited {
        let (done, painted) = futures::channel::oneshot::channel();
        super::perf::after_frames(2, move || {
            let _ = done.send(());
        });
        let _ = painted.await;
    }
}

async fn warm_views() {
    // decoded on this thread as a worker's answer is (see `crate::samples`)
    let Ok(inspections) = crate::samples::decode_view_inspections(VIEW_INSPECTIONS) else { return };
    for inspection in inspections {
        if super::shell::has_pending() || super::perf::stood_down() {
            return;
        }
        let name = inspection.name.clone();
        let Some(root) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.create_element("div").ok()) else { return };
        let early = EarlyRows { tensors: inspection.tensors().len() as u64, rows: crate::report::table::first_rows(inspection.tensors()) };
        let inspection = Rc::new(inspection);
        let file = FileEntry {
            id: u32::MAX,
            name: name.clone(),
            size: inspection.size,
            status: Status::Done(Shared(inspection.clone()), Tensors::of(inspection)),
            started_ms: 0.0,
            took_ms: Some(0.0),
            link: None,
            fetch: None,
            early: None,
        };
        // First as a drop shows it while the header is read ("Reading header…" and the
        // parse worker's first rows), then whole, in the same mounted view: what the first
        // rows' messages of a loaded app's first drop compiled on their first call (26–31
        // functions, ~5 ms; 8–21 with this: Chromium traces, 2026-12-07) is compiled here.
        let reading = FileEntry { status: Status::Reading, took_ms: None, early: Some(Rc::new(early)), ..file.clone() };
        let mut handle = yew::Renderer::<Warm>::with_root_and_props(root, WarmProps { file: reading }).render();
        TimeoutFuture::new(READING_MOUNTED_MS).await;
        handle.update(WarmProps { file });
        TimeoutFuture::new(MOUNTED_MS).await;
        handle.destroy();
        super::perf::mark(&format!("warmed {name}"));
    }
}

fn file_is_coming() -> bool {
    super::shell::has_pending() || super::shell::loader_says("named")
}


