//! What a command was given: local files and folders, `https://…` / `http://…` URLs (a
//! `*.safetensors.index.json` URL brings its shards and the config.json beside it) and Hub
//! repositories (`hf://ORG/REPO[@REV][/PATH]`, `--hub BASE` for a mirror, `HF_TOKEN` for a
//! gated one) — resolved by [`crate::source::resolve`] (the page's rules) and opened as
//! byte sources: a file natively, a URL through [`crate::source::net`], a JSON companion
//! already read in memory.

use super::file_name;
use crate::source::file::FileSource;
use crate::source::net::{Net, NetFetch, UrlSource};
use crate::source::remote::{is_http_url, sibling_url};
use crate::source::resolve::{parse_hf_arg, resolve, Given};
use crate::source::set::SetInput;
use crate::source::MemorySource;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One input's bytes.
pub(super) enum Src {
    File(FileSource),
    Url(UrlSource),
    Memory(MemorySource),
}

crate::source::delegate_byte_source!(Src { File, Url, Memory });

/// How addresses are read.
#[derive(Clone, Debug)]
pub(super) struct Remote {
    /// The Hub's base URL (`--hub`).
    pub hub: String,
}

/// The opened inputs of a command.
pub(super) struct Inputs {
    pub files: Vec<SetInput<Src>>,
    /// The client, when something was given by address (its counts are what was fetched).
    net: Option<Arc<Net>>,
}

impl Inputs {
    /// "N requests, X bytes from URLs" once something was fetched, for stderr (the page
    /// shows the same per file).
    pub fn fetched(&self) -> Option<String> {
        let net = self.net.as_ref()?;
        let (r, b) = (net.requests.load(Ordering::Relaxed), net.bytes.load(Ordering::Relaxed));
        Some(format!(
            "fetched {} in {} request{} ({} bytes)",
            crate::fmt::human_bytes(b),
            crate::fmt::thousands(r),
            if r == 1 { "" } else { "s" },
            crate::fmt::thousands(b)
        ))
    }

    /// Prints [`Self::fetched`] to stderr.
    pub fn report_fetched(&self) {
        if let Some(f) = self.fetched() {
            eprintln!("tensorpeek: {f}");
        }
    }
}

/// Whether `arg` is given by address rather than as a local path.
pub(super) fn is_address(arg: &str) -> bool {
    is_http_url(arg) || arg.starts_with("hf://")
}

/// The files of local paths: each path named, and the files of each folder named (one
/// level, sorted by name). Files named explicitly are inspected even when they are not
/// model files (to say why); a folder's other files are classified and skipped.
pub(super) fn collect(paths: &[PathBuf]) -> Result<Vec<(PathBuf, bool)>, String> {
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let mut files: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_file()).collect();
            files.sort();
            out.extend(files.into_iter().map(|f| (f, false)));
        } else {
            out.push((path.clone(), true));
        }
    }
    Ok(out)
}

/// A local file as an input.
pub(super) fn open_file(path: &Path, explain: bool) -> Result<SetInput<Src>, String> {
    let src = FileSource::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    Ok(SetInput { name: file_name(path), src: Src::File(src), explain })
}

/// Opens what a command was given, in order: local paths (folders' files), then what the
/// addresses resolve to. With `config_beside`, a safetensors file given by URL without a
/// config.json among the inputs brings the config.json beside it when there is one (the
/// audit needs it). Notes go to stderr; anything that cannot be opened is an error.
pub(super) fn open_inputs(args: &[String], remote: &Remote, config_beside: bool) -> Result<Inputs, String> {
    let mut paths = Vec::new();
    let mut given = Vec::new();
    for a in args {
        if let Some(g) = parse_hf_arg(a) {
            given.push(g?);
        } else if is_http_url(a) {
            given.push(Given::Url(a.clone()));
        } else if a.contains("://") {
            return Err(format!("{a}: only http://, https:// and hf:// addresses are read"));
        } else {
            paths.push(PathBuf::from(a));
        }
    }
    let mut files = collect(&paths)?.iter().map(|(p, e)| open_file(p, *e)).collect::<Result<Vec<_>, _>>()?;
    if given.is_empty() {
        return Ok(Inputs { files, net: None });
    }
    let token = std::env::var("HF_TOKEN").ok();
    let net = Arc::new(Net::new(&remote.hub, token));
    let fetch = NetFetch(net.clone());
    let mut r = pollster::block_on(resolve(given, &remote.hub, &fetch));
    if let Some(c) = r.choices.take() {
        let mut msg = format!("{} has {} GGUF models; name one as hf://{}/FILE:", c.repo, c.choices.len(), c.repo);
        for (choice, _) in &c.choices {
            msg.push_str(&format!("\n  {}", choice.files.first().map(String::as_str).unwrap_or("")));
        }
        return Err(msg);
    }
    if let Some((name, why)) = r.failed.first() {
        return Err(format!("{name}: {why}"));
    }
    for n in &r.notes {
        eprintln!("tensorpeek: {n}");
    }
    let has_config = r.companions.iter().any(|(n, _)| n == "config.json") || files.iter().any(|f| f.name == "config.json");
    if config_beside && !has_config {
        if let Some(st) = r.urls.iter().find(|u| u.name.ends_with(".safetensors")) {
            if let Some(c) = sibling_url(&st.url, "config.json") {
                match pollster::block_on(crate::source::resolve::Fetch::read_json(&fetch, &c)) {
                    Ok(b) => r.companions.push(("config.json".to_string(), b)),
                    Err(e) => eprintln!("tensorpeek: config.json beside {} was not read: {e}", st.name),
                }
            }
        }
    }
    for u in &r.urls {
        let src = UrlSource::open(&u.url, net.clone()).map_err(|e| format!("{}: {e}", u.name))?;
        files.push(SetInput { name: u.name.clone(), src: Src::Url(src), explain: true });
    }
    for (name, bytes) in r.companions {
        files.push(SetInput { name, src: Src::Memory(MemorySource::new(bytes)), explain: false });
    }
    Ok(Inputs { files, net: Some(net) })
}

