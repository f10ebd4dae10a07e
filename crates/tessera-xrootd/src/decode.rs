//! Request framing, shared by the connection loop and the fuzzer: the
//! handshake, then 24-byte headers each followed by a payload whose length
//! is capped per request (writes up to the configured maximum, everything
//! else 1 MiB). The fuzzer frames arbitrary bytes and decodes every
//! request with the decoder the server runs (`request::decode`), so
//! `fuzz/` reaches every parser without a server.

use crate::proto::{req, Header, HANDSHAKE_LEN, HEADER_LEN};

/// Largest payload of a request that is not a write (paths, CGI, readv
/// lists, credentials).
pub const MAX_PAYLOAD: usize = 1 << 20;

/// The payload limit for a request code.
pub fn payload_cap(code: u16, max_write: usize) -> usize {
    match code {
        // A pgwrite's data comes with a CRC per page.
        req::PGWRITE => max_write + 4 * (max_write / crate::proto::PAGE + 2),
        req::WRITE | req::WRITEV => max_write,
        _ => MAX_PAYLOAD,
    }
}

/// Whether 20 bytes are the XRootD client handshake (`0 0 0 4 2012`).
pub fn is_handshake(hs: &[u8]) -> bool {
    hs.len() == HANDSHAKE_LEN
        && hs[..12] == [0u8; 12]
        && hs[12..16] == 4i32.to_be_bytes()
        && hs[16..20] == 2012i32.to_be_bytes()
}

/// Validate a request header's payload length.
pub fn check_len(h: &Header, max_write: usize) -> Result<usize, String> {
    if h.dlen < 0 {
        return Err(format!("negative payload length {}", h.dlen));
    }
    let n = h.dlen as usize;
    let cap = payload_cap(h.code, max_write);
    if n > cap {
        return Err(format!(
            "payload of {n} bytes for request {} exceeds {cap}",
            h.code
        ));
    }
    Ok(n)
}

/// Split a whole client byte stream into requests (handshake first).
pub fn frames(buf: &[u8], max_write: usize) -> Result<Vec<(Header, &[u8])>, String> {
    if buf.len() < HANDSHAKE_LEN || !is_handshake(&buf[..HANDSHAKE_LEN]) {
        return Err("not an XRootD handshake".into());
    }
    let mut at = HANDSHAKE_LEN;
    let mut out = Vec::new();
    while buf.len() - at >= HEADER_LEN {
        let hb: &[u8; HEADER_LEN] = buf[at..at + HEADER_LEN].try_into().expect("24 bytes");
        let h = Header::parse(hb);
        let n = check_len(&h, max_write)?;
        at += HEADER_LEN;
        if buf.len() - at < n {
            return Err("truncated payload".into());
        }
        out.push((h, &buf[at..at + n]));
        at += n;
    }
    Ok(out)
}

/// The fuzzer's entry: frame the bytes and parse every request. Must
/// never panic, whatever the input.
pub fn fuzz(data: &[u8]) {
    if let Ok(reqs) = frames(data, 1 << 16) {
        for (h, p) in reqs {
            if let Ok(r) = crate::request::decode(&h, p.to_vec()) {
                let _ = r.authz();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every seed of the fuzz corpus goes through the decoder (a quick
    /// regression run of what `cargo fuzz` starts from).
    #[test]
    fn seed_corpus_decodes_without_panic() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/decode");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).expect("corpus dir") {
            let data = std::fs::read(e.expect("entry").path()).expect("seed");
            fuzz(&data);
            n += 1;
        }
        assert!(n >= 5, "seed corpus has {n} files");
    }

    #[test]
    fn framing_limits() {
        let mut b = vec![0u8; 12];
        b.extend_from_slice(&4i32.to_be_bytes());
        b.extend_from_slice(&2012i32.to_be_bytes());
        let mut h = [0u8; HEADER_LEN];
        h[2..4].copy_from_slice(&req::STAT.to_be_bytes());
        h[20..24].copy_from_slice(&(MAX_PAYLOAD as i32 + 1).to_be_bytes());
        let mut too_big = b.clone();
        too_big.extend_from_slice(&h);
        assert!(frames(&too_big, 1 << 20).is_err());
        h[20..24].copy_from_slice(&(-1i32).to_be_bytes());
        let mut neg = b.clone();
        neg.extend_from_slice(&h);
        assert!(frames(&neg, 1 << 20).is_err());
        h[20..24].copy_from_slice(&3i32.to_be_bytes());
        let mut ok = b.clone();
        ok.extend_from_slice(&h);
        ok.extend_from_slice(b"/ab");
        assert_eq!(frames(&ok, 1 << 20).expect("frames").len(), 1);
    }
}
