//! The XRootD wire protocol (5.x; `XProtocol.hh` is the authority), one
//! codec for every part of Tessera that speaks it: the server
//! (`tessera-xrootd` decodes requests into typed ones and writes replies
//! with these constants), the federation's client (`tessera-fed`) and the
//! test clients. Request codes, status and error numbers and option bits
//! are named here and nowhere else; [`encode`] builds the requests a
//! client sends (options as named flags) and [`request::decode`] reads
//! every request into its typed form (the server's side; each encoder is
//! read back in its round-trip test).

mod error;
mod target;
mod wire;

pub mod encode;
pub mod readv;
pub mod request;

pub use error::DecodeError;
pub use target::Target;
pub use wire::*;
