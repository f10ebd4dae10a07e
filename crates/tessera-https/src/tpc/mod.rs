//! WLCG HTTP third-party copy: `COPY` with `Source` (this server pulls)
//! or with `Destination` (this server pushes).

pub mod client;
pub mod pull;
pub mod push;
pub mod streams;
mod tail;

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
