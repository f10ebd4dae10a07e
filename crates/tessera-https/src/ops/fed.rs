//! Federated views (`tessera-fed`): a GET or HEAD of a path under a view
//! is answered with a redirect (302) to the best replica for the client
//! (a PROPFIND with the endpoints' listings merged: `fedlist.rs`),
//! or, when the client asks for Metalink (`Accept:
//! application/metalink4+xml`, or `?metalink`), with the list of every
//! replica in priority order. A token's scopes are checked on the path
//! before anything is looked up; endpoints' own credentials never reach
//! the client.

use super::metalink;
use crate::body::Body;
use crate::error::HttpError;
use crate::{Ctx, Req};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, LOCATION};
use hyper::Response;

/// The answer when `req` is for a federated view (`None`: it is not).
pub async fn serve(ctx: &Ctx, req: &Req) -> Option<Result<Response<Body>, HttpError>> {
    let fed = ctx.cfg.federation.as_ref()?;
    let target = req.uri().path_and_query().map_or("/", |p| p.as_str());
    let path = match crate::path::decode(target) {
        Ok(p) => p,
        Err(e) => return Some(Err(e)),
    };
    let at = fed.view_of(&path.display())?;
    Some(answer(ctx, fed, req, &path, at).await)
}

async fn answer(
    ctx: &Ctx,
    fed: &tessera_fed::Federation,
    req: &Req,
    path: &tessera_types::NsPath,
    at: tessera_fed::InView,
) -> Result<Response<Body>, HttpError> {
    let method = req.method().as_str();
    if method == "PUT" {
        return write(ctx, req, fed, path, &at).await;
    }
    if !matches!(method, "GET" | "HEAD" | "PROPFIND") {
        return Err(HttpError::new(
            405,
            format!("{method} is not served on a federated view yet (GET, HEAD and PROPFIND are)"),
        ));
    }
    if !at.public && !ctx.credentials {
        return Err(HttpError::new(
            401,
            "this view needs a token or a certificate",
        ));
    }
    ctx.core.token_allows_read(&ctx.who, path)?;
    // On to the endpoints as the client sent it (still encoded).
    let rel = at.rel.as_str();
    if method == "PROPFIND" {
        let depth0 = crate::ops::header(req.headers(), "depth") == Some("0");
        let view = crate::path::encode(at.path().as_bytes());
        return super::fedlist::listing(fed, &at, &view, rel, depth0, path).await;
    }
    // HTTP clients go to HTTP replicas (an XRootD one is for root://).
    let found: Vec<_> = fed
        .find(
            &at,
            ctx.peer.ip(),
            if wants_metalink(req) {
                tessera_fed::Want::EveryHttp
            } else {
                tessera_fed::Want::Http
            },
        )
        .await
        .into_iter()
        .filter(|r| r.root.is_none())
        .collect();
    if found.is_empty() {
        return Err(HttpError::new(
            404,
            format!("{} is on none of the view's endpoints", path.display()),
        ));
    }
    let ordered = fed.order(found, ctx.peer.ip());
    let mut r = Response::new(Body::Empty);
    let h = r.headers_mut();
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if wants_metalink(req) {
        let name = String::from_utf8_lossy(path.name().unwrap_or(b"")).into_owned();
        let doc = metalink::document(&name, &ordered);
        h.insert(CONTENT_TYPE, HeaderValue::from_static(metalink::MEDIA_TYPE));
        let len = doc.len();
        h.insert("Content-Length", HeaderValue::from(len));
        if method == "GET" {
            *r.body_mut() = Body::text(doc);
        }
        return Ok(r);
    }
    let first = &ordered[0];
    if method == "HEAD" && first.get_only {
        // A presigned grant is for GET alone, and clients (davix) reuse a
        // HEAD's redirect for their GET: the view answers the HEAD itself.
        if let Some(n) = first.size {
            h.insert("Content-Length", HeaderValue::from(n));
        }
        return Ok(r);
    }
    let to = HeaderValue::from_str(&first.url)
        .map_err(|_| HttpError::new(500, "a replica URL is not a header value"))?;
    h.insert(LOCATION, to);
    fed.sent(&first.endpoint);
    h.insert("Content-Length", HeaderValue::from_static("0"));
    *r.status_mut() = hyper::StatusCode::FOUND;
    Ok(r)
}

/// A PUT into a view: 307 to the endpoint the view's write policy picks
/// for this client (the body goes there), after the token's create scope
/// is checked on the path. Writes need a token; a token that may only
/// create gets an object store's grant only for an absent key and only
/// when it asks for create-only itself (`If-None-Match: *`, then signed
/// into the grant: 428 otherwise).
async fn write(
    ctx: &Ctx,
    req: &Req,
    fed: &tessera_fed::Federation,
    path: &tessera_types::NsPath,
    at: &tessera_fed::InView,
) -> Result<Response<Body>, HttpError> {
    use tessera_fed::WriteRefused as No;
    if !ctx.credentials {
        return Err(HttpError::new(
            401,
            "writes into a view need a token or a certificate",
        ));
    }
    let may_replace = ctx.core.token_allows_create(&ctx.who, path)?;
    let ask = tessera_fed::WriteAsk {
        may_replace,
        if_none_match: crate::ops::header(req.headers(), "if-none-match") == Some("*"),
    };
    let to = fed.write_url(at, ctx.peer.ip(), ask).await.map_err(|why| {
        let status = match &why {
            No::NotConfigured => 405,
            No::Exists => 412,
            No::MustBeConditional => 428,
            No::Unavailable(_) | No::Lookup(_) => 503,
        };
        HttpError::new(status, why.to_string())
    })?;
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
