//! One module per method (GET and HEAD share one).

pub mod delete;
pub mod get;
pub mod mkcol;
pub mod moves;
pub mod propfind;
pub mod put;

use crate::body::Body;
use crate::error::HttpError;
use hyper::header::{HeaderMap, HeaderValue};
use hyper::{Response, StatusCode};
use tessera_core::Inode;

pub const ALLOW: &str = "OPTIONS,GET,HEAD,PUT,DELETE,MKCOL,MOVE,PROPFIND,COPY";

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
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| HttpError::new(500, e.to_string()))?
        .map_err(HttpError::from)
}

pub fn etag(i: &Inode) -> String {
    format!("\"{:x}-{:x}\"", i.ino, i.mtime_ns)
}

pub fn secs(ns: i64) -> i64 {
    ns.div_euclid(1_000_000_000)
}

/// The adler32 of a file as 8 lowercase hex digits (1 for an empty one).
pub fn adler32_hex(i: &Inode) -> Option<String> {
    match &i.checksum {
        Some(c) if c.kind == "adler32" => Some(c.hex()),
        None if i.size == 0 => Some("00000001".into()),
        _ => None,
    }
}

/// `Digest` for a `Want-Digest` asking for adler32 (any case, q-values
/// allowed); other algorithms get no header.
pub fn digest_for(want: Option<&str>, i: &Inode) -> Option<String> {
    let wants = want?.split(',').any(|a| {
        a.split(';')
            .next()
            .is_some_and(|n| n.trim().eq_ignore_ascii_case("adler32"))
    });
    if !wants {
        return None;
    }
    adler32_hex(i).map(|h| format!("adler32={h}"))
}

pub fn status(r: &mut Response<Body>, s: u16) {
    *r.status_mut() = StatusCode::from_u16(s).unwrap_or(StatusCode::OK);
}

pub fn set(r: &mut Response<Body>, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        r.headers_mut().insert(name, v);
    }
}
