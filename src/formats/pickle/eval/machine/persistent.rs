//! Persistent ids (PERSID, BINPERSID): torch's `('storage', type, key, location, numel)`
//! becomes a storage ([`Machine::persistent_load`]); anything else, or one in a plain
//! pickle, is a finding.

use super::{Machine, Res};
use crate::error::{Code, Finding};
use crate::formats::pickle::eval::text::text;
use crate::formats::pickle::eval::value::{Obj, StorageRef, Value};
use crate::formats::MAX_TENSORS;
use std::rc::Rc;

impl Machine<'_, '_> {
    /// PERSID: the id is the line.
    pub(super) fn pers_id(&mut self, l: &[u8]) -> Res<()> {
        let pid = Value::Str(Rc::from(text(l)));
        let v = self.persistent_load(pid);
        self.push(v)
    }

    /// BINPERSID: the id is the top value.
    pub(super) fn bin_pers_id(&mut self) -> Res<()> {
        let pid = self.pop()?;
        let v = self.persistent_load(pid);
        self.push(v)
    }

    fn persistent_load(&mut self, pid: Value) -> Value {
        let at = self.here();
        let parsed = match self.obj(&pid) {
            Some(Obj::Tuple(items)) => match items.as_slice() {
                [Value::Str(tag), Value::Global(g), Value::Str(key), Value::Str(loc), Value::Int(numel), ..]
                    if &**tag == "storage" =>
                {
                    u64::try_from(*numel)
                        .ok()
                        .map(|n| (*g, key.clone(), loc.clone(), n))
                }
                _ => None,
            },
            _ => None,
        };
        let parsed = parsed.and_then(|(g, key, loc, n)| Some((self.global_name(g)?, key, loc, n)));
        let Some((type_name, key, location, numel)) = parsed else {
            let msg = if self.ctx.torch {
                "a persistent id that is not ('storage', type, key, location, numel): its object is unknown"
            } else {
                "a persistent id in a plain pickle: the loader's persistent_load decides what it becomes"
            };
            self.finding(
                Finding::warning(Code::UnexpectedPersistentId, msg)
                    .at(at)
                    .field("pickle"),
            );
            return Value::Unknown;
        };
        if !self.ctx.torch {
            self.finding(
                Finding::warning(
                    Code::UnexpectedPersistentId,
                    "a torch storage reference in a plain pickle: its bytes are not in this file",
                )
                .at(at)
                .field("pickle"),
            );
        }
        if self.storages.len() >= MAX_TENSORS as usize && !self.storage_by_key.contains_key(&key) {
            self.sink.past_cap.1.note(at);
            return Value::Unknown;
        }
        let next = u32::try_from(self.storages.len()).unwrap_or(u32::MAX);
        let id = *self.storage_by_key.entry(key.clone()).or_insert(next);
        if id == next {
            // its strings are shared with the values (and counted when made)
            self.sink.hold(std::mem::size_of::<StorageRef>());
            self.storages.push(StorageRef {
                key,
                type_name,
                location,
                numel,
                offset: at,
            });
        }
        Value::Storage(id)
    }

    /// `module.name` of a recorded global (made once per global).
    fn global_name(&mut self, g: u32) -> Option<Rc<str>> {
        let i = g as usize;
        if let Some(Some(n)) = self.global_names.get(i) {
            return Some(n.clone());
        }
        let (m, n) = self.sink.globals.get(i)?.full()?;
        let name: Rc<str> = Rc::from(format!("{m}.{n}"));
        if self.global_names.len() <= i {
            // globals are recorded one opcode each, so this is bounded by the opcodes
            self.global_names.resize(i + 1, None);
        }
        if let Some(slot) = self.global_names.get_mut(i) {
            *slot = Some(name.clone());
        }
        Some(name)
    }
}
