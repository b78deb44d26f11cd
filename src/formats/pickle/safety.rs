//! The safety verdict: which imports (`GLOBAL`, `STACK_GLOBAL`, `INST`, `EXT*`) a pickle
//! would perform, and what each can do.
//!
//! Three tables, all data:
//! - [`ALLOWED`]: what `torch.load(weights_only=True)` accepts by default
//!   (`torch/_weights_only_unpickler.py`, `_get_allowed_globals` and
//!   `_tensor_rebuild_functions`, torch 2.15), plus numpy's array reconstruction, which
//!   `numpy.load(allow_pickle=True)` needs for object arrays;
//! - [`DANGEROUS`]: (module, name or `*`, why) for everything that can run code or touch the
//!   system;
//! - CPython's `_compat_pickle` renames (`IMPORT_MAPPING`, `NAME_MAPPING`), which the
//!   unpickler applies to protocol 0–2 streams.
//!
//! How a name resolves: `find_class(module, name)` imports `module`, then (protocol ≥ 4)
//! follows `name` attribute by attribute (`"path.os.system"` on `os` is `os.path.os.system`,
//! which is `os.system`). So a dotted path is judged on every step: any module on the way
//! that is dangerous as a whole, or any `(module, attribute)` pair of the table, makes the
//! global dangerous. A name is allowed only when the whole `module.name` is on the
//! allow-list, exactly as torch compares it.

use serde::{Deserialize, Serialize};

/// Verdict for one global.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GlobalVerdict {
    /// On the allow-list.
    Allowed,
    /// Not on either list: an arbitrary class or function whose effect we cannot vouch for.
    Unknown,
    /// Can run code or touch the system.
    Dangerous,
}

/// Verdict for a whole file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Safe,
    Suspicious,
    Dangerous,
    Error,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Safe => "safe",
            Verdict::Suspicious => "suspicious",
            Verdict::Dangerous => "dangerous",
            Verdict::Error => "error",
        }
    }
}

const STORAGES: [&str; 17] = [
    "DoubleStorage",
    "FloatStorage",
    "HalfStorage",
    "LongStorage",
    "IntStorage",
    "ShortStorage",
    "CharStorage",
    "ByteStorage",
    "BoolStorage",
    "BFloat16Storage",
    "ComplexDoubleStorage",
    "ComplexFloatStorage",
    "QInt8Storage",
    "QInt32Storage",
    "QUInt8Storage",
    "QUInt4x2Storage",
    "QUInt2x4Storage",
];
/// torch._storage_classes under torch.cuda (no quantized ones).
const CUDA_STORAGES: [&str; 12] = [
    "DoubleStorage",
    "FloatStorage",
    "HalfStorage",
    "LongStorage",
    "IntStorage",
    "ShortStorage",
    "CharStorage",
    "ByteStorage",
    "BoolStorage",
    "BFloat16Storage",
    "ComplexDoubleStorage",
    "ComplexFloatStorage",
];
/// torch._tensor_classes: dense CPU and CUDA.
const TENSOR_CLASSES: [&str; 10] = [
    "ShortTensor",
    "HalfTensor",
    "FloatTensor",
    "BoolTensor",
    "CharTensor",
    "BFloat16Tensor",
    "DoubleTensor",
    "IntTensor",
    "LongTensor",
    "ByteTensor",
];
/// torch._tensor_classes: sparse (CPU and CUDA have no BoolTensor).
const SPARSE_TENSOR_CLASSES: [&str; 9] = [
    "ShortTensor",
    "HalfTensor",
    "FloatTensor",
    "CharTensor",
    "BFloat16Tensor",
    "DoubleTensor",
    "IntTensor",
    "LongTensor",
    "ByteTensor",
];
/// torch dtypes (str(dtype) = "torch.<name>"): the storage-type map, `_new_dtypes()`,
/// uint1..7 and int1..7.
const DTYPES: [&str; 47] = [
    "float64",
    "float32",
    "float16",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
    "bfloat16",
    "complex128",
    "complex64",
    "qint8",
    "qint32",
    "quint8",
    "quint4x2",
    "quint2x4",
    "float8_e4m3fnuz",
    "bits8",
    "uint16",
    "bits16",
    "float8_e8m0fnu",
    "uint32",
    "float8_e5m2",
    "bits1x8",
    "float4_e2m1fn_x2",
    "uint64",
    "float8_e4m3fn",
    "complex32",
    "bits2x4",
    "bcomplex32",
    "float8_e5m2fnuz",
    "bits4x2",
    "uint1",
    "uint2",
    "uint3",
    "uint4",
    "uint5",
    "uint6",
    "uint7",
    "int1",
    "int2",
    "int3",
    "int4",
    "int5",
    "int6",
    "int7",
];
const QSCHEMES: [&str; 5] = [
    "per_tensor_affine",
    "per_tensor_symmetric",
    "per_channel_affine",
    "per_channel_symmetric",
    "per_channel_affine_float_qparams",
];
/// torch._utils rebuild functions (`_tensor_rebuild_functions`).
const REBUILD: [&str; 11] = [
    "_rebuild_parameter",
    "_rebuild_parameter_with_state",
    "_rebuild_qtensor",
    "_rebuild_tensor",
    "_rebuild_tensor_v2",
    "_rebuild_tensor_v3",
    "_rebuild_sparse_tensor",
    "_rebuild_meta_tensor_no_storage",
    "_rebuild_wrapper_subclass",
    "_rebuild_device_tensor_from_numpy",
    "_rebuild_device_tensor_from_cpu_tensor",
];

/// Single allowed globals with the reason they are harmless.
pub const ALLOWED: [(&str, &str); 22] = [
    (
        "collections.OrderedDict",
        "a dict (state dicts are OrderedDicts)",
    ),
    ("collections.Counter", "a dict of counts"),
    (
        "torch.nn.parameter.Parameter",
        "a tensor marked as a parameter",
    ),
    ("torch.serialization._get_layout", "names a tensor layout"),
    ("torch.Size", "a tensor shape (a tuple)"),
    ("torch.Tensor", "the tensor class"),
    ("torch.device", "names a device"),
    ("torch.storage.TypedStorage", "a tensor storage"),
    ("torch.storage.UntypedStorage", "a tensor storage"),
    (
        "torch._tensor._rebuild_from_type_v2",
        "rebuilds a tensor subclass from allowed parts",
    ),
    (
        "_codecs.encode",
        "turns a str into bytes (how protocols 0-2 store bytes)",
    ),
    ("builtins.bytearray", "a bytearray"),
    ("builtins.set", "a set"),
    ("builtins.frozenset", "a frozenset"),
    ("builtins.complex", "a complex number"),
    (
        "numpy.core.multiarray._reconstruct",
        "rebuilds a numpy array (numpy < 2)",
    ),
    (
        "numpy._core.multiarray._reconstruct",
        "rebuilds a numpy array",
    ),
    (
        "numpy.core.multiarray.scalar",
        "rebuilds a numpy scalar (numpy < 2)",
    ),
    ("numpy._core.multiarray.scalar", "rebuilds a numpy scalar"),
    ("numpy.ndarray", "the numpy array class"),
    ("numpy.dtype", "a numpy dtype"),
    (
        "numpy.core.multiarray._frombuffer",
        "rebuilds a numpy array from bytes (numpy < 2)",
    ),
];

/// Is `module.name` on the allow-list? Returns why it is harmless.
pub fn allowed(module: &str, name: &str) -> Option<&'static str> {
    let full_is = |m: &str, n: &str| module == m && name == n;
    if let Some((_, why)) = ALLOWED
        .iter()
        .find(|(full, _)| full.rsplit_once('.').is_some_and(|(m, n)| full_is(m, n)))
    {
        return Some(why);
    }
    match module {
        "torch" if STORAGES.contains(&name) => Some("a tensor storage class"),
        "torch" if TENSOR_CLASSES.contains(&name) => Some("a tensor class"),
        "torch" if DTYPES.contains(&name) => Some("a tensor dtype"),
        "torch" if QSCHEMES.contains(&name) => Some("a quantization scheme"),
        "torch.cuda" if CUDA_STORAGES.contains(&name) => Some("a tensor storage class"),
        "torch.cuda" | "torch.sparse" | "torch.cuda.sparse"
            if TENSOR_CLASSES.contains(&name)
                && (module == "torch.cuda" || SPARSE_TENSOR_CLASSES.contains(&name)) =>
        {
            Some("a tensor class")
        }
        "torch._utils" if REBUILD.contains(&name) => Some("rebuilds a tensor from its storage"),
        _ => None,
    }
}

/// (module, name or `*` for the whole module, why). A module row matches that module and
/// every attribute reached through it.
#[rustfmt::skip]
pub const DANGEROUS: &[(&str, &str, &str)] = &[
    ("os", "*", "operating-system calls: runs commands, opens, changes and deletes files"),
    ("posix", "*", "the os module's POSIX implementation (os.system is posix.system)"),
    ("nt", "*", "the os module's Windows implementation"),
    ("_posixsubprocess", "*", "forks and runs programs"),
    ("_winapi", "*", "Windows process and file calls"),
    ("subprocess", "*", "runs programs"),
    ("commands", "*", "runs shell commands (Python 2)"),
    ("popen2", "*", "runs shell commands (Python 2)"),
    ("pty", "*", "spawns programs on a terminal"),
    ("platform", "popen", "runs a shell command"),
    ("builtins", "eval", "evaluates Python code"),
    ("builtins", "exec", "runs Python code"),
    ("builtins", "execfile", "runs a Python file"),
    ("builtins", "compile", "compiles Python code"),
    ("builtins", "getattr", "reaches any attribute by name at run time"),
    ("builtins", "setattr", "changes any attribute at run time"),
    ("builtins", "delattr", "deletes attributes at run time"),
    ("builtins", "__import__", "imports any module"),
    ("builtins", "open", "opens files"),
    ("builtins", "breakpoint", "starts the debugger"),
    ("builtins", "input", "reads the terminal"),
    ("builtins", "globals", "reaches the interpreter's globals"),
    ("builtins", "locals", "reaches the interpreter's locals"),
    ("builtins", "vars", "reaches any object's namespace"),
    ("builtins", "exit", "stops the interpreter"),
    ("builtins", "quit", "stops the interpreter"),
    ("builtins", "help", "starts the interactive help (a pager)"),
    ("io", "open", "opens files"),
    ("_io", "open", "opens files"),
    ("io", "FileIO", "opens files"),
    ("_io", "FileIO", "opens files"),
    ("runpy", "*", "runs Python modules and files"),
    ("importlib", "*", "imports any module"),
    ("imp", "*", "imports any module"),
    ("pkgutil", "*", "imports modules by name"),
    ("zipimport", "*", "imports code from zip files"),
    ("webbrowser", "*", "opens URLs by starting a browser"),
    ("socket", "*", "opens network connections"),
    ("_socket", "*", "opens network connections"),
    ("ssl", "*", "opens network connections"),
    ("urllib", "*", "fetches URLs"),
    ("http", "*", "HTTP client and server"),
    ("ftplib", "*", "FTP client"),
    ("smtplib", "*", "sends mail"),
    ("telnetlib", "*", "telnet client"),
    ("requests", "*", "fetches URLs"),
    ("shutil", "*", "copies, moves and deletes files and trees"),
    ("tempfile", "*", "creates files"),
    ("pickle", "*", "unpickles nested data (pickle.loads runs a second pickle)"),
    ("_pickle", "*", "unpickles nested data"),
    ("cPickle", "*", "unpickles nested data (Python 2)"),
    ("dill", "*", "unpickles nested data and code"),
    ("cloudpickle", "*", "unpickles nested data and code"),
    ("joblib", "*", "unpickles nested data"),
    ("shelve", "*", "unpickles stored data"),
    ("marshal", "*", "loads code objects"),
    ("types", "*", "builds code and function objects"),
    ("operator", "attrgetter", "reaches any attribute by name at run time"),
    ("operator", "methodcaller", "calls any method by name at run time"),
    ("operator", "itemgetter", "reaches items at run time (a gadget with attrgetter)"),
    ("functools", "partial", "calls a stored callable with stored arguments"),
    ("functools", "reduce", "calls a callable repeatedly"),
    ("code", "*", "runs Python code interactively"),
    ("codeop", "*", "compiles Python code"),
    ("pdb", "*", "runs code under the debugger"),
    ("bdb", "*", "runs code under the debugger"),
    ("timeit", "*", "runs code strings"),
    ("trace", "*", "runs code under the tracer"),
    ("profile", "*", "runs code strings under the profiler"),
    ("cProfile", "*", "runs code strings under the profiler"),
    ("doctest", "*", "runs code from docstrings"),
    ("sys", "*", "interpreter internals: modules, exit, hooks"),
    ("ctypes", "*", "calls native code"),
    ("_ctypes", "*", "calls native code"),
    ("cffi", "*", "calls native code"),
    ("asyncio", "*", "starts subprocesses and connections (asyncio.create_subprocess_*)"),
    ("multiprocessing", "*", "starts processes"),
    ("signal", "*", "changes signal handlers"),
    ("gc", "*", "reaches every live object"),
    ("numpy.testing._private.utils", "runstring", "exec()s a string"),
    ("torch.hub", "*", "downloads and runs code"),
    ("torch", "load", "loads a nested checkpoint"),
    ("torch.serialization", "load", "loads a nested checkpoint"),
    ("torch._dynamo", "*", "compiles and runs code"),
    ("torch.jit", "*", "compiles and runs TorchScript"),
    ("torch._C", "*", "native torch internals"),
    ("torch.storage", "_load_from_bytes", "loads a nested checkpoint from bytes"),
];

/// CPython `_compat_pickle.IMPORT_MAPPING` (Python 2 module → Python 3 module).
#[rustfmt::skip]
pub const IMPORT_MAPPING: [(&str, &str); 55] = [
    ("BaseHTTPServer", "http.server"),
    ("CGIHTTPServer", "http.server"),
    ("ConfigParser", "configparser"),
    ("Cookie", "http.cookies"),
    ("Dialog", "tkinter.dialog"),
    ("DocXMLRPCServer", "xmlrpc.server"),
    ("FileDialog", "tkinter.filedialog"),
    ("HTMLParser", "html.parser"),
    ("Queue", "queue"),
    ("ScrolledText", "tkinter.scrolledtext"),
    ("SimpleDialog", "tkinter.simpledialog"),
    ("SimpleHTTPServer", "http.server"),
    ("SimpleXMLRPCServer", "xmlrpc.server"),
    ("SocketServer", "socketserver"),
    ("StringIO", "io"),
    ("Tix", "tkinter.tix"),
    ("Tkconstants", "tkinter.constants"),
    ("Tkdnd", "tkinter.dnd"),
    ("Tkinter", "tkinter"),
    ("UserDict", "collections"),
    ("UserList", "collections"),
    ("UserString", "collections"),
    ("__builtin__", "builtins"),
    ("_abcoll", "collections.abc"),
    ("_elementtree", "xml.etree.ElementTree"),
    ("_winreg", "winreg"),
    ("anydbm", "dbm"),
    ("cPickle", "pickle"),
    ("cStringIO", "io"),
    ("commands", "subprocess"),
    ("cookielib", "http.cookiejar"),
    ("copy_reg", "copyreg"),
    ("dbhash", "dbm.bsd"),
    ("dbm", "dbm.ndbm"),
    ("dumbdbm", "dbm.dumb"),
    ("dummy_thread", "_dummy_thread"),
    ("gdbm", "dbm.gnu"),
    ("htmlentitydefs", "html.entities"),
    ("httplib", "http.client"),
    ("markupbase", "_markupbase"),
    ("repr", "reprlib"),
    ("robotparser", "urllib.robotparser"),
    ("test.test_support", "test.support"),
    ("thread", "_thread"),
    ("tkColorChooser", "tkinter.colorchooser"),
    ("tkCommonDialog", "tkinter.commondialog"),
    ("tkFileDialog", "tkinter.filedialog"),
    ("tkFont", "tkinter.font"),
    ("tkMessageBox", "tkinter.messagebox"),
    ("tkSimpleDialog", "tkinter.simpledialog"),
    ("ttk", "tkinter.ttk"),
    ("urllib2", "urllib.request"),
    ("urlparse", "urllib.parse"),
    ("whichdb", "dbm"),
    ("xmlrpclib", "xmlrpc.client"),
];

/// A `_compat_pickle.NAME_MAPPING` row: (module, name) as written → as imported.
pub type Rename = ((&'static str, &'static str), (&'static str, &'static str));

/// CPython `_compat_pickle.NAME_MAPPING`.
#[rustfmt::skip]
pub const NAME_MAPPING: [Rename; 88] = [
    (("UserDict", "IterableUserDict"), ("collections", "UserDict")),
    (("UserDict", "UserDict"), ("collections", "UserDict")),
    (("UserList", "UserList"), ("collections", "UserList")),
    (("UserString", "UserString"), ("collections", "UserString")),
    (("__builtin__", "basestring"), ("builtins", "str")),
    (("__builtin__", "intern"), ("sys", "intern")),
    (("__builtin__", "long"), ("builtins", "int")),
    (("__builtin__", "reduce"), ("functools", "reduce")),
    (("__builtin__", "unichr"), ("builtins", "chr")),
    (("__builtin__", "unicode"), ("builtins", "str")),
    (("__builtin__", "xrange"), ("builtins", "range")),
    (("_multiprocessing", "Connection"), ("multiprocessing.connection", "Connection")),
    (("_socket", "fromfd"), ("socket", "fromfd")),
    (("exceptions", "ArithmeticError"), ("builtins", "ArithmeticError")),
    (("exceptions", "AssertionError"), ("builtins", "AssertionError")),
    (("exceptions", "AttributeError"), ("builtins", "AttributeError")),
    (("exceptions", "BaseException"), ("builtins", "BaseException")),
    (("exceptions", "BufferError"), ("builtins", "BufferError")),
    (("exceptions", "BytesWarning"), ("builtins", "BytesWarning")),
    (("exceptions", "DeprecationWarning"), ("builtins", "DeprecationWarning")),
    (("exceptions", "EOFError"), ("builtins", "EOFError")),
    (("exceptions", "EnvironmentError"), ("builtins", "EnvironmentError")),
    (("exceptions", "Exception"), ("builtins", "Exception")),
    (("exceptions", "FloatingPointError"), ("builtins", "FloatingPointError")),
    (("exceptions", "FutureWarning"), ("builtins", "FutureWarning")),
    (("exceptions", "GeneratorExit"), ("builtins", "GeneratorExit")),
    (("exceptions", "IOError"), ("builtins", "IOError")),
    (("exceptions", "ImportError"), ("builtins", "ImportError")),
    (("exceptions", "ImportWarning"), ("builtins", "ImportWarning")),
    (("exceptions", "IndentationError"), ("builtins", "IndentationError")),
    (("exceptions", "IndexError"), ("builtins", "IndexError")),
    (("exceptions", "KeyError"), ("builtins", "KeyError")),
    (("exceptions", "KeyboardInterrupt"), ("builtins", "KeyboardInterrupt")),
    (("exceptions", "LookupError"), ("builtins", "LookupError")),
    (("exceptions", "MemoryError"), ("builtins", "MemoryError")),
    (("exceptions", "NameError"), ("builtins", "NameError")),
    (("exceptions", "NotImplementedError"), ("builtins", "NotImplementedError")),
    (("exceptions", "OSError"), ("builtins", "OSError")),
    (("exceptions", "OverflowError"), ("builtins", "OverflowError")),
    (("exceptions", "PendingDeprecationWarning"), ("builtins", "PendingDeprecationWarning")),
    (("exceptions", "ReferenceError"), ("builtins", "ReferenceError")),
    (("exceptions", "RuntimeError"), ("builtins", "RuntimeError")),
    (("exceptions", "RuntimeWarning"), ("builtins", "RuntimeWarning")),
    (("exceptions", "StandardError"), ("builtins", "Exception")),
    (("exceptions", "StopIteration"), ("builtins", "StopIteration")),
    (("exceptions", "SyntaxError"), ("builtins", "SyntaxError")),
    (("exceptions", "SyntaxWarning"), ("builtins", "SyntaxWarning")),
    (("exceptions", "SystemError"), ("builtins", "SystemError")),
    (("exceptions", "SystemExit"), ("builtins", "SystemExit")),
    (("exceptions", "TabError"), ("builtins", "TabError")),
    (("exceptions", "TypeError"), ("builtins", "TypeError")),
    (("exceptions", "UnboundLocalError"), ("builtins", "UnboundLocalError")),
    (("exceptions", "UnicodeDecodeError"), ("builtins", "UnicodeDecodeError")),
    (("exceptions", "UnicodeEncodeError"), ("builtins", "UnicodeEncodeError")),
    (("exceptions", "UnicodeError"), ("builtins", "UnicodeError")),
    (("exceptions", "UnicodeTranslateError"), ("builtins", "UnicodeTranslateError")),
    (("exceptions", "UnicodeWarning"), ("builtins", "UnicodeWarning")),
    (("exceptions", "UserWarning"), ("builtins", "UserWarning")),
    (("exceptions", "ValueError"), ("builtins", "ValueError")),
    (("exceptions", "Warning"), ("builtins", "Warning")),
    (("exceptions", "ZeroDivisionError"), ("builtins", "ZeroDivisionError")),
    (("itertools", "ifilter"), ("builtins", "filter")),
    (("itertools", "ifilterfalse"), ("itertools", "filterfalse")),
    (("itertools", "imap"), ("builtins", "map")),
    (("itertools", "izip"), ("builtins", "zip")),
    (("itertools", "izip_longest"), ("itertools", "zip_longest")),
    (("multiprocessing", "AuthenticationError"), ("multiprocessing.context", "AuthenticationError")),
    (("multiprocessing", "BufferTooShort"), ("multiprocessing.context", "BufferTooShort")),
    (("multiprocessing", "ProcessError"), ("multiprocessing.context", "ProcessError")),
    (("multiprocessing", "TimeoutError"), ("multiprocessing.context", "TimeoutError")),
    (("multiprocessing.forking", "Popen"), ("multiprocessing.popen_fork", "Popen")),
    (("multiprocessing.process", "Process"), ("multiprocessing.context", "Process")),
    (("socket", "_socketobject"), ("socket", "SocketType")),
    (("urllib", "ContentTooShortError"), ("urllib.error", "ContentTooShortError")),
    (("urllib", "getproxies"), ("urllib.request", "getproxies")),
    (("urllib", "pathname2url"), ("urllib.request", "pathname2url")),
    (("urllib", "quote"), ("urllib.parse", "quote")),
    (("urllib", "quote_plus"), ("urllib.parse", "quote_plus")),
    (("urllib", "unquote"), ("urllib.parse", "unquote")),
    (("urllib", "unquote_plus"), ("urllib.parse", "unquote_plus")),
    (("urllib", "url2pathname"), ("urllib.request", "url2pathname")),
    (("urllib", "urlcleanup"), ("urllib.request", "urlcleanup")),
    (("urllib", "urlencode"), ("urllib.parse", "urlencode")),
    (("urllib", "urlopen"), ("urllib.request", "urlopen")),
    (("urllib", "urlretrieve"), ("urllib.request", "urlretrieve")),
    (("urllib2", "HTTPError"), ("urllib.error", "HTTPError")),
    (("urllib2", "URLError"), ("urllib.error", "URLError")),
    (("whichdb", "whichdb"), ("dbm", "whichdb")),
];

/// The name the unpickler of a protocol 0–2 stream would import (CPython's
/// `find_class` with `fix_imports`): `NAME_MAPPING` first, then `IMPORT_MAPPING` for the
/// module. `None` when nothing is renamed.
pub fn compat_rename(module: &str, name: &str) -> Option<(String, String)> {
    if let Some((_, (m, n))) = NAME_MAPPING
        .iter()
        .find(|((m, n), _)| *m == module && *n == name)
    {
        return Some(((*m).to_string(), (*n).to_string()));
    }
    IMPORT_MAPPING
        .iter()
        .find(|(m, _)| *m == module)
        .map(|(_, m)| ((*m).to_string(), name.to_string()))
}

/// The [`DANGEROUS`] entries whose module starts with the segment `first`, in the
/// table's order (indexed once: a name of many segments looks each up once).
fn dangerous_starting_with(first: &str) -> impl Iterator<Item = &'static (&'static str, &'static str, &'static str)> {
    static INDEX: std::sync::OnceLock<std::collections::HashMap<&'static str, Vec<usize>>> = std::sync::OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut m: std::collections::HashMap<&'static str, Vec<usize>> = std::collections::HashMap::new();
        for (k, (module, _, _)) in DANGEROUS.iter().enumerate() {
            m.entry(module.split('.').next().unwrap_or(module)).or_default().push(k);
        }
        m
    });
    index.get(first).into_iter().flatten().filter_map(|k| DANGEROUS.get(*k))
}

/// Judges one resolved `module` / `name` (either may be dotted).
pub fn judge(module: &str, name: &str) -> (GlobalVerdict, String) {
    if let Some(why) = allowed(module, name) {
        return (GlobalVerdict::Allowed, format!("allowed: {why}"));
    }
    let parts: Vec<&str> = module.split('.').chain(name.split('.')).collect();
    let n_mod = module.split('.').count();
    // every dotted prefix of the path is a module (or an object reached like one): the
    // first start `i` where a dangerous module's segments follow (then the one of fewest
    // segments, then the table's order). Segments compared in place — joining every
    // sub-path made a name of n dots cost n³ (found by fuzzing: tests/fuzz_regressions.rs).
    for (i, first) in parts.iter().enumerate() {
        let mut best: Option<(usize, &(&str, &str, &str))> = None;
        for e in dangerous_starting_with(first) {
            let (m, n, _) = e;
            let k = m.split('.').count();
            if best.is_some_and(|(bk, _)| bk <= k) {
                continue;
            }
            let here = m.split('.').enumerate().all(|(o, seg)| i.checked_add(o).and_then(|at| parts.get(at)) == Some(&seg));
            let next = i.checked_add(k).and_then(|at| parts.get(at)).copied();
            if here && (*n == "*" || next == Some(*n)) {
                best = Some((k, e));
            }
        }
        if let Some((k, (m, n, why))) = best {
            let j = i.saturating_add(k);
            let reached = parts.join(".");
            let via = if i == 0 && j <= n_mod.max(1) {
                String::new()
            } else {
                format!(" (reached as {})", crate::error::clip(&reached))
            };
            let what = if *n == "*" {
                format!("{m}.*")
            } else {
                format!("{m}.{n}")
            };
            return (GlobalVerdict::Dangerous, format!("{what}: {why}{via}"));
        }
    }
    (
        GlobalVerdict::Unknown,
        "not on the allow-list: an arbitrary class or function, loading it runs its code".into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judges() {
        assert_eq!(
            judge("torch._utils", "_rebuild_tensor_v2").0,
            GlobalVerdict::Allowed
        );
        assert_eq!(judge("torch", "BFloat16Storage").0, GlobalVerdict::Allowed);
        assert_eq!(judge("torch.cuda", "HalfStorage").0, GlobalVerdict::Allowed);
        assert_eq!(
            judge("torch.sparse", "BoolTensor").0,
            GlobalVerdict::Unknown
        );
        assert_eq!(
            judge("collections", "OrderedDict").0,
            GlobalVerdict::Allowed
        );
        assert_eq!(judge("posix", "system").0, GlobalVerdict::Dangerous);
        assert_eq!(judge("os", "path.os.system").0, GlobalVerdict::Dangerous);
        let (v, why) = judge("codecs", "builtins.eval");
        assert_eq!(v, GlobalVerdict::Dangerous);
        assert!(why.contains("reached as codecs.builtins.eval"), "{why}");
        assert_eq!(
            judge("asyncio.subprocess", "create_subprocess_shell").0,
            GlobalVerdict::Dangerous
        );
        assert_eq!(judge("builtins", "print").0, GlobalVerdict::Unknown);
        assert_eq!(judge("operator", "add").0, GlobalVerdict::Unknown);
        assert_eq!(judge("operator", "attrgetter").0, GlobalVerdict::Dangerous);
        assert_eq!(
            judge("transformers.models.llama", "LlamaConfig").0,
            GlobalVerdict::Unknown
        );
    }

    #[test]
    fn compat_names() {
        // values from CPython's Lib/_compat_pickle.py
        assert_eq!(
            compat_rename("__builtin__", "eval"),
            Some(("builtins".into(), "eval".into()))
        );
        assert_eq!(
            compat_rename("copy_reg", "_reconstructor"),
            Some(("copyreg".into(), "_reconstructor".into()))
        );
        assert_eq!(
            compat_rename("commands", "getoutput"),
            Some(("subprocess".into(), "getoutput".into()))
        );
        assert_eq!(
            compat_rename("__builtin__", "xrange"),
            Some(("builtins".into(), "range".into()))
        );
        assert_eq!(compat_rename("torch", "FloatStorage"), None);
    }
}
