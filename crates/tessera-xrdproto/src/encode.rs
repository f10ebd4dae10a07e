//! Requests as a client sends them: a 24-byte header (stream id, request
//! code, 16 parameter bytes at the offsets `XProtocol.hh` gives, payload
//! length) and the payload. Every integer is big-endian.

use crate::{open, req, HEADER_LEN, PROTOCOL_VERSION};

/// A request with parameter bytes `params` (each at its offset in the
/// 24-byte header, 4..20) and `payload`.
pub fn request(stream: [u8; 2], code: u16, params: &[(usize, &[u8])], payload: &[u8]) -> Vec<u8> {
    let mut r = vec![0u8; HEADER_LEN];
    r[0..2].copy_from_slice(&stream);
    r[2..4].copy_from_slice(&code.to_be_bytes());
    for (at, b) in params {
        assert!(*at >= 4 && at + b.len() <= 20, "parameter bytes at {at}");
        r[*at..*at + b.len()].copy_from_slice(b);
    }
    let len = i32::try_from(payload.len()).expect("payload under 2 GiB");
    r[20..24].copy_from_slice(&len.to_be_bytes());
    r.extend_from_slice(payload);
    r
}

/// The 20-byte initial handshake (`ClientInitHandShake`).
pub fn handshake() -> Vec<u8> {
    let mut b = vec![0u8; 20];
    b[12..16].copy_from_slice(&4i32.to_be_bytes());
    b[16..20].copy_from_slice(&2012i32.to_be_bytes());
    b
}

/// `kXR_protocol`: our version; `want_tls` asks the server to switch.
pub fn protocol(stream: [u8; 2], want_tls: bool) -> Vec<u8> {
    let flags = if want_tls { crate::pflags::WANT_TLS } else { 0 };
    request(
        stream,
        req::PROTOCOL,
        &[(4, &PROTOCOL_VERSION.to_be_bytes()), (8, &[flags])],
        &[],
    )
}

/// `kXR_login` as `user` (8 bytes at most) with process id `pid`.
pub fn login(stream: [u8; 2], pid: u32, user: &str) -> Vec<u8> {
    let mut name = [0u8; 8];
    let n = user.len().min(8);
    name[..n].copy_from_slice(&user.as_bytes()[..n]);
    request(
        stream,
        req::LOGIN,
        &[(4, &pid.to_be_bytes()), (8, &name)],
        &[],
    )
}

/// `kXR_auth` with credential type `credtype` (`unix`, `ztn`, `gsi`: 4
/// bytes at most) and the credentials.
pub fn auth(stream: [u8; 2], credtype: &str, cred: &[u8]) -> Vec<u8> {
    let mut t = [0u8; 4];
    let n = credtype.len().min(4);
    t[..n].copy_from_slice(&credtype.as_bytes()[..n]);
    request(stream, req::AUTH, &[(16, &t)], cred)
}

/// `kXR_stat` of `path` (CGI after `?` allowed).
pub fn stat(stream: [u8; 2], path: &str) -> Vec<u8> {
    request(stream, req::STAT, &[], path.as_bytes())
}

/// `kXR_dirlist` of `path`; `dstat`: with each entry's stat.
pub fn dirlist(stream: [u8; 2], path: &str, dstat: bool) -> Vec<u8> {
    let opts: u8 = if dstat { 2 } else { 0 };
    request(stream, req::DIRLIST, &[(19, &[opts])], path.as_bytes())
}

/// `kXR_open` of `path` with mode bits `mode` (the request's own
/// encoding: `kXR_ur` etc., 0 for the default) and `options`
/// (`open::READ`, `open::NEW | open::MKPATH`, ...).
pub fn open(stream: [u8; 2], path: &str, mode: u16, options: u16) -> Vec<u8> {
    request(
        stream,
        req::OPEN,
        &[(4, &mode.to_be_bytes()), (6, &options.to_be_bytes())],
        path.as_bytes(),
    )
}

/// `kXR_open` for reading.
pub fn open_read(stream: [u8; 2], path: &str) -> Vec<u8> {
    open(stream, path, 0, open::READ)
}

/// `kXR_read` of `len` bytes at `offset` of file handle `fh`.
pub fn read(stream: [u8; 2], fh: [u8; 4], offset: u64, len: u32) -> Vec<u8> {
    request(
        stream,
        req::READ,
        &[
            (4, &fh),
            (8, &offset.to_be_bytes()),
            (16, &len.to_be_bytes()),
        ],
        &[],
    )
}

/// `kXR_write` of `data` at `offset` of file handle `fh`.
pub fn write(stream: [u8; 2], fh: [u8; 4], offset: u64, data: &[u8]) -> Vec<u8> {
    request(
        stream,
        req::WRITE,
        &[(4, &fh), (8, &offset.to_be_bytes())],
        data,
    )
}

/// `kXR_close` of file handle `fh`.
pub fn close(stream: [u8; 2], fh: [u8; 4]) -> Vec<u8> {
    request(stream, req::CLOSE, &[(4, &fh)], &[])
}

/// `kXR_ping`.
pub fn ping(stream: [u8; 2]) -> Vec<u8> {
    request(stream, req::PING, &[], &[])
}

/// A reply's 8-byte header: stream id, status, body length.
pub fn reply_header(h: &[u8; 8]) -> ([u8; 2], u16, usize) {
    (
        [h[0], h[1]],
        u16::from_be_bytes([h[2], h[3]]),
        u32::from_be_bytes([h[4], h[5], h[6], h[7]]) as usize,
    )
}

/// The `kXR_error` number of an error reply's body.
pub fn error_code(body: &[u8]) -> Option<i32> {
    Some(i32::from_be_bytes(body.get(..4)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Header;

    #[test]
    fn header_fields_land_at_their_offsets() {
        let r = read([0, 9], [1, 2, 3, 4], 1 << 40, 65536);
        let h = Header::parse(r[..HEADER_LEN].try_into().unwrap());
        assert_eq!((h.stream, h.code), ([0, 9], req::READ));
        assert_eq!(h.fhandle(), [1, 2, 3, 4]);
        assert_eq!(h.i64_at(8), 1 << 40);
        assert_eq!(h.i32_at(16), 65536);
        let o = open([0, 1], "/a?x=1", 0, open::NEW | open::MKPATH);
        let h = Header::parse(o[..HEADER_LEN].try_into().unwrap());
        assert_eq!(h.u16_at(6), open::NEW | open::MKPATH);
        assert_eq!(&o[HEADER_LEN..], b"/a?x=1");
        assert_eq!(h.dlen, 6);
        assert_eq!(error_code(&[0, 0, 0x0b, 0xc3, b'x']), Some(3011));
        assert_eq!(
            reply_header(&[0, 1, 0x0f, 0xa0, 0, 0, 0, 5]),
            ([0, 1], 4000, 5)
        );
    }
}
