//! Containers: tuples, lists, dicts and sets made (empty, from the items above a mark, or
//! from the top one to three values), and items appended and set (a container's growth
//! checked against the memory budget before it happens).

use super::arena::grow;
use super::{malformed, Machine, Res, Stop};
use crate::formats::pickle::eval::value::{Obj, Value};

impl Machine<'_, '_> {
    /// EMPTY_TUPLE, EMPTY_LIST, EMPTY_DICT, EMPTY_SET: `o` made and pushed.
    pub(super) fn push_obj(&mut self, o: Obj) -> Res<()> {
        let v = self.new_obj(o);
        self.push(v)
    }

    /// TUPLE, LIST, FROZENSET: the items above the topmost mark, as `make` holds them.
    pub(super) fn push_marked(&mut self, make: fn(Vec<Value>) -> Obj) -> Res<()> {
        let items = self.pop_mark()?;
        self.push_obj(make(items))
    }

    /// TUPLE1, TUPLE2, TUPLE3: the top `n` values.
    pub(super) fn tuple_of(&mut self, n: usize) -> Res<()> {
        if self.stack.len() < n {
            return malformed("stack underflow");
        }
        let mut items = self.take_vec(n);
        let at = self.stack.len() - n;
        items.extend(self.stack.drain(at..));
        self.push_obj(Obj::Tuple(items))
    }

    /// DICT: the pairs above the topmost mark.
    pub(super) fn dict(&mut self) -> Res<()> {
        let items = self.pop_mark()?;
        let pairs = pairs(items)?;
        self.push_obj(Obj::Dict(pairs))
    }

    /// APPEND.
    pub(super) fn append_one(&mut self) -> Res<()> {
        let v = self.pop()?;
        let mut one = self.take_vec(1);
        one.push(v);
        self.append(one)
    }

    /// APPENDS, ADDITEMS: the items above the topmost mark.
    pub(super) fn append_mark(&mut self) -> Res<()> {
        let items = self.pop_mark()?;
        self.append(items)
    }

    /// SETITEM.
    pub(super) fn set_item(&mut self) -> Res<()> {
        let v = self.pop()?;
        let k = self.pop()?;
        self.set_items(vec![(k, v)])
    }

    /// SETITEMS: the pairs above the topmost mark.
    pub(super) fn set_items_mark(&mut self) -> Res<()> {
        let items = self.pop_mark()?;
        let p = pairs(items)?;
        self.set_items(p)
    }

    fn append(&mut self, mut new: Vec<Value>) -> Res<()> {
        let target = self.top()?.clone();
        let room = self.room();
        let grown = match self.obj_mut(&target) {
            Some(Obj::List(v) | Obj::Set(v)) => grow(v, &mut new, room),
            Some(Obj::Instance(inst)) => grow(&mut inst.items, &mut new, room),
            _ => return malformed("APPEND to something that is not a list"),
        };
        self.pool_vec(new);
        self.sink.hold(grown.ok_or(Stop::Memory)?);
        Ok(())
    }

    fn set_items(&mut self, mut new: Vec<(Value, Value)>) -> Res<()> {
        let target = self.top()?.clone();
        let room = self.room();
        let grown = match self.obj_mut(&target) {
            Some(Obj::Dict(d)) => grow(d, &mut new, room),
            Some(Obj::Instance(inst)) => grow(&mut inst.entries, &mut new, room),
            _ => return malformed("SETITEM on something that is not a dict"),
        };
        self.sink.hold(grown.ok_or(Stop::Memory)?);
        Ok(())
    }
}

fn pairs(items: Vec<Value>) -> Res<Vec<(Value, Value)>> {
    if !items.len().is_multiple_of(2) {
        return malformed("an odd number of items for a dict");
    }
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut it = items.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        out.push((k, v));
    }
    Ok(out)
}
