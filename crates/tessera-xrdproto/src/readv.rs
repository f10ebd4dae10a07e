//! `kXR_readv`'s element list: up to 1024 `{fhandle, rlen, offset}`
//! elements of 16 bytes, bounded as the reference bounds them.

use crate::{err, DecodeError};

/// Elements per readv (the reference's `maxRvecsz`).
pub const MAX_ELEMENTS: usize = 1024;
/// Largest single element (the reference's `maxRVdsz`, 2 MiB less 16):
/// so a readv of at most 16 KiB asks for at most 2 GiB, every element
/// read under the budget a part at a time.
pub const MAX_ELEMENT: usize = 2_097_136;

/// One readv element: handle, length, offset.
pub type Element = ([u8; 4], usize, u64);

/// Parse and bound a readv list.
pub fn parse(p: &[u8]) -> Result<Vec<Element>, DecodeError> {
    if !p.len().is_multiple_of(16) || p.is_empty() {
        return Err(DecodeError::invalid(
            "readv list is not a whole number of 16-byte elements",
        ));
    }
    if p.len() / 16 > MAX_ELEMENTS {
        return Err(DecodeError::new(
            err::ARG_TOO_LONG,
            format!("more than {MAX_ELEMENTS} readv elements"),
        ));
    }
    p.chunks_exact(16)
        .map(|e| {
            let fh: [u8; 4] = e[0..4].try_into().expect("4 bytes");
            let len = i32::from_be_bytes(e[4..8].try_into().expect("4 bytes"));
            let off = i64::from_be_bytes(e[8..16].try_into().expect("8 bytes"));
            if len < 0 || off < 0 {
                return Err(DecodeError::invalid(format!(
                    "bad readv element: {len} bytes at {off}"
                )));
            }
            if len as usize > MAX_ELEMENT {
                // As the reference answers it.
                return Err(DecodeError::new(
                    err::ARG_TOO_LONG,
                    format!(
                        "single readv transfer is too large ({len} bytes; at most {MAX_ELEMENT})"
                    ),
                ));
            }
            Ok((fh, len as usize, off as u64))
        })
        .collect()
}
