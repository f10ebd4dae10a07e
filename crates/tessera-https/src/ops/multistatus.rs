//! A 207 Multi-Status naming the members a collection operation could
//! not handle (RFC 4918 §9.6.1, §9.8.5): one `response` per member with
//! its status and a description.

use super::{set, status};
use crate::body::Body;
use crate::davxml::escape;
use crate::error::HttpError;
use crate::path;
use hyper::Response;
use tessera_types::NsPath;

/// The reason phrase of the statuses a member can get.
fn reason(code: u16) -> &'static str {
    hyper::StatusCode::from_u16(code)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Error")
}

/// `failed` (member, error) as a 207 body.
pub fn failures(failed: &[(NsPath, HttpError)]) -> Response<Body> {
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:multistatus xmlns:D=\"DAV:\">\n",
    );
    for (p, e) in failed {
        xml.push_str(&format!(
            "<D:response><D:href>{}</D:href><D:status>HTTP/1.1 {} {}</D:status>\
             <D:responsedescription>{}</D:responsedescription></D:response>\n",
            path::encode(p.as_bytes()),
            e.status.as_u16(),
            reason(e.status.as_u16()),
            escape(&e.msg)
        ));
    }
    xml.push_str("</D:multistatus>\n");
    xml_207(xml)
}

/// A 207 with `xml` (a whole multistatus document) as its body.
pub fn xml_207(xml: String) -> Response<Body> {
    let len = xml.len();
    let mut r = Response::new(Body::text(xml));
    status(&mut r, 207);
    set(&mut r, "Content-Type", "application/xml; charset=utf-8");
    set(&mut r, "Content-Length", &len.to_string());
    r
}

/// A 207 with a listing's body (chunked when streamed: its length is
/// not known when it starts).
pub fn streamed_207(body: Body) -> Response<Body> {
    let len = match &body {
        Body::Full(Some(b)) => Some(b.len()),
        _ => None,
    };
    let mut r = Response::new(body);
    status(&mut r, 207);
    set(&mut r, "Content-Type", "application/xml; charset=utf-8");
    if let Some(n) = len {
        set(&mut r, "Content-Length", &n.to_string());
    }
    r
}
