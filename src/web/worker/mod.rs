//! The worker side: what runs in a Web Worker, and the page's end of each worker.
//!
//! In the worker (the program `tensorpeek-worker`, `src/bin/worker.rs`): [`entry`] (its
//! message loop: open a set of files, read a tensor's values, hash a file), [`audit_worker`]
//! (a conversion audit) and [`hasher`] (the nested SHA-256 worker). Between both sides:
//! [`protocol`] (the typed messages). On the page: [`pool`] (the warm spare worker every job
//! takes), [`job`] (one job in a worker: a panel's values or hash, an audit) and [`opener`]
//! (an open job's parse workers and their watchdog). No file here imports a view
//! (tests/layers.rs).

pub mod audit_worker;
pub mod entry;
pub mod hasher;
pub mod job;
pub mod opener;
pub mod pool;
pub mod protocol;
