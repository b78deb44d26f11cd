//! What was given by address → the files to open, for the page and the CLI alike.
//!
//! A URL is one file; a `*.safetensors.index.json` URL brings the shards it names (beside
//! it) and the `config.json` beside it; a Hub repository (`ORG/REPO[@REV]`, a file path
//! inside it optional) is listed through the model-info API and its checkpoint (or its one
//! GGUF model, or the GGUF models to choose from) opened by URL. Only what was given, and
//! the files it names, is ever fetched. The index and config are small JSON, read whole
//! here and handed on as companions; the model files are read header-only later.
//!
//! The fetching is a [`Fetch`]: the browser's `fetch` on the page, a native HTTP client in
//! the CLI, a map of bytes in the tests.

use super::remote::{
    display_name, file_name_of, index_shards, is_http_url, is_index_url, parse_listing, plan_repo, sibling_url, GgufChoice, HubRepo, RepoPlan,
};

/// How [`resolve`] reads the small files it needs.
#[allow(async_fn_in_trait)] // single-threaded use (wasm and a blocking CLI)
pub trait Fetch {
    /// A JSON companion (an index, a config.json), read whole — at most
    /// [`crate::model::files::MAX_COMPANION_BYTES`]; the message says why not.
    async fn read_json(&self, url: &str) -> Result<Vec<u8>, String>;
    /// A Hub model-info listing (a plain GET, at most [`super::remote::MAX_LISTING_BYTES`]).
    async fn listing(&self, url: &str) -> Result<Vec<u8>, String>;
}

/// Something given to open by address.
#[derive(Clone, Debug, PartialEq)]
pub enum Given {
    Url(String),
    /// A repository; with `file`, one file (or split model, or index) inside it.
    Hub { repo: HubRepo, file: Option<String> },
}

/// A file to open by URL.
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteFile {
    /// The name it is shown under.
    pub name: String,
    pub url: String,
    /// The URL that reopens it in a link (its own, or the index it came with).
    pub link: String,
}

/// The GGUF models of a Hub repository, for the person to choose one.
#[derive(Clone, Debug, PartialEq)]
pub struct HubChoices {
    /// `ORG/REPO` (with `@REV`).
    pub repo: String,
    /// Each choice with the URLs of its files.
    pub choices: Vec<(GgufChoice, Vec<String>)>,
}

/// What [`resolve`] found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Resolved {
    pub urls: Vec<RemoteFile>,
    /// JSON companions already read (an index, the config.json beside it): (name, bytes).
    pub companions: Vec<(String, Vec<u8>)>,
    /// The merged view's name for a checkpoint given by address (a repository, an index).
    pub title: Option<String>,
    /// What could not be read: (name, why).
    pub failed: Vec<(String, String)>,
    pub notes: Vec<String>,
    /// A Hub repository's GGUF models, when there are several to choose from.
    pub choices: Option<HubChoices>,
}

/// Reads the page's URL field: URLs and Hub ids (`ORG/REPO[@REV]`) separated by white space.
pub fn parse_field(text: &str) -> Result<Vec<Given>, String> {
    let mut out = Vec::new();
    for token in text.split_whitespace() {
        if is_http_url(token) {
            out.push(Given::Url(token.to_string()));
        } else if token.contains("://") {
            return Err(format!("{token} is not an http: or https: URL"));
        } else {
            out.push(Given::Hub { repo: HubRepo::parse(token)?, file: None });
        }
    }
    if out.is_empty() {
        return Err("type a URL (https://…/model.safetensors, a .gguf, a model.safetensors.index.json) or a Hub repository (ORG/REPO)".into());
    }
    Ok(out)
}

/// Reads a command-line `hf://ORG/REPO[@REV][/PATH]`: `None` when `arg` does not start
/// with `hf://`, else the repository and the file path inside it.
pub fn parse_hf_arg(arg: &str) -> Option<Result<Given, String>> {
    let rest = arg.strip_prefix("hf://")?;
    let mut parts = rest.splitn(3, '/');
    let (Some(org), Some(name)) = (parts.next(), parts.next()) else {
        return Some(Err(format!("{arg}: a Hub repository is hf://ORG/REPO[@REVISION][/PATH]")));
    };
    let file = parts.next().filter(|p| !p.is_empty()).map(str::to_string);
    if file.as_deref().is_some_and(|f| f.split('/').any(|s| s.is_empty() || s == "." || s == "..")) {
        return Some(Err(format!("{arg}: the path inside the repository must be plain names separated by /")));
    }
    Some(HubRepo::parse(&format!("{org}/{name}")).map(|repo| Given::Hub { repo, file }).map_err(|e| format!("{arg}: {e}")))
}

/// Turns what was given into the files to open (see the module's note). `hub` is the
/// Hub's base URL.
pub async fn resolve(given: Vec<Given>, hub: &str, fetch: &impl Fetch) -> Resolved {
    let mut out = Resolved::default();
    for g in given {
        match g {
            Given::Url(url) if is_index_url(&url) => {
                let config = sibling_url(&url, "config.json");
                expand_index(&url, config.as_deref(), fetch, &mut out).await;
                if out.title.is_none() {
                    out.title = Some(file_name_of(&url));
                }
            }
            Given::Url(url) => {
                let name = display_name(&url, None);
                out.urls.push(RemoteFile { name, url: url.clone(), link: url });
            }
            Given::Hub { repo, file } => hub_repo(&repo, file.as_deref(), hub, fetch, &mut out).await,
        }
    }
    out
}

/// The files of a chosen GGUF model (URLs and their paths in the repository).
pub fn chosen(urls: &[String], files: &[String]) -> Vec<RemoteFile> {
    urls.iter().zip(files).map(|(u, f)| RemoteFile { name: display_name(u, Some(f)), url: u.clone(), link: u.clone() }).collect()
}

/// An index: read it, open the shards it names (beside it) and read `config` (when given).
async fn expand_index(url: &str, config: Option<&str>, fetch: &impl Fetch, out: &mut Resolved) {
    let name = file_name_of(url);
    let bytes = match fetch.read_json(url).await {
        Ok(b) => b,
        Err(e) => return out.failed.push((name, e)),
    };
    match index_shards(&name, &bytes) {
        Ok(shards) => {
            for shard in shards {
                match sibling_url(url, &shard) {
                    Some(u) => out.urls.push(RemoteFile { name: shard, url: u, link: url.to_string() }),
                    None => out.failed.push((shard, format!("{name} names this shard outside its own folder; it is not fetched"))),
                }
            }
        }
        Err(e) => out.failed.push((name.clone(), e)),
    }
    out.companions.push((name.clone(), bytes));
    if let Some(c) = config {
        match fetch.read_json(c).await {
            Ok(b) => out.companions.push(("config.json".to_string(), b)),
            Err(e) => out.notes.push(format!("config.json beside {name} was not read, so the architecture is not checked: {e}")),
        }
    }
}

/// A Hub repository: list it, then open its checkpoint (or its only GGUF model, or offer
/// its GGUF models to choose from). With `file`, that file of the listing: a GGUF (with
/// the other parts of its split model), an index (with its shards), or any one file.
async fn hub_repo(repo: &HubRepo, file: Option<&str>, hub: &str, fetch: &impl Fetch, out: &mut Resolved) {
    let label = match &repo.revision {
        Some(r) => format!("{}@{r}", repo.repo),
        None => repo.repo.clone(),
    };
    let listing = match fetch.listing(&repo.api_url(hub)).await {
        Ok(b) => b,
        Err(e) => return out.failed.push((label, format!("listing the repository failed: {e}"))),
    };
    let files = match parse_listing(&listing) {
        Ok(f) => f,
        Err(e) => return out.failed.push((label, e)),
    };
    let url = |f: &str| repo.resolve_url(hub, f);
    let push = |out: &mut Resolved, f: &str| {
        let u = url(f);
        out.urls.push(RemoteFile { name: display_name(&u, Some(f)), url: u.clone(), link: u });
    };
    if let Some(want) = file {
        if !files.iter().any(|f| f.name == want) {
            return out.failed.push((format!("{label}/{want}"), format!("{label} has no file {want}")));
        }
        if is_index_url(want) {
            let config = sibling_url(&url(want), "config.json");
            expand_index(&url(want), config.as_deref(), fetch, out).await;
            out.title = Some(label);
            return;
        }
        // A part of a split GGUF brings the other parts of its model.
        let parts = match plan_repo(&files) {
            RepoPlan::Gguf(choices) => choices.into_iter().find(|c| c.files.iter().any(|f| f == want)).map(|c| c.files),
            _ => None,
        };
        for f in parts.unwrap_or_else(|| vec![want.to_string()]) {
            push(out, &f);
        }
        return;
    }
    match plan_repo(&files) {
        RepoPlan::Safetensors { index: Some(index), config, .. } => {
            let config = config.map(|c| url(&c));
            expand_index(&url(&index), config.as_deref(), fetch, out).await;
            out.title = Some(label);
        }
        RepoPlan::Safetensors { index: None, shards, config } => {
            for s in shards {
                push(out, &s);
            }
            if let Some(c) = config {
                match fetch.read_json(&url(&c)).await {
                    Ok(b) => out.companions.push(("config.json".to_string(), b)),
                    Err(e) => out.notes.push(format!("config.json of {label} was not read: {e}")),
                }
            }
            out.title = Some(label);
        }
        RepoPlan::Gguf(choices) if choices.len() == 1 => {
            for f in choices.into_iter().flat_map(|c| c.files) {
                push(out, &f);
            }
        }
        RepoPlan::Gguf(choices) => {
            let choices = choices
                .into_iter()
                .map(|c| {
                    let urls = c.files.iter().map(|f| url(f)).collect();
                    (c, urls)
                })
                .collect();
            out.choices = Some(HubChoices { repo: label, choices });
        }
        RepoPlan::Nothing => out.failed.push((label, "the repository has no .safetensors or .gguf files to read".to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Answers from a map; every URL asked is recorded.
    #[derive(Default)]
    struct Map {
        files: BTreeMap<String, Vec<u8>>,
        asked: std::cell::RefCell<Vec<String>>,
    }

    impl Fetch for Map {
        async fn read_json(&self, url: &str) -> Result<Vec<u8>, String> {
            self.asked.borrow_mut().push(url.to_string());
            self.files.get(url).cloned().ok_or_else(|| format!("404 for {url}"))
        }
        async fn listing(&self, url: &str) -> Result<Vec<u8>, String> {
            self.read_json(url).await
        }
    }

    fn map(files: &[(&str, &str)]) -> Map {
        Map { files: files.iter().map(|(k, v)| (k.to_string(), v.as_bytes().to_vec())).collect(), ..Map::default() }
    }

    const HUB: &str = "https://hub.test";

    #[test]
    fn an_index_url_brings_its_shards_and_config() {
        let m = map(&[
            ("https://h/m/model.safetensors.index.json", r#"{"weight_map":{"a":"model-00002-of-00002.safetensors","b":"model-00001-of-00002.safetensors"}}"#),
            ("https://h/m/config.json", "{}"),
        ]);
        let r = pollster::block_on(resolve(vec![Given::Url("https://h/m/model.safetensors.index.json".into())], HUB, &m));
        let names: Vec<&str> = r.urls.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]);
        assert_eq!(r.urls[0].url, "https://h/m/model-00001-of-00002.safetensors");
        assert_eq!(r.urls[0].link, "https://h/m/model.safetensors.index.json");
        let companions: Vec<&str> = r.companions.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(companions, ["model.safetensors.index.json", "config.json"]);
        assert_eq!(r.title.as_deref(), Some("model.safetensors.index.json"));
        assert!(r.failed.is_empty() && r.notes.is_empty());
    }

    #[test]
    fn a_missing_config_is_a_note_and_a_missing_index_a_failure() {
        let m = map(&[("https://h/m/model.safetensors.index.json", r#"{"weight_map":{"a":"s.safetensors"}}"#)]);
        let r = pollster::block_on(resolve(
            vec![Given::Url("https://h/m/model.safetensors.index.json".into()), Given::Url("https://h/x/other.safetensors.index.json".into())],
            HUB,
            &m,
        ));
        assert_eq!(r.urls.len(), 1);
        assert!(r.notes[0].contains("config.json beside model.safetensors.index.json was not read"), "{:?}", r.notes);
        assert_eq!(r.failed, vec![("other.safetensors.index.json".to_string(), "404 for https://h/x/other.safetensors.index.json".to_string())]);
    }

    fn listing(files: &[&str]) -> String {
        let s: Vec<String> = files.iter().map(|f| format!(r#"{{"rfilename":"{f}"}}"#)).collect();
        format!(r#"{{"siblings":[{}]}}"#, s.join(","))
    }

    #[test]
    fn a_repository_of_gguf_models_offers_a_choice_and_a_path_picks_one_with_its_parts() {
        let l = listing(&["a-Q4_K_M.gguf", "b-00001-of-00002.gguf", "b-00002-of-00002.gguf", "README.md"]);
        let m = map(&[("https://hub.test/api/models/o/r?blobs=true", &l)]);
        let repo = HubRepo::parse("o/r").unwrap();
        let r = pollster::block_on(resolve(vec![Given::Hub { repo: repo.clone(), file: None }], HUB, &m));
        assert!(r.urls.is_empty());
        assert_eq!(r.choices.as_ref().map(|c| c.choices.len()), Some(2), "{:?} {:?}", r.choices, r.failed);
        let r = pollster::block_on(resolve(vec![Given::Hub { repo: repo.clone(), file: Some("b-00002-of-00002.gguf".into()) }], HUB, &m));
        let urls: Vec<&str> = r.urls.iter().map(|u| u.url.as_str()).collect();
        assert_eq!(urls, ["https://hub.test/o/r/resolve/main/b-00001-of-00002.gguf", "https://hub.test/o/r/resolve/main/b-00002-of-00002.gguf"]);
        let r = pollster::block_on(resolve(vec![Given::Hub { repo, file: Some("nope.gguf".into()) }], HUB, &m));
        assert_eq!(r.failed, vec![("o/r/nope.gguf".to_string(), "o/r has no file nope.gguf".to_string())]);
    }

    #[test]
    fn hf_arguments() {
        let Some(Ok(Given::Hub { repo, file })) = parse_hf_arg("hf://org/name@v1.0/sub/model.gguf") else { panic!() };
        assert_eq!((repo.repo.as_str(), repo.revision.as_deref(), file.as_deref()), ("org/name", Some("v1.0"), Some("sub/model.gguf")));
        let Some(Ok(Given::Hub { repo, file: None })) = parse_hf_arg("hf://org/name") else { panic!() };
        assert_eq!(repo.rev(), "main");
        assert!(parse_hf_arg("./org/name").is_none());
        assert!(parse_hf_arg("hf://org").unwrap().is_err());
        assert!(parse_hf_arg("hf://org/name/../x").unwrap().is_err());
    }
}
