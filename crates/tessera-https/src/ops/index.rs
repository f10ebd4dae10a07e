//! GET (and HEAD) of a directory: its entries one name a line
//! (directories end in `/`) for tools, or, for a client that accepts
//! `text/html` (a browser), a page with each entry's name, size and
//! modification time, links to the parents and the children, names
//! escaped, no script. Both stream a page of entries at a time
//! (`dirpages`): a listing of a million entries holds two pages.

use super::dirpages::{self, Bounds, Pager};
use super::{header, set};
use crate::body::Body;
use crate::davxml::escape;
use crate::error::HttpError;
use crate::path;
use crate::Ctx;
use hyper::Response;
use tessera_core::{Core, Inode};
use tessera_types::{Identity, NsPath};

/// Entries per page: a page stays under a megabyte (an HTML row links
/// by the entry's name alone, at most ~2 KiB with a 255-byte name).
const PAGE_TEXT: usize = 1024;
const PAGE_HTML: usize = 512;

/// What the page says of the tree it lists: a strict policy (no script,
/// no frame, no form, styles inline only).
const POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; \
                      base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Whether the client wants HTML: `text/html` accepted with a weight
/// above zero (a browser's `Accept`; tools send `*/*` and get text).
pub fn wants_html(h: &hyper::HeaderMap) -> bool {
    // The same weighing as the digests' `Want-*` lists (q=0 excluded).
    header(h, "accept").is_some_and(|v| super::wanted(v).iter().any(|t| t == "text/html"))
}

pub async fn listing(
    ctx: &Ctx,
    p: &NsPath,
    head: bool,
    (html, slash): (bool, bool),
) -> Result<Response<Body>, HttpError> {
    if html && !slash {
        // The page's links are relative to the directory: its URL ends
        // in `/` (as Apache and XrdHttp send browsers there).
        let mut r = Response::new(Body::Empty);
        super::status(&mut r, 301);
        let mut to = path::encode(p.as_bytes());
        to.push('/');
        set(&mut r, "Location", &to);
        set(&mut r, "Content-Length", "0");
        return Ok(r);
    }
    let pager = Listing {
        core: ctx.core.clone(),
        who: ctx.who.clone(),
        dir: p.clone(),
        html,
    };
    let (top, tail) = if html {
        (page_head(p), PAGE_TAIL.to_string())
    } else {
        (String::new(), String::new())
    };
    let body = if head {
        // The listing is checked (a refusal answers), not sent.
        pager.page(None).await?;
        Body::Empty
    } else {
        let bounds = Bounds {
            budget: ctx.reply_budget(),
            idle: ctx.cfg.body_timeout,
        };
        dirpages::body(pager, top, tail, bounds).await?
    };
    let len = match &body {
        Body::Full(Some(b)) => Some(b.len()),
        _ => None,
    };
    let mut r = Response::new(body);
    if let Some(n) = len {
        set(&mut r, "Content-Length", &n.to_string());
    }
    if html {
        set(&mut r, "Content-Type", "text/html; charset=utf-8");
        set(&mut r, "Content-Security-Policy", POLICY);
    } else {
        set(&mut r, "Content-Type", "text/plain; charset=utf-8");
    }
    set(&mut r, "X-Content-Type-Options", "nosniff");
    set(&mut r, "Vary", "Accept");
    Ok(r)
}

struct Listing {
    core: Core,
    who: Identity,
    dir: NsPath,
    html: bool,
}

impl Pager for Listing {
    async fn page(&self, after: Option<Vec<u8>>) -> Result<(String, Option<Vec<u8>>), HttpError> {
        let n = if self.html { PAGE_HTML } else { PAGE_TEXT };
        let page = self
            .core
            .list(&self.who, self.dir.clone(), after, n)
            .await?;
        let mut out = String::new();
        for e in &page {
            if self.html {
                row(&mut out, e);
            } else {
                out.push_str(&String::from_utf8_lossy(&e.name));
                if e.is_dir() {
                    out.push('/');
                }
                out.push('\n');
            }
        }
        let next = (page.len() == n)
            .then(|| page.last().map(|e| e.name.clone()))
            .flatten();
        Ok((out, next))
    }
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em}\
    table{border-collapse:collapse}\
    th,td{padding:.2em 1em;text-align:left}\
    td.n{text-align:right;font-family:monospace}\
    tr:nth-child(even){background:#f2f2f2}";

const PAGE_TAIL: &str = "</tbody></table></body></html>\n";

/// The page up to the first entry: the title, the path with a link to
/// each parent, the table's head and a row for the parent directory.
fn page_head(dir: &NsPath) -> String {
    let shown = escape(&dir.display());
    let mut crumbs = String::from("<a href=\"/\">/</a>");
    let mut at = Vec::new();
    for part in dir.components() {
        at.push(b'/');
        at.extend_from_slice(part);
        crumbs.push_str(&format!(
            "<a href=\"{}/\">{}</a>/",
            path::encode(&at),
            escape(&String::from_utf8_lossy(part))
        ));
    }
    let mut s = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\
         <title>Index of {shown}</title><style>{STYLE}</style></head>\n\
         <body><h1>Index of {crumbs}</h1>\n<table><thead><tr><th>Name</th>\
         <th>Size</th><th>Modified (UTC)</th></tr></thead><tbody>\n"
    );
    if let Some((parent, _)) = dir.split_last() {
        let href = path::encode(parent.as_bytes());
        let slash = if href.ends_with('/') { "" } else { "/" };
        s.push_str(&format!(
            "<tr><td><a href=\"{href}{slash}\">../</a></td><td></td><td></td></tr>\n"
        ));
    }
    s
}

/// One entry's row: its name linking to it (relative: the page is served
/// at the directory's path with a `/`; a directory's with a `/`), its
/// size in bytes (none for a directory), its modification time.
fn row(out: &mut String, e: &Inode) {
    let name = String::from_utf8_lossy(&e.name);
    let href = format!("./{}", path::encode(&e.name).replace('/', "%2F"));
    let (slash, size) = if e.is_dir() {
        ("/", String::new())
    } else {
        ("", e.size.to_string())
    };
    let when = crate::date::iso8601(super::secs(e.mtime_ns))
        .replace('T', " ")
        .trim_end_matches('Z')
        .to_string();
    out.push_str(&format!(
        "<tr><td><a href=\"{href}{slash}\">{}{slash}</a></td><td class=\"n\">{size}</td>\
         <td>{when}</td></tr>\n",
        escape(&name)
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_negotiation() {
        let mut h = hyper::HeaderMap::new();
        assert!(!wants_html(&h));
        h.insert("accept", "*/*".parse().unwrap());
        assert!(!wants_html(&h));
        h.insert(
            "accept",
            "text/html,application/xhtml+xml,*/*;q=0.8".parse().unwrap(),
        );
        assert!(wants_html(&h));
        h.insert("accept", "text/plain, text/html;q=0".parse().unwrap());
        assert!(!wants_html(&h));
    }

    #[test]
    fn rows_escape_names() {
        let dir = NsPath::parse(b"/a b/<c>").unwrap();
        let e = Inode {
            name: b"x\"<script>&.root".to_vec(),
            mode: 0o100644,
            size: 12,
            ..Default::default()
        };
        let mut out = String::new();
        row(&mut out, &e);
        assert!(!out.contains("<script>"), "{out}");
        assert!(out.contains("href=\"./x%22%3Cscript%3E%26.root\""), "{out}");
        assert!(out.contains("x&quot;&lt;script&gt;&amp;.root"), "{out}");
        let head = page_head(&dir);
        assert!(
            head.contains("<a href=\"/a%20b/\">a b</a>/<a href=\"/a%20b/%3Cc%3E/\">&lt;c&gt;</a>/"),
            "{head}"
        );
        assert!(head.contains("<a href=\"/a%20b/\">../</a>"), "{head}");
    }
}
