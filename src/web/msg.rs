//! Plain JS objects as messages between the page, the values worker and its hashing worker
//! (`postMessage` carries them by structured clone, `File`s and transferred buffers
//! included). Reading a missing field gives `undefined`; a failed write is ignored (it can
//! only fail on a frozen object, which these never are).

use js_sys::{Object, Reflect};
use wasm_bindgen::JsValue;

/// `v[k]`, or `undefined`.
pub fn get(v: &JsValue, k: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(k)).unwrap_or(JsValue::UNDEFINED)
}

/// `v[k]` as a non-negative whole number of at most 2^53 (a byte count or offset).
pub fn get_u64(v: &JsValue, k: &str) -> Option<u64> {
    get(v, k)
        .as_f64()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .map(|x| x as u64)
}

/// `v.kind`, the type of a message.
pub fn kind(v: &JsValue) -> Option<String> {
    get(v, "kind").as_string()
}

/// `obj[key] = value`.
pub fn set(obj: &Object, key: &str, value: impl Into<JsValue>) {
    let _ = Reflect::set(obj, &JsValue::from_str(key), &value.into());
}

/// A new message `{kind}`.
pub fn message(kind: &str) -> Object {
    let o = Object::new();
    set(&o, "kind", kind);
    o
}

/// The text of a JS error (a string or an object with a `message`).
pub fn error_text(e: &JsValue) -> String {
    e.as_string()
        .or_else(|| get(e, "message").as_string())
        .unwrap_or_else(|| "unknown error".to_string())
}
