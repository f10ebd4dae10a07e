//! WLCG HTTP third-party copy: `COPY` with `Source` (this server pulls)
//! or with `Destination` (this server pushes).

pub mod client;
pub mod mark;
pub mod pull;
pub mod push;
pub mod streams;
mod tail;

/// The 201 whose `text/plain` body is a copy's progress: performance
/// markers, then one `success:` or `failure:` line, as they come on `rx`.
pub fn progress(
    rx: tokio::sync::mpsc::Receiver<Result<hyper::body::Bytes, std::io::Error>>,
) -> hyper::Response<crate::Body> {
    let mut r = hyper::Response::new(crate::Body::Stream(rx));
    crate::ops::status(&mut r, 201);
    crate::ops::set(&mut r, "Content-Type", "text/plain");
    r
}

/// A copy's last line for failure `e` (on one line).
pub fn failure(e: &str) -> String {
    format!("failure: {}\n", e.replace(['\n', '\r'], " "))
}

/// Who may have this server copy to or from `remote`: a client that
/// presented credentials (never an anonymous one), for an endpoint the
/// remote-endpoint policy admits (its addresses resolved and kept).
pub async fn authorize(
    ctx: &crate::Ctx,
    remote: &mut client::Remote,
) -> Result<(), crate::HttpError> {
    if !ctx.credentials {
        return Err(crate::HttpError::new(
            401,
            "a third-party copy needs credentials (a bearer token)",
        ));
    }
    remote.admit(&ctx.cfg.tpc_policy, &ctx.who).await
}
