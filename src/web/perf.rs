//! The page's clock and trace marks, the warm-up's stand-down and waiting for painted
//! frames: small calls that the views, the hooks and the workers' page side all make. Here, outside both rooms, so that
//! a worker's page side never imports a view.

use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

thread_local! {
    /// A real file is being opened: the warm-up (`web/warm.rs`) stops at its next step.
    static STOOD_DOWN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A real file is being opened (the opener says so): whatever of the warm-up has not run
/// yet does not. Here, not in `warm`, which renders views: the opener and the pool call it.
pub fn stand_down() {
    STOOD_DOWN.with(|s| s.set(true));
}

/// Whether a real file is being opened.
pub fn stood_down() -> bool {
    STOOD_DOWN.with(std::cell::Cell::get)
}

/// A `performance` mark named `tensorpeek: {what}` (seen in traces, and by the
/// benchmarks: when the warm-up ended, when the spare worker was ready).
pub fn mark(what: &str) {
    if let Some(p) = web_sys::window().and_then(|w| w.performance()) {
        let _ = p.mark(&format!("tensorpeek: {what}"));
    }
}

/// performance.now() in ms (0 when unavailable).
pub fn now_ms() -> f64 {
    web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
}

/// Runs `f` once, after the next painted frame ([`after_frames`]`(1, …)`) or after
/// `at_most_ms`, whichever comes first: a page that is not painting (a hidden tab, an
/// iframe out of view) pauses its animation frames, and what `f` does must not wait for
/// the person to come back.
pub fn after_a_frame(at_most_ms: u32, f: impl FnOnce() + 'static) {
    let f = Rc::new(RefCell::new(Some(f)));
    let g = f.clone();
    after_frames(1, move || {
        if let Some(f) = g.borrow_mut().take() {
            f();
        }
    });
    gloo::timers::callback::Timeout::new(at_most_ms, move || {
        if let Some(f) = f.borrow_mut().take() {
            f();
        }
    })
    .forget();
}

/// Runs `f` in a task queued from the `frames`-th animation frame from now (a task at once
/// for 0): after the frames before it have been painted, a frame's rendering following its
/// animation callbacks. [`use_painted`](super::hooks::use_painted) and the take-over
/// (`web/warm.rs`) wait with it.
pub fn after_frames(frames: u32, f: impl FnOnce() + 'static) {
    let Some(rest) = frames.checked_sub(1) else {
        gloo::timers::callback::Timeout::new(0, f).forget();
        return;
    };
    let frame = Closure::once_into_js(move || after_frames(rest, f));
    if let Some(w) = web_sys::window() {
        let _ = w.request_animation_frame(frame.unchecked_ref());
    }
}
