//! "Will it run?": the memory llama.cpp would allocate to run a GGUF model with the
//! settings a person picks here — per device, buffer by buffer, the KV cache, what llama.cpp
//! would warn about or refuse, the largest context that fits, llama.cpp's own fitting, and a
//! chart of memory against context length. The planner is the CLI's (`tensorpeek fit`,
//! [`crate::model::memory`]): the same settings give the same bytes.
//!
//! Recomputed on every input, in the render (a plan of a 3B model is well under a
//! millisecond); the chart's points and the largest context do not depend on the context
//! length, so moving the context slider recomputes only the plan and the fitting. The
//! settings go into the page's fragment (`fit.c=…`) through [`FitLink`], outside the page
//! state, so that a slider drag does not render the whole app.
//!
//! Every string from the file (architecture name, llama.cpp's sentences quoting it) is a
//! text node; the chart is SVG made here, text nodes too.

use super::components::CopyButton;
use super::format::bytes_html;
use crate::fmt;
use crate::formats::gguf::GgufFile;
use crate::formats::Inspection;
use crate::model::description::Description;
use crate::model::memory::flags::{self as mflags, Flags};
use crate::model::memory::{self, fit, CacheType, FlashAttn, Kind, Plan, Settings};
use crate::web::perf::now_ms;
use crate::web::remote::FitLink;
use crate::web::state::Shared;
use std::rc::Rc;
use web_sys::{HtmlInputElement, HtmlSelectElement};
use yew::prelude::*;

/// Contexts the chart is drawn at (evenly spaced from 256 to the training context).
pub const CHART_POINTS: u64 = 20;
/// Memory llama.cpp's fitting keeps free on each GPU (`-fitt`, 1024 MiB by default).
pub const FIT_MARGIN: u64 = 1 << 30;
/// The smallest context llama.cpp's fitting goes down to (`-fitc`, 4096 by default).
pub const FIT_CTX_MIN: u64 = 4096;
/// Longest value taken from a link's `fit.` key (every real one is a few characters).
pub const MAX_LINK_VALUE: usize = 32;
/// Longest `-ot` text taken from a link (`fit.ot`: a few patterns of ~60 characters).
pub const MAX_LINK_OT: usize = 2048;
const GIB: f64 = (1u64 << 30) as f64;

/// The GPUs to choose from: (id in links, label, memory in GiB).
pub const GPU_PRESETS: &[(&str, &str, f64)] = &[
    ("rtx3060", "RTX 3060 12 GB", 12.0),
    ("rtx4070", "RTX 4070 12 GB", 12.0),
    ("rtx4080", "RTX 4080 16 GB", 16.0),
    ("rtx4090", "RTX 4090 24 GB", 24.0),
    ("rtx5090", "RTX 5090 32 GB", 32.0),
    ("a100-40", "A100 40 GB", 40.0),
    ("a100-80", "A100 80 GB", 80.0),
    ("h100", "H100 80 GB", 80.0),
];
const DEFAULT_PRESET: &str = "rtx4090";

/// What the form holds: the number fields as typed (checked when the plan is made), the
/// choices as values.
#[derive(Clone, Debug, PartialEq)]
pub struct Inputs {
    /// `-c` as typed; `None` = the training context (llama.cpp's `-c 0`).
    pub ctx: Option<String>,
    pub np: String,
    pub b: String,
    pub ub: String,
    pub ctk: CacheType,
    pub ctv: CacheType,
    pub fa: FlashAttn,
    pub swa_full: bool,
    /// `-kvu`: one KV stream for all sequences.
    pub kvu: bool,
    /// `-nkvo`: the KV cache stays on the host.
    pub nkvo: bool,
    pub mmap: bool,
    /// `-ngl` as typed; empty = all layers.
    pub ngl: String,
    /// `-ts` as typed (`3,1`); empty = by free memory.
    pub ts: String,
    /// `-ot` as typed (`PATTERN=BUFT,…`).
    pub ot: String,
    /// `-cmoe`: every layer's experts on the host.
    pub cmoe: bool,
    /// `-ncmoe` as typed; empty = none.
    pub ncmoe: String,
    /// A [`GPU_PRESETS`] id, `none` or `custom`.
    pub preset: String,
    /// The GPUs' free memory in GiB (empty: no such GPU).
    pub vram: String,
    pub vram2: String,
    /// Host memory in GiB (empty: not checked).
    pub ram: String,
}

impl Default for Inputs {
    fn default() -> Inputs {
        Inputs {
            ctx: None,
            np: "1".into(),
            b: "2048".into(),
            ub: "512".into(),
            ctk: CacheType::F16,
            ctv: CacheType::F16,
            fa: FlashAttn::Auto,
            swa_full: false,
            kvu: false,
            nkvo: false,
            mmap: true,
            ngl: String::new(),
            ts: String::new(),
            ot: String::new(),
            cmoe: false,
            ncmoe: String::new(),
            preset: DEFAULT_PRESET.into(),
            vram: "24".into(),
            vram2: String::new(),
            ram: String::new(),
        }
    }
}

fn fa_name(f: FlashAttn) -> &'static str {
    match f {
        FlashAttn::Auto => "auto",
        FlashAttn::On => "on",
        FlashAttn::Off => "off",
    }
}

impl Inputs {
    /// The settings that differ from the defaults, as the link's `fit.` keys.
    pub fn to_pairs(&self) -> Vec<(String, String)> {
        let d = Inputs::default();
        let mut out: Vec<(String, String)> = Vec::new();
        let mut put = |k: &str, v: &str, default: &str| {
            if v != default {
                out.push((k.to_string(), v.to_string()));
            }
        };
        if let Some(c) = &self.ctx {
            put("c", c, "");
        }
        put("np", &self.np, &d.np);
        put("b", &self.b, &d.b);
        put("ub", &self.ub, &d.ub);
        put("ctk", self.ctk.name(), d.ctk.name());
        put("ctv", self.ctv.name(), d.ctv.name());
        put("fa", fa_name(self.fa), fa_name(d.fa));
        put("swa", if self.swa_full { "1" } else { "0" }, "0");
        put("kvu", if self.kvu { "1" } else { "0" }, "0");
        put("nkvo", if self.nkvo { "1" } else { "0" }, "0");
        put("mmap", if self.mmap { "1" } else { "0" }, "1");
        put("ngl", &self.ngl, &d.ngl);
        put("ts", &self.ts, &d.ts);
        put("ot", &self.ot, &d.ot);
        put("cmoe", if self.cmoe { "1" } else { "0" }, "0");
        put("ncmoe", &self.ncmoe, &d.ncmoe);
        put("gpu", &self.preset, &d.preset);
        put("vram", &self.vram, &d.vram);
        put("vram2", &self.vram2, &d.vram2);
        put("ram", &self.ram, &d.ram);
        out
    }

    /// The form a link's `fit.` keys describe (unknown keys and values left out).
    pub fn from_pairs(pairs: &[(String, String)]) -> Inputs {
        let mut i = Inputs::default();
        for (k, v) in pairs {
            let max = if k == "ot" { MAX_LINK_OT } else { MAX_LINK_VALUE };
            let v: String = v.chars().take(max).collect();
            match k.as_str() {
                "c" => i.ctx = Some(v),
                "np" => i.np = v,
                "b" => i.b = v,
                "ub" => i.ub = v,
                "ctk" => i.ctk = CacheType::parse(&v).unwrap_or(i.ctk),
                "ctv" => i.ctv = CacheType::parse(&v).unwrap_or(i.ctv),
                "fa" => i.fa = FlashAttn::parse(&v).unwrap_or(i.fa),
                "swa" => i.swa_full = v == "1",
                "kvu" => i.kvu = v == "1",
                "nkvo" => i.nkvo = v == "1",
                "mmap" => i.mmap = v != "0",
                "ngl" => i.ngl = v,
                "ts" => i.ts = v,
                "ot" => i.ot = v,
                "cmoe" => i.cmoe = v == "1",
                "ncmoe" => i.ncmoe = v,
                "gpu" if v == "none" || v == "custom" || GPU_PRESETS.iter().any(|(id, _, _)| *id == v) => i.preset = v,
                "vram" => i.vram = v,
                "vram2" => i.vram2 = v,
                "ram" => i.ram = v,
                _ => {}
            }
        }
        i
    }

    /// The context the form asks for (`None` = the training context), or why it cannot.
    fn context(&self, train: u64) -> Result<Option<u64>, String> {
        match self.ctx.as_deref().map(str::trim) {
            None | Some("") => Ok(None),
            Some(t) => match t.parse::<u64>() {
                Ok(0) => Ok(None),
                Ok(n) if n == train => Ok(None),
                Ok(n) if n <= memory::MAX_CONTEXT => Ok(Some(n)),
                _ => Err(format!("context length: {t} is not a number of tokens from 1 to {}", fmt::thousands(memory::MAX_CONTEXT))),
            },
        }
    }
}

impl Reducible for Inputs {
    type Action = Edit;
    fn reduce(self: Rc<Self>, e: Edit) -> Rc<Self> {
        let mut next = (*self).clone();
        (e.0)(&mut next);
        if next == *self {
            self
        } else {
            Rc::new(next)
        }
    }
}

/// One change of the form.
pub struct Edit(Box<dyn FnOnce(&mut Inputs)>);

/// The settings the form says, for the planner, with whether the context and the layer
/// count were left to llama.cpp (its fitting may then change them).
#[derive(Clone, Debug)]
struct Built {
    s: Settings,
    /// The flags that differ from llama.cpp's defaults, but for those the fitted arguments
    /// print (`-c`, `-ngl`, `-ts`, `-ot`).
    args: Vec<String>,
    ctx_auto: bool,
    /// `-ngl` when it is not llama.cpp's default.
    user_ngl: Option<i64>,
}

fn count(text: &str, what: &str, min: u64, max: u64) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!("{what}: {} is not a number from {} to {}", text.trim(), fmt::thousands(min), fmt::thousands(max))),
    }
}

/// GiB as typed → bytes (`None` for an empty field), as the CLI's `--gpu 24GiB` reads it.
fn gib(text: &str, what: &str) -> Result<Option<u64>, String> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && v * GIB < 1.8e19 => Ok(Some((v * GIB) as u64)),
        _ => Err(format!("{what}: {t} is not a size in GiB")),
    }
}

/// The form as the CLI's flags (`tensorpeek fit`'s own conversion to settings follows).
fn flags_of(i: &Inputs, train: u64) -> Result<(Flags, bool), String> {
    let ctx = i.context(train)?;
    let ngl = match i.ngl.trim() {
        "" => None,
        t => Some(mflags::parse_ngl(t)?),
    };
    let mut gpu = Vec::new();
    for (text, what) in [(&i.vram, "GPU 0"), (&i.vram2, "GPU 1")] {
        if let Some(bytes) = gib(text, what)? {
            gpu.push(bytes.to_string());
        }
    }
    let ncmoe = match i.ncmoe.trim() {
        "" => 0,
        t => count(t, "-ncmoe", 0, u64::from(u32::MAX))?,
    };
    let f = Flags {
        ctx_size: ctx.unwrap_or(0),
        parallel: count(&i.np, "-np", 1, memory::MAX_SEQ)?,
        batch_size: count(&i.b, "-b", 1, u64::from(u32::MAX))?,
        ubatch_size: count(&i.ub, "-ub", 1, u64::from(u32::MAX))?,
        cache_type_k: i.ctk.name().into(),
        cache_type_v: i.ctv.name().into(),
        flash_attn: fa_name(i.fa).into(),
        swa_full: i.swa_full,
        kv_unified: i.kvu,
        n_gpu_layers: ngl,
        tensor_split: mflags::parse_tensor_split(&i.ts)?,
        override_tensor: mflags::split_overrides(&i.ot),
        cpu_moe: i.cmoe,
        n_cpu_moe: ncmoe,
        no_mmap: !i.mmap,
        no_kv_offload: i.nkvo,
        gpu,
        // A CUDA build of llama.cpp (as `tensorpeek fit --backend cuda`): no CPU repacking.
        backend: "cuda".into(),
        ram: gib(&i.ram, "host RAM")?.map(|b| b.to_string()),
        ..Flags::default()
    };
    Ok((f, ctx.is_none()))
}

fn build(i: &Inputs, train: u64) -> Result<Built, String> {
    let (f, ctx_auto) = flags_of(i, train)?;
    let s = f.settings()?;
    Ok(Built { args: f.args_beside_fitted(), user_ngl: f.user_ngl(), s, ctx_auto })
}

/// A model to plan for: its description and its tensors' placement.
struct Model {
    desc: Description,
    tensors: memory::ModelTensors,
}

/// The plan for the settings and llama.cpp's fitting.
struct Outcome {
    built: Result<Built, String>,
    plan: Result<Plan, String>,
    fitted: Option<Result<fit::Fitted, String>>,
    ms: f64,
}

/// One point of the chart: the first device's sums at one context.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Point {
    ctx: u64,
    model: u64,
    context: u64,
    compute: u64,
}

impl Point {
    fn total(&self) -> u64 {
        self.model.saturating_add(self.context).saturating_add(self.compute)
    }
}

/// What does not depend on the context length: the chart's points and the largest context.
struct Sweep {
    points: Vec<Point>,
    largest: Option<u64>,
    ms: f64,
}

/// The contexts the chart is drawn at: [`CHART_POINTS`] multiples of 256 from 256 to the
/// training context, evenly spaced.
fn chart_contexts(train: u64) -> Vec<u64> {
    let top = (train / 256).max(1);
    let mut out: Vec<u64> = (0..CHART_POINTS).map(|i| (1 + (top - 1) * i / (CHART_POINTS - 1)) * 256).collect();
    out.dedup();
    out
}

fn first_device(p: &Plan) -> Option<&memory::DeviceTotal> {
    p.devices.first()
}

fn sweep(m: &Model, b: &Built) -> Sweep {
    let t0 = now_ms();
    let mut s = b.s.clone();
    // The weight buffers do not change with the context: made once for every point.
    let weights = memory::weight_buffers(&m.desc, &m.tensors, &s);
    let points = chart_contexts(m.desc.n_ctx_train)
        .into_iter()
        .filter_map(|ctx| {
            s.n_ctx = ctx;
            let p = memory::plan_with(&m.desc, &weights, &s).ok()?;
            let d = first_device(&p)?;
            Some(Point { ctx, model: d.model, context: d.context, compute: d.compute })
        })
        .collect();
    let known = !b.s.devices.is_empty() || b.s.host_memory.is_some();
    let largest = if known { fit::largest_context(&m.desc, &m.tensors, &b.s, &[FIT_MARGIN]).ok().flatten() } else { None };
    Sweep { points, largest, ms: now_ms() - t0 }
}

fn outcome(m: &Model, i: &Inputs) -> Outcome {
    let t0 = now_ms();
    let built = build(i, m.desc.n_ctx_train);
    let (plan, fitted) = match &built {
        Ok(b) => {
            let plan = memory::plan(&m.desc, &m.tensors, &b.s).map_err(|e| e.to_string());
            let fitted = plan.is_ok().then(|| fit::fit_params(&m.desc, &m.tensors, &b.s, &[FIT_MARGIN], FIT_CTX_MIN, b.ctx_auto, b.user_ngl));
            (plan, fitted)
        }
        Err(e) => (Err(e.clone()), None),
    };
    Outcome { built, plan, fitted, ms: now_ms() - t0 }
}

#[derive(Properties, PartialEq)]
pub struct FitProps {
    /// The GGUF files of one model: one file, or every part of a split model.
    pub files: Shared<Vec<Rc<Inspection>>>,
}

/// The "Will it run?" card.
#[function_component(FitCard)]
pub fn fit_card(p: &FitProps) -> Html {
    let link = use_context::<FitLink>();
    let inputs = {
        let link = link.clone();
        use_reducer(move || link.map(|l| Inputs::from_pairs(&l.fit())).unwrap_or_default())
    };
    let model = use_memo(p.files.clone(), |files| {
        let ggufs: Vec<&GgufFile> = files.0.iter().filter_map(|i| i.parsed.gguf()).collect();
        memory::from_gguf_files(&ggufs).map(|(desc, tensors)| Rc::new(Model { desc, tensors }))
    });
    {
        // Each change goes into the page's fragment (when the view can be linked).
        let link = link.clone();
        use_effect_with((*inputs).clone(), move |i| {
            if let Some(l) = link {
                l.set_fit(i.to_pairs());
            }
        });
    }
    // Everything but the context: the chart's points and the largest context.
    let sweep_key = Inputs { ctx: None, ..(*inputs).clone() };
    let sweep = use_memo(((*model).clone().map(Shared), sweep_key), |(m, i)| {
        let m = m.as_ref()?;
        let b = build(i, m.0.desc.n_ctx_train).ok()?;
        Some(sweep(&m.0, &b))
    });
    let out = use_memo(((*model).clone().map(Shared), (*inputs).clone()), |(m, i)| m.as_ref().map(|m| outcome(&m.0, i)));

    let Some(m) = (*model).clone() else {
        return html! {
            <section class="card fit" aria-label="Will it run?" data-testid="fit-card" data-state="no-model">
                <h3>{ "Will it run?" }</h3>
                <p class="dim" data-testid="fit-none">{ "This GGUF does not describe a model llama.cpp would run (no architecture or block count in its header), so there is nothing to plan." }</p>
            </section>
        };
    };
    let Some(out) = (*out).as_ref() else { return html! {} };
    let sweep = (*sweep).as_ref();
    let train = m.desc.n_ctx_train;

    let edit = |f: fn(&mut Inputs, String)| {
        let d = inputs.dispatcher();
        Callback::from(move |e: InputEvent| {
            if let Some(el) = e.target_dyn_into::<HtmlInputElement>() {
                let v = el.value();
                d.dispatch(Edit(Box::new(move |i| f(i, v))));
            }
        })
    };
    let check = |f: fn(&mut Inputs, bool)| {
        let d = inputs.dispatcher();
        Callback::from(move |e: Event| {
            if let Some(el) = e.target_dyn_into::<HtmlInputElement>() {
                let v = el.checked();
                d.dispatch(Edit(Box::new(move |i| f(i, v))));
            }
        })
    };
    let choose = |f: fn(&mut Inputs, String)| {
        let d = inputs.dispatcher();
        Callback::from(move |e: Event| {
            if let Some(el) = e.target_dyn_into::<HtmlSelectElement>() {
                let v = el.value();
                d.dispatch(Edit(Box::new(move |i| f(i, v))));
            }
        })
    };
    let on_ctx = {
        let d = inputs.dispatcher();
        Callback::from(move |e: InputEvent| {
            if let Some(el) = e.target_dyn_into::<HtmlInputElement>() {
                let v = el.value();
                d.dispatch(Edit(Box::new(move |i| i.ctx = if v.trim().parse::<u64>().ok() == Some(train) { None } else { Some(v) })));
            }
        })
    };
    let i: &Inputs = &inputs;
    let moe = m.desc.is_moe();
    let ctx_text = i.ctx.clone().unwrap_or_else(|| train.to_string());
    let ctx_value = i.context(train).ok().map(|c| c.unwrap_or(train)).unwrap_or(train);
    let slider_max = train.max(256);

    let cache_select = |testid: &'static str, value: CacheType, f: fn(&mut Inputs, String)| {
        html! {
            <select data-testid={testid} onchange={choose(f)}>
                { for CacheType::ALL.iter().map(|t| html! { <option value={t.name()} selected={*t == value}>{ t.name() }</option> }) }
            </select>
        }
    };

    let form = html! {
        <form class="fit-form" onsubmit={Callback::from(|e: SubmitEvent| e.prevent_default())}>
            <div class="fit-ctx">
                <label class="fit-field">
                    <span>{ "Context length " }<code>{ "-c" }</code></span>
                    <input type="number" min="1" step="256" inputmode="numeric" value={ctx_text} oninput={on_ctx.clone()} data-testid="fit-ctx" />
                </label>
                <input type="range" min="256" max={slider_max.to_string()} step="256" value={ctx_value.min(slider_max).to_string()}
                    oninput={on_ctx} aria-label="Context length" data-testid="fit-ctx-range" />
                <span class="dim">{ format!("training context {}", fmt::thousands(train)) }</span>
            </div>
            <label class="fit-field"><span>{ "Parallel sequences " }<code>{ "-np" }</code></span>
                <input type="number" min="1" max={memory::MAX_SEQ.to_string()} value={i.np.clone()} oninput={edit(|i, v| i.np = v)} data-testid="fit-np" /></label>
            <label class="fit-field"><span>{ "Batch " }<code>{ "-b" }</code></span>
                <input type="number" min="1" value={i.b.clone()} oninput={edit(|i, v| i.b = v)} data-testid="fit-b" /></label>
            <label class="fit-field"><span>{ "Micro-batch " }<code>{ "-ub" }</code></span>
                <input type="number" min="1" value={i.ub.clone()} oninput={edit(|i, v| i.ub = v)} data-testid="fit-ub" /></label>
            <label class="fit-field"><span>{ "K cache " }<code>{ "-ctk" }</code></span>{ cache_select("fit-ctk", i.ctk, |i, v| i.ctk = CacheType::parse(&v).unwrap_or(i.ctk)) }</label>
            <label class="fit-field"><span>{ "V cache " }<code>{ "-ctv" }</code></span>{ cache_select("fit-ctv", i.ctv, |i, v| i.ctv = CacheType::parse(&v).unwrap_or(i.ctv)) }</label>
            <label class="fit-field"><span>{ "Flash attention " }<code>{ "-fa" }</code></span>
                <select data-testid="fit-fa" onchange={choose(|i, v| i.fa = FlashAttn::parse(&v).unwrap_or(i.fa))}>
                    { for [FlashAttn::Auto, FlashAttn::On, FlashAttn::Off].into_iter().map(|f| html! { <option value={fa_name(f)} selected={f == i.fa}>{ fa_name(f) }</option> }) }
                </select></label>
            <label class="fit-field"><span>{ "GPU layers " }<code>{ "-ngl" }</code></span>
                <input type="text" inputmode="numeric" spellcheck="false" placeholder="auto" value={i.ngl.clone()} oninput={edit(|i, v| i.ngl = v)} data-testid="fit-ngl" /></label>
            <label class="fit-field"><span>{ "GPU" }</span>
                <select data-testid="fit-gpu" onchange={choose(|i, v| {
                    if let Some((_, _, g)) = GPU_PRESETS.iter().find(|(id, _, _)| *id == v) {
                        i.vram = g.to_string();
                    } else if v == "none" {
                        i.vram.clear();
                        i.vram2.clear();
                    }
                    i.preset = v;
                })}>
                    <option value="none" selected={i.preset == "none"}>{ "None (CPU only)" }</option>
                    { for GPU_PRESETS.iter().map(|(id, label, _)| html! { <option value={*id} selected={i.preset == *id}>{ *label }</option> }) }
                    <option value="custom" selected={i.preset == "custom"}>{ "Other (type its memory)" }</option>
                </select></label>
            <label class="fit-field"><span>{ "GPU 0 free, GiB" }</span>
                <input type="number" min="0" step="any" placeholder="no GPU" value={i.vram.clone()} data-testid="fit-vram"
                    oninput={edit(|i, v| { i.preset = if v.trim().is_empty() { "none".into() } else { "custom".into() }; i.vram = v; })} /></label>
            <label class="fit-field"><span>{ "GPU 1 free, GiB" }</span>
                <input type="number" min="0" step="any" placeholder="none" value={i.vram2.clone()} oninput={edit(|i, v| i.vram2 = v)} data-testid="fit-vram2" /></label>
            <label class="fit-field"><span>{ "Host RAM, GiB" }</span>
                <input type="number" min="0" step="any" placeholder="not checked" value={i.ram.clone()} oninput={edit(|i, v| i.ram = v)} data-testid="fit-ram" /></label>
            <div class="fit-checks">
                <label class="check"><input type="checkbox" checked={i.swa_full} onchange={check(|i, v| i.swa_full = v)} data-testid="fit-swa-full" /><code>{ "--swa-full" }</code></label>
                <label class="check"><input type="checkbox" checked={i.mmap} onchange={check(|i, v| i.mmap = v)} data-testid="fit-mmap" />{ "mmap" }</label>
                <label class="check" title="One KV cache stream shared by all sequences"><input type="checkbox" checked={i.kvu} onchange={check(|i, v| i.kvu = v)} data-testid="fit-kvu" /><code>{ "-kvu" }</code></label>
                <label class="check" title="Keep the KV cache in host memory"><input type="checkbox" checked={i.nkvo} onchange={check(|i, v| i.nkvo = v)} data-testid="fit-nkvo" /><code>{ "-nkvo" }</code></label>
                if moe {
                    <label class="check" title="Every layer's experts in host memory"><input type="checkbox" checked={i.cmoe} onchange={check(|i, v| i.cmoe = v)} data-testid="fit-cmoe" /><code>{ "-cmoe" }</code></label>
                }
            </div>
            <div class="fit-offload">
                <label class="fit-field"><span>{ "Split between GPUs " }<code>{ "-ts" }</code></span>
                    <input type="text" inputmode="decimal" spellcheck="false" placeholder="by free memory" value={i.ts.clone()} oninput={edit(|i, v| i.ts = v)} data-testid="fit-ts" /></label>
                if moe {
                    <label class="fit-field"><span>{ "Experts of the first N layers on the host " }<code>{ "-ncmoe" }</code></span>
                        <input type="number" min="0" placeholder="0" value={i.ncmoe.clone()} oninput={edit(|i, v| i.ncmoe = v)} data-testid="fit-ncmoe" /></label>
                }
                <label class="fit-field fit-ot"><span>{ "Tensor overrides " }<code>{ "-ot" }</code></span>
                    <input type="text" spellcheck="false" autocomplete="off" placeholder="PATTERN=BUFT,… e.g. ffn_.*_exps=CPU" value={i.ot.clone()}
                        oninput={edit(|i, v| i.ot = v)} data-testid="fit-ot" /></label>
            </div>
        </form>
    };

    let body = match (&out.built, &out.plan) {
        (Err(e), _) => html! { <p class="bad" role="alert" data-testid="fit-input-error">{ e.clone() }</p> },
        (Ok(_), Err(e)) => html! { <p class="bad" role="alert" data-testid="fit-no-plan">{ format!("No plan: {e}.") }</p> },
        (Ok(b), Ok(plan)) => results(&m, b, plan, out.fitted.as_ref(), sweep),
    };
    let gaps = &m.desc.gaps;
    html! {
        <section class="card fit" aria-label="Will it run?" data-testid="fit-card" data-state="plan"
            data-plan-ms={format!("{:.2}", out.ms)} data-sweep-ms={sweep.map(|s| format!("{:.2}", s.ms)).unwrap_or_default()}>
            <h3>{ "Will it run?" }<span class="dim">{ format!(" {} in llama.cpp, {} blocks", m.desc.arch, m.desc.n_layer_all()) }</span></h3>
            { form }
            { body }
            if !gaps.is_empty() {
                <details class="fit-gaps" data-testid="fit-gaps">
                    <summary class="dim">{ format!("{} header key(s) missing or unusable: defaults assumed", gaps.len()) }</summary>
                    <ul>{ for gaps.iter().map(|g| html! { <li>{ g.clone() }</li> }) }</ul>
                </details>
            }
            <p class="dim fit-note">{ "What llama.cpp would allocate (a CUDA build; the same planner as " }<code>{ "tensorpeek fit" }</code>
                { ", checked against llama.cpp's own printout). GPU memory is what is free: a desktop on the card takes some." }</p>
        </section>
    }
}

fn device_name(label: &str, s: &Settings) -> String {
    match label.strip_prefix("GPU").and_then(|i| i.parse::<usize>().ok()).and_then(|i| s.devices.get(i)) {
        Some(d) => format!("{label} · {}", d.name),
        None => label.to_string(),
    }
}

fn signed_bytes(n: i64) -> Html {
    if n < 0 {
        let exact = format!("−{} bytes", fmt::thousands(n.unsigned_abs()));
        html! { <span class="bytes bad" title={exact}>{ format!("−{}", fmt::human_bytes(n.unsigned_abs())) }</span> }
    } else {
        bytes_html(n as u64)
    }
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Model => "model",
        Kind::Context => "context",
        Kind::Compute => "compute",
    }
}

/// The verdict line: refused, does not fit, fits with little room, fits, or nothing to check.
fn verdict(plan: &Plan, s: &Settings) -> Html {
    let (class, icon, text) = if let Some(r) = &plan.refused {
        ("err", "✗", format!("llama.cpp would refuse these settings: {r}"))
    } else if let Some(d) = plan.devices.iter().find(|d| d.left.is_some_and(|l| l < 0)) {
        let short = d.left.map_or(0, i64::unsigned_abs);
        ("err", "✗", format!("Does not fit: {} needs {} more than its {}.", device_name(&d.device, s), fmt::human_bytes(short), fmt::human_bytes(d.memory.unwrap_or(0))))
    } else if plan.devices.iter().all(|d| d.memory.is_none()) {
        ("info", "i", "No memory given to check against: these are the sizes llama.cpp would allocate.".to_string())
    } else if let Some(d) = plan.devices.iter().find(|d| d.device != "Host" && d.left.is_some_and(|l| (l as u64) < FIT_MARGIN)) {
        ("warn", "!", format!("Fits, with {} to spare on {} (llama.cpp's fitting keeps 1 GiB free).", fmt::human_bytes(d.left.unwrap_or(0) as u64), device_name(&d.device, s)))
    } else {
        ("ok", "✓", "Fits: every device holds what llama.cpp would put there.".to_string())
    };
    html! {
        <div class={classes!("verdict", "fit-verdict", class)} role="status" data-testid="fit-verdict" data-verdict={class}>
            <span class="icon" aria-hidden="true">{ icon }</span><span class="text">{ text }</span>
        </div>
    }
}

fn results(m: &Model, b: &Built, plan: &Plan, fitted: Option<&Result<fit::Fitted, String>>, sweep: Option<&Sweep>) -> Html {
    let s = &b.s;
    let kv = &plan.kv;
    // Layers per device, in the order of the devices.
    let mut layers: Vec<(String, usize)> = Vec::new();
    for d in &plan.layer_devices {
        match layers.iter_mut().find(|(n, _)| n == d) {
            Some((_, c)) => *c += 1,
            None => layers.push((d.clone(), 1)),
        }
    }
    let layer_text = layers.iter().map(|(d, n)| format!("{d} {n}")).collect::<Vec<_>>().join(" · ");
    let swa = kv.swa_cells.map(|c| format!(" (sliding window: {} cells, {} layers)", fmt::thousands(c), kv.swa_layers)).unwrap_or_default();
    html! {
        <>
            { verdict(plan, s) }
            <div class="table-wrap">
                <table class="mini fit-devices" data-testid="fit-devices">
                    <thead><tr>
                        <th scope="col">{ "Device" }</th><th scope="col" class="n">{ "Model" }</th><th scope="col" class="n">{ "Context" }</th>
                        <th scope="col" class="n">{ "Compute" }</th><th scope="col" class="n">{ "Total" }</th><th scope="col" class="n">{ "Memory" }</th>
                        <th scope="col" class="n">{ "Left" }</th>
                    </tr></thead>
                    <tbody>
                        { for plan.devices.iter().map(|d| html! {
                            <tr data-testid="fit-device-row" data-device={d.device.clone()} data-model={d.model.to_string()} data-context={d.context.to_string()}
                                data-compute={d.compute.to_string()} data-total={d.total.to_string()} data-left={d.left.map(|l| l.to_string()).unwrap_or_default()}
                                class={classes!(d.left.is_some_and(|l| l < 0).then_some("over"))}>
                                <th scope="row">{ device_name(&d.device, s) }</th>
                                <td class="n">{ bytes_html(d.model) }</td>
                                <td class="n">{ bytes_html(d.context) }</td>
                                <td class="n">{ bytes_html(d.compute) }</td>
                                <td class="n"><strong>{ bytes_html(d.total) }</strong></td>
                                <td class="n">{ d.memory.map_or_else(|| html! { <span class="dim">{ "—" }</span> }, bytes_html) }</td>
                                <td class="n">{ d.left.map_or_else(|| html! { <span class="dim">{ "—" }</span> }, signed_bytes) }</td>
                            </tr>
                        }) }
                    </tbody>
                </table>
            </div>
            <p class="fit-kv" data-testid="fit-kv" data-cells={kv.cells.to_string()} data-swa-cells={kv.swa_cells.map(|c| c.to_string()).unwrap_or_default()}
                data-k-bytes={kv.k_bytes.to_string()} data-v-bytes={kv.v_bytes.to_string()}>
                <strong>{ "KV cache: " }</strong>
                { format!("{} cells{swa} × {} stream{}, {} layers; K ", fmt::thousands(kv.cells), kv.streams, if kv.streams == 1 { "" } else { "s" }, kv.layers) }
                <code>{ kv.type_k.name() }</code>{ " " }{ bytes_html(kv.k_bytes) }{ ", V " }<code>{ kv.type_v.name() }</code>{ " " }{ bytes_html(kv.v_bytes) }
                if kv.v_trans { <span class="dim">{ " (V transposed: flash attention off)" }</span> }
                if kv.recurrent_layers > 0 {
                    { format!("; recurrent state in {} layers, R ", kv.recurrent_layers) }{ bytes_html(kv.r_bytes) }{ ", S " }{ bytes_html(kv.s_bytes) }
                }
                <br /><span class="dim" data-testid="fit-layers">{ format!("Layers (the output layer last): {layer_text} · context {} per sequence × {}", fmt::thousands(plan.params.n_ctx_seq), plan.params.n_seq) }</span>
            </p>
            if let Some(r) = &plan.refused {
                <p class="fit-refused" role="alert" data-testid="fit-refused">
                    <strong>{ "llama.cpp would refuse: " }</strong>{ r.clone() }
                </p>
            }
            if !plan.warnings.is_empty() {
                <ul class="fit-warnings">
                    { for plan.warnings.iter().map(|w| html! { <li data-testid="fit-warning"><strong>{ "llama.cpp warns: " }</strong>{ w.clone() }</li> }) }
                </ul>
            }
            <div class="fit-answers">
                <p data-testid="fit-largest" data-value={sweep.and_then(|x| x.largest).map(|l| l.to_string()).unwrap_or_default()}>
                    <strong>{ "Largest context that fits fully offloaded: " }</strong>
                    { match sweep {
                        Some(Sweep { largest: Some(l), .. }) => html! { <><span class="mono">{ fmt::thousands(*l) }</span><span class="dim">{ " tokens (1 GiB kept free per GPU)" }</span></> },
                        Some(_) if s.devices.is_empty() && s.host_memory.is_none() => html! { <span class="dim">{ "give a GPU's or the host's memory" }</span> },
                        Some(_) => html! { <span class="bad">{ "not even 256 tokens" }</span> },
                        None => html! { <span class="dim">{ "—" }</span> },
                    } }
                </p>
                { args(&b.args, fitted) }
            </div>
            { chart(m, b, plan, sweep) }
            <details class="fit-buffers" open=true>
                <summary>{ format!("Buffers ({})", plan.buffers.len()) }</summary>
                <div class="table-wrap">
                    <table class="mini" data-testid="fit-buffers">
                        <thead><tr><th scope="col">{ "Device" }</th><th scope="col">{ "Buffer type" }</th><th scope="col">{ "Kind" }</th><th scope="col" class="n">{ "Bytes" }</th><th scope="col" class="n">{ "Size" }</th></tr></thead>
                        <tbody>
                            { for plan.buffers.iter().map(|x| html! {
                                <tr data-testid="fit-buffer" data-device={x.device.clone()} data-buft={x.buft.clone()} data-kind={kind_name(x.kind)} data-bytes={x.bytes.to_string()}>
                                    <td>{ x.device.clone() }</td><td><code>{ x.buft.clone() }</code></td><td>{ kind_name(x.kind) }</td>
                                    <td class="n mono">{ fmt::thousands(x.bytes) }</td><td class="n">{ bytes_html(x.bytes) }</td>
                                </tr>
                            }) }
                        </tbody>
                    </table>
                </div>
                <p class="dim">{ "Plus the output (logits) buffer on the host, which llama.cpp leaves out of its breakdown: " }{ bytes_html(plan.output_bytes) }</p>
            </details>
        </>
    }
}

fn args(flags: &[String], fitted: Option<&Result<fit::Fitted, String>>) -> Html {
    match fitted {
        Some(Ok(f)) => {
            let mut all = flags.to_vec();
            all.push(f.args.clone());
            let text = all.join(" ");
            html! {
                <div class="fit-args">
                    <strong>{ "Fitted arguments " }</strong><span class="dim">{ "(llama.cpp's fitting, 1 GiB kept free per GPU):" }</span>
                    <div class="fit-args-line">
                        <code data-testid="fit-args" data-fitted={f.args.clone()}>{ text.clone() }</code>
                        <CopyButton text={AttrValue::from(text)} testid="fit-args-copy" />
                    </div>
                </div>
            }
        }
        Some(Err(e)) => html! {
            <p class="fit-args" data-testid="fit-args-error"><strong>{ "Fitting: " }</strong>{ format!("llama.cpp's fitting would stop here: {e}") }</p>
        },
        None => html! {},
    }
}

// ---- the chart ------------------------------------------------------------------------

const W: f64 = 640.0;
const H: f64 = 240.0;
const ML: f64 = 62.0;
const MR: f64 = 12.0;
const MT: f64 = 14.0;
const MB: f64 = 28.0;

/// A round step for the memory axis: a power of two of bytes giving at most 6 ticks.
fn byte_step(max: f64) -> f64 {
    let mut step = 1024.0 * 1024.0;
    while max / step > 6.0 {
        step *= 2.0;
    }
    step
}

fn axis_bytes(n: f64) -> String {
    if n <= 0.0 {
        return "0".to_string();
    }
    let (v, unit) = if n >= GIB { (n / GIB, "GiB") } else { (n / (1024.0 * 1024.0), "MiB") };
    if (v - v.round()).abs() < 1e-9 {
        format!("{} {unit}", v.round() as u64)
    } else {
        format!("{v:.1} {unit}")
    }
}

fn axis_ctx(n: u64) -> String {
    if n >= 1024 && n.is_multiple_of(1024) {
        format!("{}K", n / 1024)
    } else {
        fmt::thousands(n)
    }
}

fn chart(m: &Model, b: &Built, plan: &Plan, sweep: Option<&Sweep>) -> Html {
    let Some(sw) = sweep.filter(|s| !s.points.is_empty()) else { return html! {} };
    let pts = &sw.points;
    let s = &b.s;
    let first = first_device(plan);
    let who = first.map_or_else(|| "Host".to_string(), |d| device_name(&d.device, s));
    // Each device's memory, as a line.
    let mut limits: Vec<(String, u64)> = s.devices.iter().enumerate().map(|(i, d)| (format!("GPU{i} {}", axis_bytes(d.memory as f64)), d.memory)).collect();
    if let Some(r) = s.host_memory {
        limits.push((format!("Host {}", axis_bytes(r as f64)), r));
    }
    let xmax = pts.last().map_or(256, |p| p.ctx).max(256) as f64;
    let chosen = plan.params.n_ctx;
    let chosen_total = first.map_or(0, |d| d.total);
    let top = pts.iter().map(Point::total).chain(limits.iter().map(|(_, m)| *m)).chain([chosen_total]).max().unwrap_or(0) as f64;
    let ymax = (top * 1.08).max(1024.0 * 1024.0);
    let (pw, ph) = (W - ML - MR, H - MT - MB);
    let x = |c: u64| ML + pw * (c as f64 / xmax).min(1.0);
    let y = |v: f64| MT + ph * (1.0 - (v / ymax).min(1.0));
    let area = |lo: &dyn Fn(&Point) -> u64, hi: &dyn Fn(&Point) -> u64| -> String {
        let mut v: Vec<String> = pts.iter().map(|p| format!("{:.1},{:.1}", x(p.ctx), y(hi(p) as f64))).collect();
        v.extend(pts.iter().rev().map(|p| format!("{:.1},{:.1}", x(p.ctx), y(lo(p) as f64))));
        v.join(" ")
    };
    let model_area = area(&|_| 0, &|p| p.model);
    let context_area = area(&|p| p.model, &|p| p.model.saturating_add(p.context));
    let compute_area = area(&|p| p.model.saturating_add(p.context), &Point::total);
    let step = byte_step(ymax);
    let yticks: Vec<f64> = (0..).map(|k| k as f64 * step).take_while(|v| *v <= ymax).collect();
    let xticks: Vec<u64> = (0..=4u64).map(|k| ((xmax as u64) * k / 4) / 256 * 256).collect();
    let mx = x(chosen);
    let label = format!(
        "Memory of {who} against context length, {} to {} tokens: model, context and compute stacked; a line at each device's memory; the chosen context {} marked.",
        fmt::thousands(pts.first().map_or(256, |p| p.ctx)),
        fmt::thousands(xmax as u64),
        fmt::thousands(chosen)
    );
    html! {
        <figure class="fit-chart">
            <svg viewBox={format!("0 0 {W} {H}")} role="img" aria-label={label} data-testid="fit-chart" data-points={pts.len().to_string()}
                preserveAspectRatio="xMidYMid meet">
                { for yticks.iter().map(|v| html! {
                    <g class="fit-grid">
                        <line x1={format!("{ML}")} x2={format!("{}", W - MR)} y1={format!("{:.1}", y(*v))} y2={format!("{:.1}", y(*v))} />
                        <text x={format!("{}", ML - 6.0)} y={format!("{:.1}", y(*v) + 3.5)} text-anchor="end">{ axis_bytes(*v) }</text>
                    </g>
                }) }
                { for xticks.iter().enumerate().map(|(k, c)| html! {
                    <text class="fit-xtick" x={format!("{:.1}", x(*c))} y={format!("{}", H - MB + 16.0)}
                        text-anchor={if k + 1 == xticks.len() { "end" } else if k == 0 { "start" } else { "middle" }}>{ axis_ctx(*c) }</text>
                }) }
                <polygon class="fit-a-model" points={model_area} />
                <polygon class="fit-a-context" points={context_area} />
                <polygon class="fit-a-compute" points={compute_area} />
                { for limits.iter().map(|(name, mem)| {
                    let ly = y(*mem as f64);
                    html! {
                        <g class="fit-limit" data-testid="fit-limit">
                            <line x1={format!("{ML}")} x2={format!("{}", W - MR)} y1={format!("{ly:.1}")} y2={format!("{ly:.1}")} />
                            <text x={format!("{}", W - MR - 4.0)} y={format!("{:.1}", ly - 4.0)} text-anchor="end">{ name.clone() }</text>
                        </g>
                    }
                }) }
                { for pts.iter().map(|p| html! {
                    <circle class="fit-pt" cx={format!("{:.1}", x(p.ctx))} cy={format!("{:.1}", y(p.total() as f64))} r="2.5"
                        data-testid="fit-point" data-ctx={p.ctx.to_string()} data-total={p.total().to_string()}>
                        <title>{ format!("context {}: model {}, context {}, compute {}, total {}", fmt::thousands(p.ctx), fmt::human_bytes(p.model), fmt::human_bytes(p.context), fmt::human_bytes(p.compute), fmt::human_bytes(p.total())) }</title>
                    </circle>
                }) }
                <g class="fit-marker" data-testid="fit-marker" data-ctx={chosen.to_string()}>
                    <line x1={format!("{mx:.1}")} x2={format!("{mx:.1}")} y1={format!("{MT}")} y2={format!("{}", H - MB)} />
                    <circle cx={format!("{mx:.1}")} cy={format!("{:.1}", y(chosen_total as f64))} r="4" />
                    <text x={format!("{:.1}", (mx + 4.0).min(W - MR - 60.0))} y={format!("{}", MT + 10.0)}>{ format!("-c {}", fmt::thousands(chosen)) }</text>
                </g>
                <line class="fit-axis" x1={format!("{ML}")} x2={format!("{}", W - MR)} y1={format!("{}", H - MB)} y2={format!("{}", H - MB)} />
            </svg>
            <figcaption class="legend fit-legend">
                <span><span class="swatch fit-s-model" aria-hidden="true"></span>{ "model" }</span>
                <span><span class="swatch fit-s-context" aria-hidden="true"></span>{ "context (KV cache)" }</span>
                <span><span class="swatch fit-s-compute" aria-hidden="true"></span>{ "compute" }</span>
                <span class="dim">{ format!("on {who}, at {} contexts from 256 to {}; dashed: each device's memory", pts.len(), fmt::thousands(m.desc.n_ctx_train.max(256))) }</span>
            </figcaption>
        </figure>
    }
}
