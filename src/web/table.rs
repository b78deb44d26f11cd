//! The tensor table: sortable by every column (the headers are buttons), filterable by a
//! name substring, and groupable as a tree by the dotted name with subtotals. Rows render
//! a page at a time ("Show more"), so files with tens of thousands of tensors stay fast.

use super::state::Tensors;
use super::components::{copy_text, download};
use crate::report::table;

/// What an export button does.
#[derive(Clone, Copy)]
enum Export {
    CsvFile,
    MdFile,
    CsvCopy,
    MdCopy,
}
use super::format::{bytes_html, num_html};
use crate::fmt;
use crate::vocab::TensorEntry;
use std::cmp::Ordering;
use std::collections::HashSet;
use std::rc::Rc;
use web_sys::HtmlInputElement;
use yew::prelude::*;

/// Rows rendered at first and added by each "Show more" (a few hundred rows render in a
/// frame; thousands would make typing in the filter lag).
pub const PAGE_ROWS: usize = 500;
/// Rows in the very first render: a screenful shows within a frame or two of the header
/// being parsed, and the rest of the first page follows in the next task (measured: each
/// row costs ~0.5 ms to render, so 500 at once would delay the first picture by ~250 ms).
pub const FIRST_ROWS: usize = 60;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Col {
    /// Header order (the order of the file's header).
    Index,
    Name,
    Dtype,
    Shape,
    Params,
    Bytes,
    Offsets,
    AbsStart,
    /// The file a tensor is in (merged tables of several files only).
    File,
}

const COLUMNS: [(Col, &str, &str); 8] = [
    (Col::Index, "#", "header order"),
    (Col::Name, "Name", "tensor name"),
    (Col::Dtype, "Dtype", "element type"),
    (Col::Shape, "Shape", "shape, outermost first"),
    (Col::Params, "Params", "element count"),
    (Col::Bytes, "Bytes", "bytes in the data section"),
    (
        Col::Offsets,
        "data_offsets",
        "[begin, end) relative to the data section, as in the header",
    ),
    (
        Col::AbsStart,
        "Abs. start",
        "absolute byte offset of the first byte in the file",
    ),
];

fn compare(a: &TensorEntry, b: &TensorEntry, ia: usize, ib: usize, col: Col) -> Ordering {
    let by = match col {
        Col::Index => ia.cmp(&ib),
        Col::Name => a.name.cmp(&b.name),
        Col::Dtype => a.dtype.cmp(&b.dtype),
        Col::Shape => a.shape.cmp(&b.shape),
        Col::Params => a.params.cmp(&b.params),
        Col::Bytes => a.bytes.cmp(&b.bytes),
        Col::Offsets => (a.start, a.end).cmp(&(b.start, b.end)),
        Col::AbsStart => a.abs_start.cmp(&b.abs_start),
        // Sorted by the caller, which knows the files.
        Col::File => Ordering::Equal,
    };
    by.then(ia.cmp(&ib))
}

#[derive(Properties, PartialEq)]
pub struct TensorTableProps {
    pub tensors: Tensors,
    /// Called with the tensor's index in `tensors` when a row is chosen (click or Enter).
    #[prop_or_default]
    pub on_select: Callback<usize>,
    /// The chosen row, highlighted.
    #[prop_or_default]
    pub selected: Option<usize>,
    /// For a merged table of several files: each tensor's file (same indices as
    /// `tensors`), shown as a sortable "File" column after the name.
    #[prop_or_default]
    pub files: Option<Rc<Vec<String>>>,
    /// The name filter (the page keeps it, for links); `on_filter` hears each change.
    #[prop_or_default]
    pub filter: AttrValue,
    #[prop_or_default]
    pub on_filter: Callback<String>,
    /// The exported table's file name, without extension.
    #[prop_or(AttrValue::from("tensors"))]
    pub export_name: AttrValue,
}

/// A group in the tree view: one dotted-name prefix.
#[derive(Default)]
struct Node {
    /// The full prefix (`model.layers.0`), the key for expanded state.
    path: String,
    /// The last segment (`0`).
    label: String,
    /// A tensor whose whole name is this path.
    tensor: Option<usize>,
    children: Vec<Node>,
    count: u64,
    params: u64,
    bytes: u64,
}

impl Node {
    fn insert(&mut self, parts: &[&str], depth: usize, idx: usize, t: &TensorEntry) {
        self.count = self.count.saturating_add(1);
        self.params = self.params.saturating_add(t.params.unwrap_or(0));
        self.bytes = self.bytes.saturating_add(t.bytes.unwrap_or(0));
        let Some(head) = parts.get(depth) else {
            self.tensor = Some(idx);
            return;
        };
        let pos = match self.children.iter().position(|c| c.label == *head) {
            Some(p) => p,
            None => {
                let path = if self.path.is_empty() {
                    (*head).to_string()
                } else {
                    format!("{}.{}", self.path, head)
                };
                self.children.push(Node {
                    path,
                    label: (*head).to_string(),
                    ..Node::default()
                });
                self.children.len() - 1
            }
        };
        if let Some(child) = self.children.get_mut(pos) {
            child.insert(parts, depth + 1, idx, t);
        }
    }
}

/// One rendered line of the tree.
enum Line<'a> {
    Group {
        node: &'a Node,
        depth: usize,
        open: bool,
    },
    /// A tensor; its name is shown without the first `strip` bytes (the parent's prefix).
    Leaf {
        idx: usize,
        depth: usize,
        strip: usize,
    },
}

/// The only tensor under a node that holds exactly one.
fn single(node: &Node) -> Option<usize> {
    node.tensor
        .or_else(|| node.children.first().and_then(single))
}

fn flatten<'a>(node: &'a Node, depth: usize, expanded: &HashSet<String>, out: &mut Vec<Line<'a>>) {
    let strip = if node.path.is_empty() {
        0
    } else {
        node.path.len() + 1
    };
    for c in &node.children {
        // A group of one tensor is shown as that tensor (`input_layernorm.weight`).
        if c.count == 1 {
            if let Some(idx) = single(c) {
                out.push(Line::Leaf { idx, depth, strip });
                continue;
            }
        }
        if let Some(idx) = c.tensor {
            out.push(Line::Leaf { idx, depth, strip });
        }
        if !c.children.is_empty() {
            let open = expanded.contains(&c.path);
            out.push(Line::Group {
                node: c,
                depth,
                open,
            });
            if open {
                flatten(c, depth + 1, expanded, out);
            }
        }
    }
}

fn all_group_paths(node: &Node, out: &mut HashSet<String>) {
    for c in &node.children {
        if !c.children.is_empty() {
            out.insert(c.path.clone());
            all_group_paths(c, out);
        }
    }
}

#[function_component(TensorTable)]
pub fn tensor_table(p: &TensorTableProps) -> Html {
    let sort = use_state(|| (Col::Index, true));
    let filter = use_state(|| p.filter.to_string());
    {
        // A filter set from outside (a link being applied) replaces the typed one.
        let filter = filter.clone();
        use_effect_with(p.filter.clone(), move |f| {
            if **filter != **f {
                filter.set(f.to_string());
            }
        });
    }
    let export_status = use_state(|| None::<&'static str>);
    let tree = use_state(|| false);
    let limit = use_state(|| FIRST_ROWS);
    {
        let limit = limit.clone();
        use_effect_with((), move |_| {
            // Setting state of a table that is gone meanwhile is a no-op in Yew.
            gloo::timers::callback::Timeout::new(0, move || {
                if *limit < PAGE_ROWS {
                    limit.set(PAGE_ROWS);
                }
            })
            .forget();
        });
    }
    let expanded = use_state(HashSet::<String>::new);

    let tensors = p.tensors.0.clone();
    let (col, asc) = *sort;
    // Sorted, filtered indices into `tensors`.
    let order: Rc<Vec<usize>> = use_memo(
        (p.tensors.clone(), col, asc, (*filter).clone(), p.files.clone()),
        |(ts, col, asc, needle, files)| {
            let needle = needle.to_lowercase();
            let mut idx: Vec<usize> =
                ts.0.iter()
                    .enumerate()
                    .filter(|(_, t)| needle.is_empty() || t.name.to_lowercase().contains(&needle))
                    .map(|(i, _)| i)
                    .collect();
            idx.sort_by(|&a, &b| match (ts.0.get(a), ts.0.get(b)) {
                (Some(x), Some(y)) => {
                    let o = match (col, files) {
                        (Col::File, Some(f)) => f.get(a).cmp(&f.get(b)).then(a.cmp(&b)),
                        _ => compare(x, y, a, b, *col),
                    };
                    if *asc {
                        o
                    } else {
                        o.reverse()
                    }
                }
                _ => Ordering::Equal,
            });
            idx
        },
    );
    // Built only while the tree is shown.
    let root: Rc<Node> = use_memo((p.tensors.clone(), order.clone(), *tree), |(ts, order, on)| {
        let mut root = Node::default();
        if !*on {
            return root;
        }
        for &i in order.iter() {
            if let Some(t) = ts.0.get(i) {
                let parts: Vec<&str> = t.name.split('.').collect();
                root.insert(&parts, 0, i, t);
            }
        }
        root
    });

    let on_filter = {
        let filter = filter.clone();
        let limit = limit.clone();
        let tell = p.on_filter.clone();
        Callback::from(move |e: InputEvent| {
            if let Some(input) = e.target_dyn_into::<HtmlInputElement>() {
                filter.set(input.value());
                tell.emit(input.value());
                limit.set(PAGE_ROWS);
            }
        })
    };
    // Exports: every row the filter keeps, in the order shown, built only on click.
    let export = |kind: Export| {
        let (tensors, order, files, name, status) = (tensors.clone(), order.clone(), p.files.clone(), p.export_name.clone(), export_status.clone());
        Callback::from(move |_: MouseEvent| {
            let rows = order.iter().filter_map(|&i| tensors.get(i).map(|t| (i, t, files.as_ref().and_then(|f| f.get(i)).map(String::as_str))));
            let with_file = files.is_some();
            let (text, ext, mime) = match kind {
                Export::CsvFile | Export::CsvCopy => (table::csv(rows, with_file), "csv", "text/csv"),
                Export::MdFile | Export::MdCopy => (table::markdown(rows, with_file), "md", "text/markdown"),
            };
            let ok = match kind {
                Export::CsvFile | Export::MdFile => download(&format!("{name}.{ext}"), mime, &text).is_ok(),
                Export::CsvCopy | Export::MdCopy => copy_text(&text),
            };
            status.set(Some(match (kind, ok) {
                (Export::CsvCopy | Export::MdCopy, true) => "copied",
                (_, true) => "downloaded",
                (_, false) => "failed (no clipboard or download here)",
            }));
        })
    };
    let on_tree = {
        let tree = tree.clone();
        Callback::from(move |_: Event| tree.set(!*tree))
    };
    let expand_all = {
        let expanded = expanded.clone();
        let root = root.clone();
        Callback::from(move |_: MouseEvent| {
            let mut all = HashSet::new();
            all_group_paths(&root, &mut all);
            expanded.set(all);
        })
    };
    let collapse_all = {
        let expanded = expanded.clone();
        Callback::from(move |_: MouseEvent| expanded.set(HashSet::new()))
    };

    let header_cell = |c: Col, label: &'static str, hint: &'static str| {
        let active = col == c;
        let aria = match (active, asc) {
            (false, _) => "none",
            (true, true) => "ascending",
            (true, false) => "descending",
        };
        let arrow = match (active, asc) {
            (false, _) => "",
            (true, true) => " ▲",
            (true, false) => " ▼",
        };
        let onclick = {
            let sort = sort.clone();
            Callback::from(move |_: MouseEvent| {
                let (cur, cur_asc) = *sort;
                sort.set(if cur == c { (c, !cur_asc) } else { (c, true) });
            })
        };
        let numeric = matches!(
            c,
            Col::Index | Col::Params | Col::Bytes | Col::AbsStart | Col::Offsets
        );
        html! {
            <th scope="col" aria-sort={aria} class={classes!(numeric.then_some("n"))}>
                <button type="button" class="sort" title={format!("Sort by {hint}")} {onclick}
                    data-testid={format!("sort-{}", label.to_lowercase().replace([' ', '.', '#'], ""))}>
                    { label }{ arrow }
                </button>
            </th>
        }
    };

    // One stateless copy handler for every row (a component per row would slow large
    // tables); the name travels in data-copy, the "copied" mark in data-copied.
    let copy_name = Callback::from(|e: MouseEvent| {
        e.stop_propagation();
        if let Some(el) = e.target_dyn_into::<web_sys::Element>() {
            if let Some(name) = el.get_attribute("data-copy") {
                let ok = copy_text(&name);
                let _ = el.set_attribute("data-copied", if ok { "yes" } else { "no" });
            }
        }
    });
    let stop_keys = Callback::from(|e: KeyboardEvent| e.stop_propagation());
    let row = |idx: usize, depth: usize, strip: usize| -> Html {
        let Some(t) = tensors.get(idx) else {
            return html! {};
        };
        let select = {
            let cb = p.on_select.clone();
            Callback::from(move |_: MouseEvent| cb.emit(idx))
        };
        let key_select = {
            let cb = p.on_select.clone();
            Callback::from(move |e: KeyboardEvent| {
                if e.key() == "Enter" || e.key() == " " {
                    e.prevent_default();
                    cb.emit(idx);
                }
            })
        };
        let shown_name = t.name.get(strip..).unwrap_or(&t.name).to_string();
        let selected = p.selected == Some(idx);
        let indent = format!("padding-left: {}rem", 0.5 + depth as f64 * 1.1);
        html! {
            <tr key={format!("t{idx}")} class={classes!("row", selected.then_some("selected"))}
                tabindex="0" onclick={select} onkeydown={key_select} aria-selected={selected.to_string()}
                data-testid="tensor-row" data-name={t.name.clone()}>
                <td class="n dim">{ fmt::thousands(idx as u64) }</td>
                <td class="name" style={indent} title={t.name.clone()}>
                    <span class="tname">{ shown_name }</span>
                    <button type="button" class="copy" title={format!("Copy {}", t.name)}
                        onclick={copy_name.clone()} onkeydown={stop_keys.clone()} data-copy={t.name.clone()}>{ "Copy" }</button>
                </td>
                if let Some(files) = &p.files {
                    <td class="file" data-testid="tensor-file" title={files.get(idx).cloned().unwrap_or_default()}>{ files.get(idx).cloned().unwrap_or_default() }</td>
                }
                <td><code>{ t.dtype.to_string() }</code></td>
                <td class="shape">{ fmt::shape(&t.shape) }</td>
                <td class="n">{ match t.params { Some(n) => num_html(n), None => html!{ "overflow" } } }</td>
                <td class="n">{ match t.bytes { Some(n) => bytes_html(n), None => html!{ "invalid" } } }</td>
                <td class="n mono offsets">{ format!("[{}, {}]", fmt::thousands(t.start), fmt::thousands(t.end)) }</td>
                <td class="n mono" data-testid="abs-start">{ t.abs_start.map_or("overflow".to_string(), fmt::thousands) }</td>
            </tr>
        }
    };

    let has_files = p.files.is_some();
    let total_rows;
    let body: Html = if *tree {
        let mut lines = Vec::new();
        flatten(&root, 0, &expanded, &mut lines);
        total_rows = lines.len();
        lines
            .iter()
            .take(*limit)
            .map(|line| match line {
                Line::Leaf { idx, depth, strip } => row(*idx, *depth, *strip),
                Line::Group { node, depth, open } => {
                    let toggle = {
                        let expanded = expanded.clone();
                        let path = node.path.clone();
                        Callback::from(move |_: MouseEvent| {
                            let mut set = (*expanded).clone();
                            if !set.remove(&path) {
                                set.insert(path.clone());
                            }
                            expanded.set(set);
                        })
                    };
                    let indent = format!("padding-left: {}rem", 0.5 + *depth as f64 * 1.1);
                    html! {
                        <tr key={format!("g{}", node.path)} class="group" data-testid="group-row" data-path={node.path.clone()}>
                            <td></td>
                            <td class="name" style={indent} colspan={if has_files { "4" } else { "3" }}>
                                <button type="button" class="toggle" aria-expanded={open.to_string()} onclick={toggle}
                                    title={node.path.clone()}>
                                    <span aria-hidden="true">{ if *open { "▾ " } else { "▸ " } }</span>
                                    { node.label.clone() }
                                    <span class="dim">{ format!(" · {} tensor{}", fmt::thousands(node.count), if node.count == 1 { "" } else { "s" }) }</span>
                                </button>
                            </td>
                            <td class="n">{ num_html(node.params) }</td>
                            <td class="n">{ bytes_html(node.bytes) }</td>
                            <td></td><td></td>
                        </tr>
                    }
                }
            })
            .collect()
    } else {
        total_rows = order.len();
        order.iter().take(*limit).map(|&i| row(i, 0, 0)).collect()
    };

    let more = total_rows.saturating_sub(*limit);
    let show_more = {
        let limit = limit.clone();
        Callback::from(move |_: MouseEvent| limit.set(limit.saturating_add(PAGE_ROWS)))
    };
    let show_all = {
        let limit = limit.clone();
        Callback::from(move |_: MouseEvent| limit.set(usize::MAX))
    };

    html! {
        <section class="tensors" aria-label="Tensors">
            <div class="table-tools">
                <h3>{ "Tensors" }</h3>
                <label class="filter">
                    <span>{ "Filter by name" }</span>
                    <input type="search" placeholder="e.g. layers.0. or q_proj" value={(*filter).clone()}
                        oninput={on_filter} data-testid="filter" />
                </label>
                <label class="check">
                    <input type="checkbox" checked={*tree} onchange={on_tree} data-testid="tree-toggle" />
                    <span>{ "Group by name (tree)" }</span>
                </label>
                if *tree {
                    <button type="button" onclick={expand_all} data-testid="expand-all">{ "Expand all" }</button>
                    <button type="button" onclick={collapse_all}>{ "Collapse all" }</button>
                }
                <span class="exports" role="group" aria-label="Export the table">
                    <button type="button" onclick={export(Export::CsvFile)} data-testid="export-csv" title="Download the rows shown (all of them, as filtered and sorted) as CSV">{ "CSV" }</button>
                    <button type="button" onclick={export(Export::MdFile)} data-testid="export-md" title="Download the rows shown as a Markdown table">{ "Markdown" }</button>
                    <button type="button" onclick={export(Export::CsvCopy)} data-testid="copy-csv">{ "Copy CSV" }</button>
                    <button type="button" onclick={export(Export::MdCopy)} data-testid="copy-md">{ "Copy Markdown" }</button>
                    if let Some(s) = *export_status { <span class="dim" data-testid="export-status">{ s }</span> }
                </span>
                <span class="dim" data-testid="row-count">
                    { format!("{} of {} tensors", fmt::thousands(order.len() as u64), fmt::thousands(tensors.len() as u64)) }
                </span>
            </div>
            <div class="table-wrap">
                <table data-testid="tensor-table">
                    <thead><tr>
                        { for COLUMNS.iter().take(2).map(|(c, l, h)| header_cell(*c, l, h)) }
                        if p.files.is_some() { { header_cell(Col::File, "File", "the file the tensor is in") } }
                        { for COLUMNS.iter().skip(2).map(|(c, l, h)| header_cell(*c, l, h)) }
                    </tr></thead>
                    <tbody>{ body }</tbody>
                </table>
            </div>
            if more > 0 {
                <div class="more">
                    <button type="button" onclick={show_more} data-testid="show-more">
                        { format!("Show {} more", fmt::thousands(more.min(PAGE_ROWS) as u64)) }
                    </button>
                    <button type="button" onclick={show_all}>{ format!("Show all {}", fmt::thousands(total_rows as u64)) }</button>
                </div>
            }
        </section>
    }
}
