//! `kXR_pgwrite`: file bytes in 4 KiB pages aligned to file offsets, each
//! after its CRC-32C. Pages whose CRC matches are written (through the
//! file's writer task, like `kXR_write`); a page whose CRC does not is not
//! written, and the reply (`kXR_status`) lists it so that the client sends
//! it again with `kXR_pgRetry` (XrdCl does), as XRootD 5 servers do
//! (`XrdXrootdXeqPgrw.cc`, do_PgWIO). The file's writes after a missing
//! page wait for it like any out-of-order write; a close while pages are
//! still missing fails with `kXR_ChkSumErr` and the file is aborted, so a
//! page that arrived damaged never becomes part of a file.

use crate::error::XrdError;
use crate::ops::pgread::{frame, FINAL};
use crate::proto::{err, req, PAGE};
use crate::reply::{Piece, Reply};

/// Pages in error one request may have (`kXR_pgMaxEpr`).
pub const MAX_BAD_PER_REQUEST: usize = 128;
/// Pages in error a file may be waiting for (`kXR_pgMaxEos`).
pub const MAX_BAD_PER_FILE: usize = 256;

/// A pgwrite's payload taken apart.
#[derive(Debug, PartialEq, Eq)]
pub struct Unpacked {
    /// The runs of good pages: (file offset, bytes).
    pub runs: Vec<(u64, Vec<u8>)>,
    /// The pages whose CRC did not match: (file offset, length).
    pub bad: Vec<(u64, usize)>,
}

/// Check and strip the CRCs of a pgwrite at `offset` (in place: the usual
/// case, every page good, is one run in the payload's own buffer).
pub fn unpack(offset: u64, mut p: Vec<u8>) -> Result<Unpacked, XrdError> {
    let (mut r, mut w, mut pos) = (0usize, 0usize, offset);
    // Good runs as (file offset, start, end) in the compacted buffer.
    let mut spans: Vec<(u64, usize, usize)> = Vec::new();
    let mut bad = Vec::new();
    while r < p.len() {
        let left = p.len() - r;
        if left <= 4 {
            return Err(XrdError::invalid("pgwrite: a page checksum without data"));
        }
        let n = (PAGE - (pos % PAGE as u64) as usize).min(left - 4);
        let crc = u32::from_be_bytes(p[r..r + 4].try_into().expect("4 bytes"));
        if tessera_ec::crc32c(&p[r + 4..r + 4 + n]) == crc {
            p.copy_within(r + 4..r + 4 + n, w);
            match spans.last_mut() {
                Some(s) if s.2 == w && s.0 + (s.2 - s.1) as u64 == pos => s.2 += n,
                _ => spans.push((pos, w, w + n)),
            }
            w += n;
        } else {
            bad.push((pos, n));
            if bad.len() >= MAX_BAD_PER_REQUEST {
                return Err(XrdError::new(
                    err::CHKSUM_ERR,
                    "too many checksum errors in request",
                ));
            }
        }
        r += 4 + n;
        pos += n as u64;
    }
    if p.is_empty() {
        return Err(XrdError::invalid("pgwrite length is invalid"));
    }
    let runs = match spans.as_slice() {
        [] => Vec::new(),
        [(off, 0, end)] => {
            p.truncate(*end);
            vec![(*off, p)]
        }
        many => many
            .iter()
            .map(|(off, a, b)| (*off, p[*a..*b].to_vec()))
            .collect(),
    };
    Ok(Unpacked { runs, bad })
}

/// The pages of a file that pgwrites found damaged, until they come
/// again (one file's writer task or update holds one).
#[derive(Default)]
pub struct Missing(std::collections::BTreeMap<u64, usize>);

impl Missing {
    /// Take in what a pgwrite brought (`retry`: `kXR_pgRetry`): its good
    /// runs that resend a missing page fill it, its bad pages join the
    /// missing ones; more than [`MAX_BAD_PER_FILE`] missing fails the file.
    pub fn note(&mut self, u: &Unpacked, retry: bool) -> Result<(), XrdError> {
        if retry {
            for (at, data) in &u.runs {
                if self.0.get(at) == Some(&data.len()) {
                    self.0.remove(at);
                }
            }
        }
        self.0.extend(u.bad.iter().copied());
        if self.0.len() > MAX_BAD_PER_FILE {
            return Err(XrdError::new(
                err::CHKSUM_ERR,
                "too many uncorrected checksum errors in file",
            ));
        }
        Ok(())
    }

    /// The error of a close while pages are still missing.
    pub fn at_close(&self) -> Option<XrdError> {
        (!self.0.is_empty()).then(|| {
            XrdError::new(
                err::CHKSUM_ERR,
                format!("{} uncorrected checksum errors", self.0.len()),
            )
        })
    }
}

/// The reply to a pgwrite at `offset`: a final `kXR_status` frame, with
/// the pages to send again (`ServerResponseBody_pgWrCSE`: its CRC-32C,
/// the first and last pages' lengths, their offsets) when there are any.
pub fn reply(stream: [u8; 2], offset: u64, bad: &[(u64, usize)]) -> Reply {
    let data = match (bad.first(), bad.last()) {
        (Some(first), Some(last)) => {
            let mut b = vec![0u8; 4];
            b.extend_from_slice(&(first.1 as i16).to_be_bytes());
            b.extend_from_slice(&(last.1 as i16).to_be_bytes());
            for (off, _) in bad {
                b.extend_from_slice(&off.to_be_bytes());
            }
            let crc = tessera_ec::crc32c(&b[4..]);
            b[..4].copy_from_slice(&crc.to_be_bytes());
            vec![Piece::Bytes(b)]
        }
        _ => Vec::new(),
    };
    frame(stream, req::PGWRITE, FINAL, offset, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pack(offset: u64, data: &[u8], damage: &[usize]) -> Vec<u8> {
        let mut out = Vec::new();
        let (mut pos, mut i, mut page) = (offset as usize, 0, 0);
        while i < data.len() {
            let n = (PAGE - pos % PAGE).min(data.len() - i);
            let mut crc = tessera_ec::crc32c(&data[i..i + n]);
            if damage.contains(&page) {
                crc ^= 1;
            }
            out.extend_from_slice(&crc.to_be_bytes());
            out.extend_from_slice(&data[i..i + n]);
            i += n;
            pos += n;
            page += 1;
        }
        out
    }

    #[test]
    fn pages_are_checked_and_stripped() {
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7) as u8).collect();
        // Unaligned start: a short first page, whole ones, a short last.
        let u = unpack(1000, pack(1000, &data, &[])).unwrap();
        assert_eq!(
            u,
            Unpacked {
                runs: vec![(1000, data.clone())],
                bad: vec![]
            }
        );
        // Pages 1 and 3 damaged: three runs around them.
        let u = unpack(1000, pack(1000, &data, &[1, 3])).unwrap();
        let p1 = (3096usize, 4096usize); // page 1: file 4096..8192
        let p3 = (p1.0 + 2 * 4096, 4096usize);
        assert_eq!(u.bad, vec![(4096, 4096), (12288, 4096)]);
        assert_eq!(
            u.runs,
            vec![
                (1000, data[..p1.0].to_vec()),
                (8192, data[p1.0 + p1.1..p3.0].to_vec()),
                (16384, data[p3.0 + p3.1..].to_vec()),
            ]
        );
        // Malformed: a CRC without data, nothing at all.
        assert!(unpack(0, vec![0, 0, 0, 0]).is_err());
        assert!(unpack(0, Vec::new()).is_err());
    }
}
