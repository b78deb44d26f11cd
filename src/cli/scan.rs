//! `tensorpeek scan PATH… [--format text|json|sarif] [--fail-on error,dangerous,warning]
//! [--jobs N]`: every model file under the given folders (recursive) and every file named,
//! header-only, each folder's files as one set ([`crate::source::set`]: read, then merged
//! as `inspect` merges a checkpoint or a split GGUF), several files at once on a bounded
//! pool of threads. One line (or JSON object, or SARIF result) per file and per merged
//! model, then a summary.
//!
//! The walk is [`collect`] (local folders) and [`collect_remote`] (URLs, Hub repositories):
//! they turn the command line into [`Group`]s of [`Target`]s, each opened in
//! [`open_target`] — a local file, a URL read with range requests
//! ([`crate::source::net`], the page's rules), or a JSON companion already read.

use super::exit::{EXIT_FINDINGS, EXIT_SOUND, EXIT_USAGE};
use crate::error::{Code, Finding};
use crate::fmt::thousands;
use crate::formats::pickle::Verdict;
use crate::formats::{self, safety_rank, text_safety, Inspection};
use crate::model::files::base_name;
use crate::report::sarif;
use crate::report::{FileReport, FileReportRef, ModelSection};
use super::inputs::{is_address, Remote, Src};
use crate::source::file::FileSource;
use crate::source::net::{Net, NetFetch, UrlSource};
use crate::source::remote::{is_http_url, parse_listing};
use crate::source::resolve::{parse_hf_arg, resolve, Fetch, Given};
use crate::source::MemorySource;
use crate::source::set::{self, merge_set, read_set, OpenedSet, Role, SetInput, SetOptions, Skipped};
use crate::vocab::Format;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::mpsc;

/// Most files read at once. Reading a header is a few small reads and a parse, so more
/// threads than cores only help while reads wait (a cold disk, a network file system); 8
/// bounds that, the open files, and the memory of the headers in flight (a GGUF header
/// may hold 128 MiB, a pickle's walk its own budget: 8 × those, not thousands ×).
pub const MAX_SCAN_JOBS: usize = 8;

/// Folders never walked: a version-control store holds no model file under its own name.
const SKIPPED_DIRS: [&str; 3] = [".git", ".hg", ".svn"];

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// One line per file and per merged model, then a summary line.
    Text,
    /// JSON lines: one object per file (the report's fields for it, `kind`, `verdict`,
    /// `fails`), per merged model, per skipped file, then a summary object.
    Json,
    /// A SARIF 2.1.0 log for code scanning.
    Sarif,
}

/// What makes `scan` exit 1.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FailOn {
    /// A file with an error finding, or whose verdict is `error` (it cannot be read whole).
    Error,
    /// A file whose verdict is `dangerous` (loading it runs code).
    Dangerous,
    /// A file with any warning, or whose verdict is `suspicious`.
    Warning,
}

#[derive(clap::Args, Debug)]
pub struct ScanArgs {
    /// Folders (walked recursively: every .safetensors, .gguf, .bin, .pt, .pth, .ckpt, .pkl,
    /// .npy, .npz, and the JSON beside them) and files (read whatever their name); URLs
    /// (a file, or an index with its shards) and Hub repositories (hf://ORG/REPO[@REV][/PATH]:
    /// every model file of the repository, or under PATH).
    #[arg(required = true)]
    pub paths: Vec<String>,
    #[arg(long, value_enum, default_value_t = Output::Text)]
    pub format: Output,
    /// What exits 1 (comma-separated): error, dangerous, warning.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [FailOn::Error, FailOn::Dangerous])]
    pub fail_on: Vec<FailOn>,
    /// Files read at once (at most 8; default: the cores, at most 8).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Also write the SARIF log to FILE (whatever --format prints: the action prints text
    /// and uploads this).
    #[arg(long, value_name = "FILE")]
    pub sarif: Option<PathBuf>,
    /// SARIF: the documentation's base URL (a repository's files, ending in `/`): rules
    /// get `helpUri` = this + `docs/codes.md#code`.
    #[arg(long)]
    pub docs_url: Option<String>,
}

/// Where a file to scan comes from.
#[derive(Clone, Debug)]
pub enum Origin {
    /// A local file.
    Path(PathBuf),
    /// Something the walk could not read (a folder without permission): scanned as a
    /// failed read with this message.
    Unreadable(String),
    /// A file behind a URL.
    Url { url: String, net: Arc<Net> },
    /// A JSON companion read while resolving a URL (an index, the config.json beside it).
    Memory(Arc<Vec<u8>>),
}

/// One file to scan.
#[derive(Clone, Debug)]
pub struct Target {
    pub origin: Origin,
    /// Its name in the output: the path as walked (`models/llama/model.safetensors`).
    pub name: String,
    /// Named on the command line: read whatever its name (to say what it is).
    pub explain: bool,
}

/// The files of one folder: one set, merged as `inspect` merges a folder.
#[derive(Clone, Debug)]
pub struct Group {
    /// The folder, as walked (`models/llama`; `.` for the current one).
    pub dir: PathBuf,
    pub targets: Vec<Target>,
}

/// The walk: every folder given, recursively (entries sorted by name, symbolic links to
/// folders not followed, version-control folders skipped), and every file given. A
/// folder's model files (by name: [`set::role_of`]) and, beside them, its JSON files form
/// its group; a file named explicitly joins its folder's group. Nothing is read here.
pub fn collect(paths: &[PathBuf]) -> Result<Vec<Group>, String> {
    let mut groups: Vec<Group> = Vec::new();
    let mut by_dir: HashMap<PathBuf, usize> = HashMap::new();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut add = |groups: &mut Vec<Group>, dir: PathBuf, target: Target| {
        let i = *by_dir.entry(dir.clone()).or_insert_with(|| {
            groups.push(Group { dir, targets: Vec::new() });
            groups.len() - 1
        });
        if let Some(g) = groups.get_mut(i) {
            g.targets.push(target);
        }
    };
    for root in paths {
        let root = tidy(root);
        let meta = std::fs::metadata(&root).map_err(|e| format!("cannot read {}: {e}", root.display()))?;
        if !meta.is_dir() {
            if seen.insert(root.clone()) {
                let dir = root.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
                add(&mut groups, dir, Target { name: root.display().to_string(), origin: Origin::Path(root), explain: true });
            }
            continue;
        }
        let walk = walkdir::WalkDir::new(&root)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| !(e.file_type().is_dir() && SKIPPED_DIRS.iter().any(|d| e.file_name() == *d)));
        for entry in walk {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    let path = e.path().map_or_else(|| root.clone(), Path::to_path_buf);
                    let dir = path.parent().map_or_else(|| root.clone(), Path::to_path_buf);
                    add(&mut groups, dir, Target { name: path.display().to_string(), origin: Origin::Unreadable(e.to_string()), explain: true });
                    continue;
                }
            };
            // a symbolic link to a file is scanned (its target read); to a folder, not walked
            let is_file = entry.file_type().is_file() || (entry.path_is_symlink() && entry.path().is_file());
            let name = entry.path().display().to_string();
            if !is_file || set::role_of(&name) == Role::Other || !seen.insert(entry.path().to_path_buf()) {
                continue;
            }
            let dir = entry.path().parent().map_or_else(|| root.clone(), Path::to_path_buf);
            add(&mut groups, dir, Target { name, origin: Origin::Path(entry.into_path()), explain: false });
        }
    }
    // JSON alone is no model: a folder of JSON files only (a web project) is not read
    groups.retain(|g| g.targets.iter().any(|t| t.explain || set::role_of(&t.name) == Role::ModelFile));
    Ok(groups)
}

/// The groups of what was given by address. A URL is one group: the file, or an index's
/// shards with the JSON read beside it (as `inspect` opens it). A Hub repository is listed
/// and every model file in it (under PATH when given) is scanned, each folder of the
/// repository one group with its JSON files — what a scan of a clone would read, without
/// the clone. Nothing but the listing and the JSON companions is read here.
pub fn collect_remote(args: &[String], remote: &Remote) -> Result<Vec<Group>, String> {
    if args.is_empty() {
        return Ok(Vec::new());
    }
    let net = Arc::new(Net::new(&remote.hub, std::env::var("HF_TOKEN").ok()));
    let fetch = NetFetch(net.clone());
    let mut groups = Vec::new();
    for arg in args {
        if let Some(given) = parse_hf_arg(arg) {
            let Given::Hub { repo, file } = given? else { continue };
            let listing = pollster::block_on(fetch.listing(&repo.api_url(&remote.hub))).map_err(|e| format!("{arg}: listing the repository failed: {e}"))?;
            let files = parse_listing(&listing).map_err(|e| format!("{arg}: {e}"))?;
            let under = |name: &str| file.as_deref().is_none_or(|f| name == f || name.starts_with(&format!("{}/", f.trim_end_matches('/'))));
            let mut by_dir: BTreeMap<String, Vec<Target>> = BTreeMap::new();
            for f in files.iter().filter(|f| under(&f.name)) {
                let explain = file.as_deref() == Some(f.name.as_str());
                if !explain && set::role_of(&f.name) == Role::Other {
                    continue;
                }
                let dir = f.name.rsplit_once('/').map_or("", |(d, _)| d).to_string();
                let url = repo.resolve_url(&remote.hub, &f.name);
                let name = format!("hf://{}{}/{}", repo.repo, repo.revision.as_deref().map(|r| format!("@{r}")).unwrap_or_default(), f.name);
                by_dir.entry(dir).or_default().push(Target { name, origin: Origin::Url { url, net: net.clone() }, explain });
            }
            let base = arg.trim_end_matches('/');
            if by_dir.is_empty() {
                return Err(format!("{arg}: no model file in the repository{}", if file.is_some() { " under that path" } else { "" }));
            }
            for (dir, targets) in by_dir {
                let label = if dir.is_empty() || file.is_some() { base.to_string() } else { format!("{base}/{dir}") };
                groups.push(Group { dir: PathBuf::from(label), targets });
            }
        } else if is_http_url(arg) {
            let r = pollster::block_on(resolve(vec![Given::Url(arg.clone())], &remote.hub, &fetch));
            if let Some((name, why)) = r.failed.first() {
                return Err(format!("{name}: {why}"));
            }
            let dir = arg.rsplit_once('/').map_or(arg.as_str(), |(d, _)| d).to_string();
            let mut targets: Vec<Target> = r.urls.into_iter().map(|u| Target { name: u.url.clone(), origin: Origin::Url { url: u.url, net: net.clone() }, explain: true }).collect();
            targets.extend(r.companions.into_iter().map(|(name, bytes)| Target { name: format!("{dir}/{name}"), origin: Origin::Memory(Arc::new(bytes)), explain: false }));
            groups.push(Group { dir: PathBuf::from(dir), targets });
        }
    }
    Ok(groups)
}

/// The path without `./` components (`./models/x.bin` → `models/x.bin`), so that names and
/// URIs say each file one way.
fn tidy(p: &Path) -> PathBuf {
    let out: PathBuf = p.components().filter(|c| *c != Component::CurDir).collect();
    if out.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        out
    }
}

/// What reading one target gave (sendable between threads: `OpenedSet` holds `Rc`s).
struct Part {
    files: Vec<Inspection>,
    companions: Vec<(String, Vec<u8>)>,
    skipped: Vec<Skipped>,
    bytes_read: u64,
}

/// Reads one target through the set driver's reading half ([`read_set`]: classified by
/// name, a model file inspected header-only, a JSON companion read whole).
fn open_target(t: &Target) -> Part {
    let failed = |message: String| {
        let i = Inspection::failed(t.name.as_str(), 0, formats::format_from_name(&t.name), 0, Finding::error(Code::ReadFailed, message));
        Part { files: vec![i], companions: Vec::new(), skipped: Vec::new(), bytes_read: 0 }
    };
    let src = match &t.origin {
        Origin::Unreadable(why) => return failed(format!("cannot read it: {why}")),
        Origin::Path(p) => match FileSource::open(p) {
            Ok(s) => Src::File(s),
            Err(e) => return failed(format!("cannot open it: {e}")),
        },
        Origin::Url { url, net } => match UrlSource::open(url, net.clone()) {
            Ok(s) => Src::Url(s),
            Err(e) => return failed(e.to_string()),
        },
        Origin::Memory(bytes) => Src::Memory(MemorySource::new(bytes.to_vec())),
    };
    let input = [SetInput { name: t.name.clone(), src, explain: t.explain }];
    let read = pollster::block_on(read_set(&input, SetOptions { classify_by_content: false }, |_, _| {}));
    Part {
        files: read.files.into_iter().map(|(_, i)| Rc::try_unwrap(i).unwrap_or_else(|rc| (*rc).clone())).collect(),
        companions: read.companions,
        skipped: read.skipped,
        bytes_read: read.bytes_read,
    }
}

/// Reads every target on `jobs` threads, in walk order, and hands each group's merged set
/// to `emit` in group order as soon as all its files are read (so that only the groups in
/// flight are held).
fn scan_groups(groups: &[Group], jobs: usize, mut emit: impl FnMut(&Group, OpenedSet)) {
    let work: Vec<(usize, usize)> = groups.iter().enumerate().flat_map(|(g, grp)| (0..grp.targets.len()).map(move |t| (g, t))).collect();
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<(usize, usize, Part)>();
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, MAX_SCAN_JOBS) {
            let tx = tx.clone();
            let (work, next) = (&work, &next);
            scope.spawn(move || {
                while let Some(&(g, t)) = work.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let Some(target) = groups.get(g).and_then(|grp| grp.targets.get(t)) else { break };
                    if tx.send((g, t, open_target(target))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut parts: Vec<Vec<Option<Part>>> = groups.iter().map(|g| g.targets.iter().map(|_| None).collect()).collect();
        let mut left: Vec<usize> = groups.iter().map(|g| g.targets.len()).collect();
        let mut head = 0;
        for (g, t, part) in rx {
            if let Some(slot) = parts.get_mut(g).and_then(|p| p.get_mut(t)) {
                *slot = Some(part);
            }
            if let Some(n) = left.get_mut(g) {
                *n = n.saturating_sub(1);
            }
            while left.get(head) == Some(&0) {
                if let (Some(grp), Some(p)) = (groups.get(head), parts.get_mut(head)) {
                    emit(grp, assemble(std::mem::take(p)));
                }
                head += 1;
            }
        }
    });
}

/// One group's parts as the set [`read_set`] would have read in one go, merged
/// ([`merge_set`]: a checkpoint, split GGUF parts).
fn assemble(parts: Vec<Option<Part>>) -> OpenedSet {
    let mut set = OpenedSet::default();
    for (i, p) in parts.into_iter().enumerate() {
        let Some(p) = p else { continue };
        set.files.extend(p.files.into_iter().map(|f| (i, Rc::new(f))));
        set.companions.extend(p.companions);
        set.skipped.extend(p.skipped);
        set.bytes_read = set.bytes_read.saturating_add(p.bytes_read);
    }
    merge_set(&mut set);
    set
}

/// The worse of two verdicts.
fn worst(a: Verdict, b: Verdict) -> Verdict {
    if safety_rank(b) > safety_rank(a) {
        b
    } else {
        a
    }
}

/// One line of the scan: a file or a merged model.
struct Judged<'a> {
    path: String,
    format: &'a str,
    verdict: Verdict,
    tensors: u64,
    findings: Vec<&'a Finding>,
    fails: bool,
}

fn fails(fail_on: &[FailOn], verdict: Verdict, findings: &[&Finding]) -> bool {
    fail_on.iter().any(|f| match f {
        FailOn::Error => verdict == Verdict::Error || findings.iter().any(|x| x.is_error()),
        FailOn::Dangerous => verdict == Verdict::Dangerous,
        FailOn::Warning => verdict == Verdict::Suspicious || findings.iter().any(|x| !x.is_error()),
    })
}

fn judge_file<'a>(f: &'a Inspection, fail_on: &[FailOn]) -> Judged<'a> {
    let findings: Vec<&Finding> = f.findings().collect();
    let verdict = f.safety();
    Judged { path: f.name.clone(), format: f.format.name(), verdict, tensors: f.totals.tensors, fails: fails(fail_on, verdict, &findings), findings }
}

/// The merged models of a set, judged: a checkpoint by its own findings (a
/// tokenizer_config.json's unsafe chat template, a missing shard) and its shards' worst
/// verdict; a split GGUF by its findings and its parts' worst verdict.
fn judge_models<'a>(dir: &Path, set: &'a OpenedSet, fail_on: &[FailOn]) -> Vec<(Judged<'a>, ModelSection)> {
    let mut out = Vec::new();
    let label = |what: &str| format!("{}/ ({what})", dir.display());
    if let Some(c) = &set.checkpoint {
        let findings: Vec<&Finding> = c.findings().collect();
        let shards = set.inspections().filter(|f| c.shards.iter().any(|s| s.name == f.name || s.name == base_name(&f.name)));
        let verdict = shards.map(Inspection::safety).fold(text_safety(findings.iter().copied()), worst);
        let path = label(&format!("{} shard(s)", c.shards.len()));
        let j = Judged { path, format: c.format, verdict, tensors: c.totals.tensors, fails: fails(fail_on, verdict, &findings), findings };
        out.push((j, ModelSection::Checkpoint(Box::new(c.clone()))));
    }
    for s in &set.splits {
        let findings: Vec<&Finding> = s.findings().collect();
        let parts = set.inspections().filter(|f| s.parts.iter().any(|p| p.name == f.name));
        let verdict = parts.map(Inspection::safety).fold(text_safety(findings.iter().copied()), worst);
        let name = s.parts.first().map_or_else(String::new, |p| set::split_group(&p.name));
        let path = format!("{}/{name} ({} of {} parts)", dir.display(), s.parts.len(), s.split_count.map_or_else(|| "?".into(), thousands));
        let j = Judged { path, format: "gguf-split", verdict, tensors: s.totals.tensors, fails: fails(fail_on, verdict, &findings), findings };
        out.push((j, ModelSection::Split(Box::new(s.clone()))));
    }
    out
}

/// The distinct codes of some findings, in order, each with its count (`×N` past one;
/// a finding that stands for `more` others counts them).
fn codes(findings: &[&Finding]) -> String {
    let mut counts: Vec<(Code, u64)> = Vec::new();
    for f in findings {
        let n = f.more.saturating_add(1);
        match counts.iter_mut().find(|(c, _)| *c == f.code) {
            Some((_, k)) => *k = k.saturating_add(n),
            None => counts.push((f.code, n)),
        }
    }
    counts.iter().map(|(c, n)| if *n > 1 { format!("{c}×{}", thousands(*n)) } else { c.as_str() }).collect::<Vec<_>>().join(", ")
}

/// The scan's counts, for the summary.
#[derive(Default, Serialize)]
struct Summary {
    kind: &'static str,
    files: u64,
    models: u64,
    skipped: u64,
    safe: u64,
    suspicious: u64,
    dangerous: u64,
    error: u64,
    /// Files and models that count under `--fail-on`.
    failing: u64,
    fail_on: Vec<FailOn>,
    bytes_read: u64,
    exit: u8,
}

impl Summary {
    fn count(&mut self, j: &Judged, model: bool) {
        if model {
            self.models += 1;
        } else {
            self.files += 1;
        }
        match j.verdict {
            Verdict::Safe => self.safe += 1,
            Verdict::Suspicious => self.suspicious += 1,
            Verdict::Dangerous => self.dangerous += 1,
            Verdict::Error => self.error += 1,
        }
        if j.fails {
            self.failing += 1;
        }
    }

    fn line(&self) -> String {
        let fail_on: Vec<&str> = self.fail_on.iter().map(|f| match f {
            FailOn::Error => "error",
            FailOn::Dangerous => "dangerous",
            FailOn::Warning => "warning",
        }).collect();
        format!(
            "scanned {} file(s), {} merged model(s): {} safe, {} suspicious, {} dangerous, {} error; {} failing --fail-on {}; {} bytes read{}",
            thousands(self.files),
            thousands(self.models),
            thousands(self.safe),
            thousands(self.suspicious),
            thousands(self.dangerous),
            thousands(self.error),
            thousands(self.failing),
            fail_on.join(","),
            thousands(self.bytes_read),
            if self.skipped > 0 { format!("; {} skipped", thousands(self.skipped)) } else { String::new() }
        )
    }
}

#[derive(Serialize)]
struct FileLine<'a> {
    kind: &'static str,
    verdict: Verdict,
    fails: bool,
    #[serde(flatten)]
    report: FileReportRef<'a>,
}

#[derive(Serialize)]
struct ModelLine<'a> {
    kind: &'static str,
    path: &'a str,
    verdict: Verdict,
    fails: bool,
    model: &'a ModelSection,
}

#[derive(Serialize)]
struct SkippedLine<'a> {
    kind: &'static str,
    name: &'a str,
    size: u64,
    reason: &'a str,
}

/// A scanned path as a SARIF artifact URI: relative to the scan root (the current folder)
/// when inside it, otherwise an absolute `file:` URI.
fn artifact_uri(root: Option<&url::Url>, path: &Path, dir: bool) -> String {
    // A file behind a URL is located by its URL.
    if let Some(s) = path.to_str().filter(|s| is_address(s)) {
        return s.to_string();
    }
    let abs = std::env::current_dir().map(|c| c.join(path)).unwrap_or_else(|_| path.to_path_buf());
    let url = if dir { url::Url::from_directory_path(&abs) } else { url::Url::from_file_path(&abs) };
    let Ok(url) = url else { return path.display().to_string() };
    match root.and_then(|r| r.make_relative(&url)) {
        Some(rel) if !rel.starts_with("../") && !rel.is_empty() => rel,
        Some(rel) if rel.is_empty() => "./".to_string(),
        _ => url.to_string(),
    }
}

pub fn run(args: &ScanArgs, remote: &Remote) -> ExitCode {
    let (addresses, paths): (Vec<&String>, Vec<&String>) = args.paths.iter().partition(|a| is_address(a));
    let paths: Vec<PathBuf> = paths.into_iter().map(PathBuf::from).collect();
    let addresses: Vec<String> = addresses.into_iter().cloned().collect();
    let groups = match collect(&paths).and_then(|mut g| {
        g.extend(collect_remote(&addresses, remote)?);
        Ok(g)
    }) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("tensorpeek: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if args.jobs.is_some_and(|j| j == 0 || j > MAX_SCAN_JOBS) {
        eprintln!("tensorpeek: --jobs takes 1 to {MAX_SCAN_JOBS}");
        return ExitCode::from(EXIT_USAGE);
    }
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_SCAN_JOBS));
    let root = std::env::current_dir().ok().and_then(|c| url::Url::from_directory_path(c).ok());
    let sarif_wanted = args.format == Output::Sarif || args.sarif.is_some();
    let mut summary = Summary { kind: "summary", fail_on: args.fail_on.clone(), ..Summary::default() };
    let mut artifacts: Vec<sarif::Artifact> = Vec::new();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut write_error: Option<std::io::Error> = None;
    let mut put = |out: &mut std::io::BufWriter<std::io::StdoutLock>, line: String| {
        if write_error.is_none() {
            if let Err(e) = writeln!(out, "{line}") {
                write_error = Some(e);
            }
        }
    };
    scan_groups(&groups, jobs, |group, set| {
        summary.bytes_read = summary.bytes_read.saturating_add(set.bytes_read);
        let mut names: BTreeMap<&str, (String, &Inspection)> = BTreeMap::new();
        for f in set.inspections() {
            let j = judge_file(f, &args.fail_on);
            summary.count(&j, false);
            match args.format {
                Output::Text => put(&mut out, text_line(&j)),
                Output::Json => {
                    let line = FileLine { kind: "file", verdict: j.verdict, fails: j.fails, report: FileReport::borrowed(f, &BTreeMap::new()) };
                    put(&mut out, to_line(&line));
                }
                Output::Sarif => {}
            }
            if sarif_wanted {
                let uri = artifact_uri(root.as_ref(), Path::new(&f.name), false);
                names.insert(base_name(&f.name), (uri.clone(), f));
                artifacts.push(sarif::Artifact { uri, length: Some(f.size), format: f.format, verdict: j.verdict, findings: f.findings().cloned().collect() });
            }
        }
        for (j, model) in judge_models(&group.dir, &set, &args.fail_on) {
            summary.count(&j, true);
            match args.format {
                Output::Text => put(&mut out, text_line(&j)),
                Output::Json => put(&mut out, to_line(&ModelLine { kind: "model", path: &j.path, verdict: j.verdict, fails: j.fails, model: &model })),
                Output::Sarif => {}
            }
            if sarif_wanted {
                model_artifacts(&mut artifacts, root.as_ref(), &group.dir, &names, &j);
            }
        }
        for s in &set.skipped {
            summary.skipped += 1;
            match args.format {
                Output::Text => put(&mut out, format!("{:<10}  {:<22} {:>16}  {}  {}", "skipped", s.kind.name(), "", s.name, s.reason)),
                Output::Json => put(&mut out, to_line(&SkippedLine { kind: "skipped", name: &s.name, size: s.len, reason: &s.reason })),
                Output::Sarif => {}
            }
        }
    });
    let code = if summary.failing > 0 { EXIT_FINDINGS } else { EXIT_SOUND };
    summary.exit = code;
    let log = sarif_wanted.then(|| {
        let options = sarif::Options { root_uri: root.as_ref().map(ToString::to_string), docs_url: args.docs_url.clone() };
        serde_json::to_string_pretty(&sarif::log(&artifacts, &options)).unwrap_or_default()
    });
    match (args.format, &log) {
        (Output::Text, _) => put(&mut out, summary.line()),
        (Output::Json, _) => put(&mut out, to_line(&summary)),
        (Output::Sarif, Some(log)) => {
            put(&mut out, log.clone());
            eprintln!("tensorpeek: {}", summary.line());
        }
        (Output::Sarif, None) => {}
    }
    if let (Some(path), Some(log)) = (&args.sarif, &log) {
        if let Err(e) = std::fs::write(path, format!("{log}\n")) {
            eprintln!("tensorpeek: cannot write {}: {e}", path.display());
            return ExitCode::from(EXIT_USAGE);
        }
    }
    if let Some(e) = write_error.take().or_else(|| out.flush().err()) {
        eprintln!("tensorpeek: writing the output failed: {e}");
        return ExitCode::from(EXIT_USAGE);
    }
    ExitCode::from(code)
}

/// A merged model's findings as SARIF artifacts: each finding that names one of the set's
/// files at that file, the others at the folder.
fn model_artifacts(artifacts: &mut Vec<sarif::Artifact>, root: Option<&url::Url>, dir: &Path, names: &BTreeMap<&str, (String, &Inspection)>, j: &Judged) {
    let mut at_dir = Vec::new();
    for f in &j.findings {
        let file = f.file.as_deref().and_then(|n| names.get(base_name(n)));
        match file {
            Some((uri, i)) => artifacts.push(sarif::Artifact { uri: uri.clone(), length: Some(i.size), format: i.format, verdict: i.safety(), findings: vec![(*f).clone()] }),
            None => at_dir.push((*f).clone()),
        }
    }
    if !at_dir.is_empty() {
        artifacts.push(sarif::Artifact { uri: artifact_uri(root, dir, true), length: None, format: Format::Unknown, verdict: j.verdict, findings: at_dir });
    }
}

fn text_line(j: &Judged) -> String {
    format!("{:<10}  {:<22} {:>8} tensors  {}  {}", j.verdict.name(), j.format, thousands(j.tensors), j.path, codes(&j.findings)).trim_end().to_string()
}

/// One JSON line.
fn to_line<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
