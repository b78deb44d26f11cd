//! The range plan every container reads through: the bytes fetched so far ([`RangeCache`],
//! adjacent ranges merged), the missing range a parse step answers with ([`Need`]), and the
//! [`Reader`]'s two ways of asking — one range ([`Reader::get`]) or many in one round
//! ([`Reader::batch`]).

use super::Reader;
use std::collections::BTreeMap;

/// Fetched byte ranges, adjacent and overlapping ones merged.
#[derive(Clone, Debug, Default)]
pub struct RangeCache {
    pub(super) ranges: BTreeMap<u64, Vec<u8>>,
}

impl RangeCache {
    pub fn insert(&mut self, start: u64, bytes: Vec<u8>) {
        let mut start = start;
        let mut bytes = bytes;
        // merge with a range that begins before and reaches into or up to this one
        let before = self.ranges.range(..=start).next_back().map(|(&s, prev)| (s, s.saturating_add(prev.len() as u64)));
        if let Some((s, prev_end)) = before.filter(|&(_, prev_end)| prev_end >= start) {
            // taken out and extended in place, not copied: a legacy file's counts of empty
            // storages are adjacent 8-byte reads, and copying the growing range each time
            // made them quadratic (found by fuzzing)
            let mut merged = self.ranges.remove(&s).unwrap_or_default();
            let skip = usize::try_from(prev_end - start).unwrap_or(usize::MAX);
            if let Some(tail) = bytes.get(skip..) {
                // a tail at least half the range's length (a pickle read in doubling
                // windows) is given exactly its room: doubling would leave up to half the
                // file's pickle unused (a 40 MB pickle in a 64 MiB vector); smaller ones
                // grow it by doubling (linear, above). Exact growth by half or more each
                // time copies the range O(1) times over.
                if tail.len() >= merged.len() / 2 {
                    merged.reserve_exact(tail.len());
                }
                merged.extend_from_slice(tail);
            }
            start = s;
            bytes = merged;
        }
        // swallow ranges that begin inside or right after this one
        let end = start.saturating_add(bytes.len() as u64);
        let later: Vec<u64> = self.ranges.range(start..=end).map(|(&s, _)| s).collect();
        for s in later {
            if let Some(next) = self.ranges.remove(&s) {
                let next_end = s.saturating_add(next.len() as u64);
                let cur_end = start.saturating_add(bytes.len() as u64);
                if next_end > cur_end {
                    let skip = usize::try_from(cur_end - s).unwrap_or(usize::MAX);
                    if let Some(tail) = next.get(skip..) {
                        bytes.extend_from_slice(tail);
                    }
                }
            }
        }
        self.ranges.insert(start, bytes);
    }

    /// `[start, start + len)` if all of it was fetched.
    pub fn get(&self, start: u64, len: u64) -> Option<&[u8]> {
        let (&s, b) = self.ranges.range(..=start).next_back()?;
        let from = usize::try_from(start - s).ok()?;
        let to = from.checked_add(usize::try_from(len).ok()?)?;
        b.get(from..to)
    }

    /// The part of `[start, start + len)` still to fetch, without the bytes already held
    /// at either end (so that no byte is asked for twice).
    fn missing(&self, start: u64, len: u64) -> Need {
        let end = start.saturating_add(len);
        let have = self.run_from(start).len() as u64;
        let from = start.saturating_add(have).min(end);
        // a held range that begins inside and reaches the end trims the tail
        let later = if from < end { self.ranges.range(from.saturating_add(1)..end).next() } else { None };
        let to = match later {
            Some((&s, b)) if s.saturating_add(b.len() as u64) >= end => s,
            _ => end,
        };
        Need {
            start: from,
            len: to - from,
        }
    }

    /// The contiguous bytes fetched from `start` on.
    pub fn run_from(&self, start: u64) -> &[u8] {
        self.ranges
            .range(..=start)
            .next_back()
            .and_then(|(&s, b)| b.get(usize::try_from(start - s).ok()?..))
            .unwrap_or(&[])
    }
}

/// A missing range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Need {
    pub(super) start: u64,
    pub(super) len: u64,
}

/// A parse step's answer: its result, or the first range still missing.
pub(super) type Fetch<T> = Result<T, Need>;

impl Reader {
    /// Bytes `[start, start + len)`, clamped to the file; a range past the end is the
    /// caller's bug and answers with what exists.
    pub(super) fn get(&self, start: u64, len: u64) -> Fetch<&[u8]> {
        let start = start.min(self.file_len);
        let len = len.min(self.file_len - start);
        if len == 0 {
            // nothing to fetch (an empty central directory before any byte held: found by
            // fuzzing, tests/fuzz_regressions.rs)
            return Ok(&[]);
        }
        self.cache
            .get(start, len)
            .ok_or_else(|| self.cache.missing(start, len))
    }

    /// Asks for every range of `ranges` not held yet in one round (the first, and the rest
    /// through [`Reader::take_also_needed`]); Ok when all are held.
    pub(super) fn batch(&mut self, ranges: impl Iterator<Item = (u64, u64)>) -> Fetch<()> {
        let need = self.missing_of(ranges);
        ask(&mut self.also, &need)
    }

    /// What is still to fetch of those of `ranges` that lie in the file (nothing for one
    /// held whole).
    pub(super) fn missing_of(&self, ranges: impl Iterator<Item = (u64, u64)>) -> Vec<Need> {
        let mut need = Vec::new();
        for (at, len) in ranges {
            if len > 0 && at.checked_add(len).is_some_and(|e| e <= self.file_len) && self.cache.get(at, len).is_none() {
                need.push(self.cache.missing(at, len));
            }
        }
        need
    }
}

/// Asks for the first of `need` and keeps the rest in `also` (for
/// [`Reader::take_also_needed`]); Ok when nothing is needed. A free function over the one
/// field, so that a caller may hold a borrow of the walks meanwhile (`Reader::torch_zip`).
pub(super) fn ask(also: &mut Vec<Need>, need: &[Need]) -> Fetch<()> {
    match need.split_first() {
        Some((first, rest)) => {
            *also = rest.to_vec();
            Err(*first)
        }
        None => Ok(()),
    }
}
