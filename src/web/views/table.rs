//! The tensor table: sortable by every column (the headers are buttons), filterable by a
//! name substring, and groupable as a tree by the dotted name with subtotals. A table of
//! more than [`VIRTUAL_ABOVE`] lines is virtualized: it scrolls in a box of its own and
//! only the lines in view (and a few around them) are in the page, so 100,000 tensors sort,
//! filter and scroll without a long task.

use crate::web::state::{Shared, Tensors};
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
use crate::formats::torch::Tensor as Layout;
use crate::vocab::TensorEntry;
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use web_sys::HtmlInputElement;
use yew::prelude::*;

/// A pickle-based file's tensors as its reader saw them (stride, storage, contiguity), in
/// the table's order, by identity.
pub type Layouts = Shared<Vec<Layout>>;

/// Tables of at most this many lines render every line (the page's find-in-page and the
/// tests see them all); longer ones render only the lines in view. At ~0.5 ms a row, 1,000
/// rows take about half a second, spread over two tasks (see [`FIRST_ROWS`]).
pub const VIRTUAL_ABOVE: usize = 1_000;
/// Rows in the very first render: more than show on a 1,080-pixel screen, where the table
/// starts below the verdict and the summary (5 show in a 900-pixel window); the rest
/// follow in a task after that first paint. Each row is ~15 elements, ~0.6 ms to build.
pub const FIRST_ROWS: usize = 12;
/// Height of a row of a virtualized table, in CSS pixels (`tr.row` in style.css).
pub const ROW_PX: f64 = 32.0;
/// Rows rendered above and below those in view, so that scrolling shows no gap.
pub const OVERSCAN_ROWS: usize = 12;
/// Height of the scroll box of a virtualized table, in CSS pixels (style.css
/// `.table-wrap.virtual`), used until the box has been measured.
pub const VIEWPORT_PX: f64 = 640.0;

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
    /// Pickle-based files: strides (elements), storage key, storage offset, contiguity.
    Stride,
    Storage,
    StorageOffset,
    Contiguous,
}

/// The columns a pickle-based file adds.
const LAYOUT_COLUMNS: [(Col, &str, &str); 4] = [
    (Col::Stride, "Stride", "strides in elements, outermost first"),
    (Col::Storage, "Storage", "the storage key (tensors sharing one are views of the same bytes)"),
    (Col::StorageOffset, "St. offset", "offset in the storage, in elements"),
    (Col::Contiguous, "Contiguous", "whether the tensor is stored contiguously (not a strided view)"),
];

fn compare_layout(a: Option<&Layout>, b: Option<&Layout>, col: Col) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => match col {
            Col::Stride => a.stride.cmp(&b.stride),
            Col::Storage => a.storage.cmp(&b.storage),
            Col::StorageOffset => a.storage_offset.cmp(&b.storage_offset),
            Col::Contiguous => a.contiguous.cmp(&b.contiguous),
            _ => Ordering::Equal,
        },
        _ => Ordering::Equal,
    }
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
        // Sorted by the caller, which knows the files and layouts.
        Col::File | Col::Stride | Col::Storage | Col::StorageOffset | Col::Contiguous => Ordering::Equal,
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
    /// For a pickle-based file: each tensor's stride, storage, storage offset and
    /// contiguity (same indices as `tensors`), shown as columns that can be turned off.
    #[prop_or_default]
    pub layouts: Option<Layouts>,
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
    /// Child position by label (a level may hold 100,000 names).
    index: std::collections::HashMap<String, usize>,
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
        let pos = match self.index.get(*head) {
            Some(p) => *p,
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
                self.index.insert((*head).to_string(), self.children.len() - 1);
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
    let show_layout = use_state(|| true);
    // the first rows at once, the rest once those are painted (`data-complete` on the
    // table's box says which: a test that reads every row waits for it)
    let limit = if crate::web::hooks::use_painted(()) { usize::MAX } else { FIRST_ROWS };
    let expanded = use_state(HashSet::<String>::new);
    // tensors per storage key of a pickle-based file (its rows name at most 16 others)
    let users: Rc<HashMap<String, usize>> = use_memo(p.layouts.clone(), |l| {
        l.as_ref()
            .map(|l| crate::formats::torch::storage_users(&l.0).into_iter().map(|(k, n)| (k.to_string(), n)).collect())
            .unwrap_or_default()
    });
    // The scroll box of a virtualized table: where it is scrolled to, how tall it is.
    let scroll_top = use_state(|| 0.0f64);
    let viewport = use_state(|| VIEWPORT_PX);
    let wrap_ref = use_node_ref();
    // Lower-case names, once per table (filtering does not allocate per keystroke).
    let lower: Rc<Vec<String>> = use_memo(p.tensors.clone(), |ts| ts.iter().map(|t| t.name.to_lowercase()).collect());

    let tensors = p.tensors.clone();
    let (col, asc) = *sort;
    // Sorted, filtered indices into `tensors`.
    let order: Rc<Vec<usize>> = use_memo(
        (p.tensors.clone(), col, asc, (*filter).clone(), p.files.clone(), p.layouts.clone()),
        |(ts, col, asc, needle, files, layouts)| {
            let needle = needle.to_lowercase();
            let mut idx: Vec<usize> = (0..ts.len())
                .filter(|&i| needle.is_empty() || lower.get(i).is_some_and(|n| n.contains(&needle)))
                .collect();
            idx.sort_by(|&a, &b| match (ts.get(a), ts.get(b)) {
                (Some(x), Some(y)) => {
                    let o = match (col, files, layouts) {
                        (Col::File, Some(f), _) => f.get(a).cmp(&f.get(b)).then(a.cmp(&b)),
                        (Col::Stride | Col::Storage | Col::StorageOffset | Col::Contiguous, _, Some(l)) => {
                            compare_layout(l.0.get(a), l.0.get(b), *col).then(a.cmp(&b))
                        }
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
            if let Some(t) = ts.get(i) {
                let parts: Vec<&str> = t.name.split('.').collect();
                root.insert(&parts, 0, i, t);
            }
        }
        root
    });

    let on_filter = {
        let filter = filter.clone();
        let tell = p.on_filter.clone();
        Callback::from(move |e: InputEvent| {
            if let Some(input) = e.target_dyn_into::<HtmlInputElement>() {
                filter.set(input.value());
                tell.emit(input.value());
            }
        })
    };
    let on_scroll = {
        let (scroll_top, viewport, wrap_ref) = (scroll_top.clone(), viewport.clone(), wrap_ref.clone());
        Callback::from(move |_: Event| {
            if let Some(el) = wrap_ref.cast::<web_sys::Element>() {
                scroll_top.set(f64::from(el.scroll_top()));
                let h = f64::from(el.client_height());
                if h > 0.0 && (h - *viewport).abs() > 1.0 {
                    viewport.set(h);
                }
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
    let on_layout = {
        let show_layout = show_layout.clone();
        Callback::from(move |_: Event| show_layout.set(!*show_layout))
    };
    let layouts: Option<Layouts> = p.layouts.clone().filter(|_| *show_layout);
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
            Col::Index | Col::Params | Col::Bytes | Col::AbsStart | Col::Offsets | Col::StorageOffset
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
                if let Some(l) = &layouts {
                    { layout_cells(l.0.get(idx), &users) }
                }
            </tr>
        }
    };

    let has_files = p.files.is_some();
    let columns = if has_files { 9 } else { 8 } + if layouts.is_some() { LAYOUT_COLUMNS.len() } else { 0 };
    let group_row = |node: &Node, depth: usize, open: bool| -> Html {
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
        let indent = format!("padding-left: {}rem", 0.5 + depth as f64 * 1.1);
        html! {
            <tr key={format!("g{}", node.path)} class="group" data-testid="group-row" data-path={node.path.clone()}>
                <td></td>
                <td class="name" style={indent} colspan={if has_files { "4" } else { "3" }}>
                    <button type="button" class="toggle" aria-expanded={open.to_string()} onclick={toggle}
                        title={node.path.clone()}>
                        <span aria-hidden="true">{ if open { "▾ " } else { "▸ " } }</span>
                        { node.label.clone() }
                        <span class="dim">{ format!(" · {} tensor{}", fmt::thousands(node.count), if node.count == 1 { "" } else { "s" }) }</span>
                    </button>
                </td>
                <td class="n">{ num_html(node.params) }</td>
                <td class="n">{ bytes_html(node.bytes) }</td>
                <td></td><td></td>
                if layouts.is_some() { <td></td><td></td><td></td><td></td> }
            </tr>
        }
    };
    let mut lines = Vec::new();
    if *tree {
        flatten(&root, 0, &expanded, &mut lines);
    }
    let total_rows = if *tree { lines.len() } else { order.len() };
    let render = |i: usize| -> Html {
        if *tree {
            match lines.get(i) {
                Some(Line::Leaf { idx, depth, strip }) => row(*idx, *depth, *strip),
                Some(Line::Group { node, depth, open }) => group_row(node, *depth, *open),
                None => html! {},
            }
        } else {
            order.get(i).map_or(html! {}, |&t| row(t, 0, 0))
        }
    };
    let virtual_rows = total_rows > VIRTUAL_ABOVE;
    // The window of lines in the page: all of a short table (a screenful first), the lines
    // in view of a long one, with spacer rows standing for the rest.
    let (first, last) = if virtual_rows {
        let in_view = (*viewport / ROW_PX).ceil() as usize;
        let top = (*scroll_top / ROW_PX).floor().max(0.0) as usize;
        let first = top.saturating_sub(OVERSCAN_ROWS).min(total_rows);
        (first, top.saturating_add(in_view).saturating_add(OVERSCAN_ROWS).min(total_rows))
    } else {
        (0, total_rows.min(limit))
    };
    let spacer = |rows: usize, key: &'static str| -> Html {
        if rows == 0 {
            return html! {};
        }
        html! { <tr key={key} class="spacer" aria-hidden="true"><td colspan={columns.to_string()} style={format!("height: {}px", rows as f64 * ROW_PX)}></td></tr> }
    };
    let body: Html = html! {
        <>
            { spacer(first, "above") }
            { for (first..last).map(render) }
            { spacer(if virtual_rows { total_rows - last } else { 0 }, "below") }
        </>
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
                if p.layouts.is_some() {
                    <label class="check">
                        <input type="checkbox" checked={*show_layout} onchange={on_layout} data-testid="layout-toggle" />
                        <span>{ "Strides and storages" }</span>
                    </label>
                }
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
            <div class={classes!("table-wrap", virtual_rows.then_some("virtual"))} ref={wrap_ref} onscroll={on_scroll}
                data-testid="table-wrap" data-rows={total_rows.to_string()} data-complete={(limit == usize::MAX).to_string()}>
                <table data-testid="tensor-table">
                    <thead><tr>
                        { for COLUMNS.iter().take(2).map(|(c, l, h)| header_cell(*c, l, h)) }
                        if p.files.is_some() { { header_cell(Col::File, "File", "the file the tensor is in") } }
                        { for COLUMNS.iter().skip(2).map(|(c, l, h)| header_cell(*c, l, h)) }
                        if layouts.is_some() { { for LAYOUT_COLUMNS.iter().map(|(c, l, h)| header_cell(*c, l, h)) } }
                    </tr></thead>
                    <tbody>{ body }</tbody>
                </table>
            </div>
        </section>
    }
}

/// The four layout cells of a pickle-based file's row; `users`: tensors per storage key.
fn layout_cells(l: Option<&Layout>, users: &HashMap<String, usize>) -> Html {
    let Some(l) = l else {
        return html! { <><td></td><td></td><td></td><td></td></> };
    };
    let shares = if l.shares_storage_with.is_empty() {
        String::new()
    } else {
        let others = users.get(&l.storage).map_or(0, |n| n.saturating_sub(1));
        format!("shared with {}", fmt::shared_with(&l.shares_storage_with, others))
    };
    html! {
        <>
            <td class="mono" data-testid="t-stride">{ fmt::shape(&l.stride) }</td>
            <td class="mono" data-testid="t-storage" title={shares.clone()}>
                { l.storage.clone() }
                if !shares.is_empty() { <span class="dim" data-testid="t-shared">{ " (shared)" }</span> }
            </td>
            <td class="n mono" data-testid="t-storage-offset">{ fmt::thousands(l.storage_offset) }</td>
            <td data-testid="t-contiguous" data-value={l.contiguous.to_string()}>
                { if l.contiguous { html! { "yes" } } else { html! { <span class="warn-text">{ "no (strided view)" }</span> } } }
            </td>
        </>
    }
}
