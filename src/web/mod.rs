//! The Yew app. It only renders [`state::State`] and calls the core: a dropped or picked
//! file becomes a [`BlobSource`], [`source::inspect`] reads its header (only the first
//! 8 + N bytes for safetensors) and the result is dispatched as an [`Action`].
//!
//! Plugging in other views: [`view::FileView`] matches on [`source::Parsed`] in
//! `view::format_section`; the tensor table ([`table::TensorTable`]) calls `on_select`
//! with a tensor's index, which lands in `State::selected` and opens [`view::TensorPanel`].

pub mod folder;
pub mod gguf_split_view;
pub mod gguf_view;
pub mod hasher;
pub mod model_view;
pub mod msg;
pub mod state;
pub mod table;
pub mod util;
pub mod values;
pub mod view;
pub mod worker;

use crate::formats::{self, checkpoint};
use crate::report::{Format, Report};
use crate::source::{self, blob::BlobSource, ByteSource};
use model_view::{Checkpoint, Ignored, ModelData, ModelView};
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
    files: Vec<(String, web_sys::File)>,
    next: &Rc<std::cell::Cell<u32>>,
    dispatcher: UseReducerDispatcher<State>,
) {
    if files.is_empty() {
        return;
    }
    let started = now_ms();
    let mut added = Vec::new();
    let mut jobs = Vec::new();
    for (name, file) in files {
        let id = next.get();
        next.set(id.saturating_add(1));
        let src = Rc::new(BlobSource::new(file.into()));
        added.push((id, name.clone(), source::ByteSource::len(&*src), started));
        jobs.push((id, name, src));
    }
    dispatcher.dispatch(Action::Add(added));
    for (id, name, src) in jobs {
        dispatcher.dispatch(Action::Source(id, state::SourceHandle(src.clone())));
        let d = dispatcher.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let inspection = source::inspect(&*src, &name).await;
            d.dispatch(Action::Loaded {
                id,
                inspection: Rc::new(inspection),
                now_ms: now_ms(),
            });
        });
    }
}

/// Whether a set of files should be opened as a checkpoint (a Model tab besides the
/// shards' tabs): a folder, any `.json` file, or two or more shards named
/// `…-0000k-of-0000n.safetensors`. Other sets open as separate files, as before.
fn is_checkpoint_set(names: &[String], from_folder: bool) -> bool {
    let lower: Vec<String> = names
        .iter()
        .map(|n| checkpoint::base_name(n).to_ascii_lowercase())
        .collect();
    from_folder
        || lower.iter().any(|n| n.ends_with(".json"))
        || lower
            .iter()
            .filter(|n| n.ends_with(".safetensors") && n.contains("-of-"))
            .count()
            > 1
}

/// Opens files given together (picked, dropped, or walked from a folder), each with its
/// name (a relative path for folders). Checkpoints get a Model tab; see [`open_checkpoint`].
fn open_set(
    picked: Vec<(String, web_sys::File)>,
    from_folder: bool,
    notes: Vec<String>,
    next: &Rc<std::cell::Cell<u32>>,
    dispatcher: UseReducerDispatcher<State>,
) {
    let names: Vec<String> = picked.iter().map(|(n, _)| n.clone()).collect();
    if is_checkpoint_set(&names, from_folder) {
        open_checkpoint(picked, notes, next, dispatcher);
    } else {
        open_files(picked, next, dispatcher);
    }
}

/// A checkpoint: model files (by name: `.safetensors`, `.gguf`) get their own tabs and are
/// read header-only, as single files are; `.json` files up to
/// [`checkpoint::MAX_COMPANION_BYTES`] are read whole; everything else is listed as
/// ignored and never read. Then `build_model` merges them into the Model tab.
fn open_checkpoint(
    picked: Vec<(String, web_sys::File)>,
    notes: Vec<String>,
    next: &Rc<std::cell::Cell<u32>>,
    dispatcher: UseReducerDispatcher<State>,
) {
    let started = now_ms();
    // By name, so shards come in order whatever order the browser lists a folder in.
    let mut picked = picked;
    picked.sort_by(|a, b| a.0.cmp(&b.0));
    let mut tabs = Vec::new();
    let mut shards = Vec::new();
    let mut companions = Vec::new();
    let mut ignored: Vec<Ignored> = notes
        .into_iter()
        .map(|n| Ignored {
            name: n,
            size: 0,
            reason: "not read".into(),
        })
        .collect();
    let mut given_bytes = 0u64;
    for (name, file) in picked {
        let src = BlobSource::new(file.into());
        let len = src.len();
        if formats::format_from_name(&name) != Format::Unknown {
            let id = next.get();
            next.set(id.saturating_add(1));
            tabs.push((id, name.clone(), len, started));
            shards.push((id, name, src));
            given_bytes = given_bytes.saturating_add(len);
        } else if checkpoint::base_name(&name).to_ascii_lowercase().ends_with(".json") {
            if len <= checkpoint::MAX_COMPANION_BYTES {
                given_bytes = given_bytes.saturating_add(len);
                companions.push((name, src));
            } else {
                ignored.push(Ignored {
                    name,
                    size: len,
                    reason: format!(
                        "larger than the {} bytes read for a JSON file",
                        fmt_thousands(checkpoint::MAX_COMPANION_BYTES)
                    ),
                });
            }
        } else {
            ignored.push(Ignored {
                name,
                size: len,
                reason: "not a model file or a JSON companion".into(),
            });
        }
    }
    let folder = shards
        .iter()
        .map(|(_, n, _)| n)
        .chain(companions.iter().map(|(n, _)| n))
        .find_map(|n| n.split_once('/').map(|(dir, _)| dir.to_string()))
        .unwrap_or_else(|| "checkpoint".to_string());
    let cid = next.get();
    next.set(cid.saturating_add(1));
    dispatcher.dispatch(Action::Add(tabs));
    dispatcher.dispatch(Action::AddCheckpoint(Checkpoint {
        id: cid,
        name: folder,
        shard_ids: shards.iter().map(|(id, _, _)| *id).collect(),
        companions: companions.iter().map(|(n, s)| (n.clone(), s.len())).collect(),
        ignored,
        given_bytes,
        model: None,
        bytes_read: 0,
        started_ms: started,
        took_ms: None,
    }));
    wasm_bindgen_futures::spawn_local(async move {
        let mut bytes_read = 0u64;
        let mut reports = Vec::new();
        for (id, name, src) in shards {
            let inspection = source::inspect(&src, &name).await;
            bytes_read = bytes_read.saturating_add(inspection.report.bytes_read);
            reports.push(inspection.report.clone());
            dispatcher.dispatch(Action::Loaded {
                id,
                inspection: Rc::new(inspection),
                now_ms: now_ms(),
            });
        }
        let mut read = Vec::new();
        let mut unread = Vec::new();
        for (name, src) in companions {
            // A companion that cannot be read (e.g. changed on disk since it was picked)
            // is left out of the model and listed in the Files card.
            match src.read_at(0, src.len()).await {
                Ok(bytes) => {
                    bytes_read = bytes_read.saturating_add(bytes.len() as u64);
                    read.push((name, bytes));
                }
                Err(e) => unread.push((name, e.to_string())),
            }
        }
        let recognised = read
            .iter()
            .filter(|(n, b)| checkpoint::companion_kind(n, b) != checkpoint::Kind::Json)
            .count();
        let safetensors = reports
            .iter()
            .filter(|r| r.format == Format::Safetensors)
            .count();
        if checkpoint::wants_model(safetensors, recognised) {
            let model = checkpoint::build_model(&reports, &read);
            dispatcher.dispatch(Action::CheckpointLoaded {
                id: cid,
                data: Rc::new(ModelData::new(model, reports, unread)),
                bytes_read,
                now_ms: now_ms(),
            });
        } else {
            // Nothing to merge (e.g. one file and a README): the files' tabs are enough.
            dispatcher.dispatch(Action::Remove(cid));
        }
    });
}

fn fmt_thousands(n: u64) -> String {
    crate::fmt::thousands(n)
}

/// The files of a list with their names: the relative path when the browser gives one
/// (a `webkitdirectory` pick), else the name. True when any file came from a folder.
fn named_files(files: Vec<web_sys::File>) -> (Vec<(String, web_sys::File)>, bool) {
    let mut from_folder = false;
    let named = files
        .into_iter()
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
                let (named, from_folder) = named_files(file_list(input.files()));
                open_set(named, from_folder, Vec::new(), &ids, d.clone());
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
            let Some(dt) = e.data_transfer() else { return };
            // The entries must be taken now: the DataTransfer is emptied after this handler.
            let entries = folder::drop_entries(&dt);
            if entries.has_directory {
                let ids = ids.clone();
                let d = d.clone();
                wasm_bindgen_futures::spawn_local(async move {
                    let (picked, notes) = folder::walk(entries.entries).await;
                    let named = picked.into_iter().map(|p| (p.path, p.file)).collect();
                    open_set(named, true, notes, &ids, d);
                });
            } else {
                let (named, from_folder) = named_files(file_list(dt.files()));
                open_set(named, from_folder, Vec::new(), &ids, d.clone());
            }
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
    let model = state.checkpoint.as_ref().and_then(|c| c.model.clone());
    let export_all = {
        let done = done.clone();
        let all_files = state.files.clone();
        Callback::from(move |_: MouseEvent| {
            let files = done.clone();
            let mut report = Report::new(files);
            report.model = model
                .as_ref()
                .map(|m| m.0.model.to_value())
                .or_else(|| gguf_split_view::model_json(&all_files));
            let json = report.to_json_pretty();
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

    let model_tab = state.checkpoint.as_ref().map(|c| {
        let current = state.current == Some(c.id);
        let onclick = {
            let d = state.dispatcher();
            let id = c.id;
            Callback::from(move |_: MouseEvent| d.dispatch(Action::Show(id)))
        };
        let mark = match &c.model {
            None => ("reading", "…"),
            Some(m) if !m.0.model.ok_with(&m.0.files) => ("err", "✗"),
            Some(m) if m.0.model.findings().next().is_some() || m.0.files.iter().any(|f| f.findings().next().is_some()) => ("warn", "!"),
            Some(_) => ("ok", "✓"),
        };
        html! {
            <button type="button" role="tab" aria-selected={current.to_string()} class={classes!("tab", "model-tab", current.then_some("current"))}
                {onclick} data-testid="model-tab" title={format!("{}: the merged model", c.name)}>
                <span class={classes!("mark", mark.0)} aria-hidden="true">{ mark.1 }</span>
                <span class="tabname">{ format!("Model · {}", c.name) }</span>
            </button>
        }
    });
    let showing_model = state
        .checkpoint
        .as_ref()
        .filter(|c| state.current == Some(c.id))
        .cloned();
    let current = state.current_file().cloned();
    let view = if let Some(c) = showing_model {
        let on_close = {
            let d = state.dispatcher();
            let id = c.id;
            Callback::from(move |_: ()| d.dispatch(Action::Remove(id)))
        };
        let key = format!("model{}", c.id);
        html! { <ModelView {key} checkpoint={c} {on_close} /> }
    } else {
        match current {
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
            let on_deselect = {
                let d = state.dispatcher();
                Callback::from(move |_: ()| d.dispatch(Action::Select(None)))
            };
            let values = Rc::new(values::for_file(id, &state.values));
            let blob = f.source.as_ref().map(|s| s.0.blob().clone());
            let on_stats = {
                let d = state.dispatcher();
                Callback::from(move |(i, s): (usize, crate::stats::Stats)| d.dispatch(Action::Stats(id, i, s)))
            };
            html! { <FileView key={id} file={f} {selected} {on_select} {on_close} {on_deselect} {values} {blob} {on_stats} /> }
        }
        None => html! {
            <section class="empty" data-testid="empty">
                <p class="big">{ "Drop .safetensors or .gguf files anywhere on this page" }</p>
                <p>{ "or pick them with the button above. Several files at once are fine." }</p>
                <p>{ "A whole checkpoint folder works too: drop the folder, or use Choose folder…, to see the merged model." }</p>
                <p class="dim">{ "Only each file's header is read (for safetensors the first 8 + N bytes; for GGUF the metadata and tensor infos), in this browser tab. A tensor's bytes are read only when you ask for its values. Nothing is uploaded." }</p>
            </section>
        },
        }
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
                        onchange={on_pick.clone()} data-testid="file-input" />
                    <label class="button" for="folder-input">{ "Choose folder…" }</label>
                    <input id="folder-input" class="visually-hidden" type="file" multiple=true webkitdirectory=true
                        onchange={on_pick} data-testid="folder-input" />
                    if done.len() > 1 || state.checkpoint.is_some() {
                        <button type="button" onclick={export_all} data-testid="export-all">{ "Export all JSON" }</button>
                    }
                </div>
            </header>
            if !state.files.is_empty() || state.checkpoint.is_some() {
                <nav class="tabs" role="tablist" aria-label="Open files">{ for model_tab }{ for tabs }</nav>
            }
            <main>{ gguf_split_view::for_current(&state) }{ view }</main>
            <div class="drop-overlay" aria-hidden="true"><p>{ "Drop to inspect — only headers are read" }</p></div>
            <footer class="foot dim">
                { "Offsets and sizes are exact (hover a size for its byte count). " }
                if let Some(f) = state.current_file() { <span>{ "This file: " }<Bytes n={f.size} /></span> }
            </footer>
        </div>
    }
}
