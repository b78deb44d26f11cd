//! SHA-256 of a tensor's raw bytes in a second worker, nested in the values worker
//! ([`super::worker`]), so that hashing runs on another core while the values worker reads
//! and decodes. In wasm there is no SHA instruction: the `sha2` crate's software SHA-256
//! runs at ~0.16 GB/s in Chromium here, ten times slower than the BF16 decode + stats, so
//! on one thread the hash would set the pace of the whole scan.
//!
//! The nested worker is the same program (`tensorpeek-worker`), put in hashing mode by its
//! first message. Protocol (plain JS objects):
//! - values worker → hasher `{hash: "start"}`, then `{chunk: ArrayBuffer, len}` per chunk
//!   in order (the first `len` bytes of the buffer; transferred, not copied), then
//!   `{hash: "end"}`;
//! - hasher → values worker `{kind: "ready"}` once it listens, `{kind: "ack", buffer}` per
//!   chunk hashed (the buffer transferred back, for the next read), `{kind: "digest", hex}`
//!   after "end".
//!
//! At most [`HASH_AHEAD`] chunks wait unhashed, so memory stays bounded whatever the
//! relative speeds. Terminating the values worker (Cancel) also ends its nested worker.

use super::values::WORKER_URL;
use super::worker::BufferPool;
use futures::channel::mpsc;
use futures::StreamExt;
use js_sys::{Array, Object, Reflect};
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent, Worker};

/// Chunks handed to the hasher and not yet hashed, at most (2 × 8 MiB).
pub const HASH_AHEAD: u64 = 2;

fn field(v: &JsValue, k: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(k)).unwrap_or(JsValue::UNDEFINED)
}

fn kind(v: &JsValue) -> Option<String> {
    field(v, "kind").as_string()
}

/// The values worker's handle on its hashing worker.
pub struct Hasher {
    worker: Worker,
    inbox: mpsc::UnboundedReceiver<JsValue>,
    _onmessage: Closure<dyn FnMut(MessageEvent)>,
    _onerror: Closure<dyn FnMut(web_sys::Event)>,
    /// Chunks sent and not yet acknowledged.
    outstanding: u64,
}

impl Hasher {
    /// Starts the nested worker and waits until it listens. `Err` (e.g. a browser without
    /// nested workers) means: hash in this worker instead.
    pub async fn spawn() -> Result<Hasher, String> {
        let worker = Worker::new(WORKER_URL).map_err(|e| format!("{e:?}"))?;
        let (tx, inbox) = mpsc::unbounded();
        let tx_err = tx.clone();
        let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
            let _ = tx.unbounded_send(e.data());
        });
        let onerror = Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
            let message = e
                .dyn_ref::<web_sys::ErrorEvent>()
                .map(|e| e.message())
                .unwrap_or_else(|| "the hashing worker failed".to_string());
            let o = Object::new();
            let _ = Reflect::set(&o, &"kind".into(), &"failed".into());
            let _ = Reflect::set(&o, &"message".into(), &message.into());
            let _ = tx_err.unbounded_send(o.into());
        });
        worker.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
        worker.set_onerror(Some(onerror.as_ref().unchecked_ref()));
        let mut h = Hasher { worker, inbox, _onmessage: onmessage, _onerror: onerror, outstanding: 0 };
        h.expect("ready").await?;
        h.post(&command("start"))?;
        Ok(h)
    }

    fn post(&self, msg: &JsValue) -> Result<(), String> {
        self.worker.post_message(msg).map_err(|e| format!("{e:?}"))
    }

    /// The next message, which must be of `want` kind (an ack counts down `outstanding`).
    async fn expect(&mut self, want: &str) -> Result<JsValue, String> {
        let msg = self.inbox.next().await.ok_or("the hashing worker stopped")?;
        match kind(&msg).as_deref() {
            Some(k) if k == want => Ok(msg),
            Some("failed") => Err(field(&msg, "message").as_string().unwrap_or_default()),
            other => Err(format!("the hashing worker sent {other:?}, expected {want}")),
        }
    }

    /// Waits for the oldest chunk's acknowledgement and puts its returned buffer in `pool`.
    async fn ack(&mut self, pool: &mut BufferPool) -> Result<(), String> {
        let msg = self.expect("ack").await?;
        self.outstanding -= 1;
        if let Ok(buf) = field(&msg, "buffer").dyn_into::<js_sys::ArrayBuffer>() {
            pool.give(buf);
        }
        Ok(())
    }

    /// Hands over the next chunk, the bytes of `view` (a view at the start of `buf`). The
    /// buffer is transferred, so unusable here until the hasher sends it back with its
    /// acknowledgement (then it goes back to `pool`). Waits first while [`HASH_AHEAD`]
    /// chunks are still unhashed.
    pub async fn send(
        &mut self,
        buf: &js_sys::ArrayBuffer,
        view: &js_sys::Uint8Array,
        pool: &mut BufferPool,
    ) -> Result<(), String> {
        while self.outstanding >= HASH_AHEAD {
            self.ack(pool).await?;
        }
        let msg = Object::new();
        let _ = Reflect::set(&msg, &"chunk".into(), buf);
        let _ = Reflect::set(&msg, &"len".into(), &view.length().into());
        self.worker
            .post_message_with_transfer(&msg, &Array::of1(buf))
            .map_err(|e| format!("{e:?}"))?;
        self.outstanding += 1;
        Ok(())
    }

    /// The lowercase hex digest of every chunk sent.
    pub async fn finish(mut self) -> Result<String, String> {
        self.post(&command("end"))?;
        let mut pool = BufferPool::new(0);
        while self.outstanding > 0 {
            self.ack(&mut pool).await?;
        }
        let msg = self.expect("digest").await?;
        self.worker.terminate();
        field(&msg, "hex").as_string().ok_or_else(|| "the hashing worker sent no digest".to_string())
    }
}

impl Drop for Hasher {
    fn drop(&mut self) {
        self.worker.terminate();
    }
}

fn command(c: &str) -> JsValue {
    let o = Object::new();
    let _ = Reflect::set(&o, &"hash".into(), &c.into());
    o.into()
}

thread_local! {
    /// The hashing worker's running digest, and its buffer for a chunk's bytes in wasm.
    static STATE: RefCell<(Option<Sha256>, Vec<u8>)> = const { RefCell::new((None, Vec::new())) };
}

/// In the hashing worker: handles one message if it is part of the protocol above
/// (returns `false` otherwise).
pub fn serve(scope: &DedicatedWorkerGlobalScope, data: &JsValue) -> bool {
    let reply = |msg: &Object, transfer: Option<&js_sys::ArrayBuffer>| {
        let _ = match transfer {
            Some(b) => scope.post_message_with_transfer(msg, &Array::of1(b)),
            None => scope.post_message(msg),
        };
    };
    let message = |k: &str| {
        let o = Object::new();
        let _ = Reflect::set(&o, &"kind".into(), &k.into());
        o
    };
    let chunk = field(data, "chunk");
    if let Some(buf) = chunk.dyn_ref::<js_sys::ArrayBuffer>() {
        let len = field(data, "len").as_f64().map_or(0, |l| l as u32).min(buf.byte_length());
        let view = js_sys::Uint8Array::new_with_byte_offset_and_length(buf, 0, len);
        STATE.with(|s| {
            let mut s = s.borrow_mut();
            let (sha, bytes) = &mut *s;
            bytes.resize(len as usize, 0);
            view.copy_to(bytes);
            if let Some(h) = sha.as_mut() {
                h.update(&*bytes);
            }
        });
        let ack = message("ack");
        let _ = Reflect::set(&ack, &"buffer".into(), buf);
        reply(&ack, Some(buf));
        return true;
    }
    match field(data, "hash").as_string().as_deref() {
        Some("start") => {
            STATE.with(|s| s.borrow_mut().0 = Some(Sha256::new()));
            true
        }
        Some("end") => {
            let hex = STATE
                .with(|s| s.borrow_mut().0.take())
                .map(|h| h.finalize().iter().map(|b| format!("{b:02x}")).collect::<String>())
                .unwrap_or_default();
            let o = message("digest");
            let _ = Reflect::set(&o, &"hex".into(), &hex.into());
            reply(&o, None);
            true
        }
        _ => false,
    }
}
