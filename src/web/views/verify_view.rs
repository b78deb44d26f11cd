//! "Verify file": the SHA-256 of the whole file, streamed in the worker with progress,
//! rate, ETA and Cancel, compared with a hash the person pastes (a bare digest, a
//! `sha256sum` line, an LFS pointer's `oid sha256:…`) — the check after a 5 GB download.

use super::components::{CopyButton, FindingList};
use crate::web::hooks::{use_worker_job, JobRequest, Run};
use crate::web::sources::use_sources;
use crate::fmt;
use crate::source::hash::expected_digest;
use std::rc::Rc;
use web_sys::HtmlInputElement;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct VerifyProps {
    /// The file's tab id.
    pub file: u32,
    pub size: u64,
}

#[function_component(VerifyCard)]
pub fn verify_card(p: &VerifyProps) -> Html {
    let job = use_worker_job();
    let sources = use_sources();
    let pasted = use_state(String::new);
    let result = use_state(|| None::<(String, f64)>);
    let start = {
        let (start, result, file, size) = (job.start.clone(), result.clone(), p.file, p.size);
        Callback::from(move |_: MouseEvent| {
            let Some(src) = sources.get(file) else { return };
            let result = result.clone();
            result.set(None);
            let on_done = Callback::from(move |(hex, ms): (String, f64)| result.set(Some((hex, ms))));
            start.emit(JobRequest::Hash { source: src, len: size, on_done });
        })
    };
    let on_paste = {
        let pasted = pasted.clone();
        Callback::from(move |e: InputEvent| {
            if let Some(i) = e.target_dyn_into::<HtmlInputElement>() {
                pasted.set(i.value());
            }
        })
    };
    let cancel = job.cancel.reform(|_: MouseEvent| ());
    let expected = expected_digest(&pasted);
    let busy = matches!(job.run, Run::Starting | Run::Reading { .. });
    let verdict = match (&*result, &expected) {
        (Some((hex, _)), Some(want)) if hex == want => html! { <p class="ok-text" data-testid="verify-verdict" data-match="true">{ "✓ Matches: the file is the one the hash names." }</p> },
        (Some(_), Some(_)) => html! { <p class="bad" data-testid="verify-verdict" data-match="false">{ "✗ Differs: this file is not the one the hash names (a broken or different download)." }</p> },
        _ => html! {},
    };
    html! {
        <details class="card verify" data-testid="verify">
            <summary><h3>{ "Verify file" }</h3><span class="dim">{ format!(" SHA-256 of all {} bytes, read here", fmt::thousands(p.size)) }</span></summary>
            <div class="verify-row">
                <label class="filter">
                    <span>{ "Expected" }</span>
                    <input type="text" placeholder="paste a SHA-256, a sha256sum line or an LFS oid" value={(*pasted).clone()}
                        oninput={on_paste} data-testid="verify-expected" spellcheck="false" />
                </label>
                <button type="button" class="primary" onclick={start} disabled={busy} data-testid="verify-start">{ "Compute SHA-256" }</button>
            </div>
            if !pasted.is_empty() && expected.is_none() {
                <p class="dim" data-testid="verify-unreadable">{ "No 64-digit SHA-256 in what was pasted." }</p>
            }
            { match &job.run {
                Run::Idle => html! {},
                Run::Starting => html! { <div class="values-progress" role="status"><div class="progress indeterminate"><div></div></div>
                    <button type="button" onclick={cancel.clone()} data-testid="verify-cancel">{ "Cancel" }</button></div> },
                Run::Reading { done, total, started, now } => {
                    let super::components::Progress { pct, rate, eta } = super::components::Progress::of(*done, *total, *started, *now, 100.0);
                    html! {
                        <div class="values-progress" data-testid="verify-progress" role="status">
                            <div class="progress" role="progressbar" aria-label="Hashing the file" aria-valuemin="0" aria-valuemax="100" aria-valuenow={format!("{pct:.0}")}>
                                <div class="bar" style={format!("width: {pct:.2}%")}></div>
                            </div>
                            <span class="mono">{ format!("{} of {} bytes", fmt::thousands(*done), fmt::thousands(*total)) }</span>
                            <span class="dim">{ format!(" · {}", fmt::rate(rate)) }</span>
                            <span class="dim">{ if eta.is_finite() { format!(" · ETA {eta:.1} s") } else { String::new() } }</span>
                            <button type="button" onclick={cancel.clone()} data-testid="verify-cancel">{ "Cancel" }</button>
                        </div>
                    }
                }
                Run::Cancelled { done, total } => html! { <p class="dim" data-testid="verify-cancelled">{ format!("Cancelled after {} of {} bytes.", fmt::thousands(*done), fmt::thousands(*total)) }</p> },
                Run::Failed(f) => html! { <FindingList findings={Rc::new(vec![f.clone()])} testid="verify-findings" item_testid="verify-finding" title="Hashing the file" /> },
            } }
            if let (Some((hex, ms)), false) = (&*result, busy) {
                <p class="verify-hash">
                    <span>{ "SHA-256: " }</span><code class="hash" data-testid="verify-hash">{ hex.clone() }</code>{ " " }
                    <CopyButton text={AttrValue::from(hex.clone())} label="Copy" testid="copy-verify" />
                    <span class="dim">{ format!(" · {:.1} s ({})", ms / 1000.0, fmt::rate(p.size as f64 / (ms / 1000.0).max(1e-9))) }</span>
                </p>
                { verdict }
            }
        </details>
    }
}
