//! The arena and what frees it: [`Chunked`], the vector the arena's objects live in;
//! making objects ([`Machine::new_obj`]) into the slots the mark-and-sweep collector
//! ([`Machine::collect`]) freed; the pools of small item vectors and instances it keeps
//! for the next ones made; and how much a vector takes while it grows, counted before it
//! does ([`growth`]).

use super::Machine;
use crate::formats::pickle::eval::value::{Instance, Obj, Value, VALUE};

/// Bytes of objects a walk makes before its first collection, and at least between two
/// (otherwise half of what was live after the last): small pickles are never collected,
/// and garbage stays under half of what is live.
pub const COLLECT_FLOOR: u64 = 4 << 20;
/// Largest item vector kept for reuse (a state dict's tuples hold 2 to 6 items).
const POOLED_CAPACITY: usize = 8;
/// Fewest and most vectors, and instances, kept for reuse: as many as were made in the
/// last round between two collections, within these (the rest go back to the allocator).
pub(super) const MIN_POOLED: usize = 1 << 10;
const MAX_POOLED: usize = 1 << 20;

const CHUNK: usize = 1 << 14;

/// A vector in fixed chunks: growing never copies what it holds and never leaves more than
/// one chunk unused. Written here because the arena and the memo of a big pickle were
/// most of its walk's peak as `Vec`s: a doubling vector holds up to twice its length and,
/// while it moves, its old and new blocks at once (3× its length for a moment).
#[derive(Clone, Debug)]
pub struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked { chunks: Vec::new(), len: 0 }
    }
}

impl<T> Chunked<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slots allocated (every chunk but the last is full, and holds exactly `CHUNK`).
    pub fn capacity(&self) -> usize {
        match self.chunks.last() {
            Some(last) => (self.chunks.len() - 1) * CHUNK + last.capacity(),
            None => 0,
        }
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.chunks.get_mut(i / CHUNK)?.get_mut(i % CHUNK)
    }

    pub fn push(&mut self, v: T) {
        match self.chunks.last_mut() {
            Some(c) if c.len() < CHUNK => c.push(v),
            _ => {
                // the first chunk grows as a vector does (small pickles stay small; doubling
                // from 4 reaches `CHUNK` exactly); the others are allocated whole
                let mut c = if self.chunks.is_empty() { Vec::new() } else { Vec::with_capacity(CHUNK) };
                c.push(v);
                self.chunks.push(c);
            }
        }
        self.len += 1;
    }
}

/// Bytes an arena object holds beyond its slot, as counted: its vectors by capacity.
fn obj_bytes(o: &Obj) -> usize {
    match o {
        Obj::List(v) | Obj::Tuple(v) | Obj::Set(v) => v.capacity() * VALUE,
        Obj::Dict(d) => d.capacity() * 2 * VALUE,
        Obj::Instance(inst) => {
            std::mem::size_of::<Instance>()
                + inst.items.capacity() * VALUE
                + inst.entries.capacity() * 2 * VALUE
        }
        Obj::Free => 0,
    }
}

impl Machine<'_, '_> {
    /// An empty vector for `n` items: a pooled one when `n` is small.
    pub(super) fn take_vec(&mut self, n: usize) -> Vec<Value> {
        if n <= POOLED_CAPACITY {
            self.small_made += 1;
            if let Some(mut v) = self.vec_pool.pop() {
                self.unpool(v.capacity() * VALUE);
                // emptied here, not when pooled: its memory is touched once, when reused
                v.clear();
                return v;
            }
        }
        Vec::with_capacity(n)
    }

    /// Keeps an item vector for reuse when it is small (counted while pooled; its items,
    /// values nothing refers to, are dropped when it is taken).
    pub(super) fn pool_vec(&mut self, v: Vec<Value>) {
        let cap = v.capacity();
        if cap == 0 || cap > POOLED_CAPACITY || self.vec_pool.len() >= self.pool_cap {
            return;
        }
        let grown = pushed(&mut self.vec_pool, v);
        self.pool(cap * VALUE, grown);
    }

    /// Counts `bytes` of items entering a pool (and `spine` bytes the pool's own vector
    /// grew by): still held, but not live.
    fn pool(&mut self, bytes: usize, spine: usize) {
        self.sink.hold(bytes + spine);
        self.pooled = self.pooled.saturating_add(bytes as u64);
    }

    /// Counts `bytes` leaving a pool: the object made from them counts them again.
    fn unpool(&mut self, bytes: usize) {
        self.sink.held = self.sink.held.saturating_sub(bytes as u64);
        self.pooled = self.pooled.saturating_sub(bytes as u64);
    }

    /// A call's symbolic result: an instance (a pooled one when there is one).
    pub(super) fn instance(&mut self, func: Value, args: Value) -> Obj {
        self.small_made += 1;
        match self.instance_pool.pop() {
            Some(mut inst) => {
                self.unpool(std::mem::size_of::<Instance>());
                inst.func = func;
                inst.args = args;
                Obj::Instance(inst)
            }
            None => Instance::obj(func, args),
        }
    }

    /// What a freed object held, kept for reuse where it can be.
    fn recycle(&mut self, o: Obj) {
        match o {
            Obj::List(v) | Obj::Tuple(v) | Obj::Set(v) => self.pool_vec(v),
            Obj::Instance(mut inst) => {
                let empty = inst.items.capacity() == 0 && inst.entries.capacity() == 0;
                if empty && self.instance_pool.len() < self.pool_cap {
                    inst.func = Value::Unknown;
                    inst.args = Value::Unknown;
                    inst.state = None;
                    let grown = pushed(&mut self.instance_pool, inst);
                    self.pool(std::mem::size_of::<Instance>(), grown);
                }
            }
            Obj::Dict(_) | Obj::Free => {}
        }
    }

    pub(super) fn new_obj(&mut self, o: Obj) -> Value {
        // held: the container's capacity (not its length: a vector's spare room is memory
        // too) and the arena's growth
        let extra = obj_bytes(&o);
        self.made = self.made.saturating_add((std::mem::size_of::<Obj>() + extra) as u64);
        if let Some(id) = self.free.pop() {
            if let Some(slot) = self.arena.get_mut(id as usize) {
                *slot = o;
                self.sink.hold(extra);
                return Value::Obj(id);
            }
        }
        let id = u32::try_from(self.arena.len()).unwrap_or(u32::MAX);
        let before = self.arena.capacity();
        self.arena.push(o);
        let grown = self.arena.capacity().saturating_sub(before);
        self.sink.hold(grown * std::mem::size_of::<Obj>() + extra);
        Value::Obj(id)
    }

    /// Frees every arena object no value the walk can still reach refers to (mark from the
    /// stack, the memo and the result; sweep the rest into the free list): the arguments
    /// of a tensor rebuild, the persistent id of a storage, containers popped and never
    /// memoized for a GET. Runs between opcodes only, when no value is held elsewhere.
    /// Linear in the arena; called after as many bytes were made as were live.
    pub(super) fn collect(&mut self) {
        let mut marked = vec![0u64; self.arena.len().div_ceil(64)];
        let mut work: Vec<u32> = Vec::new();
        let roots = self.stack.iter().chain(self.memo.values()).chain(self.result.iter());
        let reach = |v: &Value, marked: &mut Vec<u64>, work: &mut Vec<u32>| {
            if let Value::Obj(i) = v {
                if let Some(w) = marked.get_mut(*i as usize / 64) {
                    let bit = 1u64 << (*i % 64);
                    if *w & bit == 0 {
                        *w |= bit;
                        work.push(*i);
                    }
                }
            }
        };
        for v in roots {
            reach(v, &mut marked, &mut work);
        }
        while let Some(i) = work.pop() {
            match self.arena.get(i as usize) {
                Some(Obj::List(v) | Obj::Tuple(v) | Obj::Set(v)) => {
                    for x in v {
                        reach(x, &mut marked, &mut work);
                    }
                }
                Some(Obj::Dict(d)) => {
                    for (k, x) in d {
                        reach(k, &mut marked, &mut work);
                        reach(x, &mut marked, &mut work);
                    }
                }
                Some(Obj::Instance(inst)) => {
                    let Instance { func, args, state, items, entries } = &**inst;
                    for x in [func, args].into_iter().chain(state).chain(items) {
                        reach(x, &mut marked, &mut work);
                    }
                    for (k, x) in entries {
                        reach(k, &mut marked, &mut work);
                        reach(x, &mut marked, &mut work);
                    }
                }
                _ => {}
            }
        }
        let free_cap = self.free.capacity();
        self.pool_cap = self.small_made.clamp(MIN_POOLED, MAX_POOLED);
        self.small_made = 0;
        for i in 0..self.arena.len() {
            let live = marked.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0);
            if live {
                continue;
            }
            let old = match self.arena.get_mut(i) {
                Some(slot) if !matches!(slot, Obj::Free) => std::mem::replace(slot, Obj::Free),
                _ => continue,
            };
            self.free.push(i as u32);
            // freed as counted; what is pooled is counted again
            self.sink.held = self.sink.held.saturating_sub(obj_bytes(&old) as u64);
            self.recycle(old);
        }
        let grown = self.free.capacity().saturating_sub(free_cap) * 4;
        self.sink.hold(grown);
        // the next collection after objects of half what is live were made (the pools left
        // out; at least COLLECT_FLOOR, and at least a sweep's worth of slots): garbage
        // stays under half of what is live
        self.made = 0;
        self.collect_after = (self.sink.held.saturating_sub(self.pooled) / 2)
            .max(COLLECT_FLOOR)
            .max((self.arena.len() as u64).saturating_mul(8));
    }

    pub(super) fn obj_mut(&mut self, v: &Value) -> Option<&mut Obj> {
        match v {
            Value::Obj(i) => self.arena.get_mut(*i as usize),
            _ => None,
        }
    }

    pub(super) fn obj(&self, v: &Value) -> Option<&Obj> {
        match v {
            Value::Obj(i) => self.arena.get(*i as usize),
            _ => None,
        }
    }
}

/// Pushes `item`; the bytes `v`'s capacity grew by.
fn pushed<T>(v: &mut Vec<T>, item: T) -> usize {
    let before = v.capacity();
    v.push(item);
    v.capacity().saturating_sub(before) * std::mem::size_of::<T>()
}

/// Bytes a vector of `len` items in `capacity` slots of `size` bytes takes while it grows
/// to hold `more` (its old and new blocks, as a reallocation may copy); 0 when it fits.
pub(super) fn growth(len: usize, capacity: usize, more: usize, size: usize) -> u64 {
    let need = len.saturating_add(more);
    if need <= capacity {
        return 0;
    }
    // a Vec at least doubles (and starts at 4 slots for small items)
    let new = need.max(capacity.saturating_mul(2)).max(4);
    (new.saturating_add(capacity) as u64).saturating_mul(size as u64)
}

/// Moves `new`'s items to the end of `v` when its growth fits in `room` bytes; the bytes
/// its capacity grew by (None, and both unchanged, when it does not fit).
pub(super) fn grow<T>(v: &mut Vec<T>, new: &mut Vec<T>, room: u64) -> Option<usize> {
    let size = std::mem::size_of::<T>();
    if growth(v.len(), v.capacity(), new.len(), size) > room {
        return None;
    }
    let before = v.capacity();
    v.append(new);
    Some(v.capacity().saturating_sub(before) * size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chunked_vector_grows_without_moving_and_counts_its_slots() {
        let mut c = Chunked::default();
        assert_eq!((c.len(), c.capacity()), (0, 0));
        for i in 0..(CHUNK + 5) {
            c.push(i);
        }
        assert_eq!(c.len(), CHUNK + 5);
        assert_eq!(c.capacity(), 2 * CHUNK);
        assert_eq!((c.get(CHUNK - 1), c.get(CHUNK + 4), c.get(CHUNK + 5)), (Some(&(CHUNK - 1)), Some(&(CHUNK + 4)), None));
        if let Some(x) = c.get_mut(CHUNK) {
            *x = 7;
        }
        assert_eq!(c.get(CHUNK), Some(&7));
    }
}
