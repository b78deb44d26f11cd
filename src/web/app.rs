//! The app: the drop zone and file pickers, the tabs (one per file, a Model tab for a
//! checkpoint) and the view of the tab shown. Files are opened by [`use_open_files`];
//! every view renders from [`State`].

use super::audit::{sides, use_audit, AuditRun, AUDIT_TAB};
use super::views::audit_view::AuditView;
use super::views::file_view::FileView;
use super::folder;
use super::shell::{self, Handoff};
use super::hooks::{use_open_files, OpenRequest};
use yew::UseReducerDispatcher;
use super::views::model_view::ModelView;
use super::sources::Sources;
use super::views::split_view;
use super::remote::{self, parse_field, resolve, Address, FitLink, Given, Link};
use super::state::{Action, State, Status};
use super::views::url_view::{ChoicesCard, OpenFull, Share, UrlForm};
use crate::source::remote::HubRepo;
use std::cell::RefCell;
use crate::formats::Verdict;
use crate::report::{FileReport, ModelSection, Report};
use std::rc::Rc;
use web_sys::HtmlInputElement;
use yew::prelude::*;

/// The files of a list with their names: the relative path when the browser gives one
/// (a `webkitdirectory` pick), else the name. True when any file came from a folder.
fn named_files(list: Option<web_sys::FileList>) -> (Vec<(String, web_sys::File)>, bool) {
    let Some(list) = list else { return (Vec::new(), false) };
    named((0..list.length()).filter_map(|i| list.get(i)))
}

fn named(files: impl Iterator<Item = web_sys::File>) -> (Vec<(String, web_sys::File)>, bool) {
    let mut from_folder = false;
    let named = files
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
    let checkpoint = state.checkpoint.as_ref().and_then(|c| c.model.as_ref()).map(|m| ModelSection::Checkpoint(Box::new(m.0.whole_model())));
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

/// Resolves what was given (URLs, a Hub repository) and opens it; failures go to the
/// error panel, notes to the notes panel, a GGUF repository's models to the chooser.
fn open_given(given: Vec<Given>, hub: String, open: Callback<OpenRequest>, d: UseReducerDispatcher<State>) {
    let asked = super::hooks::ask();
    wasm_bindgen_futures::spawn_local(async move {
        let mut r = resolve(given, &hub).await;
        // Behind what the person asked for while these were resolved.
        r.request.asked = Some(asked);
        for (name, message) in r.failed {
            d.dispatch(Action::Failed { id: None, name, message });
        }
        for n in r.notes {
            d.dispatch(Action::Note(Some(n)));
        }
        if r.choices.is_some() {
            d.dispatch(Action::Choices(r.choices));
        }
        if !r.request.urls.is_empty() {
            open.emit(r.request);
        }
    });
}

/// The link state of what is shown: the URLs that reopen the open files, the tab, the
/// selected tensor and the filter.
fn link_of(state: &State) -> Link {
    let mut files: Vec<String> = Vec::new();
    let links = state.checkpoint.iter().flat_map(|c| c.links.iter()).chain(state.files.iter().filter_map(|f| f.link.as_ref()));
    for l in links {
        if !files.contains(l) {
            files.push(l.clone());
        }
    }
    let mut link = Link { files, ..Link::default() };
    if let Some(c) = state.checkpoint.as_ref().filter(|c| state.current == Some(c.id)) {
        link.tab = Some("model".to_string());
        link.filter = state.filters.get(&c.id).cloned();
    } else if let Some(f) = state.current_file() {
        link.tab = Some(f.name.clone());
        link.filter = state.filters.get(&f.id).cloned();
        if let (Some((fid, i)), Status::Done(_, tensors)) = (state.selected, &f.status) {
            if fid == f.id {
                link.tensor = tensors.get(i).map(|t| t.name.clone());
            }
        }
    }
    link
}

/// Whether the tab shown can be linked (it was opened by URL).
fn linkable(state: &State) -> bool {
    match state.checkpoint.as_ref().filter(|c| state.current == Some(c.id)) {
        Some(c) => !c.links.is_empty(),
        None => state.current_file().is_some_and(|f| f.link.is_some()),
    }
}

/// Applies a link's tab, filter and tensor once its files are open. Returns false while
/// it must wait (files still being read).
fn apply_link(state: &State, link: &Link, d: &UseReducerDispatcher<State>) -> bool {
    let reading = state.files.iter().any(|f| f.status == Status::Reading) || state.checkpoint.as_ref().is_some_and(|c| c.model.is_none());
    let nothing_yet = state.files.is_empty() && state.checkpoint.is_none() && state.failed.is_empty();
    if nothing_yet {
        return false;
    }
    if link.tab.as_deref() == Some("model") {
        let Some(c) = &state.checkpoint else { return !reading };
        if c.model.is_none() {
            return false;
        }
        d.dispatch(Action::Show(c.id));
        if let Some(f) = &link.filter {
            d.dispatch(Action::Filter(c.id, f.clone()));
        }
        return true;
    }
    let target = match &link.tab {
        Some(name) => state.files.iter().find(|f| &f.name == name),
        None => state.files.first(),
    };
    let Some(f) = target else { return !reading };
    let Status::Done(_, tensors) = &f.status else { return false };
    d.dispatch(Action::Show(f.id));
    if let Some(text) = &link.filter {
        d.dispatch(Action::Filter(f.id, text.clone()));
    }
    if let Some(name) = &link.tensor {
        if let Some(i) = tensors.iter().position(|t| &t.name == name) {
            d.dispatch(Action::Select(Some((f.id, i))));
        }
    }
    true
}

#[function_component(App)]
pub fn app() -> Html {
    let state = use_reducer(State::default);
    let sources = use_memo((), |_| Sources::default());
    let sources: Sources = (*sources).clone();
    let open = use_open_files(state.dispatcher(), sources.clone());
    let audit = use_audit(sources.clone());
    let sides = sides(&state);
    let dragging = use_state(|| false);
    let address = use_memo((), |_| Address::current());
    let embed = address.embed;
    // The "Will it run?" card's settings in the fragment, kept outside the state.
    let fit_link = (*use_memo((), |_| FitLink::new(Address::current().link.fit))).clone();
    // The link the page was opened with, until its tab, filter and tensor are applied.
    let pending: Rc<RefCell<Option<Link>>> = use_mut_ref(|| {
        let a = Address::current();
        let l = a.link;
        (!a.urls.is_empty() && (l.tab.is_some() || l.tensor.is_some() || l.filter.is_some())).then_some(l)
    });
    let url_error = use_state(|| None::<AttrValue>);
    {
        // What the address gives is opened once, at start.
        let (open, d, address) = (open.clone(), state.dispatcher(), address.clone());
        use_effect_with((), move |_| {
            let mut given: Vec<Given> = address.urls.iter().map(|u| Given::Url(u.clone())).collect();
            match address.hf.as_deref().map(HubRepo::parse) {
                Some(Ok(r)) => given.push(Given::Hub { repo: r, file: None }),
                Some(Err(e)) => d.dispatch(Action::Failed { id: None, name: "hf=".to_string(), message: e }),
                None => {}
            }
            if !given.is_empty() {
                open_given(given, address.hub.clone(), open, d);
            }
        });
    }
    {
        // The deep link: applied once its files are read; after that the fragment follows
        // the view (replaceState: no history entry per click).
        let (pending, d, fit_link) = (pending.clone(), state.dispatcher(), fit_link.clone());
        use_effect_with(state.clone(), move |s| {
            let waiting = pending.borrow().clone();
            match waiting {
                Some(link) => {
                    fit_link.set_view(link_of(s), false);
                    if apply_link(s, &link, &d) {
                        *pending.borrow_mut() = None;
                        // The address holds the link just applied; from now on a change of
                        // the card's settings writes the fragment.
                        fit_link.start_writing();
                    }
                }
                None => fit_link.set_view(link_of(s), true),
            }
        });
    }
    let on_url = {
        let (open, d, hub, url_error) = (open.clone(), state.dispatcher(), address.hub.clone(), url_error.clone());
        Callback::from(move |text: String| match parse_field(&text) {
            Ok(given) => {
                url_error.set(None);
                open_given(given, hub.clone(), open.clone(), d.clone());
            }
            Err(e) => url_error.set(Some(AttrValue::from(e))),
        })
    };
    {
        // What reached the first view (index.html's plain-HTML copy) before the app ran.
        let (open, on_url, link) = (open.clone(), on_url.clone(), pending.clone());
        use_effect_with((), move |_| {
            // What was typed in the first view moves to the app's controls once they are all
            // in the document (child components render after this effect; the microtask
            // still runs before a paint).
            wasm_bindgen_futures::spawn_local(async { shell::restore() });
            let take = std::rc::Rc::new(move || match shell::take().inspect(|_| {
                // The person chose something else while the page's deep link was starting
                // the app: what they chose is shown, not the link's tab.
                link.borrow_mut().take();
            }) {
            Some(Handoff::Url(text)) => on_url.emit(text),
            Some(Handoff::Picked { files, .. }) => {
                let (files, from_folder) = named(files.into_iter());
                open.emit(OpenRequest::local(files, from_folder, Vec::new()));
            }
            Some(Handoff::Dropped { entries, files, directory }) => {
                if directory {
                    let open = open.clone();
                    wasm_bindgen_futures::spawn_local(async move {
                        let (picked, notes) = folder::walk(entries).await;
                        let files = picked.into_iter().map(|p| (p.path, p.file)).collect();
                        open.emit(OpenRequest::local(files, true, notes));
                    });
                } else {
                    let (files, from_folder) = named(files.into_iter());
                    open.emit(OpenRequest::local(files, from_folder, Vec::new()));
                }
            }
            None => {}
        });
            take();
            // A file that reaches the first view's controls after the app took over (a file
            // dialog opened from the first view, answered once the app, loaded in idle
            // time, had replaced it): the loader says so with this event.
            let listener = web_sys::window().map(|w| gloo::events::EventListener::new(&w, "tensorpeek-pending", move |_| take()));
            move || drop(listener)
        });
    }
    let on_choose = {
        let (open, d) = (open.clone(), state.dispatcher());
        Callback::from(move |(urls, files): (Vec<String>, Vec<String>)| {
            d.dispatch(Action::Choices(None));
            open.emit(remote::chosen(&urls, &files));
        })
    };
    let close_choices = {
        let d = state.dispatcher();
        Callback::from(move |_: ()| d.dispatch(Action::Choices(None)))
    };

    let on_pick = {
        let open = open.clone();
        Callback::from(move |e: Event| {
            if let Some(input) = e.target_dyn_into::<HtmlInputElement>() {
                let (files, from_folder) = named_files(input.files());
                open.emit(OpenRequest::local(files, from_folder, Vec::new()));
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
                    open.emit(OpenRequest::local(files, true, notes));
                });
            } else {
                let (files, from_folder) = named_files(dt.files());
                open.emit(OpenRequest::local(files, from_folder, Vec::new()));
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
            let filter = AttrValue::from(state.filters.get(&id).cloned().unwrap_or_default());
            let d = state.dispatcher();
            let on_filter = Callback::from(move |t: String| d.dispatch(Action::Filter(id, t)));
            html! { <ModelView key={format!("model{id}")} checkpoint={c.clone()} {on_close} {filter} {on_filter} /> }
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
            let filter = AttrValue::from(state.filters.get(&id).cloned().unwrap_or_default());
            let d = state.dispatcher();
            let on_filter = Callback::from(move |t: String| d.dispatch(Action::Filter(id, t)));
            let d = state.dispatcher();
            let on_sha256 = Callback::from(move |on: bool| d.dispatch(Action::SetValuesSha256(on)));
            let sha256 = state.values_sha256;
            html! {
                <>
                    { split_view::for_file(&state, f) }
                    <FileView key={id} file={f.clone()} {selected} {on_select} {on_close} {on_deselect} {values} {on_stats} {sha256} {on_sha256} {filter} {on_filter} />
                </>
            }
        }
        (None, None) => html! {
            <section class="empty" data-testid="empty">
                <p class="big">{ "Drop .safetensors, .gguf, PyTorch (.bin, .pt, .pth, .ckpt), .pkl, .npy or .npz files anywhere on this page" }</p>
                <p>{ "or pick them with the button above. Several files at once are fine." }</p>
                <p>{ "A whole checkpoint folder works too: drop the folder, or use Choose folder…, to see the merged model." }</p>
                <p>{ "Or give a URL (a file, a model.safetensors.index.json, several separated by spaces) or a Hugging Face repository (ORG/REPO): its header is read with HTTP range requests, nothing else is downloaded." }</p>
                <p class="dim">{ "Only each file's header is read (for safetensors the first 8 + N bytes; for GGUF the metadata and tensor infos; for PyTorch and pickle files the pickle, which is disassembled and never run, and the zip's directory), in this browser tab. A tensor's bytes are read only when you ask for its values. Nothing is uploaded." }</p>
                <p class="dim">{ "PyTorch and pickle files get a safety verdict — whether loading them would run code — and can be converted to safetensors here." }</p>
            </section>
        },
    };
    let footer_size = state.current_file().map(|f| f.size);

    html! {
        <ContextProvider<Sources> context={sources}>
        <ContextProvider<FitLink> context={fit_link.clone()}>
        <div class={classes!("app", dragging.then_some("dragging"), embed.then_some("embed"))}
            ondragenter={on_dragenter} ondragover={on_dragover} ondragleave={on_dragleave} ondrop={on_drop}
            data-testid="dropzone">
            if embed {
                <header class="top embed-bar">
                    <span class="brand-small">{ "tensorpeek" }</span>
                    <OpenFull />
                </header>
            } else {
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
                            <super::views::components::ExportButton file_name="tensorpeek-report.json" json={export_all}
                                label="Export all JSON" testid="export-all" title="Download the report of every open file" />
                        }
                    </div>
                    <UrlForm on_open={on_url} error={(*url_error).clone()} />
                </header>
            }
            if let Some(c) = &state.choices {
                <ChoicesCard choices={c.clone()} {on_choose} on_close={close_choices} />
            }
            if !state.notes.is_empty() {
                <section class="card notes" role="status" data-testid="notes">
                    <ul>{ for state.notes.iter().map(|n| html! { <li data-testid="note">{ n.clone() }</li> }) }</ul>
                </section>
            }
            if !state.files.is_empty() || state.checkpoint.is_some() {
                <nav class="tabs" role="tablist" aria-label="Open files">{ for model_tab }{ for audit_tab }{ for tabs }</nav>
                if !embed && state.current.is_some() {
                    <div class="sharebar">
                        <Share linkable={linkable(&state)} />
                    </div>
                }
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
            <footer class={classes!("foot", "dim", embed.then_some("visually-hidden"))}>
                { "Offsets and sizes are exact (hover a size for its byte count). " }
                if let Some(n) = footer_size { <span>{ "This file: " }{ super::views::format::bytes_html(n) }</span> }
            </footer>
        </div>
        </ContextProvider<FitLink>>
        </ContextProvider<Sources>>
    }
}
