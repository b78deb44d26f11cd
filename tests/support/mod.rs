//! A tiny Llama-shaped checkpoint and its GGUF conversion, built in memory for the audit
//! tests: a safetensors writer and a GGUF writer (little-endian v3, 32-byte alignment),
//! and the converter's transformations done here, independently of `model::audit`: the
//! GGUF names written out by hand, the Q/K permutation as numpy's
//! `reshape(n, 2, hd/2, c).swapaxes(1, 2)` indexes it, norms widened to F32, a
//! `rope_freqs.weight` whose values numpy computed (float32) from the config below.
#![allow(dead_code)]

use tensorpeek::dtype::quantize::Requant;

pub const HIDDEN: u64 = 32;
pub const HEADS: u64 = 2;
pub const KV_HEADS: u64 = 1;
pub const HEAD_DIM: u64 = 16;
pub const INTER: u64 = 32;
pub const VOCAB: u64 = 16;
pub const LAYERS: u64 = 2;

pub const CONFIG: &str = r#"{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":32,
"intermediate_size":32,"num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":1,"head_dim":16,
"vocab_size":16,"tie_word_embeddings":true,"rope_theta":10000.0,"rope_scaling":{"rope_type":"llama3",
"factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,"original_max_position_embeddings":1024}}"#;

/// rope_freqs for CONFIG, from numpy in float32 (the converter's formula): wavelengths
/// 2π·10000^(2i/16) against 1024/4 and 1024/1.
pub const ROPE_FREQS: [u32; 8] = [0x3f800000, 0x3f800000, 0x3f800000, 0x3f800000, 0x404f564c, 0x41000000, 0x41000000, 0x41000000];

/// One source tensor: name, row-major shape, f32 values (all exactly BF16).
#[derive(Clone, Debug)]
pub struct Src {
    pub name: String,
    pub shape: Vec<u64>,
    pub values: Vec<f32>,
}

impl Src {
    pub fn bf16(&self) -> Vec<u8> {
        self.values.iter().flat_map(|v| ((v.to_bits() >> 16) as u16).to_le_bytes()).collect()
    }
    pub fn f32(&self) -> Vec<u8> {
        self.values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }
    pub fn is_norm(&self) -> bool {
        self.name.ends_with("norm.weight")
    }
}

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    }
}

fn bf16_round(v: f32) -> f32 {
    f32::from_bits(v.to_bits() & 0xffff_0000)
}

/// The 20 tensors of the tiny model, in the order transformers saves them.
pub fn source_tensors() -> Vec<Src> {
    let mut rng = Lcg(42);
    let mut t = |name: String, shape: Vec<u64>, norm: bool| {
        let n: u64 = shape.iter().product();
        let values = (0..n).map(|_| bf16_round(if norm { 1.0 + 0.2 * rng.next() } else { 0.05 * rng.next() })).collect();
        Src { name, shape, values }
    };
    let mut out = vec![t("model.embed_tokens.weight".into(), vec![VOCAB, HIDDEN], false)];
    for l in 0..LAYERS {
        let p = format!("model.layers.{l}.");
        out.push(t(format!("{p}input_layernorm.weight"), vec![HIDDEN], true));
        out.push(t(format!("{p}mlp.down_proj.weight"), vec![HIDDEN, INTER], false));
        out.push(t(format!("{p}mlp.gate_proj.weight"), vec![INTER, HIDDEN], false));
        out.push(t(format!("{p}mlp.up_proj.weight"), vec![INTER, HIDDEN], false));
        out.push(t(format!("{p}post_attention_layernorm.weight"), vec![HIDDEN], true));
        out.push(t(format!("{p}self_attn.k_proj.weight"), vec![KV_HEADS * HEAD_DIM, HIDDEN], false));
        out.push(t(format!("{p}self_attn.o_proj.weight"), vec![HIDDEN, HEADS * HEAD_DIM], false));
        out.push(t(format!("{p}self_attn.q_proj.weight"), vec![HEADS * HEAD_DIM, HIDDEN], false));
        out.push(t(format!("{p}self_attn.v_proj.weight"), vec![KV_HEADS * HEAD_DIM, HIDDEN], false));
    }
    out.push(t("model.norm.weight".into(), vec![HIDDEN], true));
    out
}

/// The GGUF name of a source tensor, written out.
pub fn gguf_name(hf: &str) -> String {
    match hf {
        "model.embed_tokens.weight" => return "token_embd.weight".into(),
        "model.norm.weight" => return "output_norm.weight".into(),
        "lm_head.weight" => return "output.weight".into(),
        _ => {}
    }
    let rest = hf.strip_prefix("model.layers.").unwrap();
    let (l, m) = rest.split_once('.').unwrap();
    let role = match m {
        "input_layernorm.weight" => "attn_norm",
        "mlp.down_proj.weight" => "ffn_down",
        "mlp.gate_proj.weight" => "ffn_gate",
        "mlp.up_proj.weight" => "ffn_up",
        "post_attention_layernorm.weight" => "ffn_norm",
        "self_attn.k_proj.weight" => "attn_k",
        "self_attn.o_proj.weight" => "attn_output",
        "self_attn.q_proj.weight" => "attn_q",
        "self_attn.v_proj.weight" => "attn_v",
        other => panic!("{other}"),
    };
    format!("blk.{l}.{role}.weight")
}

/// numpy's `w.reshape(n, 2, rows/n/2, cols).swapaxes(1, 2).reshape(w.shape)`.
pub fn permute(values: &[f32], rows: u64, cols: u64, n: u64) -> Vec<f32> {
    let half = rows / n / 2;
    let mut out = Vec::with_capacity(values.len());
    for h in 0..n {
        for i in 0..half {
            for j in 0..2 {
                for c in 0..cols {
                    out.push(values[(((h * 2 + j) * half + i) * cols + c) as usize]);
                }
            }
        }
    }
    out
}

/// A safetensors file of (name, dtype, shape, bytes).
pub fn safetensors(tensors: &[(String, &str, Vec<u64>, Vec<u8>)]) -> Vec<u8> {
    let mut off = 0usize;
    let mut entries = Vec::new();
    for (name, dtype, shape, data) in tensors {
        let shape: Vec<String> = shape.iter().map(u64::to_string).collect();
        entries.push(format!(r#""{name}":{{"dtype":"{dtype}","shape":[{}],"data_offsets":[{off},{}]}}"#, shape.join(","), off + data.len()));
        off += data.len();
    }
    let mut header = format!(r#"{{"__metadata__":{{"format":"pt"}},{}}}"#, entries.join(","));
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    for (_, _, _, d) in tensors {
        out.extend_from_slice(d);
    }
    out
}

pub enum Kv {
    U32(u32),
    U16(u16),
    Str(&'static str),
}

fn gstr(s: &[u8]) -> Vec<u8> {
    let mut v = (s.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(s);
    v
}

/// A GGUF v3 file of (name, ggml type id, row-major shape, bytes), 32-byte alignment.
pub fn gguf(kvs: &[(&str, Kv)], tensors: &[(String, u32, Vec<u64>, Vec<u8>)]) -> Vec<u8> {
    let mut out = b"GGUF".to_vec();
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
    out.extend_from_slice(&(kvs.len() as u64).to_le_bytes());
    for (k, v) in kvs {
        out.extend(gstr(k.as_bytes()));
        match v {
            Kv::U32(x) => {
                out.extend_from_slice(&4u32.to_le_bytes());
                out.extend_from_slice(&x.to_le_bytes());
            }
            Kv::U16(x) => {
                out.extend_from_slice(&2u32.to_le_bytes());
                out.extend_from_slice(&x.to_le_bytes());
            }
            Kv::Str(s) => {
                out.extend_from_slice(&8u32.to_le_bytes());
                out.extend(gstr(s.as_bytes()));
            }
        }
    }
    let mut off = 0u64;
    let mut offsets = Vec::new();
    for (name, ty, shape, data) in tensors {
        out.extend(gstr(name.as_bytes()));
        out.extend_from_slice(&(shape.len() as u32).to_le_bytes());
        for d in shape.iter().rev() {
            out.extend_from_slice(&d.to_le_bytes());
        }
        out.extend_from_slice(&ty.to_le_bytes());
        out.extend_from_slice(&off.to_le_bytes());
        offsets.push(off);
        off = (off + data.len() as u64).div_ceil(32) * 32;
    }
    out.resize(out.len().div_ceil(32) * 32, 0);
    let start = out.len();
    for ((_, _, _, data), o) in tensors.iter().zip(offsets) {
        out.resize(start + o as usize, 0);
        out.extend_from_slice(data);
    }
    out.resize(out.len().div_ceil(32) * 32, 0);
    out
}

/// How the test converter writes the matrices.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Out {
    Bf16,
    Q8_0,
}

/// The converted tensors (name, type, shape, bytes), in the converter's order:
/// rope_freqs first, then the source order.
pub fn convert(src: &[Src], out: Out) -> Vec<(String, u32, Vec<u64>, Vec<u8>)> {
    let mut v = vec![(
        "rope_freqs.weight".to_string(),
        0u32,
        vec![HEAD_DIM / 2],
        ROPE_FREQS.iter().flat_map(|b| b.to_le_bytes()).collect(),
    )];
    for s in src {
        let name = gguf_name(&s.name);
        let values = if s.name.ends_with("q_proj.weight") {
            permute(&s.values, s.shape[0], s.shape[1], HEADS)
        } else if s.name.ends_with("k_proj.weight") {
            permute(&s.values, s.shape[0], s.shape[1], KV_HEADS)
        } else {
            s.values.clone()
        };
        let t = Src { name: name.clone(), shape: s.shape.clone(), values };
        if s.shape.len() == 1 {
            v.push((name, 0, s.shape.clone(), t.f32()));
        } else if out == Out::Q8_0 {
            let mut q = Vec::new();
            Requant::Q8_0.quantize(&t.values, &mut q);
            v.push((name, 8, s.shape.clone(), q));
        } else {
            v.push((name, 30, s.shape.clone(), t.bf16()));
        }
    }
    v
}

pub fn llama_kvs() -> Vec<(&'static str, Kv)> {
    vec![
        ("general.architecture", Kv::Str("llama")),
        ("llama.attention.head_count", Kv::U32(HEADS as u32)),
        ("llama.attention.head_count_kv", Kv::U32(KV_HEADS as u32)),
    ]
}

/// The checkpoint as one safetensors shard.
pub fn checkpoint(src: &[Src]) -> Vec<u8> {
    let t: Vec<(String, &str, Vec<u64>, Vec<u8>)> = src.iter().map(|s| (s.name.clone(), "BF16", s.shape.clone(), s.bf16())).collect();
    safetensors(&t)
}
