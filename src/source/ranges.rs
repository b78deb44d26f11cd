//! The range-driving loop: feeds a resumable reader that asks for byte ranges anywhere in
//! the file (a zip is read from its end) — [`crate::formats::torch::Reader`] — from a byte
//! source, counting every byte read. The pickle-family counterpart of [`super::drive`],
//! which only ever extends a prefix.

use super::{ByteSource, DriveError};
use crate::error::SourceError;
use crate::formats::torch::{Inspection, Next, Reader};
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

/// Upper bound on read rounds for one file, so that a reader that keeps asking can never
/// loop forever. A torch zip takes a handful (head, tail, directory, `data.pkl`, all the
/// local headers at once); a legacy file one per storage (each count says where the next
/// storage is) plus one per doubling of a pickle's read window; 1 M rounds covers a legacy
/// file of a million storages.
pub const MAX_RANGE_ROUNDS: usize = 1 << 20;

/// Reads of one round issued together (a torch zip's local headers): in the browser each
/// `Blob` read is a round trip to the browser process (~1 ms), so 254 local headers read
/// one after the other cost a quarter of a second; 64 at a time overlap them while keeping
/// the requests in flight (and their buffers) few.
pub const CONCURRENT_READS: usize = 64;

/// What one file's ranges cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RangeReads {
    /// Bytes read from the source (the `head` handed in included).
    pub bytes: u64,
    /// `read_at` calls made.
    pub reads: u64,
    /// Rounds: each one step of the reader and the reads it asked for.
    pub rounds: u64,
}

/// Runs a [`Reader`] over `src` to its inspection. `head` is the file's first bytes, already
/// read by the caller (the sniff): they are handed over first and counted, never read again.
pub async fn read_ranges<S: ByteSource + ?Sized>(
    src: &S,
    head: &[u8],
) -> (Result<Inspection, DriveError>, RangeReads) {
    let len = src.len();
    let mut reader = Reader::new(len);
    let mut cost = RangeReads {
        bytes: head.len() as u64,
        ..RangeReads::default()
    };
    if !head.is_empty() {
        reader.supply(0, head.to_vec());
    }
    for _ in 0..MAX_RANGE_ROUNDS {
        cost.rounds = cost.rounds.saturating_add(1);
        let (start, want) = match reader.step() {
            Next::Done(i) => return (Ok(*i), cost),
            Next::NeedRange { start, len } => (start, len),
        };
        let mut ranges = vec![(start, want)];
        ranges.extend(reader.take_also_needed());
        if let Some(&(at, n)) = ranges
            .iter()
            .find(|(at, n)| at.checked_add(*n).is_none_or(|end| end > len) || *n == 0)
        {
            return (
                Err(DriveError::Stuck {
                    need: at.saturating_add(n),
                    have: len,
                }),
                cost,
            );
        }
        for batch in ranges.chunks(CONCURRENT_READS) {
            let reads = batch
                .iter()
                .map(|&(at, n)| async move { (at, src.read_at(at, n).await) })
                .collect();
            for (at, read) in join_all(reads).await {
                match read {
                    Ok(bytes) => {
                        cost.bytes = cost.bytes.saturating_add(bytes.len() as u64);
                        cost.reads = cost.reads.saturating_add(1);
                        reader.supply(at, bytes);
                    }
                    Err(e) => return (Err(DriveError::Read(e)), cost),
                }
            }
        }
    }
    (
        Err(DriveError::Stuck {
            need: 0,
            have: cost.bytes,
        }),
        cost,
    )
}

/// Runs the reads concurrently; the results in their order.
async fn join_all<F: Future<Output = (u64, Result<Vec<u8>, SourceError>)>>(
    reads: Vec<F>,
) -> Vec<F::Output> {
    let mut reads: Vec<Pin<Box<F>>> = reads.into_iter().map(Box::pin).collect();
    let mut done: Vec<Option<F::Output>> = reads.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (read, out) in reads.iter_mut().zip(done.iter_mut()) {
            if out.is_none() {
                match read.as_mut().poll(cx) {
                    Poll::Ready(v) => *out = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    done.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::pickle::Verdict;
    use crate::source::MemorySource;

    #[test]
    fn a_plain_pickle_is_read_to_its_stop() {
        // protocol 2: {"a": 1}
        let bytes = b"\x80\x02}q\x00X\x01\x00\x00\x00aq\x01K\x01s.".to_vec();
        let src = MemorySource::new(bytes.clone());
        let (r, cost) = pollster::block_on(read_ranges(&src, bytes.get(..8).unwrap_or_default()));
        let i = r.unwrap();
        assert_eq!(i.safety.verdict, Verdict::Safe);
        assert_eq!(cost.bytes, bytes.len() as u64);
        assert_eq!(cost.reads, 1, "the rest of the file in one read");
    }

    #[test]
    fn a_failing_source_is_a_drive_error() {
        struct Broken;
        impl ByteSource for Broken {
            fn len(&self) -> u64 {
                1 << 20
            }
            async fn read_at(&self, _: u64, _: u64) -> Result<Vec<u8>, crate::error::SourceError> {
                Err(crate::error::SourceError::new("gone"))
            }
        }
        let (r, cost) = pollster::block_on(read_ranges(&Broken, b"\x80\x02"));
        assert!(matches!(r, Err(DriveError::Read(_))));
        assert_eq!(cost.bytes, 2);
    }
}
