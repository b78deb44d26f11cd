//! A static evaluator for pickle streams: it walks every opcode with a symbolic stack and
//! memo, records every import the stream would perform (with its absolute byte offset),
//! follows torch's persistent ids and tensor rebuild calls to build the tensor inventory,
//! and walks nested pickles (bytes handed to `pickle.loads`). It never imports, never
//! calls, never executes anything: a "call" (REDUCE, NEWOBJ, INST, OBJ) only builds a
//! symbolic [`Obj::Instance`], except for the few torch/collections/_codecs functions
//! whose meaning is fixed by the format (tensor rebuilds, `OrderedDict`, `_codecs.encode`).
//!
//! Objects live in an arena (a [`Chunked`] vector of [`Obj`]) and values refer to them by
//! index, so DUP / GET are O(1), mutation through the memo is shared as in Python, and
//! cycles are harmless. Every container item was pushed by one opcode, so memory is
//! O(opcodes), and the opcode count is bounded. What the stream can no longer reach is
//! freed: a mark-and-sweep collector ([`Machine::collect`](machine::Machine::collect))
//! returns unreachable objects' slots for reuse, and the memo keeps only entries some GET
//! of the stream reads.
//!
//! The evaluator by job: `value` the value model ([`Value`], [`Obj`], what a walk records:
//! [`GlobalRef`], [`StorageRef`], [`TensorRef`]); `text` the decoding of protocol 0's text
//! arguments; `memo` the memo and the pre-pass that lists the indices some GET reads;
//! `machine` the machine itself (its state, run loop and opcode table, the opcodes by
//! family in its files, the arena with its collector and pools); `walk` the entry point
//! ([`walk`]) and what a walk learned ([`Walk`], its tensors named by key path).

mod machine;
mod memo;
mod text;
mod value;
mod walk;

pub use machine::{
    Chunked, Context, End, COLLECT_FLOOR, MAX_DIMS, MAX_GLOBALS, MAX_MARKS, MAX_MEMO, MAX_NESTING,
    MAX_OPCODES, MAX_STACK, MAX_STRING_KEPT, MEMORY_PER_BYTE, MEMORY_SLACK, WORK_BUDGET_PER_BYTE,
};
pub use value::{
    int_value, GlobalRef, Instance, MoreGlobals, Obj, OpcodeName, StorageRef, TensorRef, Value,
};
pub use walk::{
    walk, walk_collecting_at_every_opcode, NamedTensor, Walk, MAX_NAME_BYTES, MAX_PATH_DEPTH,
    NAMES_SLACK, REPEAT_NAMES_SLACK, REPEAT_NAME_STREAM_BYTES,
};

#[cfg(test)]
mod tests;
