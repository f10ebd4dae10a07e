//! PROPFIND, depth 0 or 1: a 207 multistatus with the properties davix and
//! gfal2 read, the target itself first. `Depth: infinity` is refused as RFC
//! 4918 §9.1 lets a server refuse it (403 with `propfind-finite-depth`);
//! a request without a Depth header is answered as depth 1 (lenient, for
//! hand-written requests), any other depth is a 400. The request body is read (bounded) but not parsed: every request
//! is answered as `allprop`, which is what davix's requests amount to — so
//! no XML parser ever sees client input.

use super::{header, secs, set, status};
use crate::body::Body;
use crate::date::{http_date, iso8601};
use crate::error::HttpError;
use crate::path;
use crate::Ctx;
use http_body_util::BodyExt;
use hyper::Response;
use tessera_core::Inode;
use tessera_types::NsPath;

/// Largest PROPFIND body read (then refused with 413).
pub const MAX_BODY: usize = 64 << 10;
/// A body over `MAX_BODY` is still read, and dropped, up to this much
/// before the 413: a client cut off while it sends can lose the answer
/// (the connection is reset under it). Beyond it, the connection closes.
const DISCARD_UP_TO: usize = 8 << 20;
/// Entries of a depth-1 listing per storage page.
const PAGE: usize = 4096;

#[derive(PartialEq, Eq)]
enum Depth {
    Zero,
    One,
    Infinity,
}

/// RFC 4918 §9.1: a server may refuse `Depth: infinity`; it says so with
/// 403 and this precondition.
fn finite_depth_only() -> Response<Body> {
    let xml = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n\
               <D:error xmlns:D=\"DAV:\"><D:propfind-finite-depth/></D:error>\n";
    let mut r = Response::new(Body::text(xml));
    status(&mut r, 403);
    set(&mut r, "Content-Type", "application/xml; charset=utf-8");
    set(&mut r, "Content-Length", &xml.len().to_string());
    r
}

pub async fn propfind(ctx: &Ctx, req: crate::Req) -> Result<Response<Body>, HttpError> {
    let p = path::decode(req.uri().path())?;
    let depth = match header(req.headers(), "depth").map(str::trim) {
        None => Depth::One,
        Some("0") => Depth::Zero,
        Some("1") => Depth::One,
        Some(d) if d.eq_ignore_ascii_case("infinity") => Depth::Infinity,
        Some(d) => {
            return Err(HttpError::new(
                400,
                format!("Depth must be 0, 1 or infinity, not {d:?}"),
            ))
        }
    };
    // Drain the body within bounds (keeps the connection usable).
    let mut body = req.into_body();
    let mut seen = 0usize;
    while let Some(f) = body.frame().await {
        let f = f.map_err(|e| HttpError::new(400, format!("request body: {e}")))?;
        if let Ok(d) = f.into_data() {
            seen += d.len();
            if seen > DISCARD_UP_TO {
                break;
            }
        }
    }
    if seen > MAX_BODY {
        return Err(HttpError::new(
            413,
            format!("PROPFIND body over {MAX_BODY} bytes"),
        ));
    }
    if depth == Depth::Infinity {
        return Ok(finite_depth_only());
    }
    let me = ctx.core.stat(&ctx.who, p.clone()).await?;
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:multistatus xmlns:D=\"DAV:\">\n",
    );
    entry(&mut xml, &p, &me);
    if depth == Depth::One && me.is_dir() {
        let mut after: Option<Vec<u8>> = None;
        loop {
            let page = ctx
                .core
                .list(&ctx.who, p.clone(), after.clone(), PAGE)
                .await?;
            let Some(last) = page.last() else { break };
            after = Some(last.name.clone());
            for e in &page {
                let child = p
                    .join(&e.name)
                    .map_err(|e| HttpError::new(500, e.to_string()))?;
                entry(&mut xml, &child, e);
            }
            if page.len() < PAGE {
                break;
            }
        }
    }
    xml.push_str("</D:multistatus>\n");
    let len = xml.len();
    let mut r = Response::new(Body::text(xml));
    status(&mut r, 207);
    set(&mut r, "Content-Type", "application/xml; charset=utf-8");
    set(&mut r, "Content-Length", &len.to_string());
    Ok(r)
}

fn entry(xml: &mut String, p: &NsPath, i: &Inode) {
    let mut href = path::encode(p.as_bytes());
    if i.is_dir() && !href.ends_with('/') {
        href.push('/');
    }
    let name = escape(&String::from_utf8_lossy(p.name().unwrap_or(b"/")));
    let (kind, len) = if i.is_dir() {
        ("<D:resourcetype><D:collection/></D:resourcetype>", 0)
    } else {
        ("<D:resourcetype/>", i.size)
    };
    xml.push_str(&format!(
        "<D:response><D:href>{href}</D:href><D:propstat><D:prop>\
<D:displayname>{name}</D:displayname>\
<D:getcontentlength>{len}</D:getcontentlength>\
<D:getlastmodified>{}</D:getlastmodified>\
<D:creationdate>{}</D:creationdate>\
<D:getetag>{}</D:getetag>\
{kind}\
</D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>\n",
        http_date(secs(i.mtime_ns)),
        iso8601(secs(i.ctime_ns)),
        escape(&super::etag(i)),
    ));
}

/// XML text escaping.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' && c != '\r' => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}
