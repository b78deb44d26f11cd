//! Imports: GLOBAL, STACK_GLOBAL and EXT1/2/4 recorded ([`Machine::record`]: judged,
//! counted, listed up to [`MAX_GLOBALS`]), and the callables the walker follows
//! ([`Known`]), told by what an import or `__import__("x")` names.

use super::{GlobalKey, Machine, Res};
use crate::error::clip_owned;
use crate::formats::pickle::eval::text::text;
use crate::formats::pickle::eval::value::{GlobalRef, Obj, Value};
use crate::formats::pickle::safety::{self, GlobalVerdict};

/// Distinct imports listed per walk beyond the ones that cannot be numerous (allowed ones,
/// and the callables the walker follows): real files import a few dozen things; one
/// crafted to import 200,000 distinct names made a record and an explanation each. Past
/// this the imports are counted by verdict
/// ([`MoreGlobals`](crate::formats::pickle::eval::MoreGlobals)), never dropped from the
/// verdict.
pub const MAX_GLOBALS: usize = 4096;

/// Known callables, recognised by their resolved `module.name`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Known {
    RebuildTensor,
    RebuildTensorV2,
    RebuildTensorV3,
    RebuildParameter,
    RebuildFromTypeV2,
    OrderedDict,
    CodecsEncode,
    Loads,
    GetAttr,
    Import,
}

fn known(module: &str, name: &str) -> Option<Known> {
    Some(match (module, name) {
        ("torch._utils", "_rebuild_tensor") => Known::RebuildTensor,
        ("torch._utils", "_rebuild_tensor_v2") => Known::RebuildTensorV2,
        ("torch._utils", "_rebuild_tensor_v3") => Known::RebuildTensorV3,
        ("torch._utils", "_rebuild_parameter" | "_rebuild_parameter_with_state") => {
            Known::RebuildParameter
        }
        ("torch._tensor", "_rebuild_from_type_v2") => Known::RebuildFromTypeV2,
        ("collections", "OrderedDict") => Known::OrderedDict,
        ("_codecs" | "codecs", "encode") => Known::CodecsEncode,
        ("pickle" | "_pickle" | "cPickle" | "dill" | "cloudpickle", "loads" | "_loads") => {
            Known::Loads
        }
        ("builtins", "getattr") => Known::GetAttr,
        ("builtins", "__import__") | ("importlib", "import_module") => Known::Import,
        _ => return None,
    })
}

impl Machine<'_, '_> {
    /// GLOBAL.
    pub(super) fn global(&mut self, (m, n): (&[u8], &[u8])) -> Res<()> {
        let g = self.record(Some(text(m)), Some(text(n)), "GLOBAL", None);
        self.push(g)
    }

    /// STACK_GLOBAL: the module and name are the top two values.
    pub(super) fn stack_global(&mut self) -> Res<()> {
        let name = self.pop()?;
        let module = self.pop()?;
        let as_str = |v: &Value| match v {
            Value::Str(s) => Some(s.to_string()),
            _ => None,
        };
        let (m, n) = (as_str(&module), as_str(&name));
        let note = if m.is_none() || n.is_none() {
            Some(describe_operands(&module, &name))
        } else {
            None
        };
        let g = self.record(m, n, "STACK_GLOBAL", note);
        self.push(g)
    }

    /// EXT1, EXT2, EXT4 (`name`): an extension code, which names no import in the file.
    pub(super) fn ext(&mut self, name: &'static str, code: i64) -> Res<()> {
        let note = format!(
            "extension code {code}: resolved through copyreg's extension registry at load time, which a file cannot show; no standard entry exists"
        );
        let g = self.record(None, None, name, Some(note));
        self.push(g)
    }

    /// Records an import and returns the value it pushes: the same import again (module,
    /// name, opcode, nesting) is counted on its first record; past [`MAX_GLOBALS`] distinct
    /// ones, an import the walker neither allows nor follows is counted by verdict only
    /// (and pushes an unknown object).
    pub(super) fn record(
        &mut self,
        module: Option<String>,
        name: Option<String>,
        opcode: &'static str,
        note: Option<String>,
    ) -> Value {
        let mut written = None;
        let (mut module, mut name) = (module, name);
        if self.proto < 3 {
            if let (Some(m), Some(n)) = (&module, &name) {
                if let Some((m2, n2)) = safety::compat_rename(m, n) {
                    written = Some((m.clone(), n.clone()));
                    module = Some(m2);
                    name = Some(n2);
                }
            }
        }
        let key: GlobalKey = (self.sink.key_of(&module), self.sink.key_of(&name), opcode, self.nesting);
        if let Some(&i) = self.sink.global_index.get(&key) {
            if let Some(g) = self.sink.globals.get_mut(i as usize) {
                g.count = g.count.saturating_add(1);
            }
            return Value::Global(i);
        }
        let (verdict, why) = match (&module, &name, note) {
            (Some(m), Some(n), _) => {
                let (mut v, mut why) = safety::judge(m, n);
                // judge the name as written too: a protocol 3+ stream is not renamed, but
                // a conservative reading does not depend on the PROTO opcode
                if let Some((wm, wn)) = &written {
                    let (v2, why2) = safety::judge(wm, wn);
                    if v2 == GlobalVerdict::Dangerous && v != GlobalVerdict::Dangerous {
                        v = v2;
                        why = why2;
                    }
                }
                (v, why)
            }
            (_, _, Some(note)) if opcode.starts_with("EXT") => (GlobalVerdict::Unknown, note),
            (_, _, note) => (
                GlobalVerdict::Dangerous,
                format!(
                    "the module or name is computed at run time ({}), so what it imports cannot be known without running the pickle",
                    note.unwrap_or_default()
                ),
            ),
        };
        let followed = match (&module, &name) {
            (Some(m), Some(n)) => known(m, n).is_some(),
            _ => false,
        };
        if self.sink.globals.len() >= MAX_GLOBALS && verdict != GlobalVerdict::Allowed && !followed {
            let more = &mut self.sink.more_globals;
            more.count = more.count.saturating_add(1);
            match verdict {
                GlobalVerdict::Dangerous => more.dangerous = more.dangerous.saturating_add(1),
                GlobalVerdict::Unknown => more.unknown = more.unknown.saturating_add(1),
                GlobalVerdict::Allowed => {}
            }
            return Value::Unknown;
        }
        // judged on the whole names above; kept (and reported) clipped, with their length:
        // a 16 MiB protocol-0 line is not copied into the report (tests/fuzz_regressions.rs)
        let (module, name) = (module.map(clip_owned), name.map(clip_owned));
        let written = written.map(|(m, n)| (clip_owned(m), clip_owned(n)));
        let strings = |o: &Option<String>| o.as_ref().map_or(0, String::len);
        let held = std::mem::size_of::<GlobalRef>()
            + std::mem::size_of::<GlobalKey>()
            + 2 * (strings(&module) + strings(&name))
            + why.len()
            + written.as_ref().map_or(0, |(m, n)| m.len() + n.len());
        self.sink.hold(held);
        let offset = self.here();
        let id = u32::try_from(self.sink.globals.len()).unwrap_or(u32::MAX);
        self.sink.global_index.insert(key, id);
        self.sink.globals.push(GlobalRef {
            module,
            name,
            opcode,
            offset,
            member: self.ctx.member.clone(),
            verdict,
            why,
            written,
            nesting: self.nesting,
            count: 1,
        });
        Value::Global(id)
    }

    pub(super) fn known_of(&self, v: &Value) -> Option<Known> {
        let Value::Global(i) = v else { return None };
        let g = self.sink.globals.get(*i as usize)?;
        let (m, n) = g.full()?;
        known(m, n)
    }

    /// What a value names as (module, attribute path): an import, or `__import__("x")`.
    pub(super) fn module_path_of(&self, v: &Value) -> Option<(String, Option<String>)> {
        match v {
            Value::Global(i) => {
                let g = self.sink.globals.get(*i as usize)?;
                let (m, n) = g.full()?;
                Some((m.to_string(), Some(n.to_string())))
            }
            Value::Obj(_) => match self.obj(v)? {
                Obj::Instance(inst) if self.known_of(&inst.func) == Some(Known::Import) => {
                    match self.tuple_ref(&inst.args)?.first()? {
                        Value::Str(m) => Some((m.to_string(), None)),
                        _ => None,
                    }
                }
                _ => None,
            },
            _ => None,
        }
    }
}

fn describe_operands(module: &Value, name: &Value) -> String {
    let d = |v: &Value| match v {
        Value::Str(s) => format!("{s:?}"),
        Value::Obj(_) => "the result of a call".to_string(),
        Value::Global(_) => "an imported object".to_string(),
        Value::LongStr(n) => format!("a {n}-byte string"),
        other => format!("{other:?}"),
    };
    format!("module: {}, name: {}", d(module), d(name))
}
