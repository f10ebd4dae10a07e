//! The stripe file header (`docs/stripe-format.md`).

use crate::layout::{Layout, LayoutKind};

pub const HEADER_LEN: usize = 4096;
const MAGIC: &[u8; 8] = b"TSRSTRP1";
/// Block checksum kinds: one CRC-32C per block (format 1), one per page
/// (format 2; the page size follows in bytes 20..24).
const CKSUM_CRC32C: u8 = 1;
const CKSUM_CRC32C_PAGES: u8 = 2;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StripeHeader {
    pub layout: Layout,
    pub index: u8,
    pub sealed: bool,
    pub fid: u64,
    pub size: u64,
    pub blocks: u64,
}

impl StripeHeader {
    /// The header block (on the stack: a heap block of this size cost
    /// more than the rest of the encoding).
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0..8].copy_from_slice(MAGIC);
        h[8..10].copy_from_slice(&self.layout.format().to_le_bytes());
        h[10] = self.layout.kind.code();
        h[11] = self.layout.k;
        h[12] = self.layout.m;
        h[13] = self.index;
        h[14] = match self.layout.page {
            0 => CKSUM_CRC32C,
            _ => CKSUM_CRC32C_PAGES,
        };
        h[15] = u8::from(self.sealed);
        h[16..20].copy_from_slice(&self.layout.block_size.to_le_bytes());
        h[20..24].copy_from_slice(&self.layout.page.to_le_bytes());
        h[24..32].copy_from_slice(&self.fid.to_le_bytes());
        h[32..40].copy_from_slice(&self.size.to_le_bytes());
        h[40..48].copy_from_slice(&self.blocks.to_le_bytes());
        let crc = tessera_ec::crc32c(&h[..60]);
        h[60..64].copy_from_slice(&crc.to_le_bytes());
        h
    }

    pub fn decode(h: &[u8]) -> Result<StripeHeader, String> {
        if h.len() < 64 {
            return Err("short header".into());
        }
        if &h[0..8] != MAGIC {
            return Err("bad magic".into());
        }
        let crc = u32::from_le_bytes(h[60..64].try_into().expect("4 bytes"));
        if crc != tessera_ec::crc32c(&h[..60]) {
            return Err("header checksum mismatch".into());
        }
        let version = u16::from_le_bytes([h[8], h[9]]);
        let page = u32::from_le_bytes(h[20..24].try_into().expect("4 bytes"));
        match (version, h[14]) {
            (1, CKSUM_CRC32C) if page == 0 => {}
            (2, CKSUM_CRC32C_PAGES) if page >= 512 && page.is_power_of_two() => {}
            (1 | 2, c) => return Err(format!("unknown block checksum {c} (page {page})")),
            (v, _) => return Err(format!("unknown stripe format version {v}")),
        }
        let kind = LayoutKind::from_code(h[10]).ok_or("bad layout kind")?;
        let u64at = |o: usize| u64::from_le_bytes(h[o..o + 8].try_into().expect("8 bytes"));
        Ok(StripeHeader {
            layout: Layout {
                kind,
                k: h[11],
                m: h[12],
                block_size: u32::from_le_bytes(h[16..20].try_into().expect("4 bytes")),
                page,
            },
            index: h[13],
            sealed: h[15] == 1,
            fid: u64at(24),
            size: u64at(32),
            blocks: u64at(40),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_corruption() {
        let h = StripeHeader {
            layout: Layout::rain(4, 2).expect("ok"),
            index: 5,
            sealed: true,
            fid: 99,
            size: 12345,
            blocks: 3,
        };
        let mut raw = h.encode();
        assert_eq!(raw.len(), HEADER_LEN);
        assert_eq!(StripeHeader::decode(&raw).expect("ok"), h);
        raw[33] ^= 1;
        assert!(StripeHeader::decode(&raw).is_err());
        // Format 1 (one CRC per block) as its writer wrote it.
        let mut v1 = h.clone();
        v1.layout.page = 0;
        let raw = v1.encode();
        assert_eq!(u16::from_le_bytes([raw[8], raw[9]]), 1);
        assert_eq!(raw[14], 1);
        assert_eq!(StripeHeader::decode(&raw).expect("ok"), v1);
        let raw2 = h.encode();
        assert_eq!(u16::from_le_bytes([raw2[8], raw2[9]]), 2);
        assert_eq!(&raw2[20..24], &4096u32.to_le_bytes());
    }
}
