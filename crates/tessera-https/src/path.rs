//! URL paths: percent-decoding into namespace paths (which can never climb
//! above `/`), and encoding namespace names back for `href`s and
//! `Location`s (the `percent-encoding` crate; a `%` not followed by two
//! hex digits is refused here first, where the crate would pass it on).

use crate::error::HttpError;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC};
use tessera_types::NsPath;

/// What an `href` escapes: everything but unreserved characters and `/`.
const HREF: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// The namespace path of a request target (`/a%20b/c?query` → `/a b/c`).
pub fn decode(target: &str) -> Result<NsPath, HttpError> {
    let raw = target.split(['?', '#']).next().unwrap_or("");
    let bytes =
        unescape(raw).ok_or_else(|| HttpError::new(400, "bad percent-encoding in the path"))?;
    if bytes.contains(&0) {
        return Err(HttpError::new(400, "NUL in the path"));
    }
    NsPath::parse(&bytes).map_err(|e| HttpError::new(400, e.to_string()))
}

pub(crate) fn unescape(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let well_formed = b.iter().enumerate().all(|(i, &c)| {
        c != b'%'
            || (b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    });
    well_formed.then(|| percent_encoding::percent_decode_str(s).collect())
}

/// Percent-encode a path for an `href` (unreserved characters and `/`
/// kept).
pub fn encode(p: &[u8]) -> String {
    percent_encoding::percent_encode(p, HREF).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_never_escapes() {
        let p = decode("/a%20b/%C3%BC/c?x=1").expect("decode");
        assert_eq!(p.as_bytes(), "/a b/ü/c".as_bytes());
        assert_eq!(encode(p.as_bytes()), "/a%20b/%C3%BC/c");
        assert_eq!(
            decode("/%2e%2e/%2E%2E/etc/passwd")
                .expect("clamped")
                .display(),
            "/etc/passwd"
        );
        assert_eq!(decode("/../../x").expect("clamped").display(), "/x");
        assert!(decode("/a%2").is_err());
        assert!(decode("/a%zz").is_err());
        assert!(decode("/a%00b").is_err());
    }
}
