//! A synthetic torch state-dict pickle, shared by the walk-rate benchmark and the memory
//! bounds (included with `#[path]`, so each test binary takes only this file).

/// A protocol 2 pickle laid out exactly as torch's `data.pkl` of a state dict (compare
/// `python -m pickletools` on a real one): an OrderedDict of `n` tensors, each
/// `_rebuild_tensor_v2(('storage', FloatStorage, key, 'cpu', numel), 0, size, stride,
/// False, OrderedDict())`, every object BINPUT once and shared ones (the rebuild
/// function, 'storage', the storage class, 'cpu', OrderedDict) fetched again with BINGET /
/// LONG_BINGET, as CPython's pickler writes them.
pub fn state_dict_pickle(n: usize) -> Vec<u8> {
    state_dict_pickle_of(n, 4096, 11008)
}

/// The same with every tensor `rows` × `cols` (F32), so a zip can hold its storages.
#[allow(dead_code)] // not every test binary that includes this file uses both
pub fn state_dict_pickle_of(n: usize, rows: u16, cols: u16) -> Vec<u8> {
    let mut p = b"\x80\x02}".to_vec();
    let mut memo = 0u32;
    put(&mut p, &mut memo);
    p.push(b'(');
    // memo slots of the shared objects, once written
    let (mut rebuild, mut storage, mut class, mut cpu, mut odict) = (None, None, None, None, None);
    for k in 0..n {
        if k > 0 && k % 1000 == 0 {
            p.extend_from_slice(b"u("); // SETITEMS every 1000 items, as pickle batches
        }
        binunicode(&mut p, &format!("model.layers.{}.mlp.gate_proj.weight", k));
        put(&mut p, &mut memo);
        once(&mut p, &mut memo, &mut rebuild, |p| p.extend_from_slice(b"ctorch._utils\n_rebuild_tensor_v2\n"));
        p.extend_from_slice(b"((");
        once(&mut p, &mut memo, &mut storage, |p| binunicode(p, "storage"));
        once(&mut p, &mut memo, &mut class, |p| p.extend_from_slice(b"ctorch\nFloatStorage\n"));
        binunicode(&mut p, &k.to_string());
        put(&mut p, &mut memo);
        once(&mut p, &mut memo, &mut cpu, |p| binunicode(p, "cpu"));
        p.push(b'J');
        p.extend_from_slice(&(i32::from(rows) * i32::from(cols)).to_le_bytes());
        p.push(b't');
        put(&mut p, &mut memo);
        p.extend_from_slice(b"QK\x00");
        p.push(b'M');
        p.extend_from_slice(&rows.to_le_bytes());
        p.push(b'M');
        p.extend_from_slice(&cols.to_le_bytes());
        p.push(0x86);
        put(&mut p, &mut memo);
        p.push(b'M');
        p.extend_from_slice(&cols.to_le_bytes());
        p.extend_from_slice(b"K\x01\x86");
        put(&mut p, &mut memo);
        p.push(0x89);
        once(&mut p, &mut memo, &mut odict, |p| p.extend_from_slice(b"ccollections\nOrderedDict\n"));
        p.extend_from_slice(b")R");
        put(&mut p, &mut memo);
        p.push(b't');
        put(&mut p, &mut memo);
        p.push(b'R');
        put(&mut p, &mut memo);
    }
    p.extend_from_slice(b"u.");
    p
}

/// BINPUT / LONG_BINPUT of the next memo slot; returns the slot.
fn put(p: &mut Vec<u8>, memo: &mut u32) -> u32 {
    if *memo < 256 {
        p.extend_from_slice(&[b'q', *memo as u8]);
    } else {
        p.push(b'r');
        p.extend_from_slice(&memo.to_le_bytes());
    }
    *memo += 1;
    *memo - 1
}

/// BINGET / LONG_BINGET of slot `i`.
fn get(p: &mut Vec<u8>, i: u32) {
    if i < 256 {
        p.extend_from_slice(&[b'h', i as u8]);
    } else {
        p.push(b'j');
        p.extend_from_slice(&i.to_le_bytes());
    }
}

/// A shared object: written and memoized the first time, fetched from the memo after.
fn once(p: &mut Vec<u8>, memo: &mut u32, slot: &mut Option<u32>, write: impl FnOnce(&mut Vec<u8>)) {
    match *slot {
        Some(i) => get(p, i),
        None => {
            write(p);
            *slot = Some(put(p, memo));
        }
    }
}

fn binunicode(p: &mut Vec<u8>, s: &str) {
    p.push(b'X');
    p.extend_from_slice(&(s.len() as u32).to_le_bytes());
    p.extend_from_slice(s.as_bytes());
}
