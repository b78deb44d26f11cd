//! The worker side of the page's conversion audit: a [`Request::Audit`] names the two
//! sides' files — `File`s, or the URLs files were opened from; they are opened through the
//! set driver (`source::set::open_set`, the CLI's too — the source checkpoint's config.json
//! rides along as a small in-memory `Blob`), planned, and read side by side by the one
//! audit loop ([`crate::source::audit::run_audit`]): a `File` through [`BlobSource`], whose
//! `read_into` reads each chunk through a BYOB stream into a reused buffer; a URL through
//! [`HttpSource`], one range request per chunk. Progress goes to the page at most every
//! `progress_ms` (the values worker's interval); Cancel terminates the worker.

use super::protocol::{to_js, AuditResponse, Request};
use crate::model::audit::plan;
use crate::source::audit::{run_audit, side_of, AuditOptions, AuditProgress};
use crate::source::blob::BlobSource;
use crate::source::http::{FetchCount, HttpSource};
use crate::source::page::PageSource;
use std::rc::Rc;
use crate::source::set::{open_set, SetInput, SetOptions};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::DedicatedWorkerGlobalScope;

/// The files of a JS array (`File`s or URLs) with their names, as set inputs. A URL is
/// opened here (one range request, which also brings the head of its header).
async fn inputs(files: &JsValue, names: &[String]) -> Result<Vec<SetInput<PageSource>>, String> {
    let array: js_sys::Array = files.clone().dyn_into().map_err(|_| "the files are not an array".to_string())?;
    if array.length() as usize != names.len() {
        return Err(format!("{} files but {} names", array.length(), names.len()));
    }
    let mut out = Vec::with_capacity(names.len());
    for (name, f) in names.iter().zip(array.iter()) {
        let src = match f.as_string() {
            Some(url) => PageSource::Http(HttpSource::open(&url, Rc::new(FetchCount::default())).await.map_err(|e| format!("{name}: {e}"))?),
            None => PageSource::Blob(Rc::new(BlobSource::with_read_ahead(f.dyn_into().map_err(|_| format!("{name} is not a file"))?))),
        };
        out.push(SetInput { name: name.clone(), src, explain: true });
    }
    Ok(out)
}

/// config.json's text as a file of the set.
fn config_input(text: &str) -> Option<SetInput<PageSource>> {
    let parts = js_sys::Array::of1(&JsValue::from_str(text));
    let blob = web_sys::Blob::new_with_str_sequence(&parts).ok()?;
    Some(SetInput { name: "config.json".into(), src: PageSource::Blob(Rc::new(BlobSource::new(blob))), explain: true })
}

fn post(scope: &DedicatedWorkerGlobalScope, msg: &AuditResponse) {
    // A failed post (the page is gone) leaves nothing to tell.
    if let Ok(v) = to_js(msg) {
        let _ = scope.post_message(&v);
    }
}

/// Runs an audit request and posts its progress (at most every `progress_ms`) and result
/// (with the worker's memory, `wasm_memory()`).
pub async fn run(scope: &DedicatedWorkerGlobalScope, request: Request, progress_ms: f64, wasm_memory: fn() -> u64) {
    let Request::Audit { source, source_names, target, target_names, config, first_mismatch } = request else {
        return;
    };
    let fail = |message: String| post(scope, &AuditResponse::AuditFailed { message });
    let (mut s_in, t_in) = match (inputs(&source, &source_names).await, inputs(&target, &target_names).await) {
        (Ok(s), Ok(t)) => (s, t),
        (Err(e), _) | (_, Err(e)) => return fail(format!("the audit could not open its files: {e}")),
    };
    if let Some(c) = config.as_deref().and_then(config_input) {
        s_in.push(c);
    }
    let started = js_sys::Date::now();
    let s_set = open_set(&s_in, SetOptions::default(), |_, _| {}).await;
    let t_set = open_set(&t_in, SetOptions::default(), |_, _| {}).await;
    let (s_side, s_idx) = side_of(&s_set);
    let (t_side, t_idx) = side_of(&t_set);
    let plan = match plan(&s_side, &t_side) {
        Ok(p) => p,
        Err(e) => return fail(e.to_string()),
    };
    let s_src: Vec<&PageSource> = s_idx.iter().filter_map(|&i| s_in.get(i).map(|x| &x.src)).collect();
    let t_src: Vec<&PageSource> = t_idx.iter().filter_map(|&i| t_in.get(i).map(|x| &x.src)).collect();
    let mut last = f64::NEG_INFINITY;
    let progress = |p: &AuditProgress| {
        let now = js_sys::Date::now();
        if p.bytes_done == 0 || p.pairs_done == p.pairs || now - last >= progress_ms {
            last = now;
            post(
                scope,
                &AuditResponse::AuditProgress {
                    pairs_done: p.pairs_done as u64,
                    pairs: p.pairs as u64,
                    done: p.bytes_done,
                    total: p.bytes_total,
                    current: p.current.clone(),
                },
            );
        }
        true
    };
    let options = AuditOptions { first_mismatch, ..AuditOptions::default() };
    let audit = run_audit(&plan, &s_src, &t_src, options, progress).await;
    post(
        scope,
        &AuditResponse::AuditDone {
            audit: Box::new(audit),
            ms: js_sys::Date::now() - started,
            bytes: plan.source_bytes_to_read(),
            wasm_memory: wasm_memory(),
        },
    );
}
