//! The findings of a scan as a SARIF 2.1.0 log (`tensorpeek scan --format sarif`), for code
//! scanning (GitHub's upload-sarif, any SARIF viewer): one rule per finding code with its
//! documentation ([`crate::error::docs`]), one result per finding at its file and byte
//! offset, and every scanned file as an artifact with its format and safety verdict.
//! `tests/sarif.rs` validates the output against the SARIF 2.1.0 schema.

use crate::error::{Code, Finding};
use crate::formats::pickle::Verdict;
use crate::vocab::Format;
use serde_json::{json, Map, Value};

/// The SARIF version written, and its schema.
pub const SARIF_VERSION: &str = "2.1.0";
pub const SARIF_SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
/// The base id under which artifact URIs are relative (the scan root).
pub const ROOT_BASE_ID: &str = "SRCROOT";

/// One scanned file (or the folder of a merged model) and what was found in it.
#[derive(Clone, Debug)]
pub struct Artifact {
    /// The file's URI relative to the scan root (percent-encoded), or an absolute `file:`
    /// URI for a file outside it.
    pub uri: String,
    /// Its length in bytes (`None` for a folder).
    pub length: Option<u64>,
    pub format: Format,
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
}

/// How the log is written.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The scan root as an absolute `file:` URI ending in `/` (the base of relative URIs).
    pub root_uri: Option<String>,
    /// Where the documentation lives (a repository's file URL ending in `/`): each rule's
    /// `helpUri` is this + its page (`docs/codes.md#chattemplateunsafe`). Without it the
    /// rules carry their help as text only.
    pub docs_url: Option<String>,
}

/// The result level of a finding: `error` for an error and for a finding that makes the
/// file dangerous (`ChatTemplateUnsafe`); `warning` for a warning that makes it suspicious
/// (an import off the allow-list, hidden characters); `note` for the other warnings (the
/// file loads; something deserves a look).
pub fn level(f: &Finding) -> &'static str {
    match f.code {
        _ if f.is_error() => "error",
        Code::ChatTemplateUnsafe => "error",
        Code::UnknownGlobal | Code::SuspiciousText | Code::SuspiciousName => "warning",
        _ => "note",
    }
}

/// GitHub's `security-severity` for the codes that bear on what loading a file does (its
/// alerts are then ranked critical / medium); none for the others.
fn security_severity(code: Code) -> Option<&'static str> {
    match code {
        Code::DangerousGlobal | Code::ChatTemplateUnsafe => Some("9.0"),
        Code::UnknownGlobal => Some("5.0"),
        Code::SuspiciousText | Code::SuspiciousName => Some("4.0"),
        _ => None,
    }
}

/// The anchor of a code's section in docs/codes.md (GitHub's rule: the heading lowercased).
pub fn code_anchor(code: Code) -> String {
    format!("docs/codes.md#{}", code.as_str().to_ascii_lowercase())
}

fn rule(code: Code, docs_url: Option<&str>) -> Value {
    let d = code.doc();
    let mut r = json!({
        "id": code.as_str(),
        "name": code.as_str(),
        "shortDescription": { "text": d.short },
        "fullDescription": { "text": d.full },
        "help": {
            "text": format!("{} {} More: {}", d.short, d.full, d.page),
            "markdown": format!("**{}** {}\n\nMore: [{}]({})", d.short, d.full, d.page, docs_url.map_or_else(|| d.page.to_string(), |u| format!("{u}{}", d.page))),
        },
    });
    let mut props = Map::new();
    let tags: Vec<&str> = if security_severity(code).is_some() { vec!["security", "model-file"] } else { vec!["model-file"] };
    props.insert("tags".into(), json!(tags));
    if let Some(s) = security_severity(code) {
        props.insert("security-severity".into(), json!(s));
    }
    if let (Some(u), Some(o)) = (docs_url, r.as_object_mut()) {
        o.insert("helpUri".into(), json!(format!("{u}{}", code_anchor(code))));
    }
    if let Some(o) = r.as_object_mut() {
        o.insert("properties".into(), Value::Object(props));
    }
    r
}

fn location(uri: &str, relative: bool, index: usize, offset: Option<u64>) -> Value {
    let mut artifact = json!({ "uri": uri, "index": index });
    if let (true, Some(o)) = (relative, artifact.as_object_mut()) {
        o.insert("uriBaseId".into(), json!(ROOT_BASE_ID));
    }
    let mut physical = json!({ "artifactLocation": artifact });
    if let (Some(off), Some(o)) = (offset, physical.as_object_mut()) {
        o.insert("region".into(), json!({ "byteOffset": off }));
    }
    json!({ "physicalLocation": physical })
}

/// The SARIF log of a scan: one run, every code as a rule, every finding a result.
pub fn log(artifacts: &[Artifact], options: &Options) -> Value {
    let docs = options.docs_url.as_deref();
    let rules: Vec<Value> = Code::ALL.iter().map(|c| rule(*c, docs)).collect();
    let mut results = Vec::new();
    let mut listed = Vec::with_capacity(artifacts.len());
    // one artifact per URI (a merged model's findings about a shard go to the shard's)
    let mut index_of: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for a in artifacts {
        // a path relative to the scan root; a file:, https: or hf: URI stands alone
        let relative = !a.uri.starts_with("file:") && !a.uri.contains("://");
        let i = *index_of.entry(a.uri.as_str()).or_insert_with(|| {
            let mut loc = json!({ "uri": a.uri });
            if let (true, Some(o)) = (relative, loc.as_object_mut()) {
                o.insert("uriBaseId".into(), json!(ROOT_BASE_ID));
            }
            let mut art = json!({
                "location": loc,
                "properties": { "format": a.format, "verdict": a.verdict },
            });
            if let (Some(len), Some(o)) = (a.length, art.as_object_mut()) {
                o.insert("length".into(), json!(len));
            }
            listed.push(art);
            listed.len() - 1
        });
        for f in &a.findings {
            let index = Code::ALL.iter().position(|c| *c == f.code).unwrap_or(0);
            let mut props = Map::new();
            props.insert("verdict".into(), json!(a.verdict));
            if let Some(t) = &f.tensor {
                props.insert("tensor".into(), json!(t));
            }
            if let Some(field) = &f.field {
                props.insert("field".into(), json!(field));
            }
            if let Some(file) = &f.file {
                props.insert("file".into(), json!(file));
            }
            if f.more > 0 {
                props.insert("more".into(), json!(f.more));
            }
            results.push(json!({
                "ruleId": f.code.as_str(),
                "ruleIndex": index,
                "level": level(f),
                "message": { "text": f.message },
                "locations": [location(&a.uri, relative, i, f.offset)],
                "properties": props,
            }));
        }
    }
    let mut driver = json!({
        "name": crate::report::TOOL,
        "version": crate::report::VERSION,
        "semanticVersion": crate::report::VERSION,
        "rules": rules,
    });
    if let (Some(u), Some(o)) = (docs, driver.as_object_mut()) {
        o.insert("informationUri".into(), json!(format!("{u}README.md")));
    }
    let mut run = json!({
        "tool": { "driver": driver },
        "artifacts": listed,
        "results": results,
        "columnKind": "unicodeCodePoints",
    });
    if let (Some(root), Some(o)) = (&options.root_uri, run.as_object_mut()) {
        o.insert("originalUriBaseIds".into(), json!({ ROOT_BASE_ID: { "uri": root } }));
    }
    json!({
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [run],
    })
}
