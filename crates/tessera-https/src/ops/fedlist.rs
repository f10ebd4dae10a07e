//! PROPFIND on a federated view: every https and S3 endpoint of the view
//! lists the directory (`Depth: 1`, ListObjectsV2; all at once, each within
//! the deadline), and the listings are merged: the union of the names, a name a directory if any
//! endpoint says so, a file's length from the first endpoint that gives
//! one. The directory exists if any endpoint listed it.

use crate::body::Body;
use crate::davlisting::{parse_multistatus, Listed};
use crate::davxml::escape;
use crate::error::HttpError;
use hyper::Response;
use std::collections::BTreeMap;
use tessera_fed::Listing;

/// The merged listing of `rel` (percent-encoded, from `/`) of view `view`
/// (its path `view_path`, encoded); `depth0`: the directory alone.
pub async fn listing(
    fed: &tessera_fed::Federation,
    view: usize,
    view_path: &str,
    rel: &str,
    depth0: bool,
    path: &tessera_types::NsPath,
) -> Result<Response<Body>, HttpError> {
    let want = rel.trim_end_matches('/');
    let mut found = false;
    let mut dir = false;
    let mut size = None;
    let mut children: BTreeMap<String, (bool, Option<u64>)> = BTreeMap::new();
    // Asked as a directory first (some servers list a directory's entries
    // only when its path ends in `/`), then as a file.
    let listed = |l: &Listing| match l {
        Listing::Dav { status, .. } => *status == 207,
        Listing::Found { .. } => true,
    };
    let mut answers = fed.list(view, &format!("{want}/")).await;
    if !answers.iter().any(listed) && !want.is_empty() {
        answers = fed.list(view, want).await;
    }
    for answer in answers {
        let (base, body) = match answer {
            Listing::Dav {
                base,
                status: 207,
                body,
            } => (base, body),
            Listing::Dav { .. } => continue,
            Listing::Found {
                dir: d,
                size: n,
                children: c,
            } => {
                found = true;
                dir |= d;
                size = size.or(n);
                for (name, d, n) in c {
                    let c = children.entry(name).or_insert((false, None));
                    c.0 |= d;
                    c.1 = c.1.or(n);
                }
                continue;
            }
        };
        let Ok(entries) = parse_multistatus(&body) else {
            continue;
        };
        for e in entries {
            match place(&e, &base, want) {
                Some(None) => {
                    found = true;
                    dir |= e.collection;
                    size = size.or(e.size);
                }
                Some(Some(name)) => {
                    let c = children.entry(name).or_insert((false, None));
                    c.0 |= e.collection;
                    c.1 = c.1.or(e.size);
                }
                None => {}
            }
        }
    }
    if !found {
        return Err(HttpError::new(
            404,
            format!("{} is on none of the view's endpoints", path.display()),
        ));
    }
    let me = format!("{view_path}{want}");
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:multistatus xmlns:D=\"DAV:\">\n",
    );
    if dir {
        response(&mut xml, &format!("{me}/"), true, None);
        if !depth0 {
            for (name, (d, n)) in &children {
                let slash = if *d { "/" } else { "" };
                response(&mut xml, &format!("{me}/{name}{slash}"), *d, *n);
            }
        }
    } else {
        response(&mut xml, &me, false, size);
    }
    xml.push_str("</D:multistatus>\n");
    Ok(super::multistatus::xml_207(xml))
}

/// Where listed entry `e` is under the endpoint's `base` path and the
/// directory `want` (both encoded): `Some(None)` the directory itself,
/// `Some(Some(name))` a child, `None` neither.
fn place(e: &Listed, base: &str, want: &str) -> Option<Option<String>> {
    // An href may be a whole URL: its path.
    let href = match e.href.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |i| &rest[i..]),
        None => e.href.as_str(),
    };
    let rest = href.strip_prefix(base)?.strip_prefix(want)?;
    let rest = rest.trim_matches('/');
    if rest.is_empty() {
        return Some(None);
    }
    (!rest.contains('/')).then(|| Some(rest.to_string()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_placed_under_the_directory() {
        let l = |href: &str| Listed {
            href: href.into(),
            collection: false,
            size: None,
        };
        assert_eq!(place(&l("/data/fed/d/"), "/data/fed", "/d"), Some(None));
        assert_eq!(
            place(&l("/data/fed/d/x%20y"), "/data/fed", "/d"),
            Some(Some("x%20y".into()))
        );
        assert_eq!(
            place(&l("https://h:1/data/fed/d/z/"), "/data/fed", "/d"),
            Some(Some("z".into()))
        );
        assert_eq!(place(&l("/data/fed/d/z/deeper"), "/data/fed", "/d"), None);
        assert_eq!(place(&l("/other/d/x"), "/data/fed", "/d"), None);
        // The view's root.
        assert_eq!(place(&l("/data/fed/"), "/data/fed", ""), Some(None));
        assert_eq!(
            place(&l("/data/fed/f"), "/data/fed", ""),
            Some(Some("f".into()))
        );
    }
}
