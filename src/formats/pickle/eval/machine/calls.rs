//! Calls: INST, OBJ, REDUCE, NEWOBJ / NEWOBJ_EX and BUILD, each a symbolic instance but for
//! the callables whose meaning the format fixes ([`Machine::call`]): tensor rebuilds,
//! `OrderedDict`, `_codecs.encode`, `pickle.loads` (the nested pickle walked,
//! [`Machine::nested`]) and `getattr`; and the work budget that copies and nested walks
//! take from ([`Machine::charge`]).

use super::globals::Known;
use super::{malformed, Context, End, Machine, Res, WORK_BUDGET_PER_BYTE};
use crate::error::{Code, Finding};
use crate::formats::pickle::eval::text::text;
use crate::formats::pickle::eval::value::{Obj, TensorRef, Value};
use crate::formats::MAX_TENSORS;
use std::rc::Rc;

/// Nested pickles walked inside one another (`pickle.loads(b"…pickle.loads(b'…')…")`).
pub const MAX_NESTING: u32 = 8;
/// Most dimensions read from a tensor's size tuple (torch allows 64).
pub const MAX_DIMS: usize = 64;

impl Machine<'_, '_> {
    /// INST: the class is named in the stream, the arguments are above the topmost mark.
    pub(super) fn inst(&mut self, (m, n): (&[u8], &[u8])) -> Res<()> {
        let args = self.pop_mark()?;
        let g = self.record(Some(text(m)), Some(text(n)), "INST", None);
        let a = self.new_obj(Obj::Tuple(args));
        let v = self.call(g, a)?;
        self.push(v)
    }

    /// OBJ: the class and then the arguments above the topmost mark.
    pub(super) fn obj_call(&mut self) -> Res<()> {
        let mut args = self.pop_mark()?;
        if args.is_empty() {
            return malformed("OBJ without a class");
        }
        let cls = args.remove(0);
        let a = self.new_obj(Obj::Tuple(args));
        let v = self.call(cls, a)?;
        self.push(v)
    }

    /// REDUCE.
    pub(super) fn reduce(&mut self) -> Res<()> {
        let args = self.pop()?;
        let func = self.pop()?;
        let v = self.call(func, args)?;
        self.push(v)
    }

    /// NEWOBJ, and NEWOBJ_EX (`with_kwargs`, which are popped and not modelled).
    pub(super) fn new_instance(&mut self, with_kwargs: bool) -> Res<()> {
        if with_kwargs {
            let _kwargs = self.pop()?;
        }
        let args = self.pop()?;
        let cls = self.pop()?;
        let o = self.instance(cls, args);
        self.push_obj(o)
    }

    /// BUILD: an instance's state.
    pub(super) fn build(&mut self) -> Res<()> {
        let state = self.pop()?;
        let target = self.top()?.clone();
        if let Some(Obj::Instance(inst)) = self.obj_mut(&target) {
            inst.state = Some(state);
        }
        Ok(())
    }

    /// The items of a tuple or list (or of `torch.Size((…))`, a tuple built by a call).
    pub(super) fn tuple_ref(&self, v: &Value) -> Option<&[Value]> {
        match self.obj(v)? {
            Obj::Tuple(t) | Obj::List(t) => Some(t),
            Obj::Instance(inst) => match self.obj(&inst.args)? {
                Obj::Tuple(t) if t.len() == 1 => self.tuple_ref(t.first()?),
                _ => None,
            },
            _ => None,
        }
    }

    fn tuple_items(&self, v: &Value) -> Option<Vec<Value>> {
        self.tuple_ref(v).map(<[Value]>::to_vec)
    }

    fn ints(&self, v: &Value) -> Option<Vec<u64>> {
        let items = self.tuple_ref(v)?;
        if items.len() > MAX_DIMS {
            return None;
        }
        items
            .iter()
            .map(|x| match x {
                Value::Int(i) => u64::try_from(*i).ok(),
                _ => None,
            })
            .collect()
    }

    fn call(&mut self, func: Value, args: Value) -> Res<Value> {
        let generic = |m: &mut Self, func: Value, args: Value| {
            let o = m.instance(func, args);
            m.new_obj(o)
        };
        let Some(k) = self.known_of(&func) else {
            return Ok(generic(self, func, args));
        };
        let at = self.here();
        if matches!(
            k,
            Known::RebuildTensor | Known::RebuildTensorV2 | Known::RebuildTensorV3
        ) {
            return match self.rebuild(k, &args, at) {
                Some(t) => Ok(t),
                None => {
                    self.finding(
                        Finding::warning(
                            Code::PickleMalformed,
                            "a tensor rebuild call whose arguments are not (storage, offset, size, stride, …): the tensor is not listed",
                        )
                        .at(at)
                        .field("pickle"),
                    );
                    Ok(generic(self, func, args))
                }
            };
        }
        // the arguments are copied: charged to the work budget (a memoized tuple of n items
        // passed k times costs k × n)
        let n = self.tuple_ref(&args).map_or(0, <[Value]>::len) as u64;
        if !self.charge(n, at) {
            return Ok(generic(self, func, args));
        }
        let items = self.tuple_items(&args).unwrap_or_default();
        match k {
            // handled above
            Known::RebuildTensor | Known::RebuildTensorV2 | Known::RebuildTensorV3 => {
                Ok(generic(self, func, args))
            }
            Known::RebuildParameter => Ok(items.first().cloned().unwrap_or(Value::Unknown)),
            Known::RebuildFromTypeV2 => {
                // (func, new_type, args, state): the tensor is func(*args)
                let (Some(f), Some(a)) = (items.first().cloned(), items.get(2).cloned()) else {
                    return Ok(generic(self, func, args));
                };
                self.call(f, a)
            }
            Known::OrderedDict => {
                // OrderedDict(items) copies the items: charged, as above (found by fuzzing:
                // a memoized list of 5,000 pairs passed 1,500 times took 591 ms for 20 KB)
                let n = items.first().and_then(|f| self.tuple_ref(f)).map_or(0, <[Value]>::len) as u64;
                if !self.charge(n, at) {
                    return Ok(generic(self, func, args));
                }
                let mut d = Vec::new();
                if let Some(pairs) = items.first().and_then(|f| self.tuple_ref(f)) {
                    for pair in pairs {
                        if let Some([k, v]) = self.tuple_ref(pair) {
                            d.push((k.clone(), v.clone()));
                        }
                    }
                }
                Ok(self.new_obj(Obj::Dict(d)))
            }
            Known::CodecsEncode => match items.as_slice() {
                [Value::Str(s), Value::Str(enc)]
                    if matches!(&**enc, "latin1" | "latin-1" | "iso-8859-1") =>
                {
                    if !self.charge(s.len() as u64, at) {
                        return Ok(Value::Unknown);
                    }
                    self.sink.hold(s.len());
                    let bytes: Option<Vec<u8>> =
                        s.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect();
                    Ok(bytes.map_or(Value::Unknown, |b| Value::OwnedBytes(Rc::from(b))))
                }
                [Value::Str(s)] | [Value::Str(s), _] => {
                    if !self.charge(s.len() as u64, at) {
                        return Ok(Value::Unknown);
                    }
                    self.sink.hold(s.len());
                    Ok(Value::OwnedBytes(Rc::from(s.as_bytes())))
                }
                _ => Ok(generic(self, func, args)),
            },
            Known::Loads => {
                if let Some(payload) = items.first() {
                    self.nested(payload, at);
                }
                Ok(generic(self, func, args))
            }
            Known::GetAttr => {
                // getattr(module-ish, "name"): record what it reaches
                if let [target, Value::Str(attr)] = items.as_slice() {
                    let base = self.module_path_of(target);
                    let (m, n) = match base {
                        Some((m, Some(n))) => (Some(m), Some(format!("{n}.{attr}"))),
                        Some((m, None)) => (Some(m), Some(attr.to_string())),
                        None => (None, Some(attr.to_string())),
                    };
                    let note = if m.is_none() {
                        Some("getattr on an object computed at run time".to_string())
                    } else {
                        None
                    };
                    let g = self.record(m, n, "REDUCE", note);
                    return Ok(g);
                }
                Ok(generic(self, func, args))
            }
            Known::Import => Ok(generic(self, func, args)),
        }
    }

    fn rebuild(&mut self, k: Known, args: &Value, at: u64) -> Option<Value> {
        // past the most tensors listed from one file (as for safetensors and GGUF), a
        // rebuild is counted in the finding, not kept: what a walk holds for its tensors is
        // bounded whatever the pickle's length
        if self.tensors.len() >= MAX_TENSORS as usize {
            self.sink.past_cap.0.note(at);
            return Some(Value::Unknown);
        }
        let items = self.tuple_ref(args)?;
        let storage = match items.first()? {
            Value::Storage(s) => *s,
            _ => return None,
        };
        let storage_offset = match items.get(1)? {
            Value::Int(i) => u64::try_from(*i).ok()?,
            _ => return None,
        };
        let shape = self.ints(items.get(2)?)?;
        let stride = self.ints(items.get(3)?)?;
        // torch refuses a size and a stride of different lengths (`set_`): no such tensor
        // can be loaded, so it is not listed (found by fuzzing: tests/fuzz_regressions.rs)
        if shape.len() != stride.len() {
            return None;
        }
        let dtype = if k == Known::RebuildTensorV3 {
            match items.get(6)? {
                Value::Global(i) => {
                    let g = self.sink.globals.get(*i as usize)?;
                    match g.full()? {
                        ("torch", n) => Some(n.to_string()),
                        _ => None,
                    }
                }
                _ => None,
            }
        } else {
            None
        };
        let id = u32::try_from(self.tensors.len()).ok()?;
        self.sink.hold(std::mem::size_of::<TensorRef>() + 16 * (shape.len() + stride.len()));
        self.tensors.push(TensorRef {
            storage,
            storage_offset,
            shape,
            stride,
            dtype,
            offset: at,
        });
        Some(Value::Tensor(id))
    }

    /// Takes `n` from the work budget (nested or computed bytes, copied items); false (with one
    /// `PickleLimit` finding per walk) when they are not there.
    fn charge(&mut self, n: u64, at: u64) -> bool {
        if n <= self.sink.budget {
            self.sink.budget -= n;
            return true;
        }
        if !self.sink.exhausted {
            self.sink.exhausted = true;
            self.finding(
                Finding::error(
                    Code::PickleLimit,
                    format!("nested pickles, computed bytes and copied items of more than {WORK_BUDGET_PER_BYTE} per byte of the stream: the rest are not walked"),
                )
                .at(at),
            );
        }
        false
    }

    /// Walks a pickle passed to `pickle.loads`.
    fn nested(&mut self, payload: &Value, at: u64) {
        if self.nesting + 1 > MAX_NESTING {
            self.finding(
                Finding::error(
                    Code::PickleLimit,
                    format!(
                        "pickles nested more than {MAX_NESTING} deep: the innermost is not walked"
                    ),
                )
                .at(at),
            );
            return;
        }
        let (bytes, base): (Vec<u8>, u64) = match payload {
            Value::Bytes { at: start, len } => {
                let rel = start.saturating_sub(self.ctx.base);
                let slice = usize::try_from(rel)
                    .ok()
                    .zip(usize::try_from(*len).ok())
                    .and_then(|(s, l)| self.data.get(s..s.checked_add(l)?));
                match slice {
                    Some(s) => (s.to_vec(), *start),
                    None => return,
                }
            }
            // computed bytes have no place in the file: offsets are those of the call
            Value::OwnedBytes(b) => (b.to_vec(), at),
            _ => {
                self.finding(
                    Finding::warning(
                        Code::PickleMalformed,
                        "pickle.loads of something that is not a bytes constant: not walked",
                    )
                    .at(at),
                );
                return;
            }
        };
        let exact = matches!(payload, Value::Bytes { .. });
        // bytes of the file (not inside a computed pickle, whose offsets are the call's) are
        // walked once, however often they are loaded: the same bytes, the same imports
        if exact && self.place_at.is_none() && !self.sink.walked.insert((base, bytes.len() as u64)) {
            return;
        }
        if !self.charge(bytes.len() as u64, at) {
            return;
        }
        let ctx = Context {
            base,
            member: self.ctx.member.clone(),
            torch: false,
        };
        let first_global = self.sink.globals.len();
        // a computed pickle's findings at the call (found by fuzzing, as above); one inside
        // a computed pickle at the outer call
        let place_at = if exact { self.place_at } else { Some(self.place_at.unwrap_or(at)) };
        let end = {
            let mut inner = Machine::new(&bytes, &ctx, self.nesting + 1, self.sink);
            inner.place_at = place_at;
            inner.run()
        };
        if !exact {
            for g in self.sink.globals.iter_mut().skip(first_global) {
                g.offset = at;
            }
        }
        match end {
            End::Stop(_) => {}
            End::OutOfData(o) => self.finding(
                Finding::error(
                    Code::PickleTruncated,
                    "a nested pickle ends before its STOP",
                )
                .at(if exact { o } else { at }),
            ),
            End::Failed => {}
        }
    }
}
