//! PROPFIND on a federated view: the listing every endpoint of the view
//! gives, merged by `tessera-fed` (`Federation::merged`), as a multistatus.

use crate::body::Body;
use crate::davxml::escape;
use crate::error::HttpError;
use hyper::Response;

/// The merged listing of `rel` (percent-encoded, from `/`) of `at`'s view
/// (its path `view_path`, encoded); `depth0`: the directory alone.
pub async fn listing(
    fed: &tessera_fed::Federation,
    at: &tessera_fed::InView,
    view_path: &str,
    rel: &str,
    depth0: bool,
    path: &tessera_types::NsPath,
) -> Result<Response<Body>, HttpError> {
    let want = rel.trim_end_matches('/');
    let m = fed.merged(at, want).await;
    if !m.found {
        return Err(HttpError::new(
            404,
            format!("{} is on none of the view's endpoints", path.display()),
        ));
    }
    let me = format!("{view_path}{want}");
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
        response(&mut xml, &me, false, m.size);
    }
    xml.push_str("</D:multistatus>\n");
    Ok(super::multistatus::xml_207(xml))
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
