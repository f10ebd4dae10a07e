//! PROPFIND, depth 0 or 1: a 207 multistatus, the target itself first
//! (davix takes the first response as the directory). `Depth: infinity` is
//! refused as RFC 4918 §9.1 lets a server refuse it (403 with
//! `propfind-finite-depth`); a request without a Depth header is answered
//! as depth 1 (lenient, for hand-written requests), any other depth is a
//! 400. The body (at most 64 KiB; `davxml.rs`, no DTDs) asks for
//! `allprop` (also an empty body), `propname` or a `prop` list: properties
//! we have come back in a 200 propstat, the others by name in a 404
//! propstat (RFC 4918 §9.1); a body that is not well-formed is a 400.
//! Beyond the DAV: properties, `LCGDM:mode` (octal `st_mode`), `owner`
//! and `group` (numeric), which davix reads for `gfal-ls -l`.

use super::{header, secs, set, status};
use crate::body::Body;
use crate::date::{http_date, iso8601};
use crate::davxml::{self, escape, PropName, Propfind};
use crate::error::HttpError;
use crate::path;
use crate::Ctx;
use http_body_util::BodyExt;
use hyper::Response;
use tessera_core::Inode;
use tessera_types::NsPath;

/// Largest PROPFIND or PROPPATCH body read (then refused with 413).
pub const MAX_BODY: usize = 64 << 10;
/// A body over `MAX_BODY` is still read, and dropped, up to this much
/// before the 413: a client cut off while it sends can lose the answer
/// (the connection is reset under it). Beyond it, the connection closes.
const DISCARD_UP_TO: usize = 8 << 20;

/// An XML request body of at most `MAX_BODY` bytes (413 beyond; read
/// within bounds, which keeps the connection usable).
pub async fn small_body(req: crate::Req, method: &str) -> Result<Vec<u8>, HttpError> {
    let mut body = req.into_body();
    let mut seen = 0usize;
    let mut text = Vec::new();
    while let Some(f) = body.frame().await {
        let f = f.map_err(|e| HttpError::new(400, format!("request body: {e}")))?;
        if let Ok(d) = f.into_data() {
            seen += d.len();
            if seen <= MAX_BODY {
                text.extend_from_slice(&d);
            }
            if seen > DISCARD_UP_TO {
                break;
            }
        }
    }
    if seen > MAX_BODY {
        return Err(HttpError::new(
            413,
            format!("{method} body over {MAX_BODY} bytes"),
        ));
    }
    Ok(text)
}
/// Entries of a depth-1 listing per page: each page is answered as it is
/// listed (the 207 is streamed), so what a PROPFIND holds is one page at
/// a time: a page with dead properties (at most 64 KiB an entry) is
/// smaller.
const PAGE: usize = 2048;
const PAGE_WITH_DEAD: usize = 128;

/// Entries per page in `dir`: a page's XML stays near 1 MiB however long
/// the path every `href` repeats (percent-encoded, up to 3 bytes a byte).
fn page_for(dir: &NsPath) -> usize {
    let per_entry = 3 * dir.as_bytes().len() + 2048;
    ((1 << 20) / per_entry).clamp(32, PAGE)
}

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
    let text = small_body(req, "PROPFIND").await?;
    if depth == Depth::Infinity {
        return Ok(finite_depth_only());
    }
    let want =
        davxml::parse(&text).map_err(|e| HttpError::new(400, format!("PROPFIND body: {e}")))?;
    let me = ctx.core.stat(&ctx.who, p.clone()).await?;
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n\
         <D:multistatus xmlns:D=\"DAV:\" xmlns:L=\"LCGDM:\">\n",
    );
    let dead = if wants_dead(&want) {
        super::deadprops::of(ctx, &p).await?
    } else {
        Vec::new()
    };
    entry(&mut xml, &p, &me, &want, &dead);
    const TAIL: &str = "</D:multistatus>\n";
    if depth == Depth::One && me.is_dir() {
        let lister = Lister {
            core: ctx.core.clone(),
            who: ctx.who.clone(),
            dir: p.clone(),
            page: if wants_dead(&want) {
                PAGE_WITH_DEAD
            } else {
                page_for(&p)
            },
            want,
        };
        let bounds = super::dirpages::Bounds {
            budget: ctx.reply_budget(),
            idle: ctx.cfg.body_timeout,
        };
        let body = super::dirpages::body(lister, xml, TAIL.into(), bounds).await?;
        return Ok(super::multistatus::streamed_207(body));
    }
    xml.push_str(TAIL);
    Ok(super::multistatus::xml_207(xml))
}

/// The pages of a depth-1 listing, each as the XML of its entries.
struct Lister {
    core: tessera_core::Core,
    who: tessera_types::Identity,
    dir: NsPath,
    page: usize,
    want: Propfind,
}

impl super::dirpages::Pager for Lister {
    /// The entries after `after`: their XML, and the name to go on after
    /// when there may be more.
    async fn page(&self, after: Option<Vec<u8>>) -> Result<(String, Option<Vec<u8>>), HttpError> {
        let page = self
            .core
            .list(&self.who, self.dir.clone(), after, self.page)
            .await?;
        let children = page
            .iter()
            .map(|e| self.dir.join(&e.name))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| HttpError::new(500, e.to_string()))?;
        let dead = if wants_dead(&self.want) {
            let each = children.iter().cloned().zip(page.iter().map(|e| e.ino));
            super::deadprops::of_each(&self.core, &self.who, &self.dir, each.collect()).await?
        } else {
            vec![Vec::new(); children.len()]
        };
        let mut xml = String::new();
        for ((e, child), dead) in page.iter().zip(&children).zip(&dead) {
            entry(&mut xml, child, e, &self.want, dead);
        }
        let next = (page.len() == self.page)
            .then(|| page.last().map(|e| e.name.clone()))
            .flatten();
        Ok((xml, next))
    }
}

/// The properties we have (namespace, local name), in answer order; their
/// values come from [`value`].
const PROPS: &[(&str, &str)] = &[
    ("DAV:", "displayname"),
    ("DAV:", "getcontentlength"),
    ("DAV:", "getlastmodified"),
    ("DAV:", "creationdate"),
    ("DAV:", "getetag"),
    ("DAV:", "resourcetype"),
    ("LCGDM:", "mode"),
    ("LCGDM:", "owner"),
    ("LCGDM:", "group"),
];

/// Property `(ns, local)` of `i` at `p`, written out; `None`: not one we have.
/// Append live property `(ns, local)` of `i` (at `p`) to `out`; false
/// (nothing appended) when it is not one of ours. Written in place: a
/// listing writes a million of them.
fn value_into(out: &mut String, ns: &str, local: &str, p: &NsPath, i: &Inode) -> bool {
    use std::fmt::Write;
    let prefix = match ns {
        "DAV:" => "D",
        "LCGDM:" => "L",
        _ => return false,
    };
    if (ns, local) == ("DAV:", "resourcetype") && !i.is_dir() {
        out.push_str("<D:resourcetype/>");
        return true;
    }
    let known = matches!(
        (ns, local),
        (
            "DAV:",
            "displayname" | "getcontentlength" | "getlastmodified" | "creationdate"
        ) | ("DAV:", "getetag" | "resourcetype")
            | ("LCGDM:", "mode" | "owner" | "group")
    );
    if !known {
        return false;
    }
    let _ = write!(out, "<{prefix}:{local}>");
    let _ = match (ns, local) {
        ("DAV:", "displayname") => {
            out.push_str(&escape(&String::from_utf8_lossy(p.name().unwrap_or(b"/"))));
            Ok(())
        }
        ("DAV:", "getcontentlength") => write!(out, "{}", if i.is_dir() { 0 } else { i.size }),
        ("DAV:", "getlastmodified") => write!(out, "{}", http_date(secs(i.mtime_ns))),
        ("DAV:", "creationdate") => write!(out, "{}", iso8601(secs(i.ctime_ns))),
        ("DAV:", "getetag") => {
            out.push_str(&escape(&super::etag(i)));
            Ok(())
        }
        ("DAV:", "resourcetype") => {
            out.push_str("<D:collection/>");
            Ok(())
        }
        ("LCGDM:", "mode") => {
            let kind = if i.is_dir() { 0o040000 } else { 0o100000 };
            write!(out, "{:o}", kind | (i.mode & 0o7777))
        }
        ("LCGDM:", "owner") => write!(out, "{}", i.uid),
        _ => write!(out, "{}", i.gid),
    };
    let _ = write!(out, "</{prefix}:{local}>");
    true
}

/// An empty element naming property `(ns, local)`.
fn named(ns: &str, local: &str) -> String {
    match ns {
        "DAV:" => format!("<D:{local}/>"),
        "LCGDM:" => format!("<L:{local}/>"),
        _ => format!("<{local} xmlns=\"{}\"/>", escape(ns)),
    }
}

/// Whether answering `want` needs the dead properties (every `allprop`
/// and `propname`; a `prop` list only when it names one outside the live
/// namespaces, where no dead property can be: davix's list, which asks
/// for `DAV:quota-used-bytes`, reads none).
fn wants_dead(want: &Propfind) -> bool {
    match want {
        Propfind::AllProp | Propfind::PropName => true,
        Propfind::Prop(names) => names.iter().any(|(ns, _)| !super::deadprops::protected(ns)),
    }
}

/// A dead property with its value.
fn dead_value((ns, local): &PropName, v: &str) -> String {
    if v.is_empty() {
        format!("<{local} xmlns=\"{}\"/>", escape(ns))
    } else {
        format!("<{local} xmlns=\"{}\">{v}</{local}>", escape(ns))
    }
}

fn entry(xml: &mut String, p: &NsPath, i: &Inode, want: &Propfind, dead: &[(PropName, String)]) {
    let mut href = path::encode(p.as_bytes());
    if i.is_dir() && !href.ends_with('/') {
        href.push('/');
    }
    let (mut found, mut missing) = (String::with_capacity(512), String::new());
    match want {
        Propfind::AllProp => {
            for (ns, local) in PROPS {
                value_into(&mut found, ns, local, p, i);
            }
            for (n, v) in dead {
                found.push_str(&dead_value(n, v));
            }
        }
        Propfind::PropName => {
            for (ns, local) in PROPS {
                found.push_str(&named(ns, local));
            }
            for ((ns, local), _) in dead {
                found.push_str(&named(ns, local));
            }
        }
        Propfind::Prop(names) => {
            for (ns, local) in names
                .iter()
                .map(|n: &PropName| (n.0.as_str(), n.1.as_str()))
            {
                let stored = || dead.iter().find(|(n, _)| n.0 == ns && n.1 == local);
                if !value_into(&mut found, ns, local, p, i) {
                    match stored() {
                        Some((n, v)) => found.push_str(&dead_value(n, v)),
                        None => missing.push_str(&named(ns, local)),
                    }
                }
            }
        }
    }
    xml.push_str("<D:response><D:href>");
    xml.push_str(&href);
    // The 200 propstat comes first, also when empty: davix keeps the
    // properties of a response's propstats with a status below 400.
    xml.push_str("</D:href><D:propstat><D:prop>");
    xml.push_str(&found);
    xml.push_str("</D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>");
    if !missing.is_empty() {
        xml.push_str(&format!(
            "<D:propstat><D:prop>{missing}</D:prop>\
             <D:status>HTTP/1.1 404 Not Found</D:status></D:propstat>"
        ));
    }
    xml.push_str("</D:response>\n");
}
