//! ggml's scheduler and graph allocator, simulated over a [`Graph`]: the scheduler assigns
//! every node a backend and copies what crosses between backends
//! (`ggml_backend_sched_split_graph`, ggml/src/ggml-backend.cpp:1066-1605), then ggml-alloc
//! places every tensor in its backend's buffer with the dynamic allocator's best-fit search
//! (`ggml_gallocr_alloc_graph_impl` and `ggml_dyn_tallocr_*`, ggml/src/ggml-alloc.c), and
//! each buffer's size is the allocator's high-water mark. Backends are indexed as llama.cpp
//! orders them: the devices, then the CPU last (src/llama-context.cpp:408-424).
//!
//! Every backend here is a CPU or an RPC server (over a CPU backend): each supports every
//! op and only its own buffer type (the CPU the host's: `ggml_backend_rpc_device_supports_op`,
//! `_supports_buft`, ggml/src/ggml-rpc/ggml-rpc.cpp:2216-2230), none offloads ops
//! (`offload_op` NULL, :2262) and none reorders a split (`graph_optimize` NULL).

use super::graph::{Graph, Name, Op, Tensor, MAX_SRC};
use super::params::pad;

/// `MAX_FREE_BLOCKS` (ggml/src/ggml-alloc.c:14): ggml aborts past it; the simulation gives up.
pub const MAX_FREE_BLOCKS: usize = 256;
/// `GGML_SCHED_MAX_COPIES` (ggml/src/ggml-backend.cpp:772).
pub const SCHED_MAX_COPIES: usize = 4;
/// No copy of a source on a backend yet (the scheduler's `tensor_copies` slot still NULL).
const NO_COPY: usize = usize::MAX;

/// Why a graph could not be simulated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimError {
    /// More free blocks than ggml-alloc keeps.
    FreeBlocks,
    /// A tensor index out of the graph (a bug in the builder).
    Dangling,
}

/// The dynamic allocator of one buffer (`ggml_dyn_tallocr`), one chunk: a CPU or RPC buffer
/// type has no maximum size (`get_max_size` → SIZE_MAX), so the first chunk's last block is
/// `SIZE_MAX/2` long (ggml-alloc.c:160-167, 360) and a second chunk is never made.
#[derive(Clone, Debug)]
struct DynAlloc {
    alignment: u64,
    /// (offset, size), sorted by offset; the last one is the chunk's open end.
    free: Vec<(u64, u64)>,
    max_size: u64,
}

impl DynAlloc {
    fn new(alignment: u64) -> DynAlloc {
        DynAlloc { alignment, free: vec![(0, u64::MAX / 2)], max_size: 0 }
    }

    /// `ggml_dyn_tallocr_alloc` (ggml-alloc.c:202-300): the best-fitting free block other
    /// than the last (the smallest that fits, the later of equals), else the last.
    fn alloc(&mut self, size: u64) -> u64 {
        let size = pad(size, self.alignment);
        let mut best: Option<usize> = None;
        let mut best_size = u64::MAX;
        let n = self.free.len();
        for (i, (_, s)) in self.free.iter().enumerate().take(n.saturating_sub(1)) {
            if *s >= size && *s <= best_size {
                best = Some(i);
                best_size = *s;
            }
        }
        let i = best.unwrap_or(n.saturating_sub(1));
        let Some(block) = self.free.get_mut(i) else { return 0 };
        let addr = block.0;
        block.0 = block.0.saturating_add(size);
        block.1 = block.1.saturating_sub(size);
        if block.1 == 0 {
            self.free.remove(i);
        }
        self.max_size = self.max_size.max(addr.saturating_add(size));
        addr
    }

    /// `ggml_dyn_tallocr_free_bytes` (ggml-alloc.c:303-340): merged with the block it ends
    /// or starts (and then its neighbour), else inserted in address order.
    fn free_bytes(&mut self, offset: u64, size: u64) -> Result<(), SimError> {
        let size = pad(size, self.alignment);
        for i in 0..self.free.len() {
            let (bo, bs) = self.free[i];
            if bo.saturating_add(bs) == offset {
                self.free[i].1 = bs.saturating_add(size);
                if let Some(&(no, ns)) = self.free.get(i + 1) {
                    if self.free[i].0.saturating_add(self.free[i].1) == no {
                        self.free[i].1 = self.free[i].1.saturating_add(ns);
                        self.free.remove(i + 1);
                    }
                }
                return Ok(());
            }
            if offset.saturating_add(size) == bo {
                self.free[i] = (offset, bs.saturating_add(size));
                if i > 0 {
                    let (po, ps) = self.free[i - 1];
                    if po.saturating_add(ps) == self.free[i].0 {
                        self.free[i - 1].1 = ps.saturating_add(self.free[i].1);
                        self.free.remove(i);
                    }
                }
                return Ok(());
            }
        }
        if self.free.len() >= MAX_FREE_BLOCKS {
            return Err(SimError::FreeBlocks);
        }
        let pos = self.free.iter().position(|(o, _)| *o >= offset).unwrap_or(self.free.len());
        self.free.insert(pos, (offset, size));
        Ok(())
    }
}

/// A live tensor at a buffer's peak: (tensor, offset, bytes).
type Placed = (usize, u64, u64);
/// Per buffer, the tensors live now: (the tensor that frees it, the one it was allocated as —
/// the name ggml-alloc's debug table keeps —, offset, bytes).
type Live = Vec<Vec<(usize, usize, u64, u64)>>;
/// Per buffer, its size and the named tensors live at its peak.
pub type Layouts = (Vec<u64>, Vec<Vec<(String, u64, u64)>>);

/// ggml-alloc's per-tensor record (`struct hash_node`).
#[derive(Clone, Copy, Debug, Default)]
struct HashNode {
    n_children: i64,
    n_views: i64,
    buffer: usize,
    addr: u64,
    allocated: bool,
}

/// What the scheduler hands ggml-alloc: the graph copy's nodes and leafs, each with the
/// backend (buffer) it is allocated in.
struct SplitGraph {
    nodes: Vec<(usize, usize)>,
    leafs: Vec<(usize, usize)>,
}

fn src_of(t: &Tensor) -> impl Iterator<Item = (usize, usize)> + '_ {
    t.src.iter().enumerate().filter_map(|(j, s)| s.map(|s| (j, s)))
}

/// The scheduler (`ggml_backend_sched_split_graph`). `n_backends` counts the CPU (last).
fn split_graph(g: &mut Graph, n_backends: usize, n_copies: usize) -> Result<SplitGraph, SimError> {
    let cpu = n_backends.saturating_sub(1);
    let mut be: Vec<Option<usize>> = vec![None; g.t.len()];
    for &(t, b) in &g.assigned {
        *be.get_mut(t).ok_or(SimError::Dangling)? = Some(b);
    }
    let tensor = |g: &Graph, i: usize| g.t.get(i).copied().ok_or(SimError::Dangling);
    // The backend of a tensor already in a buffer (`ggml_backend_sched_backend_from_buffer`:
    // the one that supports the buffer's type, i.e. its own).
    let from_buffer = |g: &Graph, t: &Tensor| -> Option<usize> {
        match t.view_src {
            Some(v) => g.t.get(v).and_then(|v| v.buffer).map(|b| b.0),
            None => t.buffer.map(|b| b.0),
        }
    };
    // Pass 1 (ggml-backend.cpp:1087-1117, `ggml_backend_sched_backend_id_from_cur`:921-985).
    let from_cur = |g: &Graph, t: &Tensor| -> Option<usize> {
        if let Some(b) = from_buffer(g, t) {
            return Some(b);
        }
        if t.input {
            return Some(cpu);
        }
        if matches!(t.op, Op::Rope | Op::FlashAttnExt) {
            return None;
        }
        for (_, s) in src_of(t) {
            if let Some((b, true)) = g.t.get(s).and_then(|s| s.buffer) {
                return Some(b);
            }
        }
        None
    };
    for &l in &g.leafs {
        if be.get(l).copied().flatten().is_none() {
            be[l] = from_cur(g, g.t.get(l).ok_or(SimError::Dangling)?);
        }
    }
    let nodes = g.nodes.clone();
    for &n in &nodes {
        if be.get(n).copied().flatten().is_none() {
            be[n] = from_cur(g, g.t.get(n).ok_or(SimError::Dangling)?);
        }
    }
    // Which tensors are view ops, looked up once (every pass below skips them).
    let view_ops: Vec<bool> = g.t.iter().map(|t| t.op.is_view_op()).collect();
    let is_view_op = |_: &Graph, n: usize| view_ops.get(n).copied().unwrap_or(false);
    // Pass 2: expand the devices' assignments down and up (skipping the CPU's), then every
    // assignment down and up (ggml-backend.cpp:1119-1199). Every backend supports every op.
    for skip_cpu in [true, false] {
        for down in [true, false] {
            let mut cur: Option<usize> = None;
            let len = nodes.len();
            for k in 0..len {
                let Some(&n) = nodes.get(if down { k } else { len - 1 - k }) else { continue };
                if is_view_op(g, n) {
                    continue;
                }
                match be[n] {
                    Some(b) if skip_cpu && b == cpu => cur = None,
                    Some(b) => cur = Some(b),
                    None => {
                        if let Some(c) = cur {
                            be[n] = Some(c);
                        }
                    }
                }
            }
        }
    }
    // Pass 3 (ggml-backend.cpp:1201-1251): every buffer type is its own backend's, so no
    // upgrade; a node still unassigned goes to the backend holding most of its sources.
    // buffer_supported by index (ggml_backend_sched_buffer_supported, :1037-1056).
    let buffer_supported = |g: &Graph, be: &[Option<usize>], s: usize, b: usize| -> bool {
        let Some(t) = g.t.get(s) else { return false };
        if let Some(o) = from_buffer(g, t) {
            return o == b;
        }
        let mut id = be.get(s).copied().flatten();
        if id.is_none() {
            id = t.view_src.and_then(|v| be.get(v).copied().flatten());
        }
        id == Some(b)
    };
    for &n in &nodes {
        if is_view_op(g, n) || be[n].is_some() {
            continue;
        }
        let src = g.t.get(n).ok_or(SimError::Dangling)?.src;
        let mut best: Option<(usize, usize)> = None;
        for b in 0..n_backends {
            let mut k = 0;
            for s in src.iter().flatten().copied() {
                let assigned = be.get(s).copied().flatten().is_some() || g.t.get(s).and_then(|x| x.view_src).and_then(|v| be.get(v).copied().flatten()).is_some();
                if assigned && buffer_supported(g, &be, s, b) {
                    k += 1;
                }
            }
            if best.is_none_or(|(_, bk)| k > bk) {
                best = Some((b, k));
            }
        }
        be[n] = best.map(|x| x.0);
    }
    // Pass 4 (:1253-1283): views take their source's backend, unassigned sources their user's.
    for &n in &nodes {
        let (view_src, src) = g.t.get(n).map(|t| (t.view_src, t.src)).ok_or(SimError::Dangling)?;
        if let (Some(v), None) = (view_src, be[n]) {
            be[n] = be.get(v).copied().flatten();
        }
        for s in src.iter().flatten().copied() {
            if be.get(s).copied().flatten().is_none() {
                let st_view = g.t.get(s).ok_or(SimError::Dangling)?.view_src;
                be[s] = match st_view {
                    Some(v) => be.get(v).copied().flatten(),
                    None => be[n],
                };
            }
        }
        if be[n].is_none() {
            be[n] = Some(0);
        }
    }
    // Pass 5 (:1285-1395): splits where the backend changes (or a weight is elsewhere), and a
    // copy in the split's backend of every source from another.
    struct Split {
        backend: usize,
        start: usize,
        end: usize,
        inputs: Vec<usize>,
    }
    // The copies of each (source, backend): the first copy's id (the others follow it), by
    // `source · n_backends + backend`, over the tensors the graph had before any copy.
    let n_orig = g.t.len();
    let mut copies: Vec<usize> = vec![NO_COPY; n_orig.saturating_mul(n_backends)];
    let key = |s: usize, b: usize| if s < n_orig && b < n_backends { Some(s * n_backends + b) } else { None };
    let mut splits: Vec<Split> = Vec::new();
    let first = nodes.iter().position(|&n| !is_view_op(g, n)).unwrap_or(nodes.len());
    let first_backend = nodes.get(first).and_then(|&n| be[n]).unwrap_or(cpu);
    splits.push(Split { backend: first_backend, start: 0, end: nodes.len(), inputs: Vec::new() });
    let mut cur = first_backend;
    for (i, &n) in nodes.iter().enumerate().skip(first) {
        if is_view_op(g, n) {
            continue;
        }
        let nb = be[n].unwrap_or(cpu);
        let src = g.t.get(n).ok_or(SimError::Dangling)?.src;
        let mut new_split = false;
        if nb == cur && splits.last().is_some_and(|s| !s.inputs.is_empty()) {
            for s in src.iter().flatten().copied() {
                if let Some((_, true)) = g.t.get(s).and_then(|x| x.buffer) {
                    let sb = be.get(s).copied().flatten();
                    if sb != Some(cur) && !buffer_supported(g, &be, s, cur) {
                        new_split = true;
                        break;
                    }
                }
            }
        }
        if nb != cur || new_split {
            if let Some(last) = splits.last_mut() {
                last.end = i;
            }
            splits.push(Split { backend: nb, start: i, end: nodes.len(), inputs: Vec::new() });
            cur = nb;
        }
        for (j, s) in src.iter().enumerate().filter_map(|(j, s)| s.map(|s| (j, s))) {
            let sb = be.get(s).copied().flatten();
            if sb != Some(cur) && !buffer_supported(g, &be, s, cur) {
                let k = key(s, cur).ok_or(SimError::Dangling)?;
                if copies.get(k) == Some(&NO_COPY) {
                    let st = tensor(g, s)?;
                    let first = g.t.len();
                    for c in 0..n_copies {
                        // ggml_dup_tensor_layout: the same type, shape and strides.
                        let mut cp = Tensor { op: Op::None, src: [None; MAX_SRC], view_src: None, buffer: None, input: false, output: false, name: Name::Copy { of: s, backend: cur, copy: c }, ..st };
                        if n_copies > 1 {
                            cp.input = true;
                            cp.output = true;
                        }
                        g.t.push(cp);
                        be.push(Some(cur));
                    }
                    if let Some(slot) = copies.get_mut(k) {
                        *slot = first;
                    }
                    if let Some(last) = splits.last_mut() {
                        last.inputs.push(s);
                    }
                }
                // sched->cur_copy is 0 at a reserve.
                let c0 = copies.get(k).copied().filter(|c| *c != NO_COPY).ok_or(SimError::Dangling)?;
                if let Some(tt) = g.t.get_mut(n) {
                    if let Some(slot) = tt.src.get_mut(j) {
                        *slot = Some(c0);
                    }
                }
            }
        }
    }
    // Pass 6 (:1400-1445): with pipeline copies, every graph input gets n_copies copies on
    // its backend (the original is copy 0), all kept to the end.
    let mut graph_inputs: Vec<(usize, Vec<usize>)> = Vec::new();
    if n_copies > 1 {
        for &l in &g.leafs.clone() {
            if !g.t.get(l).is_some_and(|t| t.input) {
                continue;
            }
            let lb = be.get(l).copied().flatten().unwrap_or(cpu);
            let mut ids = vec![l];
            let lt = tensor(g, l)?;
            for c in 1..n_copies {
                let cp = Tensor { name: Name::Copy { of: l, backend: lb, copy: c }, ..lt };
                g.t.push(cp);
                be.push(Some(lb));
                ids.push(g.t.len() - 1);
            }
            for &id in &ids {
                if let Some(t) = g.t.get_mut(id) {
                    t.input = true;
                    t.output = true;
                }
            }
            graph_inputs.push((l, ids));
        }
    }
    // The graph copy (:1486-1560): per split, each input's dependency view (on the input's
    // backend) and its copy (on the split's), then the split's nodes.
    let mut out = SplitGraph { nodes: Vec::with_capacity(nodes.len() + 16), leafs: Vec::new() };
    for sp in &splits {
        for &input in &sp.inputs {
            let it = tensor(g, input)?;
            let root = it.view_src.unwrap_or(input);
            let mut src = [None; MAX_SRC];
            src[0] = Some(input);
            let dep = Tensor { op: Op::None, src, view_src: Some(root), buffer: None, input: false, output: false, name: Name::Dep(input), ..it };
            g.t.push(dep);
            let dep_id = g.t.len() - 1;
            be.push(be.get(input).copied().flatten());
            out.nodes.push((dep_id, be.get(input).copied().flatten().unwrap_or(cpu)));
            let c0 = key(input, sp.backend).and_then(|k| copies.get(k)).copied().filter(|c| *c != NO_COPY).ok_or(SimError::Dangling)?;
            out.nodes.push((c0, sp.backend));
        }
        for &n in nodes.get(sp.start..sp.end).unwrap_or(&[]) {
            out.nodes.push((n, be.get(n).copied().flatten().unwrap_or(cpu)));
        }
    }
    if n_copies > 1 {
        for (l, ids) in &graph_inputs {
            let lb = be.get(*l).copied().flatten().unwrap_or(cpu);
            for &id in ids {
                out.leafs.push((id, lb));
            }
        }
        for sp in &splits {
            for &input in &sp.inputs {
                if let Some(&c0) = key(input, sp.backend).and_then(|k| copies.get(k)).filter(|c| **c != NO_COPY) {
                    for id in c0..c0.saturating_add(n_copies) {
                        out.leafs.push((id, sp.backend));
                    }
                }
            }
        }
    }
    for &l in &g.leafs {
        out.leafs.push((l, be.get(l).copied().flatten().unwrap_or(cpu)));
    }
    Ok(out)
}

/// ggml-alloc over the scheduler's graph copy (`ggml_gallocr_alloc_graph_impl`,
/// ggml-alloc.c:715-830): each backend's high-water mark. `layout`, when given, receives for
/// each backend the tensors live at its last growth (GGML_ALLOCATOR_DEBUG's `max_size` line):
/// (tensor, offset, bytes).
fn allocate(g: &Graph, sg: &SplitGraph, alignments: &[u64], mut layout: Option<&mut Vec<Vec<Placed>>>) -> Result<Vec<u64>, SimError> {
    let mut hn = vec![HashNode::default(); g.t.len()];
    let mut allocs: Vec<DynAlloc> = alignments.iter().map(|a| DynAlloc::new(*a)).collect();
    let mut live: Live = vec![Vec::new(); alignments.len()];
    if let Some(l) = layout.as_deref_mut() {
        *l = vec![Vec::new(); alignments.len()];
    }
    let t = |i: usize| g.t.get(i).ok_or(SimError::Dangling);
    // `t->data != NULL || t->buffer`: a tensor in a buffer, or a view of one.
    let preallocated = |x: &Tensor| x.buffer.is_some() || x.view_src.and_then(|v| g.t.get(v)).is_some_and(|v| v.buffer.is_some());
    let same_layout = |a: &Tensor, b: &Tensor| a.ty == b.ty && a.ne == b.ne && a.nb == b.nb;

    let allocate_node = |hn: &mut Vec<HashNode>, allocs: &mut Vec<DynAlloc>, live: &mut Live, layout: &mut Option<&mut Vec<Vec<Placed>>>, node: usize, buffer: usize| -> Result<(), SimError> {
        let nt = t(node)?;
        if preallocated(nt) || hn.get(node).is_some_and(|h| h.allocated) || nt.is_view() {
            return Ok(());
        }
        hn[node].allocated = true;
        if nt.op.can_inplace() {
            for (_, p) in src_of(nt) {
                let pt = t(p)?;
                if !hn.get(p).is_some_and(|h| h.allocated) {
                    continue;
                }
                if pt.output || pt.view_src.and_then(|v| g.t.get(v)).is_some_and(|v| v.output) {
                    continue;
                }
                if !same_layout(nt, pt) {
                    continue;
                }
                // A view parent is never `allocated` (views are not), so only a tensor of
                // its own is reused (ggml-alloc.c:622-652).
                let ph = hn[p];
                if ph.n_children == 1 && ph.n_views == 0 && pt.view_src.is_none() {
                    // Same layout: no extra space to free (ggml_gallocr_free_extra_space).
                    hn[node].buffer = ph.buffer;
                    hn[node].addr = ph.addr;
                    hn[p].allocated = false;
                    // ggml-alloc's debug table keeps the parent's name for the reused memory.
                    if let Some(l) = live.get_mut(ph.buffer).filter(|_| layout.is_some()) {
                        if let Some(e) = l.iter_mut().find(|e| e.0 == p) {
                            e.0 = node;
                        }
                    }
                    return Ok(());
                }
            }
        }
        let size = nt.nbytes();
        let a = allocs.get_mut(buffer).ok_or(SimError::Dangling)?;
        let before = a.max_size;
        let addr = a.alloc(size);
        hn[node].buffer = buffer;
        hn[node].addr = addr;
        if let Some(l) = live.get_mut(buffer).filter(|_| layout.is_some()) {
            l.push((node, node, addr, size));
            if a.max_size > before {
                if let Some(out) = layout.as_deref_mut().and_then(|o| o.get_mut(buffer)) {
                    *out = l.iter().map(|e| (e.1, e.2, e.3)).collect();
                }
            }
        }
        Ok(())
    };
    let free_node = |hn: &mut Vec<HashNode>, allocs: &mut Vec<DynAlloc>, live: &mut Live, node: usize| -> Result<(), SimError> {
        let nt = t(node)?;
        if nt.output {
            return Ok(());
        }
        let h = hn[node];
        allocs.get_mut(h.buffer).ok_or(SimError::Dangling)?.free_bytes(h.addr, nt.nbytes())?;
        if let Some(l) = live.get_mut(h.buffer).filter(|l| !l.is_empty()) {
            l.retain(|e| e.0 != node);
        }
        hn[node].allocated = false;
        Ok(())
    };

    for &(leaf, b) in &sg.leafs {
        allocate_node(&mut hn, &mut allocs, &mut live, &mut layout, leaf, b)?;
    }
    // Children and views counted; inputs allocated first (ggml-alloc.c:730-760).
    for &(node, b) in &sg.nodes {
        let nt = t(node)?;
        if let (Some(v), false) = (nt.view_src, nt.op == Op::None) {
            hn[v].n_views += 1;
        }
        if nt.input {
            allocate_node(&mut hn, &mut allocs, &mut live, &mut layout, node, b)?;
        }
        for (_, s) in src_of(nt) {
            hn[s].n_children += 1;
            if t(s)?.input {
                allocate_node(&mut hn, &mut allocs, &mut live, &mut layout, s, b)?;
            }
        }
    }
    for &(node, b) in &sg.nodes {
        let nt = t(node)?;
        for (_, p) in src_of(nt) {
            allocate_node(&mut hn, &mut allocs, &mut live, &mut layout, p, b)?;
        }
        allocate_node(&mut hn, &mut allocs, &mut live, &mut layout, node, b)?;
        for (_, p) in src_of(nt) {
            hn[p].n_children -= 1;
            let ph = hn[p];
            if ph.n_children == 0 && ph.n_views == 0 {
                match t(p)?.view_src {
                    Some(v) => {
                        hn[v].n_views -= 1;
                        let vh = hn[v];
                        if vh.n_views == 0 && vh.n_children == 0 && vh.allocated {
                            free_node(&mut hn, &mut allocs, &mut live, v)?;
                        }
                    }
                    None => {
                        if ph.allocated {
                            free_node(&mut hn, &mut allocs, &mut live, p)?;
                        }
                    }
                }
            }
        }
    }
    Ok(allocs.iter().map(|a| a.max_size).collect())
}

/// The sizes ggml-alloc reserves for one graph on each backend (devices first, the CPU
/// last), with `n_copies` pipeline copies of each split input.
pub fn reserve(mut g: Graph, alignments: &[u64], n_copies: usize) -> Result<Vec<u64>, SimError> {
    let sg = split_graph(&mut g, alignments.len(), n_copies)?;
    allocate(&g, &sg, alignments, None)
}

/// [`reserve`], and the tensors live in each buffer when it last grew, by name.
pub fn reserve_layout(mut g: Graph, alignments: &[u64], n_copies: usize) -> Result<Layouts, SimError> {
    let sg = split_graph(&mut g, alignments.len(), n_copies)?;
    let mut layout = Vec::new();
    let sizes = allocate(&g, &sg, alignments, Some(&mut layout))?;
    let named = layout.into_iter().map(|l| l.into_iter().map(|(id, o, s)| (name_of(&g, id, alignments.len()), o, s)).collect()).collect();
    Ok((sizes, named))
}

/// A tensor's name as llama.cpp prints it (`RPC0#embd#0` for a copy; the device's name is
/// its index here).
pub fn name_of(g: &Graph, id: usize, n_backends: usize) -> String {
    match g.t.get(id).map(|t| t.name) {
        Some(Name::Plain(s)) => s.to_string(),
        Some(Name::Layer(s, il)) => format!("{s}-{il}"),
        Some(Name::Copy { of, backend, copy }) => {
            let b = if backend + 1 == n_backends { "CPU".to_string() } else { format!("DEV{backend}") };
            format!("{b}#{}#{copy}", name_of(g, of, n_backends))
        }
        Some(Name::Dep(of)) => format!("{} (view)", name_of(g, of, n_backends)),
        Some(Name::Node(i)) => format!("node_{i}"),
        Some(Name::Unnamed) => String::new(),
        None => String::new(),
    }
}
