//! Federated views in HTTP's words (`tessera-route` decides: gates, the
//! replica, every replica, where a write goes): a GET or HEAD of a path
//! under a view is answered with a redirect (302) to the best replica for
//! the client (a PROPFIND with the endpoints' listings merged:
//! `fedlist.rs`), or, when the client asks for Metalink (`Accept:
//! application/metalink4+xml`, or `?metalink`), with the list of every
//! replica in priority order; a PUT with a 307 to where the view's policy
//! writes. Endpoints' own credentials never reach the client.

use super::metalink;
use crate::body::Body;
use crate::error::HttpError;
use crate::{Ctx, Req};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, LOCATION};
use hyper::Response;
use tessera_route::{Pick, ViewAsk};

/// The answer when `req` is for a federated view (`None`: it is not).
pub async fn serve(ctx: &Ctx, req: &Req) -> Option<Result<Response<Body>, HttpError>> {
    let fed = ctx.cfg.federation.as_ref()?;
    let target = req.uri().path_and_query().map_or("/", |p| p.as_str());
    let path = match crate::path::decode(target) {
        Ok(p) => p,
        Err(e) => return Some(Err(e)),
    };
    let at = ViewAsk::view_of(fed, &path)?;
    let v = ViewAsk {
        fed,
        core: &ctx.core,
        who: &ctx.who,
        credentialed: ctx.credentials,
        path: &path,
        at,
        peer: ctx.peer.ip(),
    };
    Some(answer(req, &v).await)
}

async fn answer(req: &Req, v: &ViewAsk<'_>) -> Result<Response<Body>, HttpError> {
    let method = req.method().as_str();
    if method == "PUT" {
        return write(req, v).await;
    }
    if !matches!(method, "GET" | "HEAD" | "PROPFIND") {
        return Err(HttpError::new(
            405,
            format!("{method} is not served on a federated view yet (GET, HEAD and PROPFIND are)"),
        ));
    }
    if method == "PROPFIND" {
        // On to the endpoints as the client sent it (still encoded).
        let rel = v.at.rel.trim_end_matches('/');
        let m = v.listing(rel).await?;
        let depth0 = crate::ops::header(req.headers(), "depth") == Some("0");
        let view = crate::path::encode(v.at.path().as_bytes());
        return Ok(super::fedlist::listing(&m, &format!("{view}{rel}"), depth0));
    }
    let mut r = Response::new(Body::Empty);
    let h = r.headers_mut();
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if wants_metalink(req) {
        // HTTP clients go to HTTP replicas (an XRootD one is for root://).
        let ordered = v.replicas(tessera_fed::Want::EveryHttp).await?;
        let name = String::from_utf8_lossy(v.path.name().unwrap_or(b"")).into_owned();
        let doc = metalink::document(&name, &ordered);
        h.insert(CONTENT_TYPE, HeaderValue::from_static(metalink::MEDIA_TYPE));
        let len = doc.len();
        h.insert("Content-Length", HeaderValue::from(len));
        if method == "GET" {
            *r.body_mut() = Body::text(doc);
        }
        return Ok(r);
    }
    match v.pick(tessera_fed::Want::Http, method == "HEAD").await? {
        Pick::AnswerHere(first) => {
            if let Some(n) = first.size {
                h.insert("Content-Length", HeaderValue::from(n));
            }
        }
        Pick::Redirect(first) => {
            let to = HeaderValue::from_str(&first.url)
                .map_err(|_| HttpError::new(500, "a replica URL is not a header value"))?;
            h.insert(LOCATION, to);
            h.insert("Content-Length", HeaderValue::from_static("0"));
            *r.status_mut() = hyper::StatusCode::FOUND;
        }
    }
    Ok(r)
}

/// A PUT into a view: 307 to the endpoint the view's write policy picks
/// for this client (the body goes there). A token that may only create
/// gets an object store's grant only for an absent key and only when it
/// asks for create-only itself (`If-None-Match: *`, then signed into the
/// grant: 428 otherwise).
async fn write(req: &Req, v: &ViewAsk<'_>) -> Result<Response<Body>, HttpError> {
    let if_none_match = crate::ops::header(req.headers(), "if-none-match") == Some("*");
    let to = v.write_url(if_none_match).await?;
    let mut r = Response::new(Body::Empty);
    *r.status_mut() = hyper::StatusCode::TEMPORARY_REDIRECT;
    let h = r.headers_mut();
    h.insert(
        LOCATION,
        HeaderValue::from_str(&to)
            .map_err(|_| HttpError::new(500, "an endpoint URL is not a header value"))?,
    );
    h.insert("Content-Length", HeaderValue::from_static("0"));
    Ok(r)
}

fn wants_metalink(req: &Req) -> bool {
    let accept = crate::ops::header(req.headers(), "accept").unwrap_or("");
    accept.contains(metalink::MEDIA_TYPE)
        || req
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|kv| kv == "metalink"))
}
