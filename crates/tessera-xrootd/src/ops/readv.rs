//! `kXR_readv`: up to 1024 `{fhandle, rlen, offset}` elements; each answered
//! by its 16-byte header and its bytes, sent in `kXR_oksofar` parts of
//! about [`read::PART`] bytes. An element that reaches past the end of the
//! file fails the request (kXR_FSError, ESPIPE), as the reference server
//! does.

use super::read::{self, fetch};
use crate::error::XrdError;
use crate::proto::{err, status};
use crate::reply::{Out, Piece};
use crate::session::{Handle, Session};

pub const MAX_ELEMENTS: usize = 1024;
/// Largest single element (`readv_ior_max`).
pub const MAX_ELEMENT: usize = 8 << 20;

/// One readv element: handle, length, offset.
pub type Element = ([u8; 4], usize, u64);

/// Parse and bound a readv list.
pub fn parse(p: &[u8]) -> Result<Vec<Element>, XrdError> {
    if !p.len().is_multiple_of(16) || p.is_empty() {
        return Err(XrdError::invalid(
            "readv list is not a whole number of 16-byte elements",
        ));
    }
    if p.len() / 16 > MAX_ELEMENTS {
        return Err(XrdError::new(
            err::ARG_TOO_LONG,
            format!("more than {MAX_ELEMENTS} readv elements"),
        ));
    }
    p.chunks_exact(16)
        .map(|e| {
            let fh: [u8; 4] = e[0..4].try_into().expect("4 bytes");
            let len = i32::from_be_bytes(e[4..8].try_into().expect("4 bytes"));
            let off = i64::from_be_bytes(e[8..16].try_into().expect("8 bytes"));
            if len < 0 || off < 0 || len as usize > MAX_ELEMENT {
                return Err(XrdError::invalid(format!(
                    "bad readv element: {len} bytes at {off}"
                )));
            }
            Ok((fh, len as usize, off as u64))
        })
        .collect()
}

pub async fn readv(s: &Session, out: &Out, stream: [u8; 2], p: &[u8]) {
    let elements = match parse(p) {
        Ok(e) => e,
        Err(e) => {
            out.error(stream, &e).await;
            return;
        }
    };
    // Refused before any byte is sent when an element reaches past the end
    // (as the reference answers; XrdCl retries a short element without
    // end, reopening the file each time). A read session's size is fixed,
    // so no element below comes back short.
    for (fh, len, off) in &elements {
        if let Ok(Handle::Read(r)) = s.get(*fh) {
            if off.saturating_add(*len as u64) > r.rs.size() {
                out.error(stream, &past_end(*len, *off)).await;
                return;
            }
        }
    }
    let mut part: Vec<Piece> = Vec::new();
    let mut part_bytes = 0usize;
    // The memory budget's bytes the part holds until it is sent.
    let mut leases = Vec::new();
    for (fh, len, off) in elements {
        let r = match s.get(fh) {
            Ok(Handle::Read(r)) => r,
            Ok(Handle::Write(_)) => {
                out.error(
                    stream,
                    &XrdError::new(err::NOT_AUTHORIZED, "file is open for writing only"),
                )
                .await;
                return;
            }
            Err(e) => {
                out.error(stream, &e).await;
                return;
            }
        };
        match read::lease(s, len).await {
            Some(l) => leases.push(l),
            None => {
                out.error(stream, &read::no_memory()).await;
                return;
            }
        }
        let d = match fetch(&r, off, len).await {
            Ok(d) => d,
            Err(e) => {
                out.error(stream, &e).await;
                return;
            }
        };
        let got = d.as_ref().map_or(0, |d| d.len());
        let mut hdr = fh.to_vec();
        hdr.extend_from_slice(&(got as i32).to_be_bytes());
        hdr.extend_from_slice(&off.to_be_bytes());
        match d {
            // A short element holds whole blocks (1 MiB each by default)
            // for a few bytes: copied out, the blocks go back to the pool
            // at once, so a part holds at most a few times what it sends
            // (1,024 elements of a few bytes would otherwise hold 1 GiB).
            Some(d) if d.held() > 4 * got => {
                for sl in d.slices() {
                    hdr.extend_from_slice(sl);
                }
                part.push(Piece::Bytes(hdr));
            }
            Some(d) => {
                part.push(Piece::Bytes(hdr));
                part.push(Piece::Data(d));
            }
            None => part.push(Piece::Bytes(hdr)),
        }
        part_bytes += 16 + got;
        if part_bytes >= read::PART {
            if !out
                .pieces(stream, status::OKSOFAR, std::mem::take(&mut part))
                .await
            {
                return;
            }
            part_bytes = 0;
            leases.clear();
        }
    }
    out.pieces(stream, status::OK, part).await;
}

fn past_end(len: usize, off: u64) -> XrdError {
    XrdError::new(
        err::FS_ERROR,
        format!("readv of {len} bytes at {off} reaches past the end of the file; illegal seek (errno 29)"),
    )
}
