//! The page's pieces for files on the web: the URL field, a Hub repository's GGUF models
//! to choose from, the notes panel, and the link to the view shown ("Copy link", or why a
//! local file has none).

use super::components::CopyButton;
use super::format::bytes_html;
use crate::web::remote::{page_url, FitLink};
use crate::web::state::HubChoices;
use web_sys::HtmlInputElement;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct UrlFormProps {
    /// Called with the field's text when the person opens it.
    pub on_open: Callback<String>,
    /// Why the last text could not be used.
    #[prop_or_default]
    pub error: Option<AttrValue>,
}

/// "Open a URL": a URL (several separated by spaces) or a Hub repository `ORG/REPO`.
/// Nothing is fetched until the person presses Open.
#[function_component(UrlForm)]
pub fn url_form(p: &UrlFormProps) -> Html {
    let input = use_node_ref();
    let onsubmit = {
        let (input, on_open) = (input.clone(), p.on_open.clone());
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            if let Some(i) = input.cast::<HtmlInputElement>() {
                on_open.emit(i.value());
            }
        })
    };
    html! {
        <form class="url-form" {onsubmit} data-testid="url-form">
            <label class="visually-hidden" for="url-input">{ "URL or Hub repository" }</label>
            <input id="url-input" ref={input} type="text" inputmode="url" spellcheck="false" autocomplete="off"
                placeholder="https://…/model.safetensors · …/model.safetensors.index.json · ORG/REPO"
                data-testid="url-input" />
            <button type="submit" class="button" data-testid="url-open"
                title="Read the header with HTTP range requests (the server must allow CORS)">{ "Open URL" }</button>
            if let Some(e) = &p.error {
                <p class="bad url-error" role="alert" data-testid="url-error">{ e.clone() }</p>
            }
        </form>
    }
}

#[derive(Properties, PartialEq)]
pub struct ChoicesProps {
    pub choices: HubChoices,
    /// Called with (URLs, repository paths) of the chosen model.
    pub on_choose: Callback<(Vec<String>, Vec<String>)>,
    pub on_close: Callback<()>,
}

/// A GGUF repository's models (quantizations): choose one to read its header.
#[function_component(ChoicesCard)]
pub fn choices_card(p: &ChoicesProps) -> Html {
    html! {
        <section class="card choices" aria-label="GGUF models in the repository" data-testid="hub-choices">
            <div class="panel-head">
                <h3>{ format!("{}: {} GGUF models", p.choices.repo, p.choices.choices.len()) }</h3>
                <button type="button" class="ghost" onclick={p.on_close.reform(|_: MouseEvent| ())}>{ "Close" }</button>
            </div>
            <p class="dim">{ "Choose one to read its header (only its first bytes are fetched)." }</p>
            <ul>
                { for p.choices.choices.iter().map(|(c, urls)| {
                    let pick = {
                        let (cb, urls, files) = (p.on_choose.clone(), urls.clone(), c.files.clone());
                        Callback::from(move |_: MouseEvent| cb.emit((urls.clone(), files.clone())))
                    };
                    html! {
                        <li>
                            <button type="button" class="link" onclick={pick} data-testid="hub-choice" data-label={c.label.clone()}>
                                <code>{ c.label.clone() }</code>
                            </button>
                            if let Some(n) = c.size { <span class="dim">{ " · " }{ bytes_html(n) }</span> }
                        </li>
                    }
                }) }
            </ul>
        </section>
    }
}

/// The link to the view shown (with the "Will it run?" card's settings), kept current:
/// the component re-renders when the app's view or the card's settings change.
#[hook]
fn use_view_link() -> Option<String> {
    let fit = use_context::<FitLink>();
    let bump = use_state(|| 0u32);
    {
        let (fit, bump) = (fit.clone(), bump.setter());
        use_effect_with(fit, move |fit| {
            let n = std::rc::Rc::new(std::cell::Cell::new(0u32));
            let id = fit.as_ref().map(|f| {
                f.subscribe(Callback::from(move |_: ()| {
                    n.set(n.get().wrapping_add(1));
                    bump.set(n.get());
                }))
            });
            let fit = fit.clone();
            move || {
                if let (Some(f), Some(id)) = (fit, id) {
                    f.unsubscribe(id);
                }
            }
        });
    }
    fit.map(|f| page_url(&f.link().fragment(), false))
}

#[derive(Properties, PartialEq)]
pub struct ShareProps {
    /// Whether the view shown can be linked (it was opened by URL).
    pub linkable: bool,
}

/// "Copy link" for a view opened by URL; for a local file, why there is none.
#[function_component(Share)]
pub fn share(p: &ShareProps) -> Html {
    let url = use_view_link();
    match url.filter(|_| p.linkable) {
        Some(u) => html! {
            <span class="share" data-testid="share" data-link={u.clone()}>
                <CopyButton text={AttrValue::from(u)} label="Copy link" testid="copy-link" />
            </span>
        },
        None => html! {
            <span class="share dim" data-testid="no-link">
                { "Local files cannot be linked: a link reopens files by their URL, and this one was opened from your disk." }
            </span>
        },
    }
}

/// "Open in tensorpeek ↗" of an embedded page: the full page on the same view.
#[function_component(OpenFull)]
pub fn open_full() -> Html {
    let url = use_view_link().unwrap_or_default();
    html! {
        <a class="open-full" href={url} target="_blank" rel="noopener noreferrer" data-testid="open-full">{ "Open in tensorpeek ↗" }</a>
    }
}
