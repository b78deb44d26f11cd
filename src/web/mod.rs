//! The Yew app. It only renders [`state::State`] and calls the core: a dropped or picked
//! file becomes a [`BlobSource`], [`source::inspect`] reads its header (only the first
//! 8 + N bytes for safetensors) and the result is dispatched as an [`Action`].
//!
//! Plugging in other views: [`view::FileView`] matches on [`source::Parsed`] in
//! `view::format_section`; the tensor table ([`table::TensorTable`]) calls `on_select`
//! with a tensor's index, which lands in `State::selected` and opens [`view::TensorPanel`].

pub mod state;
pub mod table;
pub mod util;
pub mod values;
pub mod view;
pub mod worker;

use crate::report::Report;
use crate::source::{self, blob::BlobSource};
use state::{Action, State, Status};
use std::rc::Rc;
use util::{download, now_ms, Bytes};
use view::FileView;
use web_sys::HtmlInputElement;
use yew::prelude::*;

/// Mounts the app on `<body>`.
pub fn start() {
    yew::Renderer::<App>::new().render();
}

/// Starts reading each file; the views appear at once in the "reading header…" state.
fn open_files(
    files: Vec<web_sys::File>,
    next: &Rc<std::cell::Cell<u32>>,
    dispatcher: UseReducerDispatcher<State>,
) {
    if files.is_empty() {
        return;
    }
    let started = now_ms();
    let mut added = Vec::new();
    let mut jobs = Vec::new();
    for file in files {
        let id = next.get();
        next.set(id.saturating_add(1));
        let src = BlobSource::new(file.clone().into());
        added.push((id, file.name(), source::ByteSource::len(&src), started));
        jobs.push((id, file.name(), src, file));
    }
    dispatcher.dispatch(Action::Add(added));
    for (id, _, _, file) in &jobs {
        dispatcher.dispatch(Action::Blob(*id, file.clone()));
    }
    for (id, name, src, _) in jobs {
        let d = dispatcher.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let inspection = source::inspect(&src, &name).await;
            d.dispatch(Action::Loaded {
                id,
                inspection: Rc::new(inspection),
                now_ms: now_ms(),
            });
        });
    }
}

fn file_list(list: Option<web_sys::FileList>) -> Vec<web_sys::File> {
    let Some(list) = list else { return Vec::new() };
    (0..list.length()).filter_map(|i| list.get(i)).collect()
}

#[function_component(App)]
pub fn app() -> Html {
    let state = use_reducer(State::default);
    let ids = use_memo((), |_| Rc::new(std::cell::Cell::new(0u32)));
    let dragging = use_state(|| false);

    let on_pick = {
        let d = state.dispatcher();
        let ids = ids.clone();
        Callback::from(move |e: Event| {
            if let Some(input) = e.target_dyn_into::<HtmlInputElement>() {
                open_files(file_list(input.files()), &ids, d.clone());
                // Let the same file be picked again.
                input.set_value("");
            }
        })
    };
    let on_dragover = {
        let dragging = dragging.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            if let Some(dt) = e.data_transfer() {
                dt.set_drop_effect("copy");
            }
            if !*dragging {
                dragging.set(true);
            }
        })
    };
    let on_dragenter = {
        let dragging = dragging.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            dragging.set(true);
        })
    };
    let on_dragleave = {
        let dragging = dragging.clone();
        Callback::from(move |e: DragEvent| {
            // Leaving for a child element also fires dragleave; only the page edge has no
            // related target.
            if e.related_target().is_none() {
                dragging.set(false);
            }
        })
    };
    let on_drop = {
        let d = state.dispatcher();
        let ids = ids.clone();
        let dragging = dragging.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            dragging.set(false);
            let files = file_list(e.data_transfer().and_then(|dt| dt.files()));
            open_files(files, &ids, d.clone());
        })
    };

    let done: Vec<_> = state
        .files
        .iter()
        .filter_map(|f| match &f.status {
            Status::Done(s, _) => Some(values::with_stats(&s.0.report, f.id, &state.values)),
            Status::Reading => None,
        })
        .collect();
    let export_all = {
        let done = done.clone();
        Callback::from(move |_: MouseEvent| {
            let files = done.clone();
            let json = Report::new(files).to_json_pretty();
            let _ = download("tensorpeek-report.json", "application/json", &json);
        })
    };

    let tabs = state.files.iter().map(|f| {
        let current = state.current == Some(f.id);
        let onclick = {
            let d = state.dispatcher();
            let id = f.id;
            Callback::from(move |_: MouseEvent| d.dispatch(Action::Show(id)))
        };
        let mark = match &f.status {
            Status::Reading => ("reading", "…"),
            Status::Done(s, _) => match s.0.report.verdict() {
                crate::report::Verdict::Sound => ("ok", "✓"),
                crate::report::Verdict::Warnings => ("warn", "!"),
                crate::report::Verdict::Errors => ("err", "✗"),
            },
        };
        html! {
            <button type="button" role="tab" aria-selected={current.to_string()} class={classes!("tab", current.then_some("current"))}
                {onclick} data-testid="tab" title={f.name.clone()}>
                <span class={classes!("mark", mark.0)} aria-hidden="true">{ mark.1 }</span>
                <span class="tabname">{ f.name.clone() }</span>
            </button>
        }
    });

    let current = state.current_file().cloned();
    let view = match current {
        Some(f) => {
            let id = f.id;
            let selected = state.selected.filter(|(fid, _)| *fid == id).map(|(_, i)| i);
            let on_select = {
                let d = state.dispatcher();
                Callback::from(move |i: usize| d.dispatch(Action::Select(Some((id, i)))))
            };
            let on_close = {
                let d = state.dispatcher();
                Callback::from(move |_: ()| d.dispatch(Action::Remove(id)))
            };
            let values = Rc::new(values::for_file(id, &state.values));
            let blob = state.blobs.get(&id).cloned();
            let on_stats = {
                let d = state.dispatcher();
                Callback::from(move |(i, s): (usize, crate::stats::Stats)| d.dispatch(Action::Stats(id, i, s)))
            };
            html! { <FileView key={id} file={f} {selected} {on_select} {on_close} {values} {blob} {on_stats} /> }
        }
        None => html! {
            <section class="empty" data-testid="empty">
                <p class="big">{ "Drop .safetensors files anywhere on this page" }</p>
                <p>{ "or pick them with the button above. Several files at once are fine." }</p>
                <p class="dim">{ "Only each file's header is read (the first 8 + N bytes), in this browser tab. Tensor data is never read, and nothing is uploaded." }</p>
            </section>
        },
    };

    html! {
        <div class={classes!("app", dragging.then_some("dragging"))}
            ondragenter={on_dragenter} ondragover={on_dragover} ondragleave={on_dragleave} ondrop={on_drop}
            data-testid="dropzone">
            <header class="top">
                <div class="brand">
                    <h1>{ "tensorpeek" }</h1>
                    <p class="tag dim">{ "Model-file inspector: reads headers only, locally." }</p>
                </div>
                <div class="pick">
                    <label class="button primary" for="file-input">{ "Choose files…" }</label>
                    <input id="file-input" class="visually-hidden" type="file" multiple=true
                        onchange={on_pick} data-testid="file-input" />
                    if done.len() > 1 {
                        <button type="button" onclick={export_all} data-testid="export-all">{ "Export all JSON" }</button>
                    }
                </div>
            </header>
            if !state.files.is_empty() {
                <nav class="tabs" role="tablist" aria-label="Open files">{ for tabs }</nav>
            }
            <main>{ view }</main>
            <div class="drop-overlay" aria-hidden="true"><p>{ "Drop to inspect — only headers are read" }</p></div>
            <footer class="foot dim">
                { "Offsets and sizes are exact (hover a size for its byte count). " }
                if let Some(f) = state.current_file() { <span>{ "This file: " }<Bytes n={f.size} /></span> }
            </footer>
        </div>
    }
}
