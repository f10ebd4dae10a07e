//! Bearer tokens: WLCG common JWT profile and SciTokens. `Validator`
//! checks a token against the configured issuers (keys discovered over
//! HTTPS and cached) and yields what it allows (`TokenGrant`) and who it
//! acts as; the core service enforces the grant on every request. `dev`
//! is the development issuer `tesserad --dev` serves and `tessera token
//! issue` signs with.

mod claims;
pub mod dev;
mod error;
pub mod fetch;
mod jws;
pub mod macaroon;
pub mod passwd;
pub mod users;
mod validator;
pub mod x509;

pub use claims::{authz_token, fuzz_scope, peek};
pub use error::AuthError;
pub use validator::{IssuerConfig, Validated, Validator, ANY_AUDIENCE, LEEWAY_SECS, MIN_REFETCH};
