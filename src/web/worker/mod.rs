//! The worker side: what runs in a Web Worker, and the page's end of each worker.
//!
//! In the workers — two programs: the parse worker `tensorpeek-worker` (`src/bin/worker.rs`)
//! and the values worker `tensorpeek-values` (`src/bin/values.rs`): [`entry`] (their
//! message loops: open a set of files; read a tensor's values, hash a file), [`audit_worker`]
//! (a conversion audit, values worker) and [`hasher`] (the nested SHA-256 worker, values
//! worker). Between both sides: [`protocol`] (the typed messages, also those www/loader.js
//! sends and reads before the app runs). On the page: [`pool`] (the warm spares every job
//! takes, one of each program, and what the loader hands over), [`job`] (one job in a worker: a panel's values or hash, an audit) and [`opener`]
//! (an open job's parse workers and their watchdog). No file here imports a view
//! (tests/layers.rs).

pub mod audit_worker;
pub mod entry;
pub mod hasher;
#[cfg(feature = "page")]
pub mod job;
#[cfg(feature = "page")]
pub mod opener;
#[cfg(feature = "page")]
pub mod pool;
pub mod protocol;
