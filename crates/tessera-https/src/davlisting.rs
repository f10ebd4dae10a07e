//! Another server's answer to a PROPFIND (a `207 Multi-Status`), read
//! with the same XML reader as request bodies (`davxml.rs`): what a
//! federated view's listing is merged from.

use crate::davxml::{dav, document, unescape};
pub use tessera_fed::Listed;

/// Most elements of a multistatus answer read (another server's listing).
const MAX_LISTING_ELEMENTS: usize = 1 << 20;

/// Read a `207 Multi-Status` body (another server's PROPFIND answer):
/// its responses with a `200` propstat.
pub fn parse_multistatus(body: &[u8]) -> Result<Vec<Listed>, String> {
    let text = std::str::from_utf8(body).map_err(|_| "the body is not UTF-8".to_string())?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let root = document(text, MAX_LISTING_ELEMENTS)?;
    if root.name != dav("multistatus") {
        return Err("not a DAV: multistatus".into());
    }
    let mut out = Vec::new();
    for resp in root.children.iter().filter(|c| c.name == dav("response")) {
        let Some(href) = resp.children.iter().find(|c| c.name == dav("href")) else {
            continue;
        };
        let (mut collection, mut size) = (false, None);
        for ps in resp.children.iter().filter(|c| c.name == dav("propstat")) {
            let ok = ps
                .children
                .iter()
                .find(|c| c.name == dav("status"))
                .is_none_or(|st| st.inner.contains(" 200"));
            for prop in ps.children.iter().filter(|c| ok && c.name == dav("prop")) {
                for p in &prop.children {
                    if p.name == dav("resourcetype") {
                        collection |= p.children.iter().any(|c| c.name == dav("collection"));
                    } else if p.name == dav("getcontentlength") {
                        size = p.inner.trim().parse().ok();
                    }
                }
            }
        }
        out.push(Listed {
            href: unescape(href.inner.trim())?,
            collection,
            size,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multistatus_of_another_server() {
        let body = br#"<?xml version="1.0" encoding="utf-8"?>
<D:multistatus xmlns:D="DAV:" xmlns:ns1="http://apache.org/dav/props/">
<D:response><D:href>/fed/</D:href><D:propstat><D:prop><D:resourcetype><D:collection/></D:resourcetype></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>
<D:response><D:href>/fed/a%20b&amp;c</D:href><D:propstat><D:prop><D:getcontentlength>12</D:getcontentlength><D:resourcetype/></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>
<D:propstat><D:prop><ns1:x/></D:prop><D:status>HTTP/1.1 404 Not Found</D:status></D:propstat></D:response>
</D:multistatus>"#;
        let got = parse_multistatus(body).unwrap();
        assert_eq!(got.len(), 2);
        assert!(got[0].collection && got[0].href == "/fed/");
        assert_eq!(
            (got[1].href.as_str(), got[1].collection, got[1].size),
            ("/fed/a%20b&c", false, Some(12))
        );
        assert!(parse_multistatus(b"<x/>").is_err());
    }
}
