//! The core service: the one entry point every protocol front-end calls.
//!
//! It turns a request (identity + normalised path + arguments) into calls
//! on the namespace store, off the async runtime (`spawn_blocking`), and
//! records one metric sample and one access-log line per operation.
//! Authorization beyond mode bits (tokens, ACLs) will be evaluated here.

mod error;
mod service;

pub use error::CoreError;
pub use service::{Core, RemoveReport};
pub use tessera_meta::{
    CheckReport, Checksum, CommitWrite, EntryKind, Inode, MetaOptions, MetaStore, NsStats,
    QuotaEntry, QuotaKind, QuotaNodeReport, QuotaTarget, RenameFlags, Reservation, SetAttr,
};
