//! WLCG HTTP third-party copy: `COPY` with `Source` (this server pulls).
//! Push (`Destination`) is not built yet and answers 501.

pub mod client;
pub mod pull;
