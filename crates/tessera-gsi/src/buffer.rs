//! The XrdSut buffer every gsi message is: `"gsi\0"`, a big-endian i32
//! step, buckets (i32 type, i32 length, bytes) and an i32 0. The main
//! bucket (3001) holds another buffer of the same form, encrypted in
//! the client's second message.

/// Bucket types (XrdSutAux.hh `kXRSBucketTypes`).
pub mod kind {
    pub const CRYPTOMOD: i32 = 3000;
    pub const MAIN: i32 = 3001;
    pub const PUK: i32 = 3004;
    pub const CIPHER: i32 = 3005;
    pub const RTAG: i32 = 3006;
    pub const SIGNED_RTAG: i32 = 3007;
    pub const USER: i32 = 3008;
    pub const MESSAGE: i32 = 3011;
    pub const VERSION: i32 = 3014;
    pub const CLNT_OPTS: i32 = 3019;
    pub const X509: i32 = 3022;
    pub const ISSUER_HASH: i32 = 3023;
    pub const CIPHER_ALG: i32 = 3025;
    pub const MD_ALG: i32 = 3026;
}

/// Steps (`kXGC_*` from the client, `kXGS_*` from the server).
pub mod step {
    pub const CERTREQ: i32 = 1000;
    pub const CERT: i32 = 1001;
    pub const SIGPXY: i32 = 1002;
    pub const SERVER_CERT: i32 = 2001;
}

/// At most this many buckets in a buffer, this many bytes in all.
pub const MAX_BUCKETS: usize = 64;
pub const MAX_BYTES: usize = 256 << 10;

/// One buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buffer {
    pub step: i32,
    pub buckets: Vec<(i32, Vec<u8>)>,
}

fn be32(b: &[u8], at: usize) -> Result<i32, String> {
    let s = b
        .get(at..at + 4)
        .ok_or_else(|| "buffer truncated".to_string())?;
    Ok(i32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

impl Buffer {
    pub fn new(step: i32) -> Buffer {
        Buffer {
            step,
            buckets: Vec::new(),
        }
    }

    /// Read a buffer of protocol `gsi`. Anything after the terminator
    /// is ignored, as the reference does.
    pub fn parse(b: &[u8]) -> Result<Buffer, String> {
        if b.len() > MAX_BYTES {
            return Err(format!("buffer of {} bytes (at most {MAX_BYTES})", b.len()));
        }
        if !b.starts_with(b"gsi\0") {
            return Err("not a gsi buffer".into());
        }
        let step = be32(b, 4)?;
        let mut at = 8;
        let mut buckets = Vec::new();
        loop {
            let t = be32(b, at)?;
            at += 4;
            if t == 0 {
                return Ok(Buffer { step, buckets });
            }
            let len = be32(b, at)?;
            at += 4;
            let len = usize::try_from(len).map_err(|_| "negative bucket length".to_string())?;
            let v = b
                .get(at..at + len)
                .ok_or_else(|| format!("bucket {t} runs past the buffer"))?;
            at += len;
            if buckets.len() == MAX_BUCKETS {
                return Err("too many buckets".into());
            }
            buckets.push((t, v.to_vec()));
        }
    }

    /// The first bucket of type `t`.
    pub fn get(&self, t: i32) -> Option<&[u8]> {
        self.buckets
            .iter()
            .find(|(k, _)| *k == t)
            .map(|(_, v)| v.as_slice())
    }

    /// A 4-byte big-endian integer bucket.
    pub fn get_i32(&self, t: i32) -> Option<i32> {
        let v = self.get(t)?;
        (v.len() == 4).then(|| i32::from_be_bytes([v[0], v[1], v[2], v[3]]))
    }

    pub fn push(&mut self, t: i32, v: impl Into<Vec<u8>>) {
        self.buckets.push((t, v.into()));
    }

    pub fn serialize(&self) -> Vec<u8> {
        let n: usize = self.buckets.iter().map(|(_, v)| v.len() + 8).sum();
        let mut out = Vec::with_capacity(12 + n);
        out.extend_from_slice(b"gsi\0");
        out.extend_from_slice(&self.step.to_be_bytes());
        for (t, v) in &self.buckets {
            out.extend_from_slice(&t.to_be_bytes());
            out.extend_from_slice(&(v.len() as i32).to_be_bytes());
            out.extend_from_slice(v);
        }
        out.extend_from_slice(&0i32.to_be_bytes());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_client_message_of_a_real_xrdcp() {
        // From a trace of xrdcp 5.5.3 against the reference server.
        let mut m =
            b"gsi\0\x00\x00\x03\xe8\x00\x00\x0b\xbe\x00\x00\x00\x08QcMmuzHJ\x00\x00\x00\x00"
                .to_vec();
        let inner = Buffer::parse(&m).unwrap();
        assert_eq!(inner.step, step::CERTREQ);
        assert_eq!(inner.get(kind::RTAG), Some(&b"QcMmuzHJ"[..]));
        assert_eq!(inner.serialize(), m);
        let mut outer = Buffer::new(step::CERTREQ);
        outer.push(kind::CRYPTOMOD, b"ssl".to_vec());
        outer.push(kind::VERSION, 10600i32.to_be_bytes().to_vec());
        outer.push(kind::MAIN, m.clone());
        let back = Buffer::parse(&outer.serialize()).unwrap();
        assert_eq!(back, outer);
        assert_eq!(back.get_i32(kind::VERSION), Some(10600));
        // Truncated anywhere: an error, never a panic.
        for cut in 0..m.len() - 1 {
            assert!(Buffer::parse(&m[..cut]).is_err(), "cut at {cut}");
        }
        m[15] = 0xff; // a bucket length past the end
        assert!(Buffer::parse(&m).is_err());
        assert!(Buffer::parse(b"ztn\0\0\0\0\0\0\0\0\0").is_err());
    }
}
