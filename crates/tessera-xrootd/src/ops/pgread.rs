//! `kXR_pgread`: file bytes in 4 KiB pages aligned to file offsets, each
//! after its CRC-32C, in `kXR_status` frames (partial ones, then a final
//! one), as XRootD 5 servers send them (`XrdXrootdXeqPgrw.cc`, do_PgRIO).
//! The CRCs are the ones the stripes store wherever the stored pages are
//! the file's (`ReadData::page_crcs`): the client checks the bytes
//! against what was written, not against a checksum made on the way out.
//! A frame is one storage read (up to [`read::PART`]); every frame after
//! the first starts on a page boundary. A retry (`kXR_pgRetry`, a page
//! the client found bad) is read again the same way: reads are verified
//! against the stored checksums, so the same bytes or an error come back.

use crate::ops::read;
use crate::proto::{req, status, PAGE};
use crate::reply::{Out, Piece, Reply};
use crate::request::Read;
use crate::session::Session;
use std::sync::atomic::Ordering;
use tessera_core::ReadData;

/// `resptype` of a `kXR_status` frame.
pub const FINAL: u8 = 0;
pub const PARTIAL: u8 = 1;

/// Bytes of a `kXR_status` frame the header counts: the status body (16)
/// and the info (an offset).
const COUNTED: usize = 16 + 8;

/// A `kXR_status` frame answering request `code` (pgread or pgwrite):
/// `info` is `offset`, then `data` (not counted in the header's length;
/// the status body says how long it is), its CRC-32C over the status body
/// after the CRC and the info.
pub fn frame(stream: [u8; 2], code: u16, resptype: u8, offset: u64, data: Vec<Piece>) -> Reply {
    let dlen: usize = data.iter().map(Piece::len).sum();
    let mut b = Vec::with_capacity(COUNTED);
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&stream);
    b.push((code - req::AUTH) as u8);
    b.push(resptype);
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&(dlen as u32).to_be_bytes());
    b.extend_from_slice(&offset.to_be_bytes());
    let crc = tessera_ec::crc32c(&b[4..]);
    b[..4].copy_from_slice(&crc.to_be_bytes());
    let mut body = vec![Piece::Bytes(b)];
    body.extend(data);
    Reply {
        stream,
        status: status::STATUS,
        body,
        counted: Some(COUNTED),
    }
}

pub async fn pgread(s: &Session, out: &Out, st: [u8; 2], rd: Read) {
    s.cfg.stats.pgreads.fetch_add(1, Ordering::Relaxed);
    let Some(r) = read::reader_or_answer(s, out, st, rd.fh).await else {
        return;
    };
    let (mut pos, end) = (rd.offset, rd.offset.saturating_add(rd.len as u64));
    loop {
        // Up to a page boundary, so that the next frame starts on one.
        let n = (read::PART - (pos % PAGE as u64) as usize).min((end - pos) as usize);
        // Held until the frame is sent (the bytes and their CRCs).
        let Some(_lease) = read::lease(s, r.share(), n + 4 * (n / PAGE + 2)).await else {
            out.error(st, &read::no_memory()).await;
            return;
        };
        let d = match r.fetch(pos, n).await {
            Ok(d) => d,
            Err(e) => {
                out.error(st, &e).await;
                return;
            }
        };
        let got = d.as_ref().map_or(0, ReadData::len);
        r.watch().read(got as u64);
        let more = got == n && pos + (got as u64) < end;
        let kind = if more { PARTIAL } else { FINAL };
        let data = d.map(|d| pages(s, pos, d)).into_iter().collect();
        if !out.send(frame(st, req::PGREAD, kind, pos, data)).await || !more {
            return;
        }
        pos += got as u64;
    }
}

/// `d` (file bytes from `pos`) as pages with their CRCs, counted.
fn pages(s: &Session, pos: u64, d: ReadData) -> Piece {
    let (crcs, stored) = d.page_crcs(pos, PAGE);
    let stats = &s.cfg.stats;
    stats
        .page_crcs_stored
        .fetch_add(stored as u64, Ordering::Relaxed);
    stats
        .page_crcs_computed
        .fetch_add((crcs.len() - stored) as u64, Ordering::Relaxed);
    let first = (PAGE - (pos % PAGE as u64) as usize).min(d.len());
    Piece::Paged {
        data: d,
        crcs: crcs.into_iter().map(u32::to_be_bytes).collect(),
        first,
    }
}
