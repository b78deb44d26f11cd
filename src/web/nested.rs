//! A worker nested in the values worker, and the queue of its messages: what the hashing
//! worker ([`super::hasher`]) and the range reader ([`super::reader`]) have in common.
//! Dropping it terminates the worker.

use futures::channel::mpsc;
use futures::StreamExt;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{MessageEvent, Worker};

pub struct Nested {
    pub worker: Worker,
    inbox: mpsc::UnboundedReceiver<JsValue>,
    _onmessage: Closure<dyn FnMut(MessageEvent)>,
    _onerror: Closure<dyn FnMut(web_sys::Event)>,
}

impl Nested {
    /// Starts the worker at `url`. Its messages queue up in order; an error event (its
    /// script failed to load or threw) queues `failed(message)` instead.
    pub fn start(url: &str, failed: impl Fn(String) -> Option<JsValue> + 'static) -> Result<Nested, String> {
        let worker = Worker::new(url).map_err(|e| format!("{e:?}"))?;
        let (tx, inbox) = mpsc::unbounded();
        let tx_err = tx.clone();
        let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
            let _ = tx.unbounded_send(e.data());
        });
        let onerror = Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
            let message = e.dyn_ref::<web_sys::ErrorEvent>().map(|e| e.message()).unwrap_or_else(|| "the worker failed".to_string());
            if let Some(v) = failed(message) {
                let _ = tx_err.unbounded_send(v);
            }
        });
        worker.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
        worker.set_onerror(Some(onerror.as_ref().unchecked_ref()));
        Ok(Nested { worker, inbox, _onmessage: onmessage, _onerror: onerror })
    }

    /// The next message; `None` once the worker is gone.
    pub async fn next(&mut self) -> Option<JsValue> {
        self.inbox.next().await
    }
}

impl Drop for Nested {
    fn drop(&mut self) {
        self.worker.terminate();
    }
}
