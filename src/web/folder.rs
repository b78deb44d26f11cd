//! Folders given to the page: a dropped directory (`DataTransferItem.webkitGetAsEntry`,
//! walked with `FileSystemDirectoryReader.readEntries`) or a `webkitdirectory` pick
//! (`File.webkitRelativePath`). Each file comes back with its path relative to the
//! dropped folder's parent ("Llama-3.2-3B/config.json"), which becomes its name on the
//! page; checkpoints match shards to the index by base name.
//!
//! The entry objects are used through their methods only (no `instanceof` checks), so a
//! test can hand the walker stand-in objects with the same methods.

use js_sys::{Array, Function, Promise, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{DataTransfer, File, FileSystemDirectoryEntry, FileSystemEntry, FileSystemFileEntry};

/// Deepest folder level walked below a dropped folder. A Hugging Face checkpoint is flat
/// (sometimes one level of subfolders, e.g. `original/`); 8 is ample and stops a
/// pathological or cyclic tree (symlink loops) from being walked without end.
pub const MAX_FOLDER_DEPTH: usize = 8;
/// Most files taken from one dropped folder. Checkpoints have tens of files; a dropped
/// home directory should not make the page list millions.
pub const MAX_FOLDER_FILES: usize = 10_000;

/// A file from a folder and its relative path ("folder/sub/name").
pub struct Picked {
    pub path: String,
    pub file: File,
}

/// What a drop held: the entries (taken synchronously — a `DataTransfer` is emptied once
/// the drop handler returns) and whether any of them is a directory.
pub struct DropEntries {
    pub entries: Vec<FileSystemEntry>,
    pub has_directory: bool,
}

/// Takes the drop's entries. Must be called inside the drop handler.
pub fn drop_entries(dt: &DataTransfer) -> DropEntries {
    let items = dt.items();
    let mut entries = Vec::new();
    let mut has_directory = false;
    for i in 0..items.length() {
        let Some(item) = items.get(i) else { continue };
        if item.kind() != "file" {
            continue;
        }
        if let Ok(Some(entry)) = item.webkit_get_as_entry() {
            has_directory |= entry.is_directory();
            entries.push(entry);
        }
    }
    DropEntries {
        entries,
        has_directory,
    }
}

/// The path an entry reports, without the leading "/".
fn entry_path(entry: &FileSystemEntry) -> String {
    let full = entry.full_path();
    let trimmed = full.trim_start_matches('/');
    if trimmed.is_empty() {
        entry.name()
    } else {
        trimmed.to_string()
    }
}

/// Calls `start(resolve, reject)` and awaits the callback-style API it starts.
async fn callback_promise(start: impl FnOnce(&Function, &Function) -> Result<(), JsValue>) -> Result<JsValue, JsValue> {
    let mut start = Some(start);
    let mut started = Ok(());
    // The executor runs synchronously, exactly once.
    let promise = Promise::new(&mut |resolve, reject| {
        if let Some(start) = start.take() {
            started = start(&resolve, &reject);
        }
    });
    started?;
    JsFuture::from(promise).await
}

async fn entry_file(entry: &FileSystemFileEntry) -> Result<File, JsValue> {
    let v = callback_promise(|ok, err| {
        entry.file_with_callback_and_callback(ok, err);
        Ok(())
    })
    .await?;
    v.dyn_into::<File>()
}

/// One batch of a directory's entries (`readEntries` returns them in batches of ~100 in
/// Chromium; an empty batch means the end).
async fn read_batch(reader: &web_sys::FileSystemDirectoryReader) -> Result<Vec<FileSystemEntry>, JsValue> {
    let v = callback_promise(|ok, err| reader.read_entries_with_callback_and_callback(ok, err)).await?;
    let arr: Array = v.dyn_into()?;
    Ok(arr.iter().map(JsCast::unchecked_into::<FileSystemEntry>).collect())
}

/// Walks the dropped entries: files as they are, directories recursively up to
/// [`MAX_FOLDER_DEPTH`] levels and [`MAX_FOLDER_FILES`] files. Unreadable entries are
/// counted in `skipped` (with the reason) instead of failing the drop.
pub async fn walk(entries: Vec<FileSystemEntry>) -> (Vec<Picked>, Vec<String>) {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    // Depth-first with an explicit stack (no recursive futures); reversed so files come
    // out in the order the browser lists them.
    let mut stack: Vec<(FileSystemEntry, usize)> = entries.into_iter().rev().map(|e| (e, 0)).collect();
    while let Some((entry, depth)) = stack.pop() {
        if out.len() >= MAX_FOLDER_FILES {
            skipped.push(format!("more than {MAX_FOLDER_FILES} files: the rest was not listed"));
            break;
        }
        if entry.is_file() {
            let fe: FileSystemFileEntry = entry.clone().unchecked_into();
            match entry_file(&fe).await {
                Ok(file) => out.push(Picked {
                    path: entry_path(&entry),
                    file,
                }),
                Err(_) => skipped.push(format!("{}: could not be opened", entry_path(&entry))),
            }
        } else if entry.is_directory() {
            // The dropped folders are level 0; their subfolders 1, …
            if depth > MAX_FOLDER_DEPTH {
                skipped.push(format!(
                    "{}: deeper than {MAX_FOLDER_DEPTH} folder levels, not read",
                    entry_path(&entry)
                ));
                continue;
            }
            let dir: FileSystemDirectoryEntry = entry.clone().unchecked_into();
            let reader = dir.create_reader();
            let mut children = Vec::new();
            loop {
                match read_batch(&reader).await {
                    Ok(batch) if batch.is_empty() => break,
                    Ok(batch) => children.extend(batch),
                    Err(_) => {
                        skipped.push(format!("{}: the folder could not be read", entry_path(&entry)));
                        break;
                    }
                }
                if children.len() > MAX_FOLDER_FILES {
                    break;
                }
            }
            // Sorted by name, so the shards of a checkpoint come in order.
            children.sort_by_key(|e| e.name());
            for c in children.into_iter().rev() {
                stack.push((c, depth.saturating_add(1)));
            }
        }
    }
    (out, skipped)
}

/// `File.webkitRelativePath` (set for files picked with a `webkitdirectory` input), when
/// present and non-empty.
pub fn relative_path(file: &File) -> Option<String> {
    Reflect::get(file, &JsValue::from_str("webkitRelativePath"))
        .ok()
        .and_then(|v| v.as_string())
        .filter(|s| !s.is_empty())
}
