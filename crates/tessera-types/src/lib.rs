//! Value types shared by every Tessera crate.
//!
//! This crate has no I/O and no async: it is the leaf every other crate may
//! depend on. It defines [`NsPath`] (a normalised namespace path that can
//! never name anything above the root), [`Identity`] (who is asking) and
//! [`ErrorKind`] (the protocol-independent classification every crate's
//! error maps to, and every front-end maps from).

pub mod civil;
mod error;
mod identity;
pub mod json;
mod path;
mod scope;
mod size;
pub mod units;

pub use error::ErrorKind;
pub use identity::{Identity, X509Subject, LIMITED_PROXY};
pub use path::{percent_decode, NsPath, PathError, MAX_NAME_LEN, MAX_PATH_LEN};
pub use scope::{Access, ScopeGrant, TokenGrant};
pub use size::{format_size, parse_size, SizeError};
