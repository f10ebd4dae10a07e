//! PROPFIND on a federated view: the listing every endpoint of the view
//! gives, merged by `tessera-fed` (`Federation::merged`), as a multistatus.

use crate::body::Body;
use crate::davxml::escape;
use hyper::Response;

/// The merged listing `m` of the view path `me` (percent-encoded, without
/// a trailing `/`) as a multistatus; `depth0`: the directory alone.
pub fn listing(m: &tessera_fed::Merged, me: &str, depth0: bool) -> Response<Body> {
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:multistatus xmlns:D=\"DAV:\">\n",
    );
    if m.dir {
        response(&mut xml, &format!("{me}/"), true, None);
        if !depth0 {
            for (name, (d, n)) in &m.children {
                let slash = if *d { "/" } else { "" };
                response(&mut xml, &format!("{me}/{name}{slash}"), *d, *n);
            }
        }
    } else {
        response(&mut xml, me, false, m.size);
    }
    xml.push_str("</D:multistatus>\n");
    super::multistatus::xml_207(xml)
}

fn response(xml: &mut String, href: &str, dir: bool, size: Option<u64>) {
    xml.push_str(&format!(
        "<D:response><D:href>{}</D:href><D:propstat><D:prop>",
        escape(href)
    ));
    if dir {
        xml.push_str("<D:resourcetype><D:collection/></D:resourcetype>");
    } else {
        xml.push_str("<D:resourcetype/>");
        if let Some(n) = size {
            xml.push_str(&format!("<D:getcontentlength>{n}</D:getcontentlength>"));
        }
    }
    xml.push_str("</D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>\n");
}
