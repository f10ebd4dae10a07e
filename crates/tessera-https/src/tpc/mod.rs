//! WLCG HTTP third-party copy: `COPY` with `Source` (this server pulls)
//! or with `Destination` (this server pushes).

pub mod client;
pub mod pull;
pub mod push;
pub mod streams;
mod tail;
