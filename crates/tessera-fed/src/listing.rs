//! Listings of a view's directory: every endpoint asked at once (WebDAV
//! `PROPFIND` of depth 1, S3 ListObjectsV2, XRootD `kXR_dirlist`), each
//! within the deadline, and the answers merged: the union of the names, a
//! name a directory if any endpoint says so, a file's length from the
//! first endpoint that gives one. The entry exists if any endpoint has it.

use crate::{propfind, xroot, Access, Child, Federation, InView};
use futures_util::future::join_all;
use std::collections::BTreeMap;

/// One endpoint's answer to a listing.
#[derive(Debug, Clone, PartialEq)]
pub enum Listing {
    /// A WebDAV endpoint's PROPFIND (`Depth: 1`): its base path, the status
    /// and the body, for the front-end to read.
    Dav {
        base: String,
        status: u16,
        body: Vec<u8>,
    },
    /// Found on an endpoint that lists by itself (S3): a directory and
    /// its children, or a file and its size.
    Found {
        dir: bool,
        size: Option<u64>,
        children: Vec<Child>,
    },
}

/// One `response` of a WebDAV multistatus answer: its href (as sent,
/// percent-encoded), whether it is a collection, its length when given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub href: String,
    pub collection: bool,
    pub size: Option<u64>,
}

/// Reads a `207 Multi-Status` body.
pub type DavParser = fn(&[u8]) -> Result<Vec<Listed>, String>;

/// A merged listing: whether any endpoint has the entry, whether it is a
/// directory, its size (a file), its children by (encoded) name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Merged {
    pub found: bool,
    pub dir: bool,
    pub size: Option<u64>,
    pub children: BTreeMap<String, (bool, Option<u64>)>,
}

impl Merged {
    fn child(&mut self, name: String, dir: bool, size: Option<u64>) {
        let c = self.children.entry(name).or_insert((false, None));
        c.0 |= dir;
        c.1 = c.1.or(size);
    }

    fn this(&mut self, dir: bool, size: Option<u64>) {
        self.found = true;
        self.dir |= dir;
        self.size = self.size.or(size);
    }
}

impl Federation {
    /// The XML reader of WebDAV listings (without one, WebDAV endpoints
    /// are left out of listings).
    pub fn with_dav(mut self, parse: DavParser) -> Federation {
        self.dav = Some(parse);
        self
    }

    /// Entry `rel` of `at`'s view as each of its endpoints lists
    /// it (all at once, each within the deadline), for those that
    /// answered (an S3 endpoint that has nothing there does not). A `rel`
    /// ending in `/` is asked for as a directory (S3: a key prefix; XRootD:
    /// `kXR_dirlist`), else as a file (S3: an object; XRootD: `kXR_stat`). The caller merges the listings.
    pub async fn list(&self, at: &InView, rel: &str) -> Vec<Listing> {
        let t = &at.topo;
        let deadline = t.cfg.timeout;
        let shown = t.views[at.view].endpoints.iter();
        let shown = shown.filter(|&&i| !t.endpoints[i].cfg.disabled);
        let asks = shown.map(|&i| async move {
            let e = &t.endpoints[i];
            let tls = self.tls.as_ref();
            let r = match &e.access {
                Access::Http(b) => propfind(b, rel, tls, deadline).await.map(|(status, body)| {
                    Some(Listing::Dav {
                        base: b.path.clone(),
                        status,
                        body,
                    })
                }),
                Access::S3(b) if rel.is_empty() || rel.ends_with('/') => {
                    b.list(rel, tls, deadline).await.map(|c| {
                        c.map(|children| Listing::Found {
                            dir: true,
                            size: None,
                            children,
                        })
                    })
                }
                Access::S3(b) => b.stat(rel, tls, deadline).await.map(|(there, _)| {
                    there.map(|size| Listing::Found {
                        dir: false,
                        size,
                        children: Vec::new(),
                    })
                }),
                Access::Root(b) if rel.is_empty() || rel.ends_with('/') => {
                    xroot::dirlist(b, rel, deadline).await.map(|c| {
                        c.map(|children| Listing::Found {
                            dir: true,
                            size: None,
                            children,
                        })
                    })
                }
                Access::Root(b) => xroot::stat(b, rel, deadline).await.map(|st| {
                    st.found.then_some(Listing::Found {
                        dir: false,
                        size: st.size,
                        children: Vec::new(),
                    })
                }),
            };
            (i, r)
        });
        let mut out = Vec::new();
        for (i, r) in join_all(asks).await {
            match r {
                Ok(l) => out.extend(l),
                Err(why) => {
                    tracing::debug!(endpoint = %t.endpoints[i].name, "listing of {rel}: {why}")
                }
            }
        }
        out
    }

    /// Entry `want` (percent-encoded, from `/`) of `at`'s view, merged from
    /// every endpoint: asked as a directory first (some servers list a
    /// directory's entries only when its path ends in `/`), then as a file.
    pub async fn merged(&self, at: &InView, want: &str) -> Merged {
        let want = want.trim_end_matches('/');
        let listed = |l: &Listing| match l {
            Listing::Dav { status, .. } => *status == 207,
            Listing::Found { .. } => true,
        };
        let mut answers = self.list(at, &format!("{want}/")).await;
        if !answers.iter().any(listed) && !want.is_empty() {
            answers = self.list(at, want).await;
        }
        let mut m = Merged::default();
        for answer in answers {
            match answer {
                Listing::Found {
                    dir,
                    size,
                    children,
                } => {
                    m.this(dir, size);
                    for (name, d, n) in children {
                        m.child(name, d, n);
                    }
                }
                Listing::Dav {
                    base,
                    status: 207,
                    body,
                } => {
                    let Some(Ok(entries)) = self.dav.map(|parse| parse(&body)) else {
                        continue;
                    };
                    for e in entries {
                        match place(&e, &base, want) {
                            Some(None) => m.this(e.collection, e.size),
                            Some(Some(name)) => m.child(name, e.collection, e.size),
                            None => {}
                        }
                    }
                }
                Listing::Dav { .. } => {}
            }
        }
        m
    }
}

/// Where listed entry `e` is under the endpoint's `base` path and the
/// directory `want` (both encoded): `Some(None)` the directory itself,
/// `Some(Some(name))` a child (in this crate's encoding, whatever the
/// endpoint's: the same name from an XRootD and a WebDAV endpoint is one
/// name), `None` neither. Compared decoded: servers encode differently.
fn place(e: &Listed, base: &str, want: &str) -> Option<Option<String>> {
    // An href may be a whole URL: its path.
    let href = match e.href.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |i| &rest[i..]),
        None => e.href.as_str(),
    };
    let (href, base, want) = (
        crate::decode(href),
        crate::decode(base),
        crate::decode(want),
    );
    let rest = href.strip_prefix(&base)?.strip_prefix(&want)?;
    let rest = rest.trim_matches('/');
    if rest.is_empty() {
        return Some(None);
    }
    (!rest.contains('/')).then(|| Some(crate::s3::encode(rest)))
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
        // Encoded otherwise than here (XrdHttp leaves '(' and ' ' as they
        // are, or encodes what we do not): the same name as ours.
        for other in [
            "/data/fed/d/a (b)",
            "/data/fed/d/a%20%28b%29",
            "/data/fed/d/a%20(b)",
        ] {
            assert_eq!(
                place(&l(other), "/data/fed", "/d"),
                Some(Some("a%20%28b%29".into())),
                "{other}"
            );
        }
        assert_eq!(
            place(&l("/data/f%65d/d/x"), "/data/fed", "/d"),
            Some(Some("x".into()))
        );
        // The view's root.
        assert_eq!(place(&l("/data/fed/"), "/data/fed", ""), Some(None));
        assert_eq!(
            place(&l("/data/fed/f"), "/data/fed", ""),
            Some(Some("f".into()))
        );
    }
}
