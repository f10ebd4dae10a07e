//! One module per method (GET and HEAD share one).

pub mod copy;
pub mod deadprops;
pub mod delete;
pub mod dirpages;
pub mod fed;
pub mod fedlist;
pub mod get;
pub mod index;
pub mod macaroon;
pub mod metalink;
pub mod mime;
pub mod mkcol;
pub mod moves;
pub mod multistatus;
pub mod precond;
pub mod propfind;
pub mod proppatch;
pub mod put;
pub mod putdigest;
pub mod rules;
pub mod srr;
pub mod whoami;

use crate::body::Body;
use crate::error::HttpError;
use hyper::header::{HeaderMap, HeaderValue};
use hyper::{Response, StatusCode};
use tessera_core::Inode;

pub const ALLOW: &str = "OPTIONS,GET,HEAD,PUT,DELETE,MKCOL,MOVE,PROPFIND,PROPPATCH,COPY";

pub fn options() -> Response<Body> {
    let mut r = Response::new(Body::Empty);
    let h = r.headers_mut();
    h.insert("DAV", HeaderValue::from_static("1"));
    h.insert("Allow", HeaderValue::from_static(ALLOW));
    h.insert("Content-Length", HeaderValue::from_static("0"));
    r
}

/// A header's value as text, if present and readable.
pub fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// Run blocking work (file data) on the blocking pool.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, tessera_core::CoreError> + Send + 'static,
) -> Result<T, HttpError> {
    tessera_core::blocking(f).await?.map_err(HttpError::from)
}

pub fn etag(i: &Inode) -> String {
    format!("\"{:x}-{:x}\"", i.ino, i.mtime_ns)
}

pub fn secs(ns: i64) -> i64 {
    ns.div_euclid(1_000_000_000)
}

/// The adler32 of a file as 8 lowercase hex digits (1 for an empty one).
pub fn adler32_hex(i: &Inode) -> Option<String> {
    adler32_bytes(i).map(|b| format!("{:08x}", u32::from_be_bytes(b)))
}

/// The algorithms a `Want-Digest` (`alg;q=0.5`, RFC 3230) or
/// `Want-Repr-Digest` (`alg=5`, preference 0-10, RFC 9530) value accepts,
/// most wanted first (then as listed; weight 0 excluded), lower case.
fn wanted(v: &str) -> Vec<String> {
    let mut algs: Vec<(f32, usize, String)> = v
        .split(',')
        .enumerate()
        .filter_map(|(n, item)| {
            let mut parts = item.split(';');
            let first = parts.next()?.trim().to_ascii_lowercase();
            let (name, pref) = match first.split_once('=') {
                Some((a, w)) => (
                    a.trim().to_string(),
                    w.trim().parse::<f32>().ok().map(|w| w / 10.0),
                ),
                None => (first, None),
            };
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .or(pref)
                .unwrap_or(1.0);
            (!name.is_empty() && q > 0.0).then_some((q, n, name))
        })
        .collect();
    algs.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    algs.into_iter().map(|(_, _, n)| n).collect()
}

/// `Overwrite` (RFC 4918): true unless the request says `F`.
pub fn overwrite(h: &HeaderMap) -> bool {
    !header(h, "overwrite").is_some_and(|v| v.trim().eq_ignore_ascii_case("F"))
}

/// The answer to `Overwrite: F` meeting an existing destination.
pub fn exists_refused() -> HttpError {
    HttpError::new(412, "the destination exists and Overwrite is F")
}

/// The file's CRC-32C as big-endian bytes (0 for an empty file), as the
/// core says it has it.
fn crc32c_bytes(i: &Inode) -> Option<[u8; 4]> {
    tessera_core::stored_checksums(i)
        .crc32c
        .map(u32::to_be_bytes)
}

/// The adler32 as bytes (1 for an empty file).
fn adler32_bytes(i: &Inode) -> Option<[u8; 4]> {
    tessera_core::stored_checksums(i)
        .adler32
        .map(u32::to_be_bytes)
}

/// `Digest` (RFC 3230) for a `Want-Digest`: `adler32=<8 hex digits>` or
/// `crc32c=<base64>`, whichever the client wants most of those this file
/// has; other algorithms get no header.
pub fn digest_for(want: Option<&str>, i: &Inode) -> Option<String> {
    wanted(want?).iter().find_map(|a| match a.as_str() {
        "adler32" => adler32_hex(i).map(|h| format!("adler32={h}")),
        "crc32c" => crc32c_bytes(i).map(|b| format!("crc32c={}", base64(&b))),
        _ => None,
    })
}

/// `Repr-Digest` (RFC 9530) for a `Want-Repr-Digest`: `adler=:…:` (asked
/// as `adler` or `adler32`) or `crc32c=:…:`, base64 of the bytes.
pub fn repr_digest_for(want: Option<&str>, i: &Inode) -> Option<String> {
    wanted(want?).iter().find_map(|a| match a.as_str() {
        "adler" | "adler32" => adler32_bytes(i).map(|b| format!("adler=:{}:", base64(&b))),
        "crc32c" => crc32c_bytes(i).map(|b| format!("crc32c=:{}:", base64(&b))),
        _ => None,
    })
}

/// The digest headers a request asks for (`Digest` wins when both are
/// asked for, as the reference server does).
pub fn digests(h: &HeaderMap, i: &Inode, r: &mut Response<Body>) {
    if let Some(d) = digest_for(header(h, "want-digest"), i) {
        set(r, "Digest", &d);
    } else if header(h, "want-digest").is_none() {
        if let Some(d) = repr_digest_for(header(h, "want-repr-digest"), i) {
            set(r, "Repr-Digest", &d);
        }
    }
}

/// The digests a `Digest` header (RFC 3230) announces that we can check:
/// `adler32=<8 hex digits>` and `crc32c=<base64 of 4 bytes>` (or 8 hex
/// digits, as some servers write it); anything else is not checked.
pub fn announced(v: &str) -> tessera_core::Expect {
    let mut e = tessera_core::Expect::default();
    for item in v.split(',') {
        let Some((alg, val)) = item.trim().split_once('=') else {
            continue;
        };
        let val = val.trim();
        let hex = || (val.len() == 8).then(|| u32::from_str_radix(val, 16).ok())?;
        match alg.trim().to_ascii_lowercase().as_str() {
            "adler32" => e.adler32 = hex(),
            "crc32c" => {
                e.crc32c = hex().or_else(|| {
                    let b = unbase64(val)?;
                    Some(u32::from_be_bytes(b.try_into().ok()?))
                })
            }
            _ => {}
        }
    }
    e
}

fn unbase64(s: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).ok()
}

/// Standard base64 with padding.
pub fn base64(b: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(b)
}

pub fn status(r: &mut Response<Body>, s: u16) {
    *r.status_mut() = StatusCode::from_u16(s).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
}

pub fn set(r: &mut Response<Body>, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        r.headers_mut().insert(name, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file record for tests (adler32 and CRC-32C stored).
    pub(super) fn file(size: u64) -> Inode {
        Inode {
            ino: 2,
            parent: 1,
            name: b"f".to_vec(),
            mode: 0o644,
            size,
            checksum: Some(tessera_core::Checksum {
                kind: "adler32".into(),
                value: vec![0x11, 0x0e, 0x03, 0x1d],
            }),
            crc32c: Some(0xe306_9283),
            ..Default::default()
        }
    }

    #[test]
    fn announced_digests() {
        let e = announced("adler32=0a1B2c3d, md5=x, crc32c=AAAAAQ==");
        assert_eq!((e.adler32, e.crc32c), (Some(0x0a1b2c3d), Some(1)));
        assert_eq!(announced("crc32c=e3069283").crc32c, Some(0xe3069283));
        assert_eq!(announced("crc32c=4waSgw==").crc32c, Some(0xe3069283));
        let none = announced("adler32=xyz, sha-256=abc");
        assert_eq!((none.adler32, none.crc32c), (None, None));
        for b in [&b""[..], b"a", b"ab", b"abc", b"abcd\xff"] {
            assert_eq!(unbase64(&base64(b)).as_deref(), Some(b));
        }
    }

    #[test]
    fn base64_matches_rfc4648() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(i.as_bytes()), o);
        }
    }

    #[test]
    fn digests_by_preference() {
        let f = file(9);
        let crc = Some("crc32c=4waSgw==");
        for (want_digest, answer) in [
            ("ADLER32", Some("adler32=110e031d")),
            ("crc32c", crc),
            ("adler32;q=0.5, crc32c;q=0.9", crc),
            ("md5, adler32;q=0", None),
            ("sha-256,crc32c", crc),
        ] {
            let got = digest_for(Some(want_digest), &f);
            assert_eq!(got.as_deref(), answer, "Want-Digest: {want_digest}");
        }
        for (want_repr, answer) in [
            ("adler=1", "adler=:EQ4DHQ==:"),
            ("crc32c", "crc32c=:4waSgw==:"),
        ] {
            let got = repr_digest_for(Some(want_repr), &f);
            assert_eq!(
                got.as_deref(),
                Some(answer),
                "Want-Repr-Digest: {want_repr}"
            );
        }
        let old = Inode { crc32c: None, ..f };
        assert_eq!(digest_for(Some("crc32c"), &old), None);
    }
}
