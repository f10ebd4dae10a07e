//! Wire constants and the request header of the XRootD protocol (5.x;
//! `XProtocol.hh` is the authority). Every integer is big-endian.

/// Protocol version we advertise: 5.1.1, with `kXR_pgread` and
/// `kXR_pgwrite` (XrdCl then moves plain-`root://` data in checksummed
/// pages: every upload arrives as pgwrite; over TLS it keeps read/write).
pub const PROTOCOL_VERSION: u32 = 0x0000_0511;

/// The page of `kXR_pgread`/`kXR_pgwrite`: a CRC-32C per 4 KiB of file,
/// pages aligned to file offsets.
pub const PAGE: usize = 4096;

pub const HANDSHAKE_LEN: usize = 20;
pub const HEADER_LEN: usize = 24;

/// Request codes.
pub mod req {
    pub const AUTH: u16 = 3000;
    pub const QUERY: u16 = 3001;
    pub const CHMOD: u16 = 3002;
    pub const CLOSE: u16 = 3003;
    pub const DIRLIST: u16 = 3004;
    pub const GPFILE: u16 = 3005;
    pub const PROTOCOL: u16 = 3006;
    pub const LOGIN: u16 = 3007;
    pub const MKDIR: u16 = 3008;
    pub const MV: u16 = 3009;
    pub const OPEN: u16 = 3010;
    pub const PING: u16 = 3011;
    pub const CHKPOINT: u16 = 3012;
    pub const READ: u16 = 3013;
    pub const RM: u16 = 3014;
    pub const RMDIR: u16 = 3015;
    pub const SYNC: u16 = 3016;
    pub const STAT: u16 = 3017;
    pub const SET: u16 = 3018;
    pub const WRITE: u16 = 3019;
    pub const FATTR: u16 = 3020;
    pub const PREPARE: u16 = 3021;
    pub const STATX: u16 = 3022;
    pub const ENDSESS: u16 = 3023;
    pub const BIND: u16 = 3024;
    pub const READV: u16 = 3025;
    pub const PGWRITE: u16 = 3026;
    pub const LOCATE: u16 = 3027;
    pub const TRUNCATE: u16 = 3028;
    pub const SIGVER: u16 = 3029;
    pub const PGREAD: u16 = 3030;
    pub const WRITEV: u16 = 3031;
}

/// Response status codes.
pub mod status {
    pub const OK: u16 = 0;
    pub const OKSOFAR: u16 = 4000;
    pub const AUTHMORE: u16 = 4002;
    pub const ERROR: u16 = 4003;
    pub const REDIRECT: u16 = 4004;
    pub const WAIT: u16 = 4005;
    /// The integrity-framed reply of pgread and pgwrite.
    pub const STATUS: u16 = 4007;
}

/// `kXR_error` numbers.
pub mod err {
    pub const ARG_INVALID: i32 = 3000;
    pub const ARG_MISSING: i32 = 3001;
    pub const ARG_TOO_LONG: i32 = 3002;
    pub const FILE_NOT_OPEN: i32 = 3004;
    pub const FS_ERROR: i32 = 3005;
    pub const INVALID_REQUEST: i32 = 3006;
    pub const IO_ERROR: i32 = 3007;
    pub const NO_MEMORY: i32 = 3008;
    pub const NO_SPACE: i32 = 3009;
    pub const NOT_AUTHORIZED: i32 = 3010;
    pub const NOT_FOUND: i32 = 3011;
    pub const SERVER_ERROR: i32 = 3012;
    pub const UNSUPPORTED: i32 = 3013;
    pub const NO_SERVER: i32 = 3014;
    pub const NOT_FILE: i32 = 3015;
    pub const IS_DIRECTORY: i32 = 3016;
    pub const ITEM_EXISTS: i32 = 3018;
    pub const CHKSUM_ERR: i32 = 3019;
    pub const OVER_QUOTA: i32 = 3021;
    pub const OVERLOADED: i32 = 3024;
    pub const FS_READ_ONLY: i32 = 3025;
    pub const AUTH_FAILED: i32 = 3030;
}

/// `kXR_protocol` request flags and reply flags.
pub mod pflags {
    pub const WANT_TLS: u8 = 0x04;
    pub const IS_SERVER: u32 = 0x0000_0001;
    /// A redirector: XrdCl comes back to it when a server it sent the
    /// client to fails, naming that server in `tried=`.
    pub const IS_MANAGER: u32 = 0x0000_0002;
    pub const HAVE_TLS: u32 = 0x8000_0000;
    pub const GOTO_TLS: u32 = 0x4000_0000;
    /// `kXR_suppgrw`: pgread and pgwrite are served (XrdCl's pgread falls
    /// back to read without it).
    pub const SUPPGRW: u32 = 0x0020_0000;
}

/// `kXR_open` options.
pub mod open {
    pub const DELETE: u16 = 0x0002;
    pub const FORCE: u16 = 0x0004;
    pub const NEW: u16 = 0x0008;
    pub const READ: u16 = 0x0010;
    pub const UPDATE: u16 = 0x0020;
    pub const ASYNC: u16 = 0x0040;
    pub const MKPATH: u16 = 0x0100;
    pub const APPEND: u16 = 0x0200;
    pub const RETSTAT: u16 = 0x0400;
    pub const WRITE_ONLY: u16 = 0x8000;
}

/// Stat flags (`kXR_isDir` ...).
pub mod sflags {
    pub const XSET: u32 = 1;
    pub const IS_DIR: u32 = 2;
    pub const OTHER: u32 = 4;
    pub const READABLE: u32 = 16;
    pub const WRITABLE: u32 = 32;
}

/// `kXR_query` info types.
pub mod query {
    pub const STATS: u16 = 1;
    pub const PREPARE: u16 = 2;
    pub const CKSUM: u16 = 3;
    pub const XATTR: u16 = 4;
    pub const SPACE: u16 = 5;
    pub const CKSCAN: u16 = 6;
    pub const CONFIG: u16 = 7;
    pub const VISA: u16 = 8;
    pub const OPAQUE: u16 = 16;
    pub const OPAQUF: u16 = 32;
    pub const OPAQUG: u16 = 64;
}

/// A request header: stream id, request code, 16 parameter bytes, and the
/// payload length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub stream: [u8; 2],
    pub code: u16,
    /// Bytes 4..20 of the header.
    pub params: [u8; 16],
    pub dlen: i32,
}

impl Header {
    pub fn parse(b: &[u8; HEADER_LEN]) -> Header {
        let mut params = [0u8; 16];
        params.copy_from_slice(&b[4..20]);
        Header {
            stream: [b[0], b[1]],
            code: u16::from_be_bytes([b[2], b[3]]),
            params,
            dlen: i32::from_be_bytes([b[20], b[21], b[22], b[23]]),
        }
    }

    /// Parameter bytes by their offset in the 24-byte header (as the spec
    /// and `XProtocol.hh` number them).
    pub fn at(&self, off: usize, len: usize) -> &[u8] {
        &self.params[off - 4..off - 4 + len]
    }

    pub fn u8_at(&self, off: usize) -> u8 {
        self.params[off - 4]
    }

    pub fn u16_at(&self, off: usize) -> u16 {
        u16::from_be_bytes(self.at(off, 2).try_into().expect("2 bytes"))
    }

    pub fn i32_at(&self, off: usize) -> i32 {
        i32::from_be_bytes(self.at(off, 4).try_into().expect("4 bytes"))
    }

    pub fn i64_at(&self, off: usize) -> i64 {
        i64::from_be_bytes(self.at(off, 8).try_into().expect("8 bytes"))
    }

    /// The file handle at offset 4 (read, write, close, sync, truncate).
    pub fn fhandle(&self) -> [u8; 4] {
        self.at(4, 4).try_into().expect("4 bytes")
    }
}

/// An 8-byte response header.
pub fn response_header(stream: [u8; 2], status: u16, dlen: usize) -> [u8; 8] {
    let mut h = [0u8; 8];
    h[0..2].copy_from_slice(&stream);
    h[2..4].copy_from_slice(&status.to_be_bytes());
    h[4..8].copy_from_slice(&(dlen as i32).to_be_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields_by_spec_offset() {
        let mut b = [0u8; HEADER_LEN];
        b[0..2].copy_from_slice(&[0, 7]);
        b[2..4].copy_from_slice(&req::READ.to_be_bytes());
        b[4..8].copy_from_slice(&[1, 2, 3, 4]);
        b[8..16].copy_from_slice(&1234567890123i64.to_be_bytes());
        b[16..20].copy_from_slice(&(8i32 << 20).to_be_bytes());
        b[20..24].copy_from_slice(&0i32.to_be_bytes());
        let h = Header::parse(&b);
        assert_eq!(h.code, req::READ);
        assert_eq!(h.fhandle(), [1, 2, 3, 4]);
        assert_eq!(h.i64_at(8), 1234567890123);
        assert_eq!(h.i32_at(16), 8 << 20);
        assert_eq!(
            response_header([0, 7], status::OK, 5),
            [0, 7, 0, 0, 0, 0, 0, 5]
        );
    }
}
