//! `GET /.well-known/tessera/srr`: the Storage Resource Report (SRR, JSON
//! schema v4.2) the site registers in CRIC, for Rucio and WLCG space
//! accounting. Public unless `[srr] public = false` (then any client with
//! a credential). The report is made on an interval, not per request: a
//! request costs a copy of the last one.

use super::{set, status};
use crate::body::Body;
use crate::error::HttpError;
use crate::Ctx;
use hyper::Response;

/// The reserved path (RFC 8615's `.well-known` space, not the namespace).
pub const PATH: &str = "/.well-known/tessera/srr";

/// The schema it follows, said as dCache says it.
const DESCRIBED_BY: &str = "<https://raw.githubusercontent.com/sjones-hep-ph-liv-ac-uk/\
json_info_system/master/srr/v4.2/schema/srrschema_4.2.json>; rel=\"describedby\"";

/// Whether `req` asks for the report (and this server makes one).
pub fn asks(ctx: &Ctx, req: &crate::Req) -> bool {
    ctx.cfg.srr.is_some()
        && matches!(*req.method(), hyper::Method::GET | hyper::Method::HEAD)
        && req.uri().path() == PATH
}

pub async fn answer(ctx: &Ctx, head: bool) -> Result<Response<Body>, HttpError> {
    let Some(srr) = &ctx.cfg.srr else {
        return Err(HttpError::new(404, "no storage resource report here"));
    };
    if !srr.public() && ctx.who.is_anonymous() {
        return Err(HttpError::new(
            401,
            "the storage resource report needs a credential here",
        ));
    }
    let report = srr.get().await?;
    let len = report.json.len();
    let mut r = Response::new(if head {
        Body::Empty
    } else {
        Body::text(report.json.clone())
    });
    status(&mut r, 200);
    set(&mut r, "Content-Type", "application/json");
    set(&mut r, "Content-Length", &len.to_string());
    set(&mut r, "Link", DESCRIBED_BY);
    set(
        &mut r,
        "Last-Modified",
        &crate::date::http_date(report.made as i64),
    );
    set(&mut r, "Cache-Control", "max-age=60");
    Ok(r)
}
