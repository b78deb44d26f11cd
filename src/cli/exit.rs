//! The CLI's exit status (a stable interface: scripts and CI branch on it).

/// Every file (and the merged model) is sound; warnings allowed.
pub const EXIT_SOUND: u8 = 0;
/// Some file, the merged model or the requested scan has errors.
pub const EXIT_FINDINGS: u8 = 1;
/// Bad arguments, an unreadable file, no such tensor.
pub const EXIT_USAGE: u8 = 2;
