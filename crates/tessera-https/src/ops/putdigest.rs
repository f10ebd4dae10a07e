//! The digests an upload announces, checked before the file becomes
//! visible: `Repr-Digest` and `Content-Digest` (RFC 9530, structured-field
//! dictionaries `alg=:base64:`), and `Digest` (RFC 3230). Algorithms we
//! keep (adler32, CRC-32C) are checked; others (`sha-256`, …) are not, as
//! the reference server does with digests it cannot compute. A value of a
//! known algorithm that is not 4 bytes is a malformed request (400).

use crate::error::HttpError;
use hyper::HeaderMap;
use tessera_core::Expect;

/// What a PUT's headers announce. `Content-Digest` is the digest of the
/// body as sent: with a `Content-Encoding` it is not the file's, and is
/// not checked.
pub fn expected(h: &HeaderMap) -> Result<Expect, HttpError> {
    let mut e = Expect::default();
    for v in h.get_all("digest").iter() {
        let v = v
            .to_str()
            .map_err(|_| HttpError::new(400, "Digest: not ASCII"))?;
        merge(&mut e, rfc3230(v)?, "Digest")?;
    }
    let encoded = h.contains_key("content-encoding");
    for (name, check) in [("repr-digest", true), ("content-digest", !encoded)] {
        if !check {
            continue;
        }
        for v in h.get_all(name).iter() {
            let v = v
                .to_str()
                .map_err(|_| HttpError::new(400, format!("{name}: not ASCII")))?;
            merge(&mut e, dictionary(name, v)?, name)?;
        }
    }
    Ok(e)
}

/// A `Digest` header (RFC 3230): what [`super::announced`] reads, and an
/// `adler32` or `crc32c` it cannot read refused (400) rather than not
/// checked.
fn rfc3230(v: &str) -> Result<Expect, HttpError> {
    let e = super::announced(v);
    for item in v.split(',') {
        let (alg, val) = item.trim().split_once('=').unwrap_or((item.trim(), ""));
        let alg = alg.trim().to_ascii_lowercase();
        let missing = match alg.as_str() {
            "adler32" => e.adler32.is_none(),
            "crc32c" => e.crc32c.is_none(),
            _ => false,
        };
        if missing {
            return Err(HttpError::new(
                400,
                format!("Digest: {alg} must be 8 hex digits (crc32c also base64), got {val:?}"),
            ));
        }
    }
    Ok(e)
}

/// One header's digests into what is expected; two headers announcing
/// different values of one algorithm is a contradiction (400).
fn merge(into: &mut Expect, from: Expect, name: &str) -> Result<(), HttpError> {
    for (have, new, alg) in [
        (&mut into.adler32, from.adler32, "adler"),
        (&mut into.crc32c, from.crc32c, "crc32c"),
    ] {
        match (*have, new) {
            (Some(a), Some(b)) if a != b => {
                return Err(HttpError::new(
                    400,
                    format!("{name}: {alg} {b:08x} contradicts {a:08x} announced before"),
                ))
            }
            (None, Some(b)) => *have = Some(b),
            _ => {}
        }
    }
    Ok(())
}

/// An RFC 9530 digest dictionary: `adler=:AAAAAQ==:, crc32c=:4waSgw==:`
/// (members separated by commas, parameters after `;` ignored). `adler32`
/// is taken as `adler` (the name some clients use).
pub fn dictionary(name: &str, v: &str) -> Result<Expect, HttpError> {
    let mut e = Expect::default();
    for member in v.split(',') {
        let member = member.split(';').next().unwrap_or("").trim();
        if member.is_empty() {
            continue;
        }
        let Some((alg, val)) = member.split_once('=') else {
            continue; // a bare key is `true`, no digest
        };
        let alg = alg.trim().to_ascii_lowercase();
        let slot = match alg.as_str() {
            "adler" | "adler32" => &mut e.adler32,
            "crc32c" => &mut e.crc32c,
            _ => continue,
        };
        let bytes = val
            .trim()
            .strip_prefix(':')
            .and_then(|s| s.strip_suffix(':'))
            .and_then(super::unbase64)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .ok_or_else(|| {
                HttpError::new(
                    400,
                    format!("{name}: {alg} must be 4 bytes in base64 between colons, got {val}"),
                )
            })?;
        *slot = Some(u32::from_be_bytes(bytes));
    }
    Ok(e)
}

/// A write the announced digest did not match: 422, the reason said,
/// nothing stored.
pub fn mismatch(e: tessera_core::CoreError) -> HttpError {
    match e {
        tessera_core::CoreError::Mismatch(m) => {
            HttpError::new(422, format!("digest mismatch, nothing stored: {m}"))
        }
        e => e.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn repr_and_content_digest() {
        let e = expected(&headers(&[(
            "repr-digest",
            "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:, adler=:AAAAAQ==:",
        )]))
        .unwrap();
        assert_eq!((e.adler32, e.crc32c), (Some(1), None));
        let e = expected(&headers(&[("content-digest", "crc32c=:4waSgw==:;x=1")])).unwrap();
        assert_eq!(e.crc32c, Some(0xe306_9283));
        // An encoded body's Content-Digest is not the file's.
        let e = expected(&headers(&[
            ("content-digest", "crc32c=:4waSgw==:"),
            ("content-encoding", "gzip"),
        ]))
        .unwrap();
        assert_eq!(e.crc32c, None);
    }

    #[test]
    fn malformed_and_contradicting() {
        for v in ["adler=AAAAAQ==", "adler=:AAAA:", "crc32c=:!!:"] {
            let r = expected(&headers(&[("repr-digest", v)]));
            assert_eq!(r.unwrap_err().status.as_u16(), 400, "{v}");
        }
        for v in ["adler32=xyz", "crc32c=", "adler32"] {
            let r = expected(&headers(&[("digest", v)]));
            assert_eq!(r.unwrap_err().status.as_u16(), 400, "{v}");
        }
        assert!(expected(&headers(&[("digest", "md5=abc, sha-256=x")])).is_ok());
        let r = expected(&headers(&[
            ("digest", "adler32=00000001"),
            ("repr-digest", "adler=:AAAAAg==:"),
        ]));
        assert_eq!(r.unwrap_err().status.as_u16(), 400);
        let ok = expected(&headers(&[
            ("digest", "adler32=00000001"),
            ("repr-digest", "adler=:AAAAAQ==:"),
        ]));
        assert_eq!(ok.unwrap().adler32, Some(1));
    }
}
