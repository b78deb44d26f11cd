//! The layering of ARCHITECTURE.md, checked on the source text: which module may import
//! which, which room of the page (`web/views/`, `web/worker/`) may import which, and no
//! import circle between the files of `src/`. Imports are read from `use` trees and
//! `crate::`/`super::` paths in code (comments and `#[cfg(test)]` modules are left out:
//! tests may reach anywhere).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `src/` but test modules, as (module path, text before any
/// `#[cfg(test)]`).
fn files() -> Vec<(Vec<String>, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut paths = Vec::new();
    walk(&src(), &mut paths);
    paths.sort();
    paths
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n != "tests.rs"))
        .filter(|p| !p.starts_with(src().join("bin")))
        .map(|p| {
            let rel = p.strip_prefix(src()).unwrap().with_extension("");
            let mut module: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
            if module.last().is_some_and(|l| l == "mod" || l == "lib" || l == "main") {
                module.pop();
            }
            let text = std::fs::read_to_string(&p).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("").to_string();
            let code: String = code.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
            (module, code)
        })
        .collect()
}

/// The paths a use tree names, read from the start of `text` as far as the tree goes, each
/// after `prefix`: `a::b::{c, d::{self, e}}` names a::b::c, a::b::d and a::b::d::e (a `self`
/// or a `*` names its parent); a path in code (`a::b::f(…)`) is a tree
/// of one path. Spaces and line breaks inside braces are read over.
fn tree_paths(text: &str, prefix: Vec<String>) -> Vec<Vec<String>> {
    fn skip_space(s: &[u8], i: &mut usize) {
        while s.get(*i).is_some_and(u8::is_ascii_whitespace) {
            *i += 1;
        }
    }
    fn tree(s: &[u8], i: &mut usize, mut path: Vec<String>, out: &mut Vec<Vec<String>>) {
        loop {
            if s.get(*i) == Some(&b'{') {
                *i += 1;
                loop {
                    skip_space(s, i);
                    if s.get(*i) == Some(&b'}') {
                        *i += 1;
                        return;
                    }
                    tree(s, i, path.clone(), out);
                    skip_space(s, i);
                    match s.get(*i) {
                        Some(b',') => *i += 1,
                        Some(b'}') => {
                            *i += 1;
                            return;
                        }
                        _ => return,
                    }
                }
            }
            let start = *i;
            while s.get(*i).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') {
                *i += 1;
            }
            let ident = std::str::from_utf8(&s[start..*i]).unwrap();
            match ident {
                "" => {
                    if s.get(*i) == Some(&b'*') {
                        *i += 1;
                    }
                }
                "self" => {}
                _ => path.push(ident.to_string()),
            }
            if !ident.is_empty() && s[*i..].starts_with(b"::") {
                *i += 2;
                continue;
            }
            out.push(path);
            return;
        }
    }
    let mut out = Vec::new();
    tree(text.as_bytes(), &mut 0, prefix, &mut out);
    out
}

/// The modules a file's code names: `crate::a::b` and `super::a` (resolved against the
/// file's own module), in `use` trees too (`use super::{a, b::{c}}`), each cut to the
/// longest module that exists.
fn imports(module: &[String], code: &str, known: &BTreeSet<Vec<String>>) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    let bytes = code.as_bytes();
    for (start, prefix) in code.match_indices("crate::").map(|(i, _)| (i, "crate::")).chain(code.match_indices("super::").map(|(i, _)| (i, "super::"))) {
        // Inside a path (`super::super::`, `a_crate::`): read from where the path starts.
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_' || bytes[start - 1] == b':') {
            continue;
        }
        let mut base: Vec<String> = if prefix == "crate::" {
            Vec::new()
        } else {
            // `super` is the parent module (a mod.rs file stands for its directory).
            let mut m = module.to_vec();
            m.pop();
            m
        };
        let mut rest = &code[start + prefix.len()..];
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        for mut path in tree_paths(rest, base) {
            while !path.is_empty() && !known.contains(&path) {
                path.pop();
            }
            if !path.is_empty() && path != module {
                out.insert(path);
            }
        }
    }
    out
}

fn graph() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let files = files();
    let known: BTreeSet<Vec<String>> = files.iter().map(|(m, _)| m.clone()).collect();
    files
        .iter()
        .map(|(m, code)| (m.clone(), imports(m, code, &known)))
        .collect()
}

#[test]
fn the_core_never_reaches_up() {
    let forbidden = ["report", "source", "web", "cli", "js", "peek", "model", "bench"];
    let core = ["formats", "dtype", "stats", "vocab", "error", "fmt", "values"];
    let mut bad = Vec::new();
    for (m, deps) in graph() {
        let Some(top) = m.first() else { continue };
        if !core.contains(&top.as_str()) {
            continue;
        }
        for d in deps {
            if d.first().is_some_and(|t| forbidden.contains(&t.as_str())) {
                bad.push(format!("{} imports {}", m.join("::"), d.join("::")));
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn model_and_report_stay_below_their_users() {
    let rules: [(&str, &[&str]); 3] = [
        ("model", &["report", "source", "web", "cli", "js", "peek", "bench"]),
        ("report", &["source", "web", "cli", "js", "peek", "bench"]),
        ("source", &["web", "cli", "js", "peek", "bench"]),
    ];
    let mut bad = Vec::new();
    for (m, deps) in graph() {
        for (layer, above) in rules {
            if m.first().is_some_and(|t| t == layer) {
                for d in &deps {
                    if d.first().is_some_and(|t| above.contains(&t.as_str())) {
                        bad.push(format!("{} imports {}", m.join("::"), d.join("::")));
                    }
                }
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn no_import_circles_between_files() {
    let g = graph();
    // Depth-first search for a back edge.
    fn visit(
        n: &Vec<String>,
        g: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
        found: &mut Vec<String>,
    ) {
        state.insert(n.clone(), 1);
        stack.push(n.clone());
        for d in g.get(n).into_iter().flatten() {
            // A module importing its own submodule, or a submodule its ancestor's items,
            // is the tree, not a circle between files.
            if d.starts_with(n) || n.starts_with(d) {
                continue;
            }
            match state.get(d).copied().unwrap_or(0) {
                0 => visit(d, g, state, stack, found),
                1 => {
                    let from = stack.iter().position(|x| x == d).unwrap_or(0);
                    found.push(stack[from..].iter().map(|m| m.join("::")).collect::<Vec<_>>().join(" → "));
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.clone(), 2);
    }
    let mut state = BTreeMap::new();
    let mut found = Vec::new();
    for n in g.keys() {
        if state.get(n).copied().unwrap_or(0) == 0 {
            visit(n, &g, &mut state, &mut Vec::new(), &mut found);
        }
    }
    assert!(found.is_empty(), "import circles: {found:#?}");
    // The check sees imports at all (a parser that read nothing would pass trivially).
    let report = g.get(&vec!["report".to_string()]).unwrap();
    assert!(report.contains(&vec!["formats".to_string()]), "{report:?}");
    assert!(g.values().map(BTreeSet::len).sum::<usize>() > 100);
}

/// The front ends — the CLI (`cli`), the page (`web`), the page's first stage (`peek`), the
/// JavaScript library (`js`, the npm package's wasm) — each sit on the read loops and the
/// report, and never import each other.
#[test]
fn front_ends_never_import_each_other() {
    let fronts = ["cli", "web", "js", "peek"];
    let g = graph();
    let mut bad = Vec::new();
    for (m, deps) in &g {
        let Some(from) = m.first().filter(|t| fronts.contains(&t.as_str())) else { continue };
        for d in deps {
            if d.first().is_some_and(|t| t != from && fronts.contains(&t.as_str())) {
                bad.push(format!("{} imports {}", m.join("::"), d.join("::")));
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
    // The library's room is there and reaches the read loops and the report as the CLI does.
    let m = |p: &str| p.split("::").map(String::from).collect::<Vec<_>>();
    let js = g.get(&m("js")).expect("no module js");
    for d in ["source::set", "source::scan", "source::audit", "report", "model::memory::flags"] {
        assert!(js.contains(&m(d)), "js imports {js:?}, not {d}");
    }
    assert!(g.get(&m("js::source")).is_some_and(|d| d.contains(&m("source::http"))));
}

/// The page's rooms: a view (`web::views::…`) renders the page state and sends actions and
/// callbacks, and never imports a file of the worker room (`web::worker::…`); a worker file
/// never imports a view. Both meet at the top of `web/` (state, hooks, sources, perf).
#[test]
fn views_and_workers_never_import_each_other() {
    let room = |m: &[String], name: &str| m.len() >= 2 && m[0] == "web" && m[1] == name;
    let g = graph();
    let mut bad = Vec::new();
    for (m, deps) in &g {
        for (from, to) in [("views", "worker"), ("worker", "views")] {
            if room(m, from) {
                bad.extend(deps.iter().filter(|d| room(d, to)).map(|d| format!("{} imports {}", m.join("::"), d.join("::"))));
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
    // The rooms are there, and their imports are seen: a view's of its own room and of the
    // top, the top's of both rooms, a worker file's of its own room.
    let web = |path: &str| std::iter::once("web").chain(path.split("::")).map(String::from).collect::<Vec<_>>();
    for (m, d) in [
        ("views::file_view", "views::components"),
        ("views::file_view", "hooks"),
        ("views::values", "hooks"),
        ("hooks", "worker::job"),
        ("app", "views::audit_view"),
        ("worker::entry", "worker::protocol"),
        ("worker::opener", "state"),
    ] {
        let deps = g.get(&web(m)).unwrap_or_else(|| panic!("no module web::{m}"));
        assert!(deps.contains(&web(d)), "web::{m} imports {deps:?}, not web::{d}");
    }
}

/// Every form of import is read: `use super::…` (in braces too, over lines), `crate::…`
/// paths in code, `super::super::…`.
#[test]
fn imports_are_read_in_every_form() {
    let m = |p: &str| p.split("::").map(String::from).collect::<Vec<_>>();
    let known: BTreeSet<Vec<String>> = ["web", "web::state", "web::views", "web::views::a", "web::views::b", "web::worker", "web::worker::pool", "web::worker::protocol"].iter().map(|p| m(p)).collect();
    let view = m("web::views::a");
    let seen = |code: &str| imports(&view, code, &known);
    let set = |ps: &[&str]| ps.iter().map(|p| m(p)).collect::<BTreeSet<_>>();
    assert_eq!(seen("use super::b::Thing;"), set(&["web::views::b"]));
    assert_eq!(seen("use super::{self, b::{Thing, Other}};"), set(&["web::views", "web::views::b"]));
    assert_eq!(seen("use super::super::worker::pool;"), set(&["web::worker::pool"]));
    assert_eq!(seen("use super::super::{state, worker::{pool::take, protocol}};"), set(&["web::state", "web::worker::pool", "web::worker::protocol"]));
    assert_eq!(seen("use crate::web::{\n    state::State,\n    worker::protocol::{Request, Response},\n};"), set(&["web::state", "web::worker::protocol"]));
    assert_eq!(seen("let (w, ready) = crate::web::worker::pool::take()?;"), set(&["web::worker::pool"]));
    assert_eq!(seen("use crate::web::worker::*;"), set(&["web::worker"]));
    assert_eq!(seen("use super::super::worker::pool as spare;"), set(&["web::worker::pool"]));
    // A mod.rs file stands for its directory: its `super` is the directory's parent.
    assert_eq!(imports(&m("web::views"), "use super::worker::protocol;", &known), set(&["web::worker::protocol"]));
}
