//! Numbers in the page: the text comes from [`crate::fmt`] (the CLI prints the same), these
//! wrap it in markup — a human size with the exact byte count on hover, an exact count with
//! the short form on hover. Plain functions for table cells (thousands of components would
//! slow rendering), components elsewhere.

use crate::fmt;
use yew::prelude::*;

/// A byte count as a human size, the exact count in the tooltip.
pub fn bytes_html(n: u64) -> Html {
    let exact = format!("{} bytes", fmt::thousands(n));
    html! { <span class="bytes" title={exact}>{ fmt::human_bytes(n) }</span> }
}

/// An exact number with thousands separators (the short form in the tooltip).
pub fn num_html(n: u64) -> Html {
    html! { <span class="num" title={fmt::human_count(n)}>{ fmt::thousands(n) }</span> }
}

/// An optional number, "—" when absent.
pub fn opt_num(n: Option<u64>) -> Html {
    match n {
        Some(n) => num_html(n),
        None => html! { <span class="dim">{ "—" }</span> },
    }
}

/// Exact bytes in a monospace font, the human size beside them: "29,464 (28.8 KiB)".
pub fn sized(n: u64) -> Html {
    html! { <><span class="mono">{ fmt::thousands(n) }</span>{ " " }<span class="dim">{ "(" }{ bytes_html(n) }{ ")" }</span></> }
}

/// A parameter count with its short form: "3,212,749,824 (3.21 B)".
pub fn params(n: u64) -> Html {
    html! { <>{ num_html(n) }<span class="dim">{ format!(" ({})", fmt::human_count(n)) }</span></> }
}

/// An offset or count in a monospace font.
pub fn mono(n: u64) -> Html {
    html! { <span class="mono">{ fmt::thousands(n) }</span> }
}

#[derive(Properties, PartialEq)]
pub struct NProps {
    pub n: u64,
}

/// [`bytes_html`] as a component.
#[function_component(Bytes)]
pub fn bytes(p: &NProps) -> Html {
    bytes_html(p.n)
}

/// [`num_html`] as a component.
#[function_component(Num)]
pub fn num(p: &NProps) -> Html {
    num_html(p.n)
}
