//! Conditional requests (RFC 9110 §13): `If-Match`, `If-Unmodified-Since`,
//! `If-None-Match` and `If-Modified-Since`, evaluated in the RFC's order
//! against the target's strong ETag and modification time. A failed
//! condition is 412 (304 for `If-None-Match` / `If-Modified-Since` on
//! GET and HEAD). Dates in any of the three HTTP formats (`httpdate`);
//! a date that does not parse leaves its header ignored, as the RFC says.

use super::{etag, header, secs};
use crate::error::HttpError;
use crate::Ctx;
use hyper::HeaderMap;
use tessera_core::Inode;
use tessera_types::{ErrorKind, NsPath};

/// What the conditions say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Proceed,
    /// 304: the client's copy is current (GET and HEAD only).
    NotModified,
    /// 412.
    Failed,
}

const HEADERS: [&str; 4] = [
    "if-match",
    "if-none-match",
    "if-modified-since",
    "if-unmodified-since",
];

/// Whether the request carries any condition.
pub fn any(h: &HeaderMap) -> bool {
    HEADERS.iter().any(|n| h.contains_key(*n))
}

/// Seconds since the epoch of an HTTP date (IMF-fixdate, RFC 850 or
/// asctime form).
pub fn date(v: &str) -> Option<i64> {
    let t = httpdate::parse_http_date(v.trim()).ok()?;
    let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(d.as_secs()).ok()
}

fn tags(v: &str) -> impl Iterator<Item = &str> {
    v.split(',').map(str::trim).filter(|t| !t.is_empty())
}

/// Evaluate the conditions of `h` for a target that is `current` (`None`:
/// it does not exist); `safe` for GET and HEAD.
pub fn evaluate(h: &HeaderMap, current: Option<&Inode>, safe: bool) -> Outcome {
    if !any(h) {
        return Outcome::Proceed;
    }
    let tag = current.map(etag);
    let mtime = current.map(|i| secs(i.mtime_ns));
    if let Some(v) = header(h, "if-match") {
        // Strong comparison: a weak tag never matches.
        let ok = match &tag {
            None => false,
            Some(t) => tags(v).any(|c| c == "*" || c == t),
        };
        if !ok {
            return Outcome::Failed;
        }
    } else if let (Some(since), Some(m)) = (header(h, "if-unmodified-since").and_then(date), mtime)
    {
        if m > since {
            return Outcome::Failed;
        }
    }
    let fail = if safe {
        Outcome::NotModified
    } else {
        Outcome::Failed
    };
    if let Some(v) = header(h, "if-none-match") {
        // Weak comparison.
        let hit = match &tag {
            None => false,
            Some(t) => tags(v).any(|c| c == "*" || c.strip_prefix("W/").unwrap_or(c) == t),
        };
        if hit {
            return fail;
        }
    } else if safe {
        if let (Some(since), Some(m)) = (header(h, "if-modified-since").and_then(date), mtime) {
            if m <= since {
                return Outcome::NotModified;
            }
        }
    }
    Outcome::Proceed
}

/// The 412 of a failed condition.
pub fn failed() -> HttpError {
    HttpError::new(412, "a condition of the request (If-*) is not met")
}

/// For an unsafe method on `p`: stat it (only when the request has a
/// condition) and refuse with 412 when a condition fails.
pub async fn check_path(ctx: &Ctx, h: &HeaderMap, p: &NsPath) -> Result<(), HttpError> {
    if !any(h) {
        return Ok(());
    }
    let current = match ctx.core.stat(&ctx.who, p.clone()).await {
        Ok(i) => Some(i),
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => return Err(e.into()),
    };
    match evaluate(h, current.as_ref(), false) {
        Outcome::Proceed => Ok(()),
        _ => Err(failed()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inode(mtime_s: i64) -> Inode {
        Inode {
            mtime_ns: mtime_s * 1_000_000_000,
            ..super::super::tests::file(1)
        }
    }

    fn hm(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn the_rfc_9110_order() {
        let i = inode(784_111_777);
        let t = etag(&i);
        let e = |pairs: &[(&'static str, &str)], safe| evaluate(&hm(pairs), Some(&i), safe);
        assert_eq!(e(&[("if-match", "\"nope\"")], true), Outcome::Failed);
        assert_eq!(e(&[("if-match", &t)], false), Outcome::Proceed);
        assert_eq!(
            e(&[("if-match", &format!("W/{t}"))], false),
            Outcome::Failed
        );
        assert_eq!(e(&[("if-match", "*")], false), Outcome::Proceed);
        assert_eq!(
            evaluate(&hm(&[("if-match", "*")]), None, false),
            Outcome::Failed
        );
        assert_eq!(
            evaluate(&hm(&[("if-none-match", "*")]), None, false),
            Outcome::Proceed
        );
        assert_eq!(e(&[("if-none-match", "*")], false), Outcome::Failed);
        assert_eq!(e(&[("if-none-match", &t)], true), Outcome::NotModified);
        assert_eq!(
            e(&[("if-none-match", &format!("W/{t}"))], true),
            Outcome::NotModified
        );
        assert_eq!(e(&[("if-none-match", "\"x\"")], true), Outcome::Proceed);
        // The three date forms.
        for d in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(date(d), Some(784_111_777), "{d}");
            assert_eq!(e(&[("if-modified-since", d)], true), Outcome::NotModified);
            assert_eq!(e(&[("if-unmodified-since", d)], false), Outcome::Proceed);
        }
        let before = "Sat, 05 Nov 1994 08:49:37 GMT";
        assert_eq!(
            e(&[("if-unmodified-since", before)], false),
            Outcome::Failed
        );
        assert_eq!(e(&[("if-modified-since", before)], true), Outcome::Proceed);
        // If-Modified-Since is for GET and HEAD only; If-Match wins over
        // If-Unmodified-Since; a bad date is ignored.
        assert_eq!(e(&[("if-modified-since", before)], false), Outcome::Proceed);
        assert_eq!(
            e(&[("if-match", &t), ("if-unmodified-since", before)], false),
            Outcome::Proceed
        );
        assert_eq!(
            e(&[("if-unmodified-since", "soon")], false),
            Outcome::Proceed
        );
    }
}
