//! A plain pickle, and the pickle walks every container makes: [`Reader::walk_at`] walks
//! one from a start offset, asking for more bytes (in doubling windows) while it runs out
//! before its STOP; the walks are memoized in the reader ([`Reader::walked`]). A plain
//! pickle whose first value is [`LEGACY_MAGIC`] is a legacy PyTorch file (`legacy.rs`).

use super::ranges::{Fetch, Need};
use super::{absorb, Container, Inspection, Reader, LEGACY_MAGIC, MAX_PICKLE_LEN};
use crate::error::{Code, Finding};
use crate::formats::pickle::eval::{self, Context, End, Walk};

/// Smallest extra read while a pickle of unknown length is walked from the start.
pub const PICKLE_CHUNK: u64 = 64 << 10;

impl Reader {
    /// Walks the pickle starting at `start`, asking for more bytes while it runs out
    /// before its STOP and the file goes on.
    pub(super) fn walk_at(&mut self, start: u64, ctx: &Context, limit: u64) -> Fetch<()> {
        if !self.walks.contains_key(&start) {
            let avail = self.cache.run_from(start);
            let avail_end = start.saturating_add(avail.len() as u64);
            let cap = start.saturating_add(limit).min(self.file_len);
            let window = avail
                .get(
                    ..usize::try_from(cap.saturating_sub(start))
                        .unwrap_or(usize::MAX)
                        .min(avail.len()),
                )
                .unwrap_or(avail);
            let mut w = eval::walk(window, ctx);
            if let End::OutOfData(at) = w.end {
                if avail_end < cap {
                    // windows double; a rest of at most two windows is read at once, so
                    // that each read at least halves what the cache holds already (it
                    // then takes exactly its room: `RangeCache::insert`)
                    let rest = cap - avail_end;
                    let len = (avail.len() as u64).max(PICKLE_CHUNK);
                    let len = if rest <= len.saturating_mul(2) { rest } else { len };
                    return Err(Need {
                        start: avail_end,
                        len,
                    });
                }
                if cap < self.file_len
                    && cap == start.saturating_add(limit)
                    && limit == MAX_PICKLE_LEN
                {
                    // the bytes go on, but not for us
                    w.end = End::Failed;
                    w.findings.push(
                        Finding::error(
                            Code::PickleLimit,
                            format!("the pickle from byte {start} runs past the {MAX_PICKLE_LEN}-byte limit: not walked to its end"),
                        )
                        .at(at),
                    );
                }
            }
            if ctx.torch {
                // a torch pickle's values serve only to name its tensors
                w.settle();
            }
            self.walks.insert(start, w);
        }
        Ok(())
    }

    pub(super) fn walked(&self, start: u64) -> Fetch<&Walk> {
        self.walks.get(&start).ok_or(Need { start, len: 0 })
    }

    pub(super) fn run_pickles(&mut self) -> Fetch<Inspection> {
        let ctx = Context {
            base: 0,
            member: None,
            torch: false,
        };
        self.walk_at(0, &ctx, MAX_PICKLE_LEN)?;
        let first = self.walked(0)?;
        if first.end != End::Failed && first.root.as_i128() == Some(LEGACY_MAGIC) {
            return self.run_legacy();
        }
        let mut i = self.empty(Container::Pickle);
        let end = self.pickle_end(first, 0, "the pickle", &mut i.findings);
        if let Some(end) = end {
            i.pickle = Some((0, end));
            if end < self.file_len {
                i.findings.push(
                    Finding::warning(
                        Code::TrailingBytes,
                        format!(
                            "{} bytes follow the pickle's STOP (not read)",
                            self.file_len - end
                        ),
                    )
                    .at(end),
                );
            }
        }
        if first.end == End::Failed && first.opcodes <= 1 {
            // not a pickle at all (random bytes, another format)
            i.format = Container::Unknown;
            i.findings.push(
                Finding::error(Code::UnknownFormat, "not a pickle, a zip or a .npy file").at(0),
            );
        }
        absorb(&mut i, first);
        Ok(i)
    }

    /// Where a finished walk ended, with a finding when it did not reach STOP.
    pub(super) fn pickle_end(
        &self,
        w: &Walk,
        start: u64,
        what: &str,
        findings: &mut Vec<Finding>,
    ) -> Option<u64> {
        match w.end {
            End::Stop(e) => Some(e),
            End::OutOfData(at) => {
                findings.push(
                    Finding::error(
                        Code::PickleTruncated,
                        format!("{what} (from byte {start}) ends before its STOP opcode: the file or member is truncated"),
                    )
                    .at(at),
                );
                None
            }
            End::Failed => None,
        }
    }
}
