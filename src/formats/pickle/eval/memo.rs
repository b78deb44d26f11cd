//! The memo ([`Memo`]), kept only for the indices some GET of the stream reads, and the
//! pre-pass that lists them ([`read_indices`], into an [`IndexSet`]).

use super::text::parse_int_line;
use super::value::{Value, VALUE};
use crate::formats::pickle::ops::{self, Arg, Op};
use std::collections::HashMap;

/// Indices as a bitset for the small ones (below the stream's length: one bit each) and a
/// set for the others, which each cost a LONG_BINPUT / LONG_BINGET of the stream.
#[derive(Default)]
pub(super) struct IndexSet {
    pub(super) bits: Vec<u64>,
    /// Indices from `bits.len() * 64` up to this bound go into `bits` (grown to reach them).
    small: u64,
    pub(super) large: std::collections::HashSet<u64>,
}

impl IndexSet {
    fn new(small: u64) -> Self {
        IndexSet { small, ..Default::default() }
    }

    fn contains(&self, i: u64) -> bool {
        if i < self.small {
            let word = usize::try_from(i / 64).ok().and_then(|w| self.bits.get(w));
            word.is_some_and(|w| w & (1 << (i % 64)) != 0)
        } else {
            self.large.contains(&i)
        }
    }

    /// Adds `i`; whether it was new, and the bytes the set grew by.
    fn insert(&mut self, i: u64) -> (bool, usize) {
        if i < self.small {
            let Ok(w) = usize::try_from(i / 64) else { return (false, 0) };
            let before = self.bits.capacity();
            if self.bits.len() <= w {
                self.bits.resize(w + 1, 0);
            }
            let grown = self.bits.capacity().saturating_sub(before) * 8;
            match self.bits.get_mut(w) {
                Some(word) => {
                    let bit = 1 << (i % 64);
                    let new = *word & bit == 0;
                    *word |= bit;
                    (new, grown)
                }
                None => (false, grown),
            }
        } else {
            let before = self.large.capacity();
            let new = self.large.insert(i);
            // a hash set slot: the key and a control byte
            (new, self.large.capacity().saturating_sub(before) * 9)
        }
    }
}

/// The memo. CPython's is a dict from index to object; here only the entries some GET of
/// the stream reads are kept (the pre-pass [`read_indices`] lists them): torch.save
/// memoizes every container and string it writes and reads back only the few it repeats
/// (the storage tag, `"cpu"`, the rebuild function), so the rest need not be held, and
/// once off the stack they are garbage the collector frees. Every index stored is still
/// counted once, as `MEMOIZE` names the next entry by the memo's length.
pub(super) struct Memo {
    /// Indices some GET / BINGET / LONG_BINGET of the stream names.
    read: IndexSet,
    /// Indices PUT so far (for the length).
    put: IndexSet,
    values: HashMap<u64, Value>,
    len: usize,
}

impl Memo {
    pub(super) fn new(read: IndexSet, small: u64) -> Self {
        Memo { read, put: IndexSet::new(small), values: HashMap::new(), len: 0 }
    }

    /// Distinct indices stored (CPython's `len(memo)`).
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn has(&self, idx: u64) -> bool {
        self.put.contains(idx)
    }

    pub(super) fn get(&self, idx: u64) -> Option<&Value> {
        self.values.get(&idx)
    }

    /// Stores `v` at `idx`; the bytes the memo grew by.
    pub(super) fn insert(&mut self, idx: u64, v: Value) -> usize {
        let (new, mut grown) = self.put.insert(idx);
        if new {
            self.len += 1;
        }
        if self.read.contains(idx) {
            let before = self.values.capacity();
            self.values.insert(idx, v);
            grown += self.values.capacity().saturating_sub(before) * (VALUE + 9);
        }
        grown
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &Value> {
        self.values.values()
    }
}

/// The memo indices a stream reads (GET, BINGET, LONG_BINGET), up to its STOP or the
/// first byte that is not an opcode: one decoding pass, no values. Indices below the
/// stream's length go into a bitset (an eighth of a byte per byte of stream), others into
/// a set (each costs a 5-byte LONG_BINGET).
pub(super) fn read_indices(data: &[u8]) -> IndexSet {
    let mut set = IndexSet::new(data.len() as u64);
    let mut pos = 0;
    while let Ok(d) = ops::decode(data, pos) {
        match (d.info.op, d.arg) {
            (Op::Stop, _) => break,
            (Op::Get, Arg::Line(l)) => {
                if let Some(Value::Int(i)) = parse_int_line(l) {
                    if let Ok(i) = u64::try_from(i) {
                        set.insert(i);
                    }
                }
            }
            (Op::BinGet | Op::LongBinGet, Arg::Int(i)) => {
                if let Ok(i) = u64::try_from(i) {
                    set.insert(i);
                }
            }
            _ => {}
        }
        pos = d.next;
    }
    set
}
