//! `kXR_readv`: up to 1024 `{fhandle, rlen, offset}` elements; each answered
//! by its 16-byte header and its bytes, sent in `kXR_oksofar` parts of
//! about [`SEND_AT`] bytes. An element that reaches past the end of the
//! file fails the request (kXR_FSError, ESPIPE), as the reference server
//! does.

use super::read::{self, Source};
use crate::error::XrdError;
use crate::proto::{err, status};
use crate::reply::{Out, Piece};
use crate::session::Session;
use tessera_core::ReadData;

pub use tessera_xrdproto::readv::{Element, MAX_ELEMENT, MAX_ELEMENTS};

pub async fn readv(s: &Session, out: &Out, stream: [u8; 2], elements: Vec<Element>) {
    // Each handle looked up once (a readv names one or a few files).
    let mut handles: Vec<([u8; 4], Result<Source, XrdError>)> = Vec::new();
    for (fh, _, _) in &elements {
        if !handles.iter().any(|(h, _)| h == fh) {
            handles.push((*fh, read::reader(s, *fh)));
        }
    }
    let handle = |fh: &[u8; 4]| &handles.iter().find(|(h, _)| h == fh).expect("looked up").1;
    // Refused before any byte is sent when an element reaches past the end
    // (as the reference answers; XrdCl retries a short element without
    // end, reopening the file each time). A read session's size is fixed,
    // so no element below comes back short.
    for (fh, len, off) in &elements {
        if let Ok(r) = handle(fh) {
            if off.saturating_add(*len as u64) > r.size() {
                out.error(stream, &past_end(*len, *off)).await;
                return;
            }
        }
    }
    let gap = |fh: &[u8; 4]| handle(fh).as_ref().map_or(0, Source::merge_gap);
    let mut part = Part::default();
    let runs = runs(&elements, gap);
    let last = runs.len().saturating_sub(1);
    for (i, run) in runs.iter().enumerate() {
        let r = match handle(&run.fh) {
            Ok(r) => r,
            Err(e) => {
                out.error(stream, e).await;
                return;
            }
        };
        let span = (run.end - run.start) as usize;
        // What the part will read, leased at once when it needs more.
        let ahead = if span > part.leased_left {
            part_ahead(&runs[i..], &part)
        } else {
            0
        };
        if !part.lease(s, r.share(), span, ahead).await {
            out.error(stream, &read::no_memory()).await;
            return;
        }
        let d = match r.fetch(run.start, span).await {
            Ok(d) => d,
            Err(e) => {
                out.error(stream, &e).await;
                return;
            }
        };
        let els = &elements[run.first..run.first + run.count];
        r.watch()
            .readv(els.iter().map(|e| e.1 as u64).sum(), els.len() as u64);
        part.add(els, run.start, d);
        // A full part goes out now unless it is the last (the final
        // reply must carry elements: XrdCl fails an empty one).
        if (part.bytes >= SEND_AT || part.elements >= SEND_AT_ELEMENTS) && i < last {
            let (pieces, held) = part.take();
            if !out.pieces(stream, status::OKSOFAR, pieces).await {
                return;
            }
            drop(held);
        }
    }
    let (pieces, held) = part.take();
    out.pieces(stream, status::OK, pieces).await;
    drop(held);
}

/// A reply part is sent once it holds this many bytes (the packed copy
/// is still in the CPU's cache when the socket copies it) or this many
/// elements (the client decodes a part while the next is read: measured
/// on 10 readv of 1,024 x 1 KiB, 52 ms in one 1 MiB part, 37 ms in parts
/// of 256 elements; in parts of 256 KiB, 64 KiB elements were slower).
const SEND_AT: usize = 1 << 20;
const SEND_AT_ELEMENTS: usize = 256;

/// Elements at most this long are copied into the part's packed buffer
/// (one iovec for many elements, their stripe buffers back to the pool at
/// once); longer ones are sent from the stripe buffers. Measured on
/// 256 x 64 KiB readv: sending those from the stripe buffers (their
/// page-sized slices, many iovecs) cost 40 % more server CPU than the copy.
const PACK_BELOW: usize = 64 << 10;

/// One reply part being built: its pieces, the short elements packed
/// (header and bytes) into one buffer, and the memory budget it holds.
#[derive(Default)]
struct Part {
    pieces: Vec<Piece>,
    packed: Vec<u8>,
    bytes: usize,
    elements: usize,
    leases: Vec<tessera_core::Lease>,
    /// Budget bytes leased and not yet used by the part's runs.
    leased_left: usize,
}

impl Part {
    /// Take `n` more bytes of the budget for this part, leasing ahead what
    /// the part will still read (`ahead`: its coming runs), not one lease
    /// per run.
    async fn lease(
        &mut self,
        s: &Session,
        id: &tessera_core::Share,
        n: usize,
        ahead: usize,
    ) -> bool {
        if n > self.leased_left {
            let ask = n.max(ahead);
            match read::lease(s, id, ask).await {
                Some(l) => {
                    self.leases.push(l);
                    self.leased_left += ask;
                }
                None => return false,
            }
        }
        self.leased_left -= n;
        true
    }

    /// Add the elements of a run read from `start` (`d`: its bytes).
    fn add(&mut self, elements: &[Element], start: u64, d: Option<ReadData>) {
        self.elements += elements.len();
        match d {
            // One long element: sent straight from the stripe buffers.
            Some(d) if elements.len() == 1 && d.len() > PACK_BELOW && d.held() <= 4 * d.len() => {
                self.flush();
                self.pieces
                    .push(Piece::Bytes(element_header(&elements[0], d.len()).to_vec()));
                self.bytes += 16 + d.len();
                self.pieces.push(Piece::Data(d));
            }
            // Short elements: copied into the packed buffer.
            Some(d) => {
                let room: usize = elements.iter().map(|e| 16 + e.1).sum();
                self.packed.reserve(room);
                for e in elements {
                    let at = self.packed.len();
                    self.packed.extend_from_slice(&element_header(e, e.1));
                    let got = d.extend_into(e.2 - start, e.1, &mut self.packed);
                    self.packed[at + 4..at + 8].copy_from_slice(&(got as i32).to_be_bytes());
                    self.bytes += 16 + got;
                }
            }
            None => {
                for e in elements {
                    self.packed.extend_from_slice(&element_header(e, 0));
                    self.bytes += 16;
                }
            }
        }
    }

    fn flush(&mut self) {
        if !self.packed.is_empty() {
            self.pieces
                .push(Piece::Bytes(std::mem::take(&mut self.packed)));
        }
    }

    /// The pieces to send and the budget they hold (to drop once they
    /// are sent); the part starts again.
    fn take(&mut self) -> (Vec<Piece>, Vec<tessera_core::Lease>) {
        self.flush();
        self.bytes = 0;
        self.elements = 0;
        self.leased_left = 0;
        (
            std::mem::take(&mut self.pieces),
            std::mem::take(&mut self.leases),
        )
    }
}

/// The bytes `runs` (the coming ones, in order) will read into the part
/// before it is sent (at [`SEND_AT`] bytes or [`SEND_AT_ELEMENTS`]
/// elements), given what it holds.
fn part_ahead(runs: &[Run], part: &Part) -> usize {
    let (mut bytes, mut elements, mut ahead) = (part.bytes, part.elements, 0);
    for r in runs {
        if bytes >= SEND_AT || elements >= SEND_AT_ELEMENTS {
            break;
        }
        let span = (r.end - r.start) as usize;
        ahead += span;
        bytes += 16 * r.count + span;
        elements += r.count;
    }
    ahead
}

/// Elements shorter than this are read together with their neighbours.
const MERGE_BELOW: usize = 256 << 10;

/// Consecutive elements read with one storage read: `elements[first..
/// first + count]`, all of handle `fh`, within `start..end`.
#[derive(Debug, PartialEq, Eq)]
struct Run {
    fh: [u8; 4],
    start: u64,
    end: u64,
    first: usize,
    count: usize,
    /// Every element is shorter than [`MERGE_BELOW`].
    short: bool,
}

/// Group the elements, in request order, into runs: a short element
/// joins the run before it when it is on the same file, starts at or
/// after the run's start and within `gap(fh)` of its end (the file's
/// `merge_gap`: a few pages when its stripes have page checksums, a block
/// when each element reads its whole verified block), and the run stays
/// within [`read::PART`] (the most one read holds). ROOT's readv asks
/// for many short baskets of the same region: what is read and verified
/// once serves them all.
fn runs(elements: &[Element], gap: impl Fn(&[u8; 4]) -> u64) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    for (i, &(fh, len, off)) in elements.iter().enumerate() {
        let end = off + len as u64;
        if let Some(r) = out.last_mut() {
            if r.short
                && len < MERGE_BELOW
                && r.fh == fh
                && off >= r.start
                && off <= r.end + gap(&fh)
                && end.max(r.end) - r.start <= read::PART as u64
            {
                r.end = r.end.max(end);
                r.count += 1;
                continue;
            }
        }
        out.push(Run {
            fh,
            start: off,
            end,
            first: i,
            count: 1,
            short: len < MERGE_BELOW,
        });
    }
    out
}

fn element_header(e: &Element, got: usize) -> [u8; 16] {
    let mut hdr = [0u8; 16];
    hdr[..4].copy_from_slice(&e.0);
    hdr[4..8].copy_from_slice(&(got as i32).to_be_bytes());
    hdr[8..].copy_from_slice(&e.2.to_be_bytes());
    hdr
}

fn past_end(len: usize, off: u64) -> XrdError {
    XrdError::new(
        err::FS_ERROR,
        format!("readv of {len} bytes at {off} reaches past the end of the file; illegal seek (errno 29)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: [u8; 4] = [0, 0, 0, 1];
    const B: [u8; 4] = [0, 0, 0, 2];

    fn spans(e: &[Element]) -> Vec<(u64, u64, usize, usize)> {
        runs(e, |_| 1 << 20)
            .into_iter()
            .map(|r| (r.start, r.end, r.first, r.count))
            .collect()
    }

    #[test]
    fn short_neighbours_are_read_together() {
        let k = 1024;
        // Ascending and close: one run.
        let e = [(A, k, 0), (A, k, 5000), (A, k, 900_000), (A, k, 1_900_000)];
        assert_eq!(spans(&e), vec![(0, 1_900_000 + 1024, 0, 4)]);
        // Overlapping elements join too.
        assert_eq!(spans(&[(A, k, 100), (A, k, 200)]), vec![(100, 1224, 0, 2)]);
        // Too far apart, backwards, another file, or a long element: apart.
        let e = [
            (A, k, 0),
            (A, k, 3 << 20),
            (A, k, 1 << 20),
            (B, k, 1 << 20),
            (B, 300 << 10, 1 << 20),
            (B, k, 1 << 20),
        ];
        assert_eq!(runs(&e, |_| 1 << 20).len(), 6);
        // With page checksums, elements a few pages apart stay apart.
        let e = [(A, k, 0), (A, k, 20_000), (A, k, 200_000)];
        assert_eq!(runs(&e, |_| 32 << 10).len(), 2);
        // A run stays within what one read holds.
        let e: Vec<Element> = (0..20).map(|i| (A, k, i << 20)).collect();
        let r = spans(&e);
        assert!(
            r.iter().all(|&(s, e, _, _)| e - s <= read::PART as u64),
            "{r:?}"
        );
        assert_eq!(r.iter().map(|x| x.3).sum::<usize>(), 20);
        assert_eq!(r.len(), 3);
    }
}
