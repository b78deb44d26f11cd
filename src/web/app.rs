//! The app: the drop zone and file pickers, the tabs (one per file, a Model tab for a
//! checkpoint) and the view of the tab shown. Files are opened by [`use_open_files`];
//! every view renders from [`State`].

use super::audit_view::{self, AuditRun, AuditView, AUDIT_TAB};
use super::file_view::FileView;
use super::folder;
use super::hooks::{use_open_files, OpenRequest};
use super::model_view::ModelView;
use super::sources::Sources;
use super::split_view;
use super::state::{Action, State, Status};
use crate::formats::Verdict;
use crate::report::{FileReport, ModelSection, Report};
use std::rc::Rc;
use web_sys::HtmlInputElement;
use yew::prelude::*;

/// The files of a list with their names: the relative path when the browser gives one
/// (a `webkitdirectory` pick), else the name. True when any file came from a folder.
fn named_files(list: Option<web_sys::FileList>) -> (Vec<(String, web_sys::File)>, bool) {
    let Some(list) = list else { return (Vec::new(), false) };
    let mut from_folder = false;
    let named = (0..list.length())
        .filter_map(|i| list.get(i))
        .map(|f| match folder::relative_path(&f) {
            Some(p) => {
                from_folder = true;
                (p, f)
            }
            None => (f.name(), f),
        })
        .collect();
    (named, from_folder)
}

/// The report of every open file (with the values read so far), the merged model and the
/// audit once one ran.
fn report_of_all(state: &State, audit: &AuditRun) -> Report {
    let mut r = Report::new(state.inspections().map(|(f, i)| FileReport::of(i, &state.values_of(f.id))).collect());
    let checkpoint = state.checkpoint.as_ref().and_then(|c| c.model.as_ref()).map(|m| ModelSection::Checkpoint(Box::new(m.0.model.clone())));
    r.model = checkpoint.or_else(|| split_view::models(state).into_iter().next().map(|m| ModelSection::Split(Box::new(m))));
    if let AuditRun::Done { audit, .. } = audit {
        r.audit = Some(Box::new((**audit).clone()));
    }
    r
}

fn tab(current: bool, mark: (&'static str, &'static str), name: String, title: String, testid: &'static str, onclick: Callback<MouseEvent>) -> Html {
    html! {
        <button type="button" role="tab" aria-selected={current.to_string()} class={classes!("tab", (testid == "model-tab").then_some("model-tab"), current.then_some("current"))}
            {onclick} data-testid={testid} {title}>
            <span class={classes!("mark", mark.0)} aria-hidden="true">{ mark.1 }</span>
            <span class="tabname">{ name }</span>
        </button>
    }
}

fn mark(v: Verdict) -> (&'static str, &'static str) {
    match v {
        Verdict::Sound => ("ok", "✓"),
        Verdict::Warnings => ("warn", "!"),
        Verdict::Errors => ("err", "✗"),
    }
}

#[function_component(App)]
pub fn app() -> Html {
    let state = use_reducer(State::default);
    let sources = use_memo((), |_| Sources::default());
    let sources: Sources = (*sources).clone();
    let open = use_open_files(state.dispatcher(), sources.clone());
    let audit = audit_view::use_audit(sources.clone());
    let sides = audit_view::sides(&state);
    let dragging = use_state(|| false);

    let on_pick = {
        let open = open.clone();
        Callback::from(move |e: Event| {
            if let Some(input) = e.target_dyn_into::<HtmlInputElement>() {
                let (files, from_folder) = named_files(input.files());
                open.emit(OpenRequest { files, from_folder, notes: Vec::new() });
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
        let (open, dragging) = (open.clone(), dragging.clone());
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            dragging.set(false);
            let Some(dt) = e.data_transfer() else { return };
            // The entries must be taken now: the DataTransfer is emptied after this handler.
            let entries = folder::drop_entries(&dt);
            if entries.has_directory {
                let open = open.clone();
                wasm_bindgen_futures::spawn_local(async move {
                    let (picked, notes) = folder::walk(entries.entries).await;
                    let files = picked.into_iter().map(|p| (p.path, p.file)).collect();
                    open.emit(OpenRequest { files, from_folder: true, notes });
                });
            } else {
                let (files, from_folder) = named_files(dt.files());
                open.emit(OpenRequest { files, from_folder, notes: Vec::new() });
            }
        })
    };
    let close = {
        let (d, sources) = (state.dispatcher(), sources.clone());
        Callback::from(move |id: u32| {
            sources.remove(id);
            d.dispatch(Action::Remove(id));
        })
    };

    let done = state.inspections().count();
    let export_all = {
        let (state, run) = (state.clone(), audit.run.clone());
        Callback::from(move |_: ()| report_of_all(&state, &run).to_json_pretty())
    };
    let show = |id: u32| {
        let d = state.dispatcher();
        Callback::from(move |_: MouseEvent| d.dispatch(Action::Show(id)))
    };
    let tabs = state.files.iter().map(|f| {
        let m = match &f.status {
            Status::Reading => ("reading", "…"),
            Status::Done(s, _) => mark(s.0.verdict()),
        };
        tab(state.current == Some(f.id), m, f.name.clone(), f.name.clone(), "tab", show(f.id))
    });
    let model_tab = state.checkpoint.as_ref().map(|c| {
        let m = match &c.model {
            None => ("reading", "…"),
            Some(m) => {
                let files = m.0.files.iter().map(|f| f.as_ref());
                mark(crate::formats::Verdict::of(m.0.model.findings().chain(files.flat_map(|f| f.findings()))))
            }
        };
        tab(state.current == Some(c.id), m, format!("Model · {}", c.name), format!("{}: the merged model", c.name), "model-tab", show(c.id))
    });
    let audit_tab = (sides.is_some() || audit.run != AuditRun::Idle).then(|| {
        let m = match &audit.run {
            AuditRun::Done { audit, .. } if audit.ok => ("ok", "✓"),
            AuditRun::Done { .. } | AuditRun::Failed(_) => ("err", "✗"),
            AuditRun::Starting | AuditRun::Running { .. } => ("reading", "…"),
            _ => ("audit", "⇄"),
        };
        tab(state.current == Some(AUDIT_TAB), m, "Audit".into(), "Audit the conversion: source against GGUF, tensor by tensor".into(), "audit-tab", show(AUDIT_TAB))
    });
    let view = match (state.checkpoint.as_ref().filter(|c| state.current == Some(c.id)), state.current_file()) {
        _ if state.current == Some(AUDIT_TAB) => html! {
            <AuditView sides={sides.clone()} run={audit.run.clone()} start={audit.start.clone()} cancel={audit.cancel.clone()} export={export_all.clone()} />
        },
        (Some(c), _) => {
            let id = c.id;
            let on_close = close.reform(move |_: ()| id);
            html! { <ModelView key={format!("model{id}")} checkpoint={c.clone()} {on_close} /> }
        }
        (None, Some(f)) => {
            let id = f.id;
            let selected = state.selected.filter(|(fid, _)| *fid == id).map(|(_, i)| i);
            let d = state.dispatcher();
            let on_select = Callback::from(move |i: usize| d.dispatch(Action::Select(Some((id, i)))));
            let d = state.dispatcher();
            let on_deselect = Callback::from(move |_: ()| d.dispatch(Action::Select(None)));
            let d = state.dispatcher();
            let on_stats = Callback::from(move |(i, s): (usize, crate::stats::Stats)| d.dispatch(Action::Stats(id, i, s)));
            let on_close = close.reform(move |_: ()| id);
            let values = Rc::new(state.values_of(id));
            let d = state.dispatcher();
            let on_sha256 = Callback::from(move |on: bool| d.dispatch(Action::SetValuesSha256(on)));
            let sha256 = state.values_sha256;
            html! {
                <>
                    { split_view::for_file(&state, f) }
                    <FileView key={id} file={f.clone()} {selected} {on_select} {on_close} {on_deselect} {values} {on_stats} {sha256} {on_sha256} />
                </>
            }
        }
        (None, None) => html! {
            <section class="empty" data-testid="empty">
                <p class="big">{ "Drop .safetensors, .gguf, PyTorch (.bin, .pt, .pth, .ckpt), .pkl, .npy or .npz files anywhere on this page" }</p>
                <p>{ "or pick them with the button above. Several files at once are fine." }</p>
                <p>{ "A whole checkpoint folder works too: drop the folder, or use Choose folder…, to see the merged model." }</p>
                <p class="dim">{ "Only each file's header is read (for safetensors the first 8 + N bytes; for GGUF the metadata and tensor infos; for PyTorch and pickle files the pickle, which is disassembled and never run, and the zip's directory), in this browser tab. A tensor's bytes are read only when you ask for its values. Nothing is uploaded." }</p>
                <p class="dim">{ "PyTorch and pickle files get a safety verdict — whether loading them would run code — and can be converted to safetensors here." }</p>
            </section>
        },
    };
    let footer_size = state.current_file().map(|f| f.size);

    html! {
        <ContextProvider<Sources> context={sources}>
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
                        onchange={on_pick.clone()} data-testid="file-input" />
                    <label class="button" for="folder-input">{ "Choose folder…" }</label>
                    <input id="folder-input" class="visually-hidden" type="file" multiple=true webkitdirectory=true
                        onchange={on_pick} data-testid="folder-input" />
                    if done > 1 || state.checkpoint.is_some() {
                        <super::components::ExportButton file_name="tensorpeek-report.json" json={export_all}
                            label="Export all JSON" testid="export-all" title="Download the report of every open file" />
                    }
                </div>
            </header>
            if !state.files.is_empty() || state.checkpoint.is_some() {
                <nav class="tabs" role="tablist" aria-label="Open files">{ for model_tab }{ for audit_tab }{ for tabs }</nav>
            }
            if !state.failed.is_empty() {
                <section class="card error-panel" role="alert" data-testid="error-panel">
                    <h3>{ "Could not be read" }</h3>
                    <ul>
                        { for state.failed.iter().enumerate().map(|(i, (name, message))| {
                            let d = state.dispatcher();
                            let dismiss = Callback::from(move |_: MouseEvent| d.dispatch(Action::Dismiss(i)));
                            html! {
                                <li data-testid="error-item" data-name={name.clone()}>
                                    <code>{ name.clone() }</code>{ ": " }<span class="msg">{ message.clone() }</span>
                                    { " " }<button type="button" class="small" onclick={dismiss} data-testid="error-dismiss">{ "Dismiss" }</button>
                                </li>
                            }
                        }) }
                    </ul>
                    <p class="dim">{ "The other files are not affected." }</p>
                </section>
            }
            <main>{ view }</main>
            <div class="drop-overlay" aria-hidden="true"><p>{ "Drop to inspect — only headers are read" }</p></div>
            <footer class="foot dim">
                { "Offsets and sizes are exact (hover a size for its byte count). " }
                if let Some(n) = footer_size { <span>{ "This file: " }{ super::format::bytes_html(n) }</span> }
            </footer>
        </div>
        </ContextProvider<Sources>>
    }
}
