//! The zip containers: the central directory (read from the end: [`TAIL_LEN`], then the
//! whole comment window only when the end record is not in it), a member's data offset from
//! its local header, and the PyTorch zip — `data.pkl` walked, every storage's local header
//! read in one round, the inventory placed. A zip of only `.npy` members is an `.npz`
//! (`numpy.rs`).

use super::inventory::{inventory, StoragePlace};
use super::ranges::{ask, Fetch, Need, RangeCache};
use super::{absorb, Container, Inspection, Reader, MAX_PICKLE_LEN};
use crate::error::{push_bounded, Code, Finding};
use crate::formats::pickle::eval::{Context, StorageRef};
use crate::formats::zip;
use std::collections::HashMap;
use std::rc::Rc;

/// The first read at the end of a zip: the end-of-central-directory record of a zip without
/// a comment (torch writes none) and the Zip64 locator right before it — no more, so that
/// a small file's last storage, just before the directory, is not read.
pub const TAIL_LEN: u64 = zip::EOCD_LEN + zip::ZIP64_LOCATOR_LEN;

/// A central directory: its entries and what was wrong with it.
pub(super) type Directory = (Vec<zip::Entry>, Vec<Finding>);

impl Reader {
    pub(super) fn run_zip(&mut self, head: &[u8]) -> Fetch<Inspection> {
        // guess from the first member's name, for a zip too broken to read
        let first_name = Some(usize::from(first_name_len(head)))
            .and_then(|n| head.get(30..30 + n))
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .unwrap_or_default();
        let guess = if first_name.ends_with(".npy") {
            Container::Npz
        } else {
            Container::PytorchZip
        };
        if self.directory.is_none() {
            match self.read_directory()? {
                Ok(d) => self.directory = Some(d),
                Err(f) => {
                    let mut i = self.empty(guess);
                    i.findings.push(f);
                    return Ok(i);
                }
            }
        }
        let Some((entries, dir_findings)) = self.directory.clone() else {
            return Err(Need { start: 0, len: 0 });
        };
        let pkl = entries
            .iter()
            .filter(|e| {
                e.name == "data.pkl"
                    || (e.name.ends_with("/data.pkl") && e.name.matches('/').count() == 1)
            })
            .min_by_key(|e| e.name.len());
        let mut i;
        if let Some(pkl) = pkl.cloned() {
            i = self.empty(Container::PytorchZip);
            i.findings.extend(dir_findings);
            self.torch_zip(&mut i, &entries, &pkl)?;
        } else if !entries.is_empty() && entries.iter().all(|e| e.name.ends_with(".npy")) {
            i = self.empty(Container::Npz);
            i.findings.extend(dir_findings);
            self.npz(&mut i, &entries)?;
        } else {
            i = self.empty(Container::Unknown);
            i.findings.extend(dir_findings);
            i.findings.push(Finding::error(
                Code::UnknownFormat,
                "a zip with neither a data.pkl (PyTorch) nor only .npy members (numpy .npz)",
            ));
        }
        i.members = entries;
        Ok(i)
    }

    /// The central directory, or a finding when the zip cannot be read.
    fn read_directory(&self) -> Fetch<Result<Directory, Finding>> {
        let len = self.file_len;
        let mut dir = None;
        for window in [
            TAIL_LEN,
            zip::EOCD_LEN + zip::MAX_COMMENT + zip::ZIP64_LOCATOR_LEN,
        ] {
            let w = window.min(len);
            let tail = self.get(len - w, w)?;
            dir = zip::find_eocd(tail, len - w, len);
            if dir.is_some() || w == len {
                break;
            }
        }
        let Some(mut dir) = dir else {
            return Ok(Err(Finding::error(
                Code::ZipMalformed,
                "no end-of-central-directory record at the end of the file: the zip is truncated or not a zip",
            )
            .at(len)));
        };
        if let Some(z64) = dir.zip64_at {
            if z64.saturating_add(zip::ZIP64_EOCD_LEN) > dir.eocd_at {
                return Ok(Err(Finding::error(
                    Code::ZipMalformed,
                    "the Zip64 locator points past the end record",
                )
                .at(dir.eocd_at)));
            }
            let rec = self.get(z64, zip::ZIP64_EOCD_LEN)?;
            if let Err(f) = zip::apply_zip64(&mut dir, rec) {
                return Ok(Err(f));
            }
        }
        let end = dir.cd_offset.checked_add(dir.cd_size);
        if end.is_none_or(|e| e > dir.eocd_at) {
            return Ok(Err(Finding::error(
                Code::ZipMalformed,
                format!("the central directory ({} bytes at {}) does not end before the end record at {}", dir.cd_size, dir.cd_offset, dir.eocd_at),
            )
            .at(dir.eocd_at)));
        }
        if dir.cd_size > zip::MAX_CENTRAL_DIRECTORY {
            return Ok(Err(Finding::error(
                Code::ZipMalformed,
                format!(
                    "a {}-byte central directory exceeds the {}-byte limit",
                    dir.cd_size,
                    zip::MAX_CENTRAL_DIRECTORY
                ),
            )
            .at(dir.eocd_at)));
        }
        let cd = self.get(dir.cd_offset, dir.cd_size)?;
        Ok(Ok(zip::parse_central_directory(
            cd,
            dir.cd_offset,
            dir.entries,
        )))
    }

    /// Absolute offset of a member's data, from its local header.
    pub(super) fn member_data(&self, e: &zip::Entry) -> Fetch<Result<u64, Finding>> {
        let want = zip::LOCAL_HEADER_LEN + e.name.len() as u64;
        if e.header_offset.saturating_add(want) > self.file_len {
            return Ok(Err(Finding::error(
                Code::ZipMalformed,
                format!("the local header of {} is past the end of the file", e.name),
            )
            .at(e.header_offset)));
        }
        let lh = self.get(e.header_offset, want)?;
        let off = zip::data_offset(e, lh);
        // only stored members come here, whose two sizes must be equal: a lying directory
        // may make either one the larger, and both (data.pkl's walk, a storage's bytes) must
        // lie in the file (found by fuzzing: tests/fuzz_regressions.rs)
        let size = e.compressed_size.max(e.size);
        Ok(off.and_then(|o| {
            if o.saturating_add(size) > self.file_len {
                Err(Finding::error(
                    Code::TensorPastEnd,
                    format!(
                        "member {} ({size} bytes from byte {o}) runs past the end of the file",
                        e.name
                    ),
                )
                .at(o))
            } else {
                Ok(o)
            }
        }))
    }

    fn torch_zip(
        &mut self,
        i: &mut Inspection,
        entries: &[zip::Entry],
        pkl: &zip::Entry,
    ) -> Fetch<()> {
        if pkl.method != 0 {
            i.findings.push(
                Finding::error(Code::CompressedMember, format!("{} is compressed (method {}); torch writes it stored, and it is not inflated here", pkl.name, pkl.method))
                    .at(pkl.header_offset),
            );
            return Ok(());
        }
        if pkl.size > MAX_PICKLE_LEN {
            i.findings.push(
                Finding::error(
                    Code::PickleLimit,
                    format!(
                        "{} has {} bytes, over the {MAX_PICKLE_LEN}-byte limit",
                        pkl.name, pkl.size
                    ),
                )
                .at(pkl.header_offset),
            );
            return Ok(());
        }
        let at = match self.member_data(pkl)? {
            Ok(a) => a,
            Err(f) => {
                i.findings.push(f);
                return Ok(());
            }
        };
        let ctx = Context {
            base: at,
            member: Some(pkl.name.clone()),
            torch: true,
        };
        self.get(at, pkl.size)?;
        self.walk_at(at, &ctx, pkl.size)?;
        // borrowed from the walk (not copied: 64 bytes and three counts a storage)
        let storages = &self.walks.get(&at).ok_or(Need { start: at, len: 0 })?.storages;
        let prefix = pkl.name.strip_suffix("data.pkl").unwrap_or("").to_string();
        let by_name: HashMap<&str, &zip::Entry> =
            entries.iter().map(|e| (e.name.as_str(), e)).collect();
        // every storage's local header in one round (see `take_also_needed`)
        let headers = self.missing_of(
            storages
                .iter()
                .filter_map(|s| by_name.get(format!("{prefix}data/{}", s.key).as_str()).copied())
                .filter(|e| e.method == 0)
                .map(|e| (e.header_offset, zip::LOCAL_HEADER_LEN + e.name.len() as u64)),
        );
        ask(&mut self.also, &headers)?;
        let mut places: HashMap<Rc<str>, StoragePlace> = HashMap::new();
        for s in storages {
            let name = format!("{prefix}data/{}", s.key);
            let Some(e) = by_name.get(name.as_str()) else {
                push_bounded(
                    &mut i.findings,
                    Finding::error(
                        Code::MissingStorage,
                        format!("storage {:?} has no member {name} in the zip", s.key),
                    )
                    .at(s.offset)
                    .field(name.clone()),
                );
                continue;
            };
            if e.method != 0 {
                push_bounded(
                    &mut i.findings,
                    Finding::error(
                        Code::CompressedMember,
                        format!("{name} is compressed: its bytes are not at a fixed offset"),
                    )
                    .at(e.header_offset),
                );
                continue;
            }
            match self.member_data(e)? {
                Ok(d) => {
                    places.insert(
                        s.key.clone(),
                        StoragePlace {
                            data: d,
                            bytes: e.size,
                            member: Some(name),
                        },
                    );
                }
                Err(f) => push_bounded(&mut i.findings, f),
            }
        }
        // nothing more is read: the walk is taken (its names and shapes move into the
        // inventory) and the bytes read let go before the inventory is built
        let mut w = self.walks.remove(&at).ok_or(Need { start: at, len: 0 })?;
        self.cache = RangeCache::default();
        let end = self.pickle_end(&w, at, &pkl.name, &mut i.findings);
        if end.is_some_and(|e| e < at.saturating_add(pkl.size)) {
            i.findings.push(
                Finding::warning(
                    Code::TrailingBytes,
                    format!("{} continues after the pickle's STOP", pkl.name),
                )
                .at(end.unwrap_or(at)),
            );
        }
        i.pickle = Some((at, pkl.size));
        let (t, f) = inventory(&mut w, &|s: &StorageRef| places.get(&*s.key).cloned());
        i.tensors = t;
        i.findings.extend(f);
        absorb(i, &w);
        Ok(())
    }
}

/// The length of a zip's first member name: the u16 at 26 of its local header (0 when the
/// header is cut short).
pub(super) fn first_name_len(head: &[u8]) -> u16 {
    head.get(26..28).map_or(0, |b| u16::from_le_bytes([b.first().copied().unwrap_or(0), b.get(1).copied().unwrap_or(0)]))
}
