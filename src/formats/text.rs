//! Checks of text that comes from a file and will be shown to a person: characters that
//! hide or disguise what is displayed (control characters, bidirectional overrides — the
//! "Trojan Source" set), active HTML, and chat templates that reach Python internals (the
//! CVE-2024-34359 class: a Jinja2 template rendered outside a sandbox runs code).
//!
//! Everything here is a linear scan with no allocation on clean text; a hit is counted in
//! a [`Tally`] that keeps only the first few examples, escaped.

use crate::error::clip_to;

/// Examples kept per tally (the rest are counted).
pub const MAX_SUSPICIOUS_EXAMPLES: usize = 3;
/// Bytes of one example quoted in a finding, before escaping (the reader needs to see the
/// odd character, not the whole string).
pub const MAX_EXAMPLE_BYTES: usize = 64;
/// Offending template tags quoted in one `ChatTemplateUnsafe` finding.
pub const MAX_TEMPLATE_EXPRESSIONS: usize = 3;
/// Bytes of one quoted template expression.
pub const MAX_EXPRESSION_BYTES: usize = 120;

/// How strict a check is: what is normal in one kind of text is a red flag in another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextKind {
    /// Identifiers (tensor names, metadata keys): any control character (newlines too),
    /// any bidirectional control (marks too), active HTML.
    Name,
    /// Free text (metadata string values, descriptions, templates): tab, newline and
    /// carriage return are normal; other control characters, bidirectional embeddings /
    /// overrides / isolates and active HTML are not.
    Value,
    /// Vocabulary entries: whitespace tokens ("\n", "\t", form feed) and HTML-like tokens
    /// ("<script") exist in real vocabularies; other control characters and bidirectional
    /// embeddings / overrides / isolates are flagged.
    Token,
}

/// Why a string was flagged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    Control,
    Bidi,
    Html,
}

impl Why {
    pub fn describe(self) -> &'static str {
        match self {
            Why::Control => "a control character",
            Why::Bidi => "a bidirectional override",
            Why::Html => "active HTML",
        }
    }
}

/// Unicode bidirectional embeddings, overrides and isolates (LRE RLE PDF LRO RLO, LRI RLI
/// FSI PDI): they reorder what follows them on screen.
fn is_bidi_override(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// The invisible direction marks (LRM, RLM, ALM): harmless in prose, odd in a name.
fn is_bidi_mark(c: char) -> bool {
    matches!(c, '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// Bytes that can start anything [`suspicious`] looks for: C0 controls and DEL, the lead
/// bytes of C1 controls (0xC2), of U+061C (0xD8) and of U+200E–U+2069 (0xE2), `<` and `:`.
/// Clean text (almost all of it) is passed over by this byte test alone.
#[inline]
fn may_start(b: u8) -> bool {
    b < 0x20 || matches!(b, 0x7F | 0xC2 | 0xD8 | 0xE2 | b'<' | b':')
}

/// The first reason `s` is suspicious as text of this kind, if any.
pub fn suspicious(s: &str, kind: TextKind) -> Option<Why> {
    if !s.bytes().any(may_start) {
        return None;
    }
    for c in s.chars() {
        let control = match kind {
            TextKind::Name => c.is_control(),
            TextKind::Value => c.is_control() && !matches!(c, '\t' | '\n' | '\r'),
            TextKind::Token => c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\u{0B}' | '\u{0C}'),
        };
        if control {
            return Some(Why::Control);
        }
        if is_bidi_override(c) || (kind == TextKind::Name && is_bidi_mark(c)) {
            return Some(Why::Bidi);
        }
    }
    if kind != TextKind::Token && has_active_html(s) {
        return Some(Why::Html);
    }
    None
}

/// Elements that run script, embed another document or change the page wherever they
/// appear (names compared in lower case).
const ACTIVE_TAGS: [&str; 12] = ["script", "iframe", "frame", "frameset", "object", "embed", "applet", "svg", "style", "link", "meta", "base"];
/// Elements that load content or carry event handlers through their attributes: active
/// only with attributes. Bare `<image>`, `<video>`, `<audio>` are placeholders in
/// multimodal chat templates (LFM2.5, Reka Edge) and vocabularies.
const ACTIVE_WITH_ATTRIBUTES: [&str; 9] = ["img", "image", "video", "audio", "source", "input", "body", "form", "math"];

/// Active HTML: a tag of an [`ACTIVE_TAGS`] element, an [`ACTIVE_WITH_ATTRIBUTES`] element
/// with attributes (`<img src=x onerror=…>`), or a `javascript:` / `vbscript:` /
/// `data:text/html` URL. Plain markup (`<b>`, `<table>`) and chat-template markers
/// (`<|im_start|>`, `<s>`, `<image>`) are not active.
pub fn has_active_html(s: &str) -> bool {
    let b = s.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'<' => {
                let rest = b.get(i + 1..).unwrap_or(&[]);
                let closing = rest.first() == Some(&b'/');
                let rest = rest.strip_prefix(b"/").unwrap_or(rest);
                let name_len = rest.iter().take_while(|x| x.is_ascii_alphanumeric()).count();
                let (Some(name), next) = (rest.get(..name_len), rest.get(name_len).copied()) else { continue };
                if name_len == 0 || next.is_some_and(|x| x == b'-' || x == b':') {
                    continue;
                }
                let is = |t: &&str| t.as_bytes().eq_ignore_ascii_case(name);
                let with_attributes = !closing && next.is_some_and(|x| x.is_ascii_whitespace() || x == b'/');
                if ACTIVE_TAGS.iter().any(is) || (with_attributes && ACTIVE_WITH_ATTRIBUTES.iter().any(is)) {
                    return true;
                }
            }
            b':' => {
                let before = b.get(..i).unwrap_or(&[]);
                let after = b.get(i + 1..).unwrap_or(&[]);
                let ends = |w: &[u8]| before.len() >= w.len() && before.get(before.len() - w.len()..).is_some_and(|x| x.eq_ignore_ascii_case(w));
                if ends(b"javascript") || ends(b"vbscript") || (ends(b"data") && after.get(..9).is_some_and(|x| x.eq_ignore_ascii_case(b"text/html"))) {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// `s` cut to [`MAX_EXAMPLE_BYTES`] and escaped (control and bidirectional characters as
/// `\u{…}`), for quoting in a finding.
pub fn escape_example(s: &str) -> String {
    format!("{:?}", clip_to(s, MAX_EXAMPLE_BYTES))
}

/// Suspicious strings of one kind in one file: how many, and the first few (escaped, with
/// their byte offset and the key or field they were found in).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    pub count: u64,
    pub why: Option<Why>,
    pub examples: Vec<(String, u64)>,
    /// The key (or field) of the first hit.
    pub first_field: Option<String>,
    pub first_offset: Option<u64>,
}

impl Tally {
    /// Checks `s` (found at `offset`, under `field`) and counts it when suspicious.
    #[inline]
    pub fn check(&mut self, s: &str, kind: TextKind, offset: u64, field: &str) {
        if let Some(why) = suspicious(s, kind) {
            self.add(s, why, offset, field);
        }
    }

    #[cold]
    fn add(&mut self, s: &str, why: Why, offset: u64, field: &str) {
        self.count = self.count.saturating_add(1);
        if self.why.is_none() {
            self.why = Some(why);
            self.first_field = Some(crate::error::clip(field).into_owned());
            self.first_offset = Some(offset);
        }
        if self.examples.len() < MAX_SUSPICIOUS_EXAMPLES {
            self.examples.push((escape_example(s), offset));
        }
    }

    /// "3 tokens hold a control character (…): "a\u{7}b" (at byte 1234), …".
    pub fn describe(&self, what: &str) -> String {
        let shown: Vec<String> = self.examples.iter().map(|(e, at)| format!("{e} (at byte {at})")).collect();
        let more = self.count.saturating_sub(self.examples.len() as u64);
        format!(
            "{} {what} hold control characters, bidirectional overrides or active HTML (first: {}): {}{}",
            self.count,
            self.why.map_or("?", Why::describe),
            shown.join(", "),
            if more > 0 { format!(", and {more} more") } else { String::new() }
        )
    }
}

// ---------------------------------------------------------------- chat templates

/// Why a template tag is unsafe, checked in order. Legitimate chat templates use loops,
/// tests, `namespace()`, `raise_exception`, string methods; none of them touches a
/// double-underscore attribute, the template's private context, `attr()` lookups or the
/// function objects Jinja exposes to templates (the published CVE-2024-34359 escape goes
/// `cycler.__init__.__globals__.os.popen(…)`; `joiner`, `namespace`, `lipsum`, `range`
/// and `self` work alike).
fn tag_risk(body: &str) -> Option<&'static str> {
    // In the whole tag, string literals included: `x['__class__']` reaches the same.
    if has_dunder(body) {
        return Some("a double-underscore (Python internal) name");
    }
    if body.contains("_TemplateReference__context") {
        return Some("the template's private context");
    }
    let lower = body.to_ascii_lowercase();
    if ["\\x5f", "\\u005f", "\\u0000005f", "\\137"].iter().any(|e| lower.contains(e)) {
        return Some("an escaped underscore (hides an internal name)");
    }
    // In the code only (string literals blanked): prose in a system prompt is not code.
    let code = blank_strings(body);
    if filter_call(&code, "attr") {
        return Some("the attr filter (reads any attribute by name)");
    }
    for (obj, why) in [
        ("cycler", "an attribute of Jinja's cycler function"),
        ("joiner", "an attribute of Jinja's joiner function"),
        ("namespace", "an attribute of Jinja's namespace class"),
        ("lipsum", "an attribute of Jinja's lipsum function"),
        ("range", "an attribute of the range function"),
    ] {
        if word_then(&code, obj, ".") {
            return Some(why);
        }
    }
    if word_then(&code, "self", "._") {
        return Some("a private attribute of the template");
    }
    if word_then(&code, "popen", "") || word_then(&code, "mro", "") {
        return Some("a process or class-hierarchy call");
    }
    None
}

/// `__name__`: two underscores, an identifier, two underscores.
fn has_dunder(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while let Some(p) = find(b, i, b"__") {
        let name = b.get(p + 2..).unwrap_or(&[]);
        let n = name.iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'_').count();
        // The identifier run swallows the closing underscores: `__class__` is "class__".
        if n >= 3 && name.get(..n).is_some_and(|w| w.ends_with(b"__") && w.iter().any(|c| *c != b'_')) {
            return true;
        }
        i = p + 2 + n.max(1);
    }
    false
}

/// The tag body with the contents of '…' and "…" literals replaced by spaces.
fn blank_strings(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in s.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                    out.push(c);
                    continue;
                }
                out.push(' ');
            }
            None => {
                if c == '\'' || c == '"' {
                    quote = Some(c);
                }
                out.push(c);
            }
        }
    }
    out
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// `word` as a whole identifier immediately followed by `then`.
fn word_then(code: &str, word: &str, then: &str) -> bool {
    let b = code.as_bytes();
    let mut i = 0;
    while let Some(p) = find(b, i, word.as_bytes()) {
        let before_ok = p == 0 || b.get(p - 1).is_some_and(|c| !is_ident(*c) && *c != b'.');
        let after = b.get(p + word.len()..).unwrap_or(&[]);
        let after_ok = if then.is_empty() { after.first().is_none_or(|c| !is_ident(*c)) } else { after.starts_with(then.as_bytes()) };
        if before_ok && after_ok {
            return true;
        }
        i = p + 1;
    }
    false
}

/// `| name` used as a filter.
fn filter_call(code: &str, name: &str) -> bool {
    let b = code.as_bytes();
    b.iter().enumerate().any(|(i, c)| {
        if *c != b'|' {
            return false;
        }
        let rest = b.get(i + 1..).unwrap_or(&[]);
        let skip = rest.iter().take_while(|x| x.is_ascii_whitespace()).count();
        let rest = rest.get(skip..).unwrap_or(&[]);
        rest.starts_with(name.as_bytes()) && rest.get(name.len()).is_none_or(|x| !is_ident(*x))
    })
}

/// One offending spot in a chat template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateRisk {
    /// Byte offset of the Jinja tag in the template.
    pub at: usize,
    /// The tag (`{{ … }}` or `{% … %}`), cut to [`MAX_EXPRESSION_BYTES`].
    pub expression: String,
    pub why: &'static str,
}

/// The tags of a Jinja chat template (`{{ … }}` and `{% … %}`; text and `{# … #}`
/// comments are not code) that reach Python internals: the first
/// [`MAX_TEMPLATE_EXPRESSIONS`] and how many in all. Linear in the template's length.
pub fn template_risks(t: &str) -> (Vec<TemplateRisk>, u64) {
    let mut out = Vec::new();
    let mut count = 0u64;
    let b = t.as_bytes();
    let mut i = 0usize;
    while let Some(open) = find(b, i, b"{") {
        let kind = b.get(open + 1).copied();
        let close: &[u8] = match kind {
            Some(b'{') => b"}}",
            Some(b'%') => b"%}",
            Some(b'#') => b"#}",
            _ => {
                i = open + 1;
                continue;
            }
        };
        let body_start = open + 2;
        let end = find(b, body_start, close).unwrap_or(b.len());
        let next = end.saturating_add(2).min(b.len());
        if kind != Some(b'#') {
            if let Some(why) = t.get(body_start..end).and_then(tag_risk) {
                count = count.saturating_add(1);
                if out.len() < MAX_TEMPLATE_EXPRESSIONS {
                    let tag = t.get(open..next).unwrap_or("");
                    out.push(TemplateRisk {
                        at: open,
                        expression: clip_to(tag, MAX_EXPRESSION_BYTES).into_owned(),
                        why,
                    });
                }
            }
        }
        i = next.max(open + 1);
    }
    (out, count)
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    let rest = hay.get(from..)?;
    rest.windows(needle.len()).position(|w| w == needle).map(|p| p + from)
}

/// The message of a `ChatTemplateUnsafe` finding.
pub fn describe_template_risks(name: &str, risks: &[TemplateRisk], count: u64) -> String {
    let shown: Vec<String> = risks.iter().map(|r| format!("{:?} at template byte {} ({})", r.expression, r.at, r.why)).collect();
    let more = count.saturating_sub(risks.len() as u64);
    format!(
        "the chat template {name:?} reaches Python internals, as template-injection exploits do (CVE-2024-34359): {}{}; a loader that renders it outside a sandbox runs code. Shown here as plain text only",
        shown.join("; "),
        if more > 0 { format!("; and {more} more") } else { String::new() }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_text_passes() {
        for s in ["blk.0.attn_q.weight", "general.name", "Llama 3.2 3B Instruct", "naïve — ok", "<|im_start|>", "<s>", "<table>", "a: b", "<image></image>", "<video>", "<script-name>"] {
            for k in [TextKind::Name, TextKind::Value, TextKind::Token] {
                assert_eq!(suspicious(s, k), None, "{s:?} {k:?}");
            }
        }
        assert_eq!(suspicious("line\nbreak\ttab", TextKind::Value), None);
        assert_eq!(suspicious("\n", TextKind::Token), None);
        assert_eq!(suspicious("<script", TextKind::Token), None, "HTML-like tokens exist in real vocabularies");
        assert_eq!(suspicious("\u{200F}", TextKind::Value), None, "a direction mark is normal in prose");
    }

    #[test]
    fn flagged_text() {
        assert_eq!(suspicious("a\nb", TextKind::Name), Some(Why::Control));
        assert_eq!(suspicious("a\u{7}b", TextKind::Value), Some(Why::Control));
        assert_eq!(suspicious("a\u{85}b", TextKind::Token), Some(Why::Control), "C1 control");
        assert_eq!(suspicious("evil\u{202E}fdp.exe", TextKind::Token), Some(Why::Bidi));
        assert_eq!(suspicious("x\u{2066}y", TextKind::Value), Some(Why::Bidi));
        assert_eq!(suspicious("x\u{200E}y", TextKind::Name), Some(Why::Bidi));
        assert_eq!(suspicious("<img src=x onerror=alert(1)>", TextKind::Value), Some(Why::Html));
        assert_eq!(suspicious("</SCRIPT>", TextKind::Name), Some(Why::Html));
        assert_eq!(suspicious("<image src=x onerror=alert(1)>", TextKind::Value), Some(Why::Html));
        assert_eq!(suspicious("<svg/onload=alert(1)>", TextKind::Value), Some(Why::Html));
        assert_eq!(suspicious("click javascript:alert(1)", TextKind::Value), Some(Why::Html));
        assert_eq!(suspicious("data:TEXT/HTML;base64,xx", TextKind::Value), Some(Why::Html));
        let mut t = Tally::default();
        for (i, s) in ["ok", "a\u{202E}b", "c\u{1}", "d\u{1}", "e\u{1}", "f"].iter().enumerate() {
            t.check(s, TextKind::Token, i as u64, "tokenizer.ggml.tokens");
        }
        assert_eq!(t.count, 4);
        assert_eq!(t.examples, vec![("\"a\\u{202e}b\"".to_string(), 1), ("\"c\\u{1}\"".to_string(), 2), ("\"d\\u{1}\"".to_string(), 3)]);
        let d = t.describe("tokens");
        assert!(d.starts_with("4 tokens hold") && d.ends_with("and 1 more"), "{d}");
    }

    #[test]
    fn template_red_flags() {
        // The CVE-2024-34359 proof of concept (the llama-cpp-python advisory).
        let poc = "{% for x in ().__class__.__base__.__subclasses__() %}{% if \"warning\" in x.__name__ %}{{x()._module.__builtins__['__import__']('os').popen(\"touch /tmp/retr0reg\")}}{%endif%}{% endfor %}";
        let (r, n) = template_risks(poc);
        assert_eq!(n, 3);
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].at, 0);
        assert!(r[0].expression.starts_with("{% for x in ().__class__"), "{:?}", r[0]);
        for bad in [
            "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
            "{{ joiner.__init__.__globals__ }}",
            "{{ namespace.__init__.__globals__ }}",
            "{{ self._TemplateReference__context.cycler }}",
            "{{ lipsum['\\x5f\\x5fglobals\\x5f\\x5f'] }}",
            "{{ ''|attr('\\x5f\\x5fclass\\x5f\\x5f') }}",
            "{% set x = range.__class__ %}",
        ] {
            let (r, n) = template_risks(bad);
            assert_eq!((r.len(), n), (1, 1), "{bad}");
            assert_eq!(r[0].expression, bad);
        }
        // Real templates (abridged from Llama 3 and Qwen2/ChatML) are clean; text outside
        // tags and comments are not code.
        let llama3 = "{{- bos_token }}{%- set ns = namespace(found=false) -%}{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{%- if ns.found %}{{ raise_exception('x') }}{% endif %}{%- endfor %}{# __class__ in a comment #} os.popen in text";
        assert_eq!(template_risks(llama3), (vec![], 0));
        // Prose inside string literals is not code.
        assert_eq!(template_risks("{% set sys = 'Stay within range. It is important to popen nothing.' %}{{ sys }}"), (vec![], 0));
        let chatml = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
        assert_eq!(template_risks(chatml), (vec![], 0));
        let msg = describe_template_risks("default", &template_risks(poc).0, 3);
        assert!(msg.contains("CVE-2024-34359") && msg.contains("__class__"), "{msg}");
    }
}
