//! The stack, the marks and the memo: pushing (its growth checked against the memory
//! budget before it happens) and popping, MARK / POP / POP_MARK / DUP, and GET / PUT /
//! MEMOIZE.

use super::arena::growth;
use super::{malformed, Machine, Res, Stop};
use crate::formats::pickle::eval::text::{parse_int_line, text};
use crate::formats::pickle::eval::value::{Value, VALUE};

/// Deepest value stack. Pickle writers batch containers 1000 items at a time, so real
/// stacks stay small; protocol 0 `LIST`/`DICT`/`TUPLE` of a big container can hold all
/// items at once. 16 M values (about 400 MB of symbolic values) is beyond any real file.
pub const MAX_STACK: usize = 16 << 20;
/// Deepest MARK nesting (each nested container under construction adds one).
pub const MAX_MARKS: usize = 1 << 16;
/// Most memo entries. Writers memoize every container and string once.
pub const MAX_MEMO: usize = 16 << 20;

impl Machine<'_, '_> {
    pub(super) fn push(&mut self, v: Value) -> Res<()> {
        if self.stack.len() >= MAX_STACK {
            return Err(Stop::Limit(format!("the stack exceeds {MAX_STACK} values")));
        }
        // a vector that grows holds its old and new blocks at once: checked before, so a
        // doubling never takes the walk past its budget (found measuring: a 100 MB list
        // peaked at 12 × its stream)
        if self.stack.len() == self.stack.capacity()
            && growth(self.stack.len(), self.stack.capacity(), 1, VALUE) > self.room()
        {
            return Err(Stop::Memory);
        }
        self.stack.push(v);
        Ok(())
    }

    pub(super) fn pop(&mut self) -> Res<Value> {
        match self.stack.pop() {
            Some(v) => Ok(v),
            None => malformed("stack underflow"),
        }
    }

    pub(super) fn top(&self) -> Res<&Value> {
        match self.stack.last() {
            Some(v) => Ok(v),
            None => malformed("stack underflow"),
        }
    }

    pub(super) fn pop_mark(&mut self) -> Res<Vec<Value>> {
        let Some(k) = self.marks.pop() else {
            return malformed("no MARK on the stack");
        };
        if k > self.stack.len() {
            return malformed("the MARK is above the stack");
        }
        let mut items = self.take_vec(self.stack.len() - k);
        items.extend(self.stack.drain(k..));
        Ok(items)
    }

    /// MARK.
    pub(super) fn mark(&mut self) -> Res<()> {
        if self.marks.len() >= MAX_MARKS {
            return Err(Stop::Limit(format!("more than {MAX_MARKS} nested MARKs")));
        }
        self.marks.push(self.stack.len());
        Ok(())
    }

    /// POP.
    pub(super) fn pop_top(&mut self) -> Res<()> {
        // CPython: pops the top value, or the topmost mark when the stack above
        // it is empty
        let above_mark = self.marks.last().is_some_and(|&k| k == self.stack.len());
        if above_mark {
            self.marks.pop();
        } else {
            self.pop()?;
        }
        Ok(())
    }

    /// DUP.
    pub(super) fn dup(&mut self) -> Res<()> {
        let v = self.top()?.clone();
        self.push(v)
    }

    pub(super) fn memo_get(&mut self, idx: i64) -> Res<()> {
        let v = u64::try_from(idx)
            .ok()
            .and_then(|i| self.memo.get(i))
            .cloned();
        match v {
            Some(v) => self.push(v),
            None => malformed(format!("memo index {idx} was never stored")),
        }
    }

    fn memo_put(&mut self, idx: u64) -> Res<()> {
        let v = self.top()?.clone();
        if self.memo.len() >= MAX_MEMO && !self.memo.has(idx) {
            return Err(Stop::Limit(format!("the memo exceeds {MAX_MEMO} entries")));
        }
        let grown = self.memo.insert(idx, v);
        self.sink.hold(grown);
        Ok(())
    }
    /// PUT, BINPUT, LONG_BINPUT.
    pub(super) fn put(&mut self, i: i64) -> Res<()> {
        let Ok(i) = u64::try_from(i) else {
            return malformed("negative memo index");
        };
        self.memo_put(i)
    }

    /// MEMOIZE: the next index is the memo's length.
    pub(super) fn memoize(&mut self) -> Res<()> {
        let i = self.memo.len() as u64;
        self.memo_put(i)
    }

    pub(super) fn line_index(line: &[u8]) -> Res<i64> {
        match parse_int_line(line) {
            Some(Value::Int(v)) => Ok(v),
            _ => malformed(format!("not a memo index: {:?}", text(line))),
        }
    }
}
