use super::*;
use crate::error::Code;
use crate::formats::pickle::safety::GlobalVerdict;
use std::rc::Rc;

fn w(data: &[u8]) -> Walk {
    walk(data, &Context::default())
}

type Row = (
    Option<String>,
    Option<String>,
    &'static str,
    u64,
    GlobalVerdict,
);

fn names(w: &Walk) -> Vec<Row> {
    w.globals
        .iter()
        .map(|g| {
            (
                g.module.clone(),
                g.name.clone(),
                g.opcode,
                g.offset,
                g.verdict,
            )
        })
        .collect()
}

fn s(x: &str) -> Option<String> {
    Some(x.to_string())
}

#[test]
fn global_reduce_protocol_0() {
    // pickle.dumps of os.system("true") at protocol 0, as CPython writes it on Linux
    let data = b"cposix\nsystem\np0\n(Vtrue\np1\ntp2\nRp3\n.";
    let w = w(data);
    assert_eq!(w.end, End::Stop(data.len() as u64));
    assert_eq!(
        names(&w),
        vec![(
            s("posix"),
            s("system"),
            "GLOBAL",
            0,
            GlobalVerdict::Dangerous
        )]
    );
}

#[test]
fn stack_global_from_memo_after_pops() {
    let data =
        b"\x80\x04\x8c\x02os\x94\x8c\x06system\x9400\x8c\x01x200h\x00h\x01\x93\x8c\x04true\x85R.";
    let w = w(data);
    assert!(
        matches!(w.end, End::Stop(_)),
        "{:?} {:?}",
        w.end,
        w.findings
    );
    let at = data.iter().position(|&b| b == 0x93).unwrap() as u64;
    assert_eq!(
        names(&w),
        vec![(
            s("os"),
            s("system"),
            "STACK_GLOBAL",
            at,
            GlobalVerdict::Dangerous
        )]
    );
}

#[test]
fn compat_names_for_protocol_2_only() {
    let p2 = b"\x80\x02c__builtin__\neval\n.";
    let g = &w(p2).globals[0];
    assert_eq!(
        (g.module.as_deref(), g.name.as_deref()),
        (Some("builtins"), Some("eval"))
    );
    assert_eq!(g.written, Some(("__builtin__".into(), "eval".into())));
    let p3 = b"\x80\x03c__builtin__\nset\n.";
    let g = &w(p3).globals[0];
    assert_eq!(g.module.as_deref(), Some("__builtin__"));
    assert_eq!(g.verdict, GlobalVerdict::Unknown);
}

#[test]
fn runtime_module_is_dangerous() {
    let data = b"\x80\x04\x8c\x08builtins\x8c\x03str\x93\x8c\x02os\x85R\x8c\x06system\x93.";
    let w = w(data);
    assert_eq!(w.globals.len(), 2);
    assert_eq!(w.globals[1].module, None);
    assert_eq!(w.globals[1].verdict, GlobalVerdict::Dangerous);
    assert!(w.globals[1].why.contains("computed at run time"));
}

#[test]
fn nested_loads_walked_with_absolute_offsets() {
    let inner = b"\x80\x02cposix\nsystem\nq\x00.";
    let mut data = b"\x80\x03c_pickle\nloads\n(C".to_vec();
    data.push(inner.len() as u8);
    let inner_at = data.len() as u64;
    data.extend_from_slice(inner);
    data.extend_from_slice(b"tR.");
    let w = walk(
        &data,
        &Context {
            base: 1000,
            ..Context::default()
        },
    );
    assert_eq!(w.globals.len(), 2);
    assert_eq!(w.globals[1].module.as_deref(), Some("posix"));
    assert_eq!(w.globals[1].offset, 1000 + inner_at + 2);
    assert_eq!(w.globals[1].nesting, 1);
}

#[test]
fn truncated_and_malformed_are_never_clean() {
    let w1 = w(b"\x80\x02}q\x00(X\x01\x00\x00");
    assert_eq!(w1.end, End::OutOfData(6));
    let w2 = w(b"\x80\x02a.");
    assert_eq!(w2.end, End::Failed);
    assert_eq!(w2.findings[0].code, Code::PickleMalformed);
    let w3 = w(b"\x80\x02\xff");
    assert_eq!(w3.end, End::Failed);
    let w4 = w(b"\x80\x07N.");
    assert_eq!(w4.end, End::Failed);
    let w5 = w(b"");
    assert_eq!(w5.end, End::OutOfData(0));
    let w6 = w(b"h\x05.");
    assert_eq!(w6.end, End::Failed, "unknown memo index");
}

#[test]
fn lying_lengths_do_not_allocate() {
    let w = w(b"\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\x7f");
    assert_eq!(w.end, End::OutOfData(2));
}

#[test]
fn state_dict_paths() {
    // {"a": {"b": [T, T]}} with torch-style persistent ids, protocol 2 (hand-built)
    let mut d = b"\x80\x02}q\x00X\x01\x00\x00\x00a}(X\x01\x00\x00\x00b]".to_vec();
    for key in [b"0", b"1"] {
        d.extend_from_slice(b"ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x00");
        d.extend_from_slice(key);
        d.extend_from_slice(b"X\x03\x00\x00\x00cpuK\x06tQK\x00K\x02K\x03\x86K\x03K\x01\x86\x89ccollections\nOrderedDict\n)RtRa");
    }
    d.extend_from_slice(b"us.");
    let w = walk(
        &d,
        &Context {
            torch: true,
            ..Context::default()
        },
    );
    assert!(matches!(w.end, End::Stop(_)), "{:?}", w.findings);
    let (named, _) = w.named_tensors();
    let got: Vec<_> = named.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(got, ["a.b.0", "a.b.1"]);
    assert_eq!(w.storages.len(), 2);
    assert_eq!(w.tensors[0].shape, vec![2, 3]);
    assert_eq!(w.tensors[0].stride, vec![3, 1]);
    assert_eq!(&*w.storages[0].type_name, "torch.FloatStorage");
}

#[test]
fn getattr_of_import_is_resolved() {
    let data = b"\x80\x02cbuiltins\ngetattr\n(cbuiltins\n__import__\n(X\x02\x00\x00\x00ostRX\x06\x00\x00\x00systemtR.";
    let w = w(data);
    let last = w.globals.last().unwrap();
    assert_eq!(
        (last.module.as_deref(), last.name.as_deref(), last.opcode),
        (Some("os"), Some("system"), "REDUCE")
    );
    assert_eq!(last.verdict, GlobalVerdict::Dangerous);
}

#[test]
fn nesting_is_bounded() {
    // pickle.loads(b"pickle.loads(b'…')") nested 12 deep around a posix.system call
    let mut inner = b"\x80\x02cposix\nsystem\n.".to_vec();
    for _ in 0..12 {
        let mut outer = b"\x80\x03c_pickle\nloads\n(B".to_vec();
        outer.extend_from_slice(&(inner.len() as u32).to_le_bytes());
        outer.extend_from_slice(&inner);
        outer.extend_from_slice(b"tR.");
        inner = outer;
    }
    let w = w(&inner);
    let deepest = w.globals.iter().map(|g| g.nesting).max().unwrap();
    assert_eq!(deepest, MAX_NESTING);
    assert!(w.findings.iter().any(|f| f.code == Code::PickleLimit));
}

#[test]
fn lying_memo_index_does_not_allocate() {
    let w = w(b"\x80\x02Nr\xff\xff\xff\xff0j\xff\xff\xff\xff.");
    assert!(matches!(w.end, End::Stop(_)), "{:?}", w.findings);
    assert_eq!(w.root, Value::None);
}

#[test]
fn protocol_0_persistent_id_and_newobj_ex() {
    let w1 = w(b"Pkey\n.");
    assert_eq!(w1.findings[0].code, Code::UnexpectedPersistentId);
    // NEWOBJ_EX of a class with args and kwargs
    let w2 = w(b"\x80\x04\x8c\x03foo\x8c\x03Bar\x93)}\x92.");
    assert!(matches!(w2.end, End::Stop(_)));
    assert_eq!(w2.globals[0].verdict, GlobalVerdict::Unknown);
}

#[test]
fn pop_on_an_empty_mark_pops_the_mark() {
    // CPython's load_pop: with nothing above the topmost mark, POP removes the mark
    let w = w(b"(0N.");
    assert!(matches!(w.end, End::Stop(_)), "{:?}", w.findings);
}

#[test]
fn an_import_performed_again_is_counted_on_its_first_record() {
    // os.system called three times, the import written each time; then once nested
    let p = repeated(b"\x80\x02", b"cposix\nsystem\nX\x02\x00\x00\x00id\x85R0", 3, b"cbuiltins\nprint\n0N.");
    let w = w(&p);
    assert_eq!(w.end, End::Stop(p.len() as u64));
    let rows: Vec<_> = w.globals.iter().map(|g| (g.name.as_deref(), g.count, g.offset)).collect();
    assert_eq!(rows, vec![(Some("system"), 3, 2), (Some("print"), 1, p.len() as u64 - 19)]);
    assert!(w.more_globals.is_empty());
}

#[test]
fn imports_past_the_listing_cap_are_counted_by_verdict() {
    // MAX_GLOBALS distinct unknown imports, then 10 distinct dangerous ones and an allowed
    // one: the dangerous ones are counted, the allowed one still listed
    let mut p = b"\x80\x02".to_vec();
    for k in 0..MAX_GLOBALS {
        p.extend_from_slice(format!("cm{k}\nf\n0").as_bytes());
    }
    for k in 0..10 {
        p.extend_from_slice(format!("cos\nsystem{k}\n0").as_bytes());
    }
    p.extend_from_slice(b"ccollections\nOrderedDict\n0N.");
    let w = w(&p);
    assert_eq!(w.end, End::Stop(p.len() as u64));
    assert_eq!(w.globals.len(), MAX_GLOBALS + 1);
    assert_eq!(w.globals.last().and_then(|g| g.name.as_deref()), Some("OrderedDict"));
    assert_eq!(w.more_globals, MoreGlobals { count: 10, dangerous: 10, unknown: 0 });
}

#[test]
fn a_walk_over_its_memory_budget_stops_and_still_finds_later_imports() {
    // three million one-byte EMPTY_LIST opcodes: 3 MB of stream holding 96 MB+ of lists
    // and stack, past 3 per byte + 48 MiB; then an os.system import the stop must not hide
    let mut p = b"\x80\x02".to_vec();
    p.extend(std::iter::repeat_n(b']', 3_000_000));
    p.extend_from_slice(b"cposix\nsystem\n.");
    let w = w(&p);
    assert_eq!(w.end, End::Failed);
    let limit = w.findings.iter().find(|f| f.code == Code::PickleLimit).expect("a PickleLimit finding");
    assert!(limit.message.contains("symbolic values"), "{}", limit.message);
    let stopped_at = limit.offset.unwrap();
    assert!(stopped_at < 3_000_000, "stopped at {stopped_at}");
    assert!(w.held <= MEMORY_PER_BYTE * p.len() as u64 + MEMORY_SLACK + 4096, "held {}", w.held);
    let g = w.globals.last().expect("the import after the stop");
    assert_eq!((g.module.as_deref(), g.verdict, g.offset), (Some("posix"), GlobalVerdict::Dangerous, 3_000_002));
}

#[test]
fn garbage_is_collected_so_a_stream_of_discarded_tuples_is_walked_to_its_end() {
    // 1,200,000 × (MARK, two ints, TUPLE, POP): 8.4 MB of stream making 96 MB of tuples
    // (their items and arena slots), every one dropped at once: more than the budget
    // (3 per byte + 48 MiB = 63 MB) unless the collector frees them
    let p = repeated(b"\x80\x02", b"(K\x01K\x02t0", 1_200_000, b"N.");
    let w = w(&p);
    assert_eq!(w.end, End::Stop(p.len() as u64), "{:?}", w.findings);
    assert!(w.findings.iter().all(|f| f.code != Code::PickleLimit), "{:?}", w.findings);
    // what stays held: the arena's slots (reused) and the free list, never the tuples
    assert!(w.held < 3 * COLLECT_FLOOR, "held {}", w.held);
    assert!(w.arena.len() < 200_000, "arena {}", w.arena.len());
}

#[test]
fn memoize_counts_entries_no_get_reads() {
    // protocol 4: 'a' MEMOIZE (0), POP, 'b' MEMOIZE (1), POP, BINGET 1: entry 0 is never
    // read (so not kept) but still counts, or 'b' would be stored as 0 and the GET fail
    let p = b"\x80\x04\x8c\x01a\x940\x8c\x01b\x940h\x01.";
    let w = w(p);
    assert_eq!(w.end, End::Stop(p.len() as u64), "{:?}", w.findings);
    assert_eq!(w.root, Value::Str(Rc::from("b")));
}

#[test]
fn a_container_that_would_grow_past_the_budget_stops_the_walk_before_it_grows() {
    // one list of BININTs appended four at a time: 5 bytes of stream per 24-byte item, so
    // the list's doublings (old and new block at once) pass 3 per byte + 48 MiB
    let unit = b"(J\x01\x00\x00\x00J\x01\x00\x00\x00J\x01\x00\x00\x00J\x01\x00\x00\x00e";
    let p = repeated(b"\x80\x02]", unit, 1_500_000, b"cposix\nsystem\n.");
    let w = w(&p);
    assert_eq!(w.end, End::Failed);
    assert!(w.findings.iter().any(|f| f.code == Code::PickleLimit && f.message.contains("symbolic values")), "{:?}", w.findings);
    assert!(w.held <= MEMORY_PER_BYTE * p.len() as u64 + MEMORY_SLACK, "held {}", w.held);
    assert_eq!(w.globals.last().and_then(|g| g.module.as_deref()), Some("posix"));
}

/// `head`, then `unit` `n` times, then `tail`.
fn repeated(head: &[u8], unit: &[u8], n: usize, tail: &[u8]) -> Vec<u8> {
    let mut p = head.to_vec();
    for _ in 0..n {
        p.extend_from_slice(unit);
    }
    p.extend_from_slice(tail);
    p
}

/// BINUNICODE of `s`.
fn x(s: &str) -> Vec<u8> {
    [&[b'X'][..], &(s.len() as u32).to_le_bytes(), s.as_bytes()].concat()
}

/// A protocol-2 `_rebuild_tensor_v2` of a 4-element float storage named `key`, as torch
/// pickles it (the storage a persistent id).
fn rebuild(key: &str) -> Vec<u8> {
    let mut r = b"ctorch._utils\n_rebuild_tensor_v2\n((".to_vec();
    r.extend(x("storage"));
    r.extend(b"ctorch\nFloatStorage\n");
    r.extend(x(key));
    r.extend(x("cpu"));
    r.extend(b"K\x04tQK\x00K\x04\x85K\x01\x85\x89ccollections\nOrderedDict\n)RtR");
    r
}

/// `{"a": T, "a_again": T, "b": [T, U]}` as torch pickles one tensor object under several
/// keys: the second and third a memo GET of the first (issue 24). Each key is listed, as
/// `torch.load` gives each; a repeat past the walk's allowance is counted, not listed.
#[test]
fn a_tensor_under_several_keys_is_named_by_each() {
    let mut d = b"\x80\x02}(".to_vec();
    d.extend(x("a"));
    d.extend(rebuild("0"));
    d.extend(b"q\x07");
    d.extend(x("a_again"));
    d.extend(b"h\x07");
    d.extend(x("b"));
    d.extend(b"](h\x07");
    d.extend(rebuild("1"));
    d.extend(b"eu.");
    let ctx = Context { torch: true, ..Context::default() };
    let w = walk(&d, &ctx);
    assert!(matches!(w.end, End::Stop(_)), "{:?}", w.findings);
    assert_eq!(w.tensors.len(), 2);
    let (named, findings) = w.named_tensors();
    let got: Vec<(&str, u32)> = named.iter().map(|n| (n.name.as_str(), n.tensor)).collect();
    assert_eq!(got, [("a", 0), ("a_again", 0), ("b.0", 0), ("b.1", 1)]);
    assert!(findings.is_empty(), "{findings:?}");
    // a list of 2 × the allowance GETs of one tensor: the allowance is listed
    let n = 2 * (REPEAT_NAMES_SLACK as usize + 4096);
    let mut d = b"\x80\x02](".to_vec();
    d.extend(rebuild("0"));
    d.extend(b"q\x07");
    d.extend(b"h\x07".repeat(n));
    d.extend(b"e.");
    let w = walk(&d, &ctx);
    let (named, findings) = w.named_tensors();
    let allowed = REPEAT_NAMES_SLACK + d.len() as u64 / REPEAT_NAME_STREAM_BYTES;
    assert_eq!(named.len() as u64, 1 + allowed);
    assert_eq!(named.last().map(|t| t.name.clone()), Some(allowed.to_string()));
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].code, Code::LimitExceeded);
    let past = crate::fmt::thousands(n as u64 - allowed);
    assert!(findings[0].message.starts_with(&format!("{past} more tensor names")), "{}", findings[0].message);
}

/// `{"model": {"w": T, "b": U}, "ema": <the same dict>}`: a sub-dict under two keys (torch
/// pickles the second as a memo GET of the first) is listed under each, as `torch.load`
/// gives both (issue 24); a DAG of lists each holding the next twice stays bounded.
#[test]
fn a_sub_dict_under_two_keys_is_listed_under_each() {
    let mut d = b"\x80\x02}(".to_vec();
    d.extend(x("model"));
    d.extend(b"}q\x08(");
    d.extend(x("w"));
    d.extend(rebuild("0"));
    d.extend(x("b"));
    d.extend(rebuild("1"));
    d.extend(b"u");
    d.extend(x("ema"));
    d.extend(b"h\x08u.");
    let ctx = Context { torch: true, ..Context::default() };
    let w = walk(&d, &ctx);
    assert!(matches!(w.end, End::Stop(_)), "{:?}", w.findings);
    let (named, findings) = w.named_tensors();
    let got: Vec<(&str, u32)> = named.iter().map(|n| (n.name.as_str(), n.tensor)).collect();
    assert_eq!(got, [("model.w", 0), ("model.b", 1), ("ema.w", 0), ("ema.b", 1)]);
    assert!(findings.is_empty(), "{findings:?}");
    // 40 lists, each holding the next twice, the last a tensor: 2^40 paths, named up to the
    // repeat allowance, the rest counted in one finding.
    let mut d = b"\x80\x02".to_vec();
    d.extend(rebuild("0"));
    for i in 0..40u8 {
        d.extend(b"q");
        d.push(i);
        d.extend(b"h");
        d.push(i);
        d.extend(b"\x86");
    }
    d.extend(b".");
    let w = walk(&d, &ctx);
    assert!(matches!(w.end, End::Stop(_)), "{:?}", w.findings);
    let (named, findings) = w.named_tensors();
    let allowed = REPEAT_NAMES_SLACK + d.len() as u64 / REPEAT_NAME_STREAM_BYTES;
    assert!(named.len() as u64 <= 1 + allowed, "{} names", named.len());
    assert!(named.len() > 1);
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].code, Code::LimitExceeded);
}
