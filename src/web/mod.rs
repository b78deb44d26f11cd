//! The Yew app — the only place with web-sys/gloo besides the browser byte sources in
//! `source/` — and the values Web Worker, in three rooms:
//!
//! - here, the page's own state, hooks and address: [`app`] (drop zone, tabs), [`state`]
//!   (plain data + actions), [`sources`] (the files' `Blob`s, outside the state), [`hooks`]
//!   (opening files, a panel's job in the worker), [`audit`] (the audit's sides, run and
//!   hook), [`folder`] (walking a dropped folder), [`remote`] (the page's address, deep
//!   links and resolving URLs and Hub repositories), [`warm`] (the first file view
//!   rendered once, unseen, while idle), [`shell`] (taking over from the first view's plain
//!   HTML), [`perf`] (the clock, trace marks, the warm-up's stand-down);
//! - [`views`]: every card and tab, and what they share;
//! - [`worker`]: what runs in a Web Worker, its typed messages, and the page's end of each
//!   worker (the warm spare, one job, the open jobs).
//!
//! A view never imports the worker room, nor a worker file a view (tests/layers.rs): they
//! meet here.

// Everything but the workers' side is the page's (feature `page`): the workers alone are built
// with feature `worker` (index.html), without Yew or gloo.
#[cfg(feature = "page")]
pub mod app;
#[cfg(feature = "page")]
pub mod audit;
#[cfg(feature = "page")]
pub mod folder;
#[cfg(feature = "page")]
pub mod hooks;
#[cfg(feature = "page")]
pub mod perf;
#[cfg(feature = "page")]
pub mod remote;
#[cfg(feature = "page")]
pub mod shell;
#[cfg(feature = "page")]
pub mod sources;
#[cfg(feature = "page")]
pub mod state;
#[cfg(feature = "page")]
pub mod views;
#[cfg(feature = "page")]
pub mod warm;
pub mod worker;

/// Installs the panic hook, warms the file view unseen, then mounts the app on `<body>`.
///
/// The warm-up comes before the take-over: while it renders (two made-up files, ~200 ms
/// in all), the first view and www/loader.js still own the page, so a file given in that
/// moment is read at once by the loader's parse worker and its first rows shown by the
/// loader (the app then takes over that job), instead of waiting behind the warm-up's
/// renders (README, Performance: the cold drop, the file 1 s after the load event).
#[cfg(feature = "page")]
pub fn start() {
    std::panic::set_hook(Box::new(|info| show_panic(&info.to_string())));
    warm::first_view(take_over);
}

/// The app takes the page over from the first view.
#[cfg(feature = "page")]
fn take_over() {
    // www/loader.js started the parse worker before the app: it becomes the app's spare
    // (or its first open job's worker, web/worker/opener.rs), and a file dropped from now on
    // is the app's to read.
    worker::pool::app_running();
    worker::pool::warm();
    shell::remove();
    yew::Renderer::<app::App>::new().render();
    register_service_worker();
}

/// Registers `sw.js` (the app shell for offline use; it never caches model bytes). Only
/// where the browser offers service workers (a secure context); a refusal changes nothing.
#[cfg(feature = "page")]
fn register_service_worker() {
    let Some(w) = web_sys::window() else { return };
    let nav = w.navigator();
    let has = js_sys::Reflect::get(&nav, &wasm_bindgen::JsValue::from_str("serviceWorker")).is_ok_and(|v| !v.is_undefined() && !v.is_null());
    if !has {
        return;
    }
    let promise = nav.service_worker().register("./sw.js");
    wasm_bindgen_futures::spawn_local(async move {
        let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
    });
}

/// After a panic the page's wasm cannot run again; what it last rendered stays on screen
/// and this notice (plain DOM, text only) says what happened, never a blank page. Files are
/// parsed and decoded in workers, whose panics the page survives (see [`worker::opener`]).
#[cfg(feature = "page")]
fn show_panic(message: &str) {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else { return };
    let (Ok(div), Some(body)) = (doc.create_element("div"), doc.body()) else { return };
    let _ = div.set_attribute("role", "alert");
    let _ = div.set_attribute("class", "page-panic");
    let _ = div.set_attribute("data-testid", "page-panic");
    div.set_text_content(Some(&format!("tensorpeek stopped working in this tab: {message}. The views above stay readable; reload the page to go on.")));
    let _ = body.prepend_with_node_1(&div);
}
