//! Why a certificate chain, a CRL or a VOMS attribute certificate was
//! refused. Every reason names the certificate it is about (its DN), so
//! the edges can hand it to the client (HTTP 401/403, `kXR_NotAuthorized`)
//! and to the log as it is.

/// A refusal, with the subject it concerns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum X509Error {
    #[error("certificate could not be parsed: {0}")]
    Malformed(String),
    #[error("no certificate was presented")]
    Empty,
    #[error("certificate chain too long ({0} certificates, at most {1})")]
    TooLong(usize, usize),
    #[error("certificate chain too big ({0} bytes, at most {1})")]
    TooBig(usize, usize),
    #[error("certificate {0} expired at {1}")]
    Expired(String, String),
    #[error("certificate {0} is not valid before {1}")]
    NotYetValid(String, String),
    #[error("certificate {0}: issuer {1} is not a trusted CA")]
    Untrusted(String, String),
    #[error("certificate {0}: signature does not verify with the key of {1}")]
    BadSignature(String, String),
    #[error("certificate {0} was revoked by {1}")]
    Revoked(String, String),
    #[error("certificate {0}: the CRL of {1} has expired (next update {2})")]
    CrlExpired(String, String, String),
    #[error("certificate {0}: no CRL of {1} (CRLs are required here)")]
    CrlMissing(String, String),
    #[error("proxy {0}: {1}")]
    Proxy(String, String),
    #[error("certificate {0}: {1}")]
    Policy(String, String),
    #[error("VOMS attribute certificate: {0}")]
    Voms(String),
    #[error("trust store {0}: {1}")]
    Store(String, String),
}
