//! Pickle streams, read statically: [`ops`] (the opcode table and decoder), [`eval`] (a
//! symbolic walk that records imports, persistent ids and tensor rebuilds, and follows
//! nested pickles) and [`safety`] (the allow-list, the dangerous table and the verdict).
//! Nothing here ever imports, calls or executes what a pickle names.
//!
//! The containers that hold pickles (torch zip, legacy torch files, `.npy`/`.npz`) are in
//! [`crate::formats::torch`].

pub mod eval;
pub mod ops;
pub mod safety;

pub use eval::{walk, Context, GlobalRef, Walk};
pub use safety::{GlobalVerdict, Verdict};
