//! `GET /.well-known/tessera/whoami`: who this server takes the request's
//! credentials (token, macaroon, client certificate, or none) to be, as
//! JSON — the mapped uid, gids and group names, the certificate's DN and
//! VOMS FQANs, a token's issuer, subject and scopes (EOS's `eos whoami`,
//! dCache's `/api/v1/user`). Nothing is looked up in the namespace.

use super::status;
use crate::body::Body;
use crate::Ctx;
use hyper::Response;

/// The reserved path (RFC 8615's `.well-known` space, not the namespace).
pub const PATH: &str = "/.well-known/tessera/whoami";

/// Whether `req` asks who it is.
pub fn asks(req: &crate::Req) -> bool {
    matches!(*req.method(), hyper::Method::GET | hyper::Method::HEAD) && req.uri().path() == PATH
}

pub fn answer(ctx: &Ctx) -> Response<Body> {
    let mut body = tessera_types::json::object(&ctx.who.whoami());
    body.push('\n');
    let len = body.len();
    let mut r = Response::new(Body::text(body));
    status(&mut r, 200);
    let h = r.headers_mut();
    h.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    h.insert(
        hyper::header::CONTENT_LENGTH,
        hyper::header::HeaderValue::from(len),
    );
    h.insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    r
}
