//! The page's clock and trace marks, and the warm-up's stand-down: small calls that the
//! views, the hooks and the workers' page side all make. Here, outside both rooms, so that
//! a worker's page side never imports a view.

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
