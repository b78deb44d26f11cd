//! The graph llama.cpp builds to reserve its compute buffers, as ggml tensors: each node's
//! op, sources, shape and strides, the graph inputs and outputs, and the tensors that
//! already live in a buffer (weights, the KV cache). `galloc` runs ggml's scheduler and
//! allocator over it.
//!
//! Built here: the dense llama graph (`src/models/llama.cpp` with `build_norm`, `build_qkv`,
//! `build_attn` / `build_attn_mha` and `build_ffn` of `src/llama-graph.cpp`, the cache views
//! of `src/llama-kv-cache.cpp`), node for node in the order `ggml_build_forward_expand`
//! visits them (`ggml_visit_parents_graph`, ggml/src/ggml.c:7245: sources first, in source
//! order; a tensor without an op is a leaf). Every shape is the one ggml's op constructor
//! gives (ggml/src/ggml.c), every size `ggml_nbytes`.

use super::params::{CacheType, ContextParams};
use super::{Backend, KvSummary, Settings};
use crate::model::description::{Attention, Description, Ffn};

/// The sources a node here uses at most (ggml's `GGML_MAX_SRC` is 10, ggml/include/ggml.h:224;
/// flash attention's q, k, v, mask and sinks are the most any op below takes).
pub const MAX_SRC: usize = 5;

/// The ops of the graphs built here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// A leaf: a weight, a cache tensor, a graph input; or a scheduler's input copy.
    None,
    GetRows,
    RmsNorm,
    Mul,
    Add,
    MulMat,
    Reshape,
    View,
    Permute,
    Rope,
    SetRows,
    SoftMax,
    Cont,
    /// `ggml_swiglu_split` (GGML_OP_GLU).
    Glu,
    FlashAttnExt,
    Argsort,
    SumRows,
    Clamp,
    Div,
    MulMatId,
}

impl Op {
    /// `ggml_op_can_inplace` (ggml/src/ggml-alloc.c:22-48), for the ops built here.
    pub fn can_inplace(self) -> bool {
        matches!(self, Op::Mul | Op::Add | Op::RmsNorm | Op::Rope | Op::SoftMax | Op::Clamp | Op::Div)
    }
    /// `ggml_is_view_op` (ggml/src/ggml-backend.cpp:757): what the scheduler's passes skip.
    pub fn is_view_op(self) -> bool {
        matches!(self, Op::View | Op::Reshape | Op::Permute)
    }
}

/// Element types of the tensors built here: block size 1, or a quantized cache's blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    F32,
    F16,
    Bf16,
    I32,
    I64,
    /// A quantized cache type: ggml type id, elements and bytes per block.
    Quant { id: u32, block: u64, bytes: u64 },
}

impl Ty {
    /// `ggml_type_size`: bytes of one element, or of one block.
    pub fn size(self) -> u64 {
        match self {
            Ty::F32 | Ty::I32 => 4,
            Ty::F16 | Ty::Bf16 => 2,
            Ty::I64 => 8,
            Ty::Quant { bytes, .. } => bytes,
        }
    }
    /// `ggml_blck_size`.
    pub fn block(self) -> u64 {
        match self {
            Ty::Quant { block, .. } => block.max(1),
            _ => 1,
        }
    }
    /// `ggml_row_size(type, n)`.
    fn row(self, n: u64) -> u64 {
        (n / self.block()).saturating_mul(self.size())
    }
}

/// A tensor's name as llama.cpp gives it (`cb(cur, name, il)` → `name-il`), kept cheap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Name {
    Plain(&'static str),
    Layer(&'static str, u32),
    /// The scheduler's copy of a split input: `BACKEND#name#copy`.
    Copy { of: usize, backend: usize, copy: usize },
    /// The scheduler's dependency view of a split input.
    Dep(usize),
    /// No name given: `ggml_visit_parents_graph` names it `node_N` by its index
    /// (ggml/src/ggml.c:7302-7304).
    Unnamed,
    Node(u32),
}

#[derive(Clone, Copy, Debug)]
pub struct Tensor {
    pub op: Op,
    pub src: [Option<usize>; MAX_SRC],
    /// The tensor whose memory a view uses (always the root: ggml_new_tensor_impl follows a
    /// view of a view to its source).
    pub view_src: Option<usize>,
    pub ty: Ty,
    pub ne: [u64; 4],
    pub nb: [u64; 4],
    pub input: bool,
    pub output: bool,
    /// Already in a buffer: the backend whose buffer it is, and whether that buffer holds
    /// weights (`GGML_BACKEND_BUFFER_USAGE_WEIGHTS`, src/llama-model.cpp:1903) rather than
    /// the cache.
    pub buffer: Option<(usize, bool)>,
    pub name: Name,
}

impl Tensor {
    /// `ggml_nbytes` (ggml/src/ggml.c): for block size 1 the element size plus
    /// `(ne[i] - 1) · nb[i]` per dimension, else `ne[0] · nb[0] / block` plus the same for
    /// the others; 0 when a dimension is empty.
    pub fn nbytes(&self) -> u64 {
        if self.ne.contains(&0) {
            return 0;
        }
        let block = self.ty.block();
        let first = if block == 1 { self.ty.size() } else { self.ne[0].saturating_mul(self.nb[0]) / block };
        let from = if block == 1 { 0 } else { 1 };
        self.ne.iter().zip(self.nb).skip(from).fold(first, |acc, (n, b)| acc.saturating_add((n - 1).saturating_mul(b)))
    }
    pub fn is_view(&self) -> bool {
        self.view_src.is_some()
    }
}

/// A product of file-derived sizes, saturating.
fn p(xs: &[u64]) -> u64 {
    xs.iter().fold(1u64, |a, x| a.saturating_mul(*x))
}

fn contiguous_nb(ty: Ty, ne: [u64; 4]) -> [u64; 4] {
    let mut nb = [ty.size(), ty.row(ne[0]), 0, 0];
    for i in 2..4 {
        nb[i] = nb[i - 1].saturating_mul(ne[i - 1]);
    }
    nb
}

/// A graph under construction and, once built, its nodes and leafs in ggml's order.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    pub t: Vec<Tensor>,
    pub nodes: Vec<usize>,
    pub leafs: Vec<usize>,
    visited: Vec<bool>,
    /// [`Graph::expand`]'s work stack, kept between calls.
    stack: Vec<(usize, usize)>,
    /// `ggml_backend_sched_set_tensor_backend` calls made while building: (tensor, backend).
    pub assigned: Vec<(usize, usize)>,
}

impl Graph {
    fn push(&mut self, t: Tensor) -> usize {
        self.t.push(t);
        self.visited.push(false);
        self.t.len() - 1
    }

    fn get(&self, id: usize) -> Option<&Tensor> {
        self.t.get(id)
    }

    /// A new contiguous tensor made by `op` from `src`.
    fn op(&mut self, op: Op, ty: Ty, ne: [u64; 4], src: &[usize], name: Name) -> usize {
        let mut s = [None; MAX_SRC];
        for (slot, id) in s.iter_mut().zip(src) {
            *slot = Some(*id);
        }
        self.push(Tensor { op, src: s, view_src: None, ty, ne, nb: contiguous_nb(ty, ne), input: false, output: false, buffer: None, name })
    }

    /// A tensor already in a buffer (a weight, or a cache tensor).
    fn resident(&mut self, ty: Ty, ne: [u64; 4], backend: usize, weights: bool, name: Name) -> usize {
        let id = self.op(Op::None, ty, ne, &[], name);
        if let Some(t) = self.t.get_mut(id) {
            t.buffer = Some((backend, weights));
        }
        id
    }

    /// `ggml_set_input` on a new tensor.
    fn input(&mut self, ty: Ty, ne: [u64; 4], name: &'static str) -> usize {
        let id = self.op(Op::None, ty, ne, &[], Name::Plain(name));
        if let Some(t) = self.t.get_mut(id) {
            t.input = true;
        }
        id
    }

    /// A view of `a` (`ggml_view_impl` / `ggml_reshape` / `ggml_permute`): no memory of its own.
    fn view(&mut self, op: Op, a: usize, ne: [u64; 4], nb: [u64; 4], name: Name) -> usize {
        let (ty, root) = match self.get(a) {
            Some(t) => (t.ty, t.view_src.unwrap_or(a)),
            None => (Ty::F32, a),
        };
        let mut s = [None; MAX_SRC];
        s[0] = Some(a);
        self.push(Tensor { op, src: s, view_src: Some(root), ty, ne, nb, input: false, output: false, buffer: None, name })
    }

    fn ne(&self, a: usize) -> [u64; 4] {
        self.get(a).map_or([0; 4], |t| t.ne)
    }
    fn nb(&self, a: usize) -> [u64; 4] {
        self.get(a).map_or([0; 4], |t| t.nb)
    }

    /// `ggml_reshape_*`: a contiguous view of another shape.
    fn reshape(&mut self, a: usize, ne: [u64; 4], name: Name) -> usize {
        let ty = self.get(a).map_or(Ty::F32, |t| t.ty);
        self.view(Op::Reshape, a, ne, contiguous_nb(ty, ne), name)
    }

    /// `ggml_permute(a, 0, 2, 1, 3)`: dimensions 1 and 2 swapped.
    fn permute_0213(&mut self, a: usize) -> usize {
        let (ne, nb) = (self.ne(a), self.nb(a));
        self.view(Op::Permute, a, [ne[0], ne[2], ne[1], ne[3]], [nb[0], nb[2], nb[1], nb[3]], Name::Plain("permuted"))
    }

    /// A result shaped like `a` (`ggml_dup_tensor`), made by `op` from `src`.
    fn like(&mut self, op: Op, a: usize, src: &[usize], name: Name) -> usize {
        let (ty, ne) = self.get(a).map_or((Ty::F32, [0; 4]), |t| (t.ty, t.ne));
        self.op(op, ty, ne, src, name)
    }

    /// `ggml_mul_mat(a, b)`: `[a.ne1, b.ne1, b.ne2, b.ne3]`, f32.
    fn mul_mat(&mut self, a: usize, b: usize, name: Name) -> usize {
        let (na, nb) = (self.ne(a), self.ne(b));
        self.op(Op::MulMat, Ty::F32, [na[1], nb[1], nb[2], nb[3]], &[a, b], name)
    }

    /// `ggml_get_rows(a, b)`: `[a.ne0, b.ne0, b.ne1, b.ne2]`, f32.
    fn get_rows(&mut self, a: usize, b: usize, name: Name) -> usize {
        let (na, nb) = (self.ne(a), self.ne(b));
        self.op(Op::GetRows, Ty::F32, [na[0], nb[0], nb[1], nb[2]], &[a, b], name)
    }

    fn set_output(&mut self, a: usize) {
        if let Some(t) = self.t.get_mut(a) {
            t.output = true;
        }
    }

    fn rename(&mut self, a: usize, name: Name) {
        if let Some(t) = self.t.get_mut(a) {
            t.name = name;
        }
    }

    /// `ggml_build_forward_expand`: every tensor `root` depends on that the graph does not
    /// hold yet, sources before their users and in source order; tensors without an op are
    /// leafs (ggml/src/ggml.c:7245-7310). Iterative: the chain of layers is deep.
    pub fn expand(&mut self, root: usize) {
        if self.visited.get(root).copied().unwrap_or(true) {
            return;
        }
        if let Some(v) = self.visited.get_mut(root) {
            *v = true;
        }
        // (tensor, the next source slot to look at); the buffer is kept between calls.
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        stack.push((root, 0));
        while let Some(top) = stack.last_mut() {
            let (id, next) = *top;
            let Some(t) = self.t.get(id) else {
                stack.pop();
                continue;
            };
            // The next source not visited yet, in source order (empty slots skipped).
            let mut slot = next;
            let mut child = None;
            while slot < MAX_SRC {
                let s = t.src.get(slot).copied().flatten();
                slot += 1;
                if let Some(s) = s {
                    if !self.visited.get(s).copied().unwrap_or(true) {
                        child = Some(s);
                        break;
                    }
                }
            }
            top.1 = slot;
            if let Some(s) = child {
                if let Some(v) = self.visited.get_mut(s) {
                    *v = true;
                }
                stack.push((s, 0));
                continue;
            }
            stack.pop();
            if t.op == Op::None {
                self.leafs.push(id);
            } else {
                let index = u32::try_from(self.nodes.len()).unwrap_or(u32::MAX);
                if let Some(t) = self.t.get_mut(id).filter(|t| t.name == Name::Unnamed) {
                    t.name = Name::Node(index);
                }
                self.nodes.push(id);
            }
        }
        self.stack = stack;
    }
}

/// A block's feed-forward network.
#[derive(Clone, Copy, Debug)]
pub enum LayerFfn {
    /// `build_ffn` with SiLU and a parallel gate.
    Dense { n_ff: u64 },
    /// `build_moe_ffn` (src/llama-graph.cpp:2007-2373) with softmax gating, the weights
    /// normalized, no shared experts: `used` of `experts` experts of `n_ff` each, their
    /// matrices on backend `backend`.
    Moe { experts: u64, used: u64, n_ff: u64, backend: usize },
}

/// One block as the graph needs it.
#[derive(Clone, Debug)]
pub struct DenseLayer {
    pub n_head: u64,
    pub n_head_kv: u64,
    pub head_dim: u64,
    pub ffn: LayerFfn,
    /// The backend of the block's weights and of its cache.
    pub weights: usize,
    pub cache: usize,
    /// `model.dev_layer(il)`'s backend: where `graph_get_cb` pins the block's norms.
    pub device: usize,
}

/// What the graph of a llama-like decoder depends on: `src/models/llama.cpp` (the `llama`
/// architecture, dense or with experts), `src/models/qwen3.cpp` and `src/models/qwen3moe.cpp`
/// (the same blocks with Q and K normalized per head before RoPE).
#[derive(Clone, Debug)]
pub struct DenseLlama {
    /// Q and K go through `build_norm` per head (qwen3, qwen3moe).
    pub qk_norm: bool,
    /// llama3's frequency factors: one tensor per buffer type of the layers
    /// (TENSOR_DUPLICATED, src/models/llama.cpp:63), read by every RoPE node.
    pub rope_freqs: bool,
    pub n_embd: u64,
    pub n_vocab: u64,
    pub layers: Vec<DenseLayer>,
    /// Backends of the token embeddings and of the output layer (norm and projection).
    pub tok_embd: usize,
    pub output: usize,
    /// The host's backend (the last one).
    pub cpu: usize,
    /// Cells per stream (`n_kv` of the full cache, `init_full`) and streams.
    pub n_kv: u64,
    pub n_stream: u64,
    pub flash_attn: bool,
    pub type_k: Ty,
    pub type_v: Ty,
    /// The Hadamard rotations of a quantized cache (`attn_rot_k` / `attn_rot_v`,
    /// src/llama-kv-cache.cpp:321-338): the rotation matrices' size.
    pub k_rot: Option<u64>,
    pub v_rot: Option<u64>,
    /// `n_embd_v_gqa_max()`: the transposed V's index input is this wide per token.
    pub v_width_max: u64,
    /// `-nkvo`: the attention output is pinned to the host (build_attn_mha).
    pub offload_kqv: bool,
    /// `model.n_gpu_layers() > n_layer_all` (graph_get_cb, src/llama-context.cpp:2646).
    pub full_offload: bool,
}

fn cache_ty(t: CacheType) -> Option<Ty> {
    match t {
        CacheType::F16 => Some(Ty::F16),
        CacheType::Bf16 => Some(Ty::Bf16),
        // flash attention casts an f32 cache to f16 (build_attn_mha): not built here.
        CacheType::F32 => None,
        q => {
            let g = q.ggml();
            Some(Ty::Quant { id: g.id, block: g.block_size, bytes: g.type_size })
        }
    }
}

/// The llama-like graph's inputs for these settings, or `None` where this module does not
/// build the graph llama.cpp would (another architecture, shared experts, a cache of another
/// kind, an f32 cache, whose flash attention casts to f16, or a CUDA device, whose scheduler
/// offloads host-weight ops: compute.rs's terms model stays).
pub fn dense_llama(desc: &Description, s: &Settings, p: &ContextParams, layers: &[Option<usize>], kv: &KvSummary) -> Option<DenseLlama> {
    let qk_norm = match desc.arch.as_str() {
        "llama" => false,
        "qwen3" | "qwen3moe" => true,
        _ => return None,
    };
    if desc.enc_dec.is_some() || desc.n_layer_nextn != 0 || desc.mla.is_some() || desc.recurrent.is_some() || desc.swa.is_some() {
        return None;
    }
    if s.devices.iter().any(|d| d.backend != Backend::Rpc) {
        return None;
    }
    let (type_k, type_v) = (cache_ty(s.type_k)?, cache_ty(s.type_v)?);
    let n_dev = s.devices.len();
    let backend = |d: Option<usize>| d.filter(|i| *i < n_dev).unwrap_or(n_dev);
    // Without overrides every weight is where its layer is (tensor_device's slot rule): no
    // names to make and match.
    let plain = s.overrides.is_empty() && s.n_cpu_moe == 0;
    let at = |name: String| backend(super::weights::tensor_device(desc, s, layers, &name));
    let at_layer = |il: usize, w: &str| if plain { backend(layers.get(il).copied().flatten()) } else { at(format!("blk.{il}.{w}.weight")) };
    let mut out = Vec::with_capacity(desc.layers.len());
    for (il, l) in desc.layers.iter().enumerate() {
        if l.attention != Attention::Full || l.recurrent || l.shares_kv || l.nextn || l.head_k != l.head_v || l.n_head_kv == 0 || l.n_head == 0 {
            return None;
        }
        let dev = layers.get(il).copied().flatten();
        let weights = at_layer(il, "attn_q");
        let (ffn, own): (LayerFfn, &[&str]) = match l.ffn {
            Ffn::Dense { n_ff } => (LayerFfn::Dense { n_ff }, &["ffn_gate", "ffn_up", "ffn_down"][..]),
            Ffn::Moe { experts, used, n_ff_exp, shared: 0, .. } if used > 0 && used <= experts => {
                let eb = at_layer(il, "ffn_up_exps");
                if at_layer(il, "ffn_gate_exps") != eb || at_layer(il, "ffn_down_exps") != eb {
                    return None;
                }
                (LayerFfn::Moe { experts, used, n_ff: n_ff_exp, backend: eb }, &["ffn_gate_inp"][..])
            }
            _ => return None,
        };
        // Every other weight of the block must be where its query projection is: an override
        // that splits a block otherwise is not modelled here.
        let common = ["attn_k", "attn_v", "attn_output", "attn_norm", "ffn_norm", "attn_q_norm", "attn_k_norm"];
        if !plain && common.iter().chain(own).any(|w| at_layer(il, w) != weights) {
            return None;
        }
        let cache = if s.offload_kqv { backend(dev) } else { n_dev };
        out.push(DenseLayer { n_head: l.n_head, n_head_kv: l.n_head_kv, head_dim: l.head_k, ffn, weights, cache, device: backend(dev) });
    }
    let n_layer_all = desc.n_layer_all();
    // n_embd_head_k_all: the layers' common head size (none when they differ).
    let head_all = out.first().map(|l| l.head_dim).filter(|h| out.iter().all(|l| l.head_dim == *h));
    let rot = |t: Ty| head_all.filter(|h| t.block() > 1 && *h > 0 && h % 64 == 0);
    // build_input_k_rot: the largest power of two from 64 up dividing the head size; V's is 64.
    let k_rot = rot(type_k).map(|h| {
        let mut n = 64u64;
        while h % n.saturating_mul(2) == 0 {
            n = n.saturating_mul(2);
        }
        n
    });
    let v_rot = rot(type_v).map(|_| 64);
    Some(DenseLlama {
        k_rot,
        v_rot,
        qk_norm,
        rope_freqs: desc.rope_freqs && desc.arch == "llama",
        n_embd: desc.n_embd,
        n_vocab: desc.n_vocab,
        layers: out,
        tok_embd: at("token_embd.weight".to_string()),
        output: at("output.weight".to_string()),
        cpu: n_dev,
        n_kv: kv.cells,
        n_stream: p.n_stream.max(1),
        flash_attn: p.flash_attn,
        type_k,
        type_v,
        v_width_max: desc.v_width_max(),
        offload_kqv: s.offload_kqv,
        full_offload: !s.devices.is_empty() && s.n_gpu_layers.is_none_or(|n| n > n_layer_all),
    })
}

/// `llama_mul_mat_hadamard` (src/llama-impl.h:57): rows of the rotation's size multiplied by
/// it, in the input's shape again.
fn hadamard(g: &mut Graph, cur: usize, rot: usize) -> usize {
    let n = g.ne(rot)[0].max(1);
    let ne = g.ne(cur);
    let elems = p(&ne);
    let contiguous = g.get(cur).is_some_and(|t| t.nb == contiguous_nb(t.ty, t.ne));
    let res = if contiguous {
        g.reshape(cur, [n, elems / n, 1, 1], Name::Unnamed)
    } else {
        g.op(Op::Cont, Ty::F32, [n, elems / n, 1, 1], &[cur], Name::Unnamed)
    };
    let res = g.mul_mat(rot, res, Name::Unnamed);
    g.reshape(res, ne, Name::Unnamed)
}

impl DenseLlama {
    /// The graph `graph_reserve` builds for a ubatch of `n_tokens` tokens in `n_seqs`
    /// sequences with `n_outputs` outputs (src/llama-context.cpp:2523-2579).
    pub fn build(&self, n_tokens: u64, n_outputs: u64) -> Graph {
        // About 45 tensors a dense block, 60 and two per expert used with experts (their views
        // and sums), and the scheduler's copies: reserved once.
        let per_layer = self.layers.iter().map(|l| match l.ffn {
            LayerFfn::Moe { used, .. } => 64usize.saturating_add((used as usize).saturating_mul(2)),
            LayerFfn::Dense { .. } => 52,
        });
        let cap = per_layer.fold(64usize, |a, x| a.saturating_add(x));
        let mut g = Graph { t: Vec::with_capacity(cap), nodes: Vec::with_capacity(cap), leafs: Vec::with_capacity(cap / 2), visited: Vec::with_capacity(cap), stack: Vec::new(), assigned: Vec::new() };
        let (n_embd, t) = (self.n_embd, n_tokens);
        let ns = self.n_stream;
        // build_inp_embd (src/llama-graph.cpp:2376): the token path and the embeddings input,
        // both put in the graph by ggml_build_forward_select.
        let tok_embd = g.resident(Ty::F16, [n_embd, self.n_vocab, 1, 1], self.tok_embd, true, Name::Plain("token_embd.weight"));
        let tokens = g.input(Ty::I32, [t, 1, 1, 1], "inp_tokens");
        let embd_in = g.input(Ty::F32, [n_embd, t, 1, 1], "inp_embd");
        let mut inp_l = g.get_rows(tok_embd, tokens, Name::Plain("embd"));
        g.expand(inp_l);
        g.expand(embd_in);
        // build_inp_pos, build_attn_inp_kv (k/v indices, the KQ mask), build_inp_out_ids.
        let inp_pos = g.input(Ty::I32, [t, 1, 1, 1], "inp_pos");
        let k_idxs = g.input(Ty::I64, [t, 1, 1, 1], "attn_inp_k_idxs");
        let v_trans = !self.flash_attn;
        let v_idx_n = if v_trans { t.saturating_mul(self.v_width_max) } else { t };
        let v_idxs = g.input(Ty::I64, [v_idx_n, 1, 1, 1], "attn_inp_v_idxs");
        let mask_ty = if self.flash_attn { Ty::F16 } else { Ty::F32 };
        let mask = g.input(mask_ty, [self.n_kv, t / ns, 1, ns], "attn_inp_kq_mask");
        // build_input_k_rot / _v_rot: the rotation matrices, graph inputs.
        let k_rot = self.k_rot.map(|n| g.input(Ty::F32, [n, n, 1, 1], "attn_inp_k_rot"));
        let v_rot = self.v_rot.map(|n| g.input(Ty::F32, [n, n, 1, 1], "attn_inp_v_rot"));
        let out_ids = g.input(Ty::I32, [n_outputs, 1, 1, 1], "out_ids");
        let n_layer = self.layers.len();
        let pin_norms = n_tokens < 32 || self.full_offload;
        let mut rope_by_backend: Vec<(usize, usize)> = Vec::new();
        for (il, l) in self.layers.iter().enumerate() {
            let li = il as u32;
            let w = l.weights;
            let inp_sa = inp_l;
            let norm = g.like(Op::RmsNorm, inp_l, &[inp_l], Name::Layer("norm", li));
            if pin_norms {
                g.assigned.push((norm, l.device));
            }
            let attn_norm_w = g.resident(Ty::F32, [n_embd, 1, 1, 1], w, true, Name::Layer("attn_norm.weight", li));
            let cur = g.like(Op::Mul, norm, &[norm, attn_norm_w], Name::Layer("attn_norm", li));
            let (hd, nh, nkv) = (l.head_dim, l.n_head, l.n_head_kv);
            let wq = g.resident(Ty::F16, [n_embd, p(&[hd, nh]), 1, 1], w, true, Name::Layer("attn_q.weight", li));
            let wk = g.resident(Ty::F16, [n_embd, p(&[hd, nkv]), 1, 1], w, true, Name::Layer("attn_k.weight", li));
            let wv = g.resident(Ty::F16, [n_embd, p(&[hd, nkv]), 1, 1], w, true, Name::Layer("attn_v.weight", li));
            // build_qkv (src/llama-graph.cpp:1647): three projections, each reshaped to heads.
            let q = g.mul_mat(wq, cur, Name::Layer("Qcur", li));
            let k = g.mul_mat(wk, cur, Name::Layer("Kcur", li));
            let v = g.mul_mat(wv, cur, Name::Layer("Vcur", li));
            let q = g.reshape(q, [hd, nh, t, 1], Name::Layer("Qcur", li));
            let k = g.reshape(k, [hd, nkv, t, 1], Name::Layer("Kcur", li));
            let v = g.reshape(v, [hd, nkv, t, 1], Name::Layer("Vcur", li));
            // qwen3's per-head norms: build_norm on the reshaped projections.
            let (q, k) = if self.qk_norm {
                let qn = g.like(Op::RmsNorm, q, &[q], Name::Layer("norm", li));
                let qw = g.resident(Ty::F32, [hd, 1, 1, 1], w, true, Name::Layer("attn_q_norm.weight", li));
                let q = g.like(Op::Mul, qn, &[qn, qw], Name::Layer("Qcur_normed", li));
                let kn = g.like(Op::RmsNorm, k, &[k], Name::Layer("norm", li));
                let kw = g.resident(Ty::F32, [hd, 1, 1, 1], w, true, Name::Layer("attn_k_norm.weight", li));
                let k = g.like(Op::Mul, kn, &[kn, kw], Name::Layer("Kcur_normed", li));
                if pin_norms {
                    g.assigned.push((qn, l.device));
                    g.assigned.push((kn, l.device));
                }
                (q, k)
            } else {
                (q, k)
            };
            // ggml_rope_ext(a, pos, factors): shaped like its input; llama3's factors are the
            // copy in the buffer type of the block's device (model.get_rope_factors).
            let factors = if self.rope_freqs {
                match rope_by_backend.iter().find(|(b, _)| *b == l.device) {
                    Some((_, f)) => Some(*f),
                    None => {
                        let hd2 = hd / 2;
                        let f = g.resident(Ty::F32, [hd2, 1, 1, 1], l.device, true, Name::Plain("rope_freqs.weight"));
                        rope_by_backend.push((l.device, f));
                        Some(f)
                    }
                }
            } else {
                None
            };
            let (q, k) = match factors {
                Some(f) => (g.like(Op::Rope, q, &[q, inp_pos, f], Name::Layer("Qcur", li)), g.like(Op::Rope, k, &[k, inp_pos, f], Name::Layer("Kcur", li))),
                None => (g.like(Op::Rope, q, &[q, inp_pos], Name::Layer("Qcur", li)), g.like(Op::Rope, k, &[k, inp_pos], Name::Layer("Kcur", li))),
            };
            // build_attn (src/llama-graph.cpp:2883-2897): a quantized cache's rotations, then
            // q, v and k into the graph.
            let (q, k) = match k_rot {
                Some(r) => (hadamard(&mut g, q, r), hadamard(&mut g, k, r)),
                None => (q, k),
            };
            let v = match v_rot {
                Some(r) => hadamard(&mut g, v, r),
                None => v,
            };
            g.expand(q);
            g.expand(v);
            g.expand(k);
            let kc = g.resident(self.type_k, [p(&[hd, nkv]), self.n_kv, ns, 1], l.cache, false, Name::Layer("cache_k", li));
            let vc = g.resident(self.type_v, [p(&[hd, nkv]), self.n_kv, ns, 1], l.cache, false, Name::Layer("cache_v", li));
            // cpy_k / cpy_v (src/llama-kv-cache.cpp:1328-1417): set_rows into views of the cache.
            let k_nb = g.nb(k);
            let k2 = g.view(Op::View, k, [p(&[hd, nkv]), t, 1, 1], [k_nb[0], k_nb[2], k_nb[2].saturating_mul(t), k_nb[2].saturating_mul(t)], Name::Layer("k_cur_view", li));
            let kdst = if ns > 1 { g.reshape(kc, [p(&[hd, nkv]), p(&[self.n_kv, ns]), 1, 1], Name::Layer("cache_k_merged", li)) } else { kc };
            let set_k = self.set_rows(&mut g, kdst, k2, k_idxs, li);
            g.expand(set_k);
            let set_v = if v_trans {
                let v2 = g.reshape(v, [p(&[hd, nkv]), t, 1, 1], Name::Layer("v_cur_2d", li));
                let n_v = p(&[hd, nkv, self.n_kv, ns]);
                let vdst = g.reshape(vc, [1, n_v, 1, 1], Name::Layer("cache_v_flat", li));
                let v1 = g.reshape(v2, [1, p(&[hd, nkv, t]), 1, 1], Name::Layer("v_cur_flat", li));
                self.set_rows(&mut g, vdst, v1, v_idxs, li)
            } else {
                let v_nb = g.nb(v);
                let v2 = g.view(Op::View, v, [p(&[hd, nkv]), t, 1, 1], [v_nb[0], v_nb[2], v_nb[2].saturating_mul(t), v_nb[2].saturating_mul(t)], Name::Layer("v_cur_view", li));
                let vdst = if ns > 1 { g.reshape(vc, [p(&[hd, nkv]), p(&[self.n_kv, ns]), 1, 1], Name::Layer("cache_v_merged", li)) } else { vc };
                self.set_rows(&mut g, vdst, v2, v_idxs, li)
            };
            g.expand(set_v);
            // get_k / get_v (src/llama-kv-cache.cpp:1276-1326).
            let (tk, tv) = (self.type_k, self.type_v);
            let kv_k = g.view(Op::View, kc, [hd, nkv, self.n_kv, ns], [tk.size(), tk.row(hd), tk.row(p(&[hd, nkv])), tk.row(p(&[hd, nkv, self.n_kv]))], Name::Layer("k_view", li));
            let kv_v = if v_trans {
                g.view(Op::View, vc, [self.n_kv, nkv, hd, ns], [tv.size(), tv.row(p(&[self.n_kv, hd])), tv.row(self.n_kv), tv.row(p(&[self.n_kv, hd, nkv]))], Name::Layer("v_view", li))
            } else {
                g.view(Op::View, vc, [hd, nkv, self.n_kv, ns], [tv.size(), tv.row(hd), tv.row(p(&[hd, nkv])), tv.row(p(&[hd, nkv, self.n_kv]))], Name::Layer("v_view", li))
            };
            // build_attn_mha (src/llama-graph.cpp:2616-2755).
            let q_nb = g.nb(q);
            let q4 = g.view(Op::View, q, [hd, nh, t / ns, ns], [q_nb[0], q_nb[1], q_nb[2], q_nb[2].saturating_mul(t / ns)], Name::Layer("q_streams", li));
            let qp = g.permute_0213(q4);
            let kp = g.permute_0213(kv_k);
            let vp = g.permute_0213(kv_v);
            let attn = if self.flash_attn {
                let (qn, vn) = (g.ne(qp), g.ne(vp));
                let fa = g.op(Op::FlashAttnExt, Ty::F32, [vn[0], qn[2], qn[1], qn[3]], &[qp, kp, vp, mask], Name::Unnamed);
                let fne = g.ne(fa);
                g.reshape(fa, [p(&[fne[0], fne[1]]), p(&[fne[2], fne[3]]), 1, 1], Name::Layer("kqv_out", li))
            } else {
                let kq = g.mul_mat(kp, qp, Name::Layer("kq", li));
                let sm = g.like(Op::SoftMax, kq, &[kq, mask], Name::Layer("kq_soft_max", li));
                let kqv = g.mul_mat(vp, sm, Name::Layer("kqv", li));
                let pm = g.permute_0213(kqv);
                let pne = g.ne(pm);
                let c = g.op(Op::Cont, Ty::F32, [p(&[pne[0], pne[1]]), p(&[pne[2], pne[3]]), 1, 1], &[pm], Name::Layer("kqv_out", li));
                if !self.offload_kqv {
                    g.assigned.push((c, self.cpu));
                }
                c
            };
            g.expand(attn);
            let attn = match v_rot {
                Some(r) => hadamard(&mut g, attn, r),
                None => attn,
            };
            let wo = g.resident(Ty::F16, [p(&[hd, nh]), n_embd, 1, 1], w, true, Name::Layer("attn_output.weight", li));
            // llama names the projection `attn_out`; qwen3 and qwen3moe leave it unnamed.
            let mut cur = g.mul_mat(wo, attn, if self.qk_norm { Name::Unnamed } else { Name::Layer("attn_out", li) });
            let mut inp_sa = inp_sa;
            if il + 1 == n_layer {
                cur = g.get_rows(cur, out_ids, Name::Unnamed);
                inp_sa = g.get_rows(inp_sa, out_ids, Name::Unnamed);
            }
            let ffn_inp = g.like(Op::Add, cur, &[cur, inp_sa], Name::Layer("ffn_inp", li));
            let norm = g.like(Op::RmsNorm, ffn_inp, &[ffn_inp], Name::Layer("norm", li));
            if pin_norms {
                g.assigned.push((norm, l.device));
            }
            let ffn_norm_w = g.resident(Ty::F32, [n_embd, 1, 1, 1], w, true, Name::Layer("ffn_norm.weight", li));
            let cur = g.like(Op::Mul, norm, &[norm, ffn_norm_w], Name::Layer("ffn_norm", li));
            let ffn_out = match l.ffn {
                LayerFfn::Dense { n_ff } => {
                    // build_ffn, LLM_FFN_SILU + LLM_FFN_PAR (src/llama-graph.cpp:1800-1960): up,
                    // gate, swiglu_split(gate, up), down.
                    let w_up = g.resident(Ty::F16, [n_embd, n_ff, 1, 1], w, true, Name::Layer("ffn_up.weight", li));
                    let w_gate = g.resident(Ty::F16, [n_embd, n_ff, 1, 1], w, true, Name::Layer("ffn_gate.weight", li));
                    let w_down = g.resident(Ty::F16, [n_ff, n_embd, 1, 1], w, true, Name::Layer("ffn_down.weight", li));
                    let up = g.mul_mat(w_up, cur, Name::Layer("ffn_up", li));
                    let gate = g.mul_mat(w_gate, cur, Name::Layer("ffn_gate", li));
                    let sw = g.like(Op::Glu, gate, &[gate, up], Name::Layer("ffn_swiglu", li));
                    g.mul_mat(w_down, sw, Name::Layer("ffn_out", li))
                }
                LayerFfn::Moe { experts, used, n_ff, backend } => self.moe(&mut g, cur, w, experts, used, n_ff, backend, li, t),
            };
            let down = ffn_out;
            inp_l = g.like(Op::Add, down, &[down, ffn_inp], Name::Layer("l_out", li));
        }
        let norm = g.like(Op::RmsNorm, inp_l, &[inp_l], Name::Plain("norm"));
        let out_norm_w = g.resident(Ty::F32, [n_embd, 1, 1, 1], self.output, true, Name::Plain("output_norm.weight"));
        let result_norm = g.like(Op::Mul, norm, &[norm, out_norm_w], Name::Plain("result_norm"));
        let w_out = g.resident(Ty::F16, [n_embd, self.n_vocab, 1, 1], self.output, true, Name::Plain("output.weight"));
        let logits = g.mul_mat(w_out, result_norm, Name::Plain("result_output"));
        g.expand(logits);
        // llm_graph_result::set_outputs (src/llama-graph.cpp:1367): logits and embeddings.
        g.set_output(logits);
        g.set_output(result_norm);
        g
    }

    /// `build_moe_ffn` (src/llama-graph.cpp:2007-2373) for softmax gating with the weights
    /// normalized (qwen3moe and llama's experts), a separate gate, SiLU, no scale.
    #[allow(clippy::too_many_arguments)]
    fn moe(&self, g: &mut Graph, cur: usize, w: usize, experts: u64, used: u64, n_ff: u64, eb: usize, li: u32, t: u64) -> usize {
        let n_embd = self.n_embd;
        let gate_inp = g.resident(Ty::F32, [n_embd, experts, 1, 1], w, true, Name::Layer("ffn_gate_inp.weight", li));
        let logits = g.mul_mat(gate_inp, cur, Name::Layer("ffn_moe_logits", li));
        let probs = g.like(Op::SoftMax, logits, &[logits], Name::Layer("ffn_moe_probs", li));
        // ggml_argsort_top_k (ggml/src/ggml.c:5450): the argsort, viewed to its first `used`.
        let pne = g.ne(probs);
        let argsort = g.op(Op::Argsort, Ty::I32, pne, &[probs], Name::Layer("ffn_moe_argsort", li));
        let anb = g.nb(argsort);
        let selected = g.view(Op::View, argsort, [used, pne[1], pne[2], pne[3]], anb, Name::Layer("ffn_moe_topk", li));
        let probs3 = g.reshape(probs, [1, experts, t, 1], Name::Layer("ffn_moe_probs_3d", li));
        let weights = g.get_rows(probs3, selected, Name::Layer("ffn_moe_weights", li));
        let w2 = g.reshape(weights, [used, t, 1, 1], Name::Layer("ffn_moe_weights_2d", li));
        let sum = g.op(Op::SumRows, Ty::F32, [1, t, 1, 1], &[w2], Name::Layer("ffn_moe_weights_sum", li));
        let sum = g.like(Op::Clamp, sum, &[sum], Name::Layer("ffn_moe_weights_sum_clamped", li));
        let wn = g.like(Op::Div, w2, &[w2, sum], Name::Layer("ffn_moe_weights_norm", li));
        let weights = g.reshape(wn, [1, used, t, 1], Name::Layer("ffn_moe_weights_3d", li));
        g.expand(weights);
        let cur3 = g.reshape(cur, [n_embd, 1, t, 1], Name::Layer("ffn_norm_3d", li));
        let up_w = g.resident(Ty::F16, [n_embd, n_ff, experts, 1], eb, true, Name::Layer("ffn_up_exps.weight", li));
        let gate_w = g.resident(Ty::F16, [n_embd, n_ff, experts, 1], eb, true, Name::Layer("ffn_gate_exps.weight", li));
        let down_w = g.resident(Ty::F16, [n_ff, n_embd, experts, 1], eb, true, Name::Layer("ffn_down_exps.weight", li));
        // ggml_mul_mat_id (ggml/src/ggml.c:3416): `[as.ne1, ids.ne0, b.ne2]`.
        let up = g.op(Op::MulMatId, Ty::F32, [n_ff, used, t, 1], &[up_w, cur3, selected], Name::Layer("ffn_moe_up", li));
        let gate = g.op(Op::MulMatId, Ty::F32, [n_ff, used, t, 1], &[gate_w, cur3, selected], Name::Layer("ffn_moe_gate", li));
        let sw = g.like(Op::Glu, gate, &[gate, up], Name::Layer("ffn_moe_swiglu", li));
        let down = g.op(Op::MulMatId, Ty::F32, [n_embd, used, t, 1], &[down_w, sw, selected], Name::Layer("ffn_moe_down", li));
        let experts_out = g.like(Op::Mul, down, &[down, weights], Name::Layer("ffn_moe_weighted", li));
        g.expand(experts_out);
        let enb = g.nb(experts_out);
        let mut views = Vec::new();
        for _ in 0..used {
            let v = g.view(Op::View, experts_out, [n_embd, t, 1, 1], [enb[0], enb[2], enb[2].saturating_mul(t), enb[2].saturating_mul(t)], Name::Layer("ffn_moe_view", li));
            g.expand(v);
            views.push(v);
        }
        let mut moe_out = views.first().copied().unwrap_or(experts_out);
        for &v in views.iter().skip(1) {
            moe_out = g.like(Op::Add, moe_out, &[moe_out, v], Name::Unnamed);
            g.expand(moe_out);
        }
        if used == 1 {
            moe_out = g.op(Op::Cont, Ty::F32, [n_embd, t, 1, 1], &[moe_out], Name::Unnamed);
        }
        // cb(moe_out, "ffn_moe_out", il): the last sum is named, the others keep `node_N`.
        g.rename(moe_out, Name::Layer("ffn_moe_out", li));
        moe_out
    }

    /// `ggml_set_rows(a, b, c)` (ggml/src/ggml.c:4009): a view of `a` with sources b, c, a.
    fn set_rows(&self, g: &mut Graph, a: usize, b: usize, c: usize, li: u32) -> usize {
        let (ne, nb) = (g.ne(a), g.nb(a));
        let id = g.view(Op::SetRows, a, ne, nb, Name::Layer("set_rows", li));
        if let Some(t) = g.t.get_mut(id) {
            t.src = [Some(b), Some(c), Some(a), None, None];
        }
        g.rename(id, Name::Layer("set_rows", li));
        id
    }
}
