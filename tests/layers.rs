//! The layering of ARCHITECTURE.md, checked on the source text: which module may import
//! which, and no import circle between the files of `src/`. Imports are read from `use`
//! lines and `crate::`/`super::` paths in code (comments and `#[cfg(test)]` modules are
//! left out: tests may reach anywhere).

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

/// The modules a file's code names: `crate::a::b` and `super::a` (resolved against the
/// file's own module), cut to the longest module that exists.
fn imports(module: &[String], code: &str, known: &BTreeSet<Vec<String>>) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    let bytes = code.as_bytes();
    for (start, prefix) in code.match_indices("crate::").map(|(i, _)| (i, "crate::")).chain(code.match_indices("super::").map(|(i, _)| (i, "super::"))) {
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            continue;
        }
        let mut path: Vec<String> = if prefix == "crate::" {
            Vec::new()
        } else {
            // `super` is the parent module (a mod.rs file stands for its directory).
            let mut m = module.to_vec();
            m.pop();
            m
        };
        let rest = &code[start + prefix.len()..];
        let mut rest = rest;
        while let Some(r) = rest.strip_prefix("super::") {
            path.pop();
            rest = r;
        }
        for seg in rest.split("::") {
            let ident: String = seg.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if ident.is_empty() || ident.len() != seg.len() && !seg.starts_with(&ident) {
                break;
            }
            path.push(ident.clone());
            if ident.len() != seg.len() {
                break;
            }
        }
        while !path.is_empty() && !known.contains(&path) {
            path.pop();
        }
        if !path.is_empty() && path != module {
            out.insert(path);
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
    let forbidden = ["report", "source", "web", "cli", "model", "bench"];
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
        ("model", &["report", "source", "web", "cli", "bench"]),
        ("report", &["source", "web", "cli", "bench"]),
        ("source", &["web", "cli", "bench"]),
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
