//! Why a token was refused. Every variant maps to HTTP 401/403 and
//! `kXR_NotAuthorized` at the edges; none leaks the token itself.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("malformed token: {0}")]
    Malformed(String),
    #[error("token algorithm {0} is not accepted (RS256 or ES256 only)")]
    Algorithm(String),
    #[error("token issuer {0} is not configured")]
    UnknownIssuer(String),
    #[error("no key {kid} for issuer {issuer}")]
    UnknownKey { issuer: String, kid: String },
    #[error("token signature does not verify")]
    BadSignature,
    #[error("token expired")]
    Expired,
    #[error("token not valid yet")]
    NotYetValid,
    #[error("token audience is not accepted here")]
    Audience,
    #[error("token claims: {0}")]
    Claims(String),
    #[error("fetching issuer keys: {0}")]
    Fetch(String),
}
