//! The merged view of a split GGUF model: when the open files include parts of one split
//! model (`name-0000K-of-0000N.gguf`, keys `split.no` / `split.count`), the page shows one
//! model above the current part's own view — parts (present and missing), totals, the
//! merge's findings (a missing part is named) and every tensor with the file holding it.
//! Parts are grouped by `source::set::split_models`, the rule the CLI uses too.

use super::components::{dl_item, ExportButton, FindingList, TotalsCard};
use super::fit_view::FitCard;
use super::format::num_html;
use crate::web::state::{FileEntry, Shared, State, Tensors};
use super::table::TensorTable;
use crate::formats::Inspection;
use crate::model::gguf_split::{self, SplitModel};
use crate::report::{FileReport, ModelSection, Report};
use crate::source::set::split_models;
use std::collections::BTreeMap;
use std::rc::Rc;
use yew::prelude::*;

/// Most missing parts listed as rows (a lying `split.count` must not make thousands).
pub const MAX_MISSING_ROWS: u64 = 100;

/// The split models among the open files.
pub fn models(state: &State) -> Vec<SplitModel> {
    let files: Vec<&Inspection> = state.inspections().map(|(_, i)| i).collect();
    split_models(&files)
}

/// The merged view for `file`, when it is a part of a split model.
pub fn for_file(state: &State, file: &FileEntry) -> Html {
    let Some(model) = models(state).into_iter().find(|m| m.parts.iter().any(|p| p.name == file.name)) else {
        return html! {};
    };
    let parts: Vec<Rc<Inspection>> = state
        .files
        .iter()
        .filter(|f| model.parts.iter().any(|p| p.name == f.name))
        .filter_map(|f| match &f.status {
            crate::web::state::Status::Done(i, _) => Some(i.0.clone()),
            crate::web::state::Status::Reading => None,
        })
        .collect();
    html! { <SplitView model={Shared(Rc::new(model))} parts={Shared(Rc::new(parts))} /> }
}

#[derive(Properties, PartialEq)]
pub struct SplitProps {
    pub model: Shared<SplitModel>,
    /// The open parts' inspections (for the export).
    pub parts: Shared<Vec<Rc<Inspection>>>,
}

#[function_component(SplitView)]
pub fn split_view(p: &SplitProps) -> Html {
    let m: &SplitModel = &p.model.0;
    let tensors = use_memo(p.model.clone(), |m| {
        (Tensors::own(m.0.tensors.iter().map(|t| t.tensor.clone()).collect::<Vec<_>>()), Rc::new(m.0.tensors.iter().map(|t| t.file.clone()).collect::<Vec<_>>()))
    });
    let selected = use_state(|| None::<usize>);
    let errors = m.errors.len();
    let present: Vec<u64> = m.parts.iter().filter_map(|x| x.split_no).collect();
    let missing: Vec<u64> = m
        .split_count
        .map(|c| (0..c).filter(|n| !present.contains(n)).take(MAX_MISSING_ROWS as usize).collect())
        .unwrap_or_default();
    let template = m.parts.iter().find_map(|x| gguf_split::parse_split_name(&x.name));
    let prefix = template.map_or_else(|| m.parts.first().map(|x| x.name.clone()).unwrap_or_default(), |(p, _, _)| p.to_string());
    // Present and missing parts, in part order (parts without a number last).
    let mut rows: Vec<(u64, Html)> = m
        .parts
        .iter()
        .map(|x| {
            let row = html! {
                <tr data-testid="split-part" data-state="open">
                    <td class="n">{ x.split_no.map_or("?".to_string(), |n| n.saturating_add(1).to_string()) }</td>
                    <td><code>{ x.name.clone() }</code></td>
                    <td class="n">{ num_html(x.tensors) }</td>
                </tr>
            };
            (x.split_no.unwrap_or(u64::MAX), row)
        })
        .collect();
    for n in &missing {
        let c = m.split_count.unwrap_or(0);
        let name = template.map_or_else(|| format!("part {} of {c}", n.saturating_add(1)), |(pfx, _, _)| gguf_split::split_name(pfx, n.saturating_add(1), c));
        rows.push((*n, html! {
            <tr class="missing" data-testid="split-part" data-state="missing">
                <td class="n">{ n.saturating_add(1) }</td>
                <td><code>{ name }</code>{ " " }<strong class="bad">{ "missing" }</strong></td>
                <td class="n dim">{ "—" }</td>
            </tr>
        }));
    }
    rows.sort_by_key(|(n, _)| *n);
    let export = {
        let (model, parts) = (p.model.clone(), p.parts.clone());
        Callback::from(move |_: ()| {
            let mut r = Report::new(parts.0.iter().map(|f| FileReport::of(f, &BTreeMap::new())).collect());
            r.model = Some(ModelSection::Split(Box::new((*model.0).clone())));
            r.to_json_pretty()
        })
    };
    let file_name: String = prefix.chars().map(|c| if c.is_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    let on_select = {
        let selected = selected.clone();
        Callback::from(move |i: usize| selected.set(Some(i)))
    };
    let (status, icon, text) = if errors == 0 { ("ok", "✓", "Complete: all parts are open and agree.".to_string()) } else { ("err", "✗", format!("{errors} problem(s) with the parts: see below.")) };
    html! {
        <section class="card split-model" aria-label="Split model" data-testid="split-model" data-complete={(errors == 0).to_string()}>
            <header class="file-head">
                <h2 class="fname">{ format!("Split model: {prefix}") }</h2>
                <span class="pill">{ format!("{} of {} parts open", m.parts.len(), m.split_count.map_or("?".to_string(), |c| c.to_string())) }</span>
                <ExportButton file_name={format!("{}.model.tensorpeek.json", if file_name.is_empty() { "model" } else { &file_name })} json={export}
                    label="Export model JSON" testid="export-model" title="Download the report of all parts with the merged model" />
            </header>
            <div class={classes!("verdict", status)} role="status" data-testid="split-verdict">
                <span class="icon" aria-hidden="true">{ icon }</span><span class="text">{ text }</span>
            </div>
            <div class="grid">
                <div>
                    <h3>{ "Parts" }</h3>
                    <table class="mini" data-testid="split-parts">
                        <thead><tr><th scope="col" class="n">{ "Part" }</th><th scope="col">{ "File" }</th><th scope="col" class="n">{ "Tensors" }</th></tr></thead>
                        <tbody>{ for rows.into_iter().map(|(_, row)| row) }</tbody>
                    </table>
                </div>
                <TotalsCard title="Totals" totals={m.totals.clone()} prefix="split-" testid="split-totals" dtype_head="Type">
                    { dl_item("Architecture", "split-arch", html!{ m.architecture.clone().unwrap_or_else(|| "—".into()) }) }
                </TotalsCard>
            </div>
            <FindingList findings={Rc::new(m.findings().cloned().collect::<Vec<_>>())} testid="split-findings" item_testid="split-finding"
                tensors={Some(tensors.0.clone())} on_select={on_select.clone()} />
            if errors == 0 {
                <FitCard files={p.parts.clone()} />
            } else {
                <p class="dim" data-testid="fit-split-incomplete">{ "Will it run? Open every part of the model (and fix the problems above) to plan for it." }</p>
            }
            <details class="split-tensors" data-testid="split-tensor-details">
                <summary>{ format!("Merged tensors ({})", crate::fmt::thousands(m.tensors.len() as u64)) }</summary>
                <TensorTable tensors={tensors.0.clone()} files={Some(tensors.1.clone())} {on_select} selected={*selected} />
            </details>
        </section>
    }
}
