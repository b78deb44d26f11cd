//! The pickle walk's collector frees only what the stream can no longer reach: a walk that
//! collects after every opcode finds exactly what the normal walk finds (imports, storages,
//! tensors and their names, findings, the value the pickle returns) on every pickle fixture
//! and on synthetic streams that keep containers in the memo, fetch them back after they
//! left the stack, and mutate them through it.

use std::path::Path;
use tensorpeek::formats::pickle::eval::{walk_collecting_at_every_opcode, Obj, Value};
use tensorpeek::formats::pickle::{walk, Context, Walk};

#[path = "support/state_dict.rs"]
mod state_dict;

/// The value tree from `v` as text (arena indices left out: slots are reused), at most
/// `budget` nodes.
fn render(w: &Walk, v: &Value, depth: usize, budget: &mut usize, out: &mut String) {
    if *budget == 0 || depth > 64 {
        out.push('…');
        return;
    }
    *budget -= 1;
    let Value::Obj(i) = v else {
        out.push_str(&format!("{v:?}"));
        return;
    };
    let list = |items: &[Value], open: &str, close: char, budget: &mut usize, out: &mut String| {
        out.push_str(open);
        for x in items {
            render(w, x, depth + 1, budget, out);
            out.push(',');
        }
        out.push(close);
    };
    match w.arena.get(*i as usize) {
        Some(Obj::List(items)) => list(items, "[", ']', budget, out),
        Some(Obj::Tuple(items)) => list(items, "(", ')', budget, out),
        Some(Obj::Set(items)) => list(items, "{", '}', budget, out),
        Some(Obj::Dict(d)) => {
            out.push('{');
            for (k, x) in d {
                render(w, k, depth + 1, budget, out);
                out.push(':');
                render(w, x, depth + 1, budget, out);
                out.push(',');
            }
            out.push('}');
        }
        Some(Obj::Instance(inst)) => {
            out.push_str("call(");
            render(w, &inst.func, depth + 1, budget, out);
            out.push(';');
            render(w, &inst.args, depth + 1, budget, out);
            out.push(';');
            if let Some(s) = &inst.state {
                render(w, s, depth + 1, budget, out);
            }
            out.push(';');
            list(&inst.items, "", ';', budget, out);
            for (k, x) in &inst.entries {
                render(w, k, depth + 1, budget, out);
                out.push(':');
                render(w, x, depth + 1, budget, out);
                out.push(',');
            }
            out.push(')');
        }
        Some(Obj::Free) => out.push_str("FREED"),
        None => out.push_str("DANGLING"),
    }
}

/// Everything a walk found, as text.
fn digest(w: &Walk) -> String {
    let mut root = String::new();
    render(w, &w.root, 0, &mut 20_000, &mut root);
    let globals: Vec<_> = w.globals.iter().map(|g| (&g.module, &g.name, g.opcode, g.offset, g.count, g.verdict)).collect();
    let findings: Vec<_> = w.findings.iter().map(|f| (f.code, &f.message, f.offset)).collect();
    format!(
        "end {:?} opcodes {} proto {}\nglobals {globals:?} more {:?}\nstorages {:?}\ntensors {:?}\nnamed {:?}\nfindings {findings:?}\nroot {root}",
        w.end,
        w.opcodes,
        w.proto,
        w.more_globals,
        w.storages,
        w.tensors,
        w.named_tensors(),
    )
}

fn same(label: &str, data: &[u8], ctx: &Context) {
    let (a, b) = (walk(data, ctx), walk_collecting_at_every_opcode(data, ctx));
    let (da, db) = (digest(&a), digest(&b));
    assert!(!da.contains("FREED") && !da.contains("DANGLING"), "{label}: {da}");
    assert_eq!(da, db, "{label}: collecting at every opcode changed the walk");
}

#[test]
fn collecting_at_every_opcode_changes_nothing_on_the_pickle_fixtures() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pickle");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).expect("the fixtures") {
        let p = e.expect("an entry").path();
        if p.extension().is_some_and(|x| x == "pkl") {
            let data = std::fs::read(&p).expect("a fixture");
            for torch in [false, true] {
                same(&p.display().to_string(), &data, &Context { torch, ..Context::default() });
            }
            n += 1;
        }
    }
    assert!(n >= 40, "only {n} .pkl fixtures");
}

#[test]
fn collecting_at_every_opcode_changes_nothing_on_a_state_dict() {
    let data = state_dict::state_dict_pickle(1500);
    let ctx = Context { torch: true, ..Context::default() };
    same("a 1,500-tensor state dict", &data, &ctx);
    let w = walk_collecting_at_every_opcode(&data, &ctx);
    assert_eq!(w.named_tensors().0.len(), 1500);
}

#[test]
fn containers_kept_only_by_the_memo_survive_every_collection() {
    // protocol 2: a list memoized at 0 and popped; 500 tuples made and dropped; the list
    // fetched back and appended to; a dict memoized at 1 holding it, popped; more garbage;
    // then the dict fetched and returned. A collector that missed the memo's entries would
    // free the list (its items, its later append) or the dict.
    let mut p = b"\x80\x02]q\x00(K\x01K\x02e0".to_vec();
    for _ in 0..500 {
        p.extend_from_slice(b"(K\x07K\x08t0");
    }
    p.extend_from_slice(b"h\x00K\x03a0}q\x01X\x01\x00\x00\x00kh\x00s0");
    for _ in 0..500 {
        p.extend_from_slice(b"]K\x09a0");
    }
    p.extend_from_slice(b"h\x01.");
    let ctx = Context::default();
    same("memo-kept containers", &p, &ctx);
    let w = walk_collecting_at_every_opcode(&p, &ctx);
    let mut root = String::new();
    render(&w, &w.root, 0, &mut 100, &mut root);
    assert_eq!(root, r#"{Str("k"):[Int(1),Int(2),Int(3),],}"#);
}
