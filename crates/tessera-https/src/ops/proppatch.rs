//! PROPPATCH (RFC 4918 §9.2): dead properties set and removed in document
//! order, all or none (one core call, one namespace transaction). A live
//! property (`DAV:`, `LCGDM:`) in the request fails the whole request:
//! 403 `cannot-modify-protected-property` for it, 424 for the others;
//! success is a 207 with every property at 200 (507 for each when the
//! entry has no room for them: at most 64 dead properties of 64 KiB
//! together, `tessera-meta`'s `MAX_USER_XATTRS`). The body is bounded as
//! PROPFIND's is; conditional headers are checked first.

use super::deadprops::{attr_name, protected};
use super::precond;
use super::propfind::small_body;
use crate::body::Body;
use crate::davxml::{self, escape, PatchOp, PropName};
use crate::error::HttpError;
use crate::path;
use crate::Ctx;
use hyper::Response;

pub async fn proppatch(ctx: &Ctx, req: crate::Req) -> Result<Response<Body>, HttpError> {
    let p = path::decode(req.uri().path())?;
    precond::check_path(ctx, req.headers(), &p).await?;
    let text = small_body(req, "PROPPATCH").await?;
    let ops = davxml::parse_proppatch(&text)
        .map_err(|e| HttpError::new(400, format!("PROPPATCH body: {e}")))?;
    let name = |op: &PatchOp| -> PropName {
        match op {
            PatchOp::Set(n, _) | PatchOp::Remove(n) => n.clone(),
        }
    };
    let names: Vec<PropName> = ops.iter().map(name).collect();
    // Refusals that fail the whole request before anything changes.
    let mut refused: Vec<(usize, u16, &str)> = Vec::new();
    let mut changes = Vec::with_capacity(ops.len());
    for (k, op) in ops.iter().enumerate() {
        let n = &names[k];
        if protected(&n.0) {
            refused.push((k, 403, "cannot-modify-protected-property"));
            continue;
        }
        let Some(attr) = attr_name(n) else {
            refused.push((k, 507, ""));
            continue;
        };
        changes.push(match op {
            PatchOp::Set(_, v) => (attr, Some(v.clone().into_bytes())),
            PatchOp::Remove(_) => (attr, None),
        });
    }
    // The target must exist either way (404 otherwise).
    ctx.core.stat(&ctx.who, p.clone()).await?;
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:multistatus xmlns:D=\"DAV:\">\n",
    );
    xml.push_str(&format!(
        "<D:response><D:href>{}</D:href>",
        path::encode(p.as_bytes())
    ));
    if refused.is_empty() {
        match ctx.core.xattr_patch(&ctx.who, p, changes).await {
            Ok(()) => propstat(&mut xml, names.iter(), 200, "", ""),
            // No room for them (the entry's dead properties are bounded in
            // count and bytes, and charged to the owner's byte quota): 507
            // for each, nothing changed (RFC 4918 §9.2.1), and why.
            Err(e) if e.kind() == tessera_types::ErrorKind::QuotaExceeded => {
                propstat(&mut xml, names.iter(), 507, "", &e.to_string())
            }
            Err(e) => return Err(e.into()),
        }
    } else {
        for (k, code, cond) in &refused {
            propstat(&mut xml, std::iter::once(&names[*k]), *code, cond, "");
        }
        let others = (0..names.len())
            .filter(|k| !refused.iter().any(|r| r.0 == *k))
            .map(|k| &names[k]);
        propstat(&mut xml, others, 424, "", "");
    }
    xml.push_str("</D:response>\n</D:multistatus>\n");
    Ok(super::multistatus::xml_207(xml))
}

/// One propstat naming `props` with `code` (and an error condition, and
/// a description).
fn propstat<'a>(
    xml: &mut String,
    props: impl Iterator<Item = &'a PropName>,
    code: u16,
    cond: &str,
    why: &str,
) {
    let mut names = String::new();
    for (ns, local) in props {
        names.push_str(&format!("<{local} xmlns=\"{}\"/>", escape(ns)));
    }
    if names.is_empty() {
        return;
    }
    let reason = hyper::StatusCode::from_u16(code)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    xml.push_str(&format!(
        "<D:propstat><D:prop>{names}</D:prop><D:status>HTTP/1.1 {code} {reason}</D:status>"
    ));
    if !cond.is_empty() {
        xml.push_str(&format!("<D:error><D:{cond}/></D:error>"));
    }
    if !why.is_empty() {
        xml.push_str(&format!(
            "<D:responsedescription>{}</D:responsedescription>",
            escape(why)
        ));
    }
    xml.push_str("</D:propstat>");
}
