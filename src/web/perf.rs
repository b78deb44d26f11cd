//! The page's clock and trace marks: small calls that the
//! views, the hooks and the workers' page side all make. Here, outside both rooms, so that
//! a worker's page side never imports a view.

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
