//! The Tessera namespace store.
//!
//! Directories, files, extended attributes and quotas, kept in RocksDB. This
//! is the only crate that knows RocksDB. Every mutation is one atomic
//! `WriteBatch` that carries the namespace change *and* the quota counters
//! it affects; mutations are serialised by one writer lock, readers run in
//! parallel straight against RocksDB. The key layout and record formats are
//! specified in `docs/meta-schema.md`.

mod access;
pub mod acl;
mod balance;
mod bulk;
mod damage;
mod dircache;
mod error;
mod filewrite;
mod fs;
mod keys;
mod migrate;
mod perm;
mod quota;
mod quotaset;
mod read;
mod readcache;
mod records;
mod recount;
mod recycle;
mod rename;
mod store;
mod txn;
mod versions;
mod write;
mod xattr;

pub use access::AccessRule;
pub use balance::BalanceRecord;
pub use damage::DamageRecord;
pub use error::MetaError;
pub use filewrite::{CommitWrite, Overwrite};
pub use fs::{FsConfigStatus, FsRecord};
pub use quota::{QuotaEntry, QuotaKind, QuotaNodeReport, QuotaTarget, Reservation};
pub use records::{Checksum, EntryKind, Inode};
pub use recount::{CheckReport, QuotaUsage};
pub use recycle::{PurgeStep, RecycleBin, RecycleEntry, Removal, Restored, RECYCLE_ATTR};
pub use store::{Durability, Gate, MetaMemory, MetaOptions, MetaStore, NsStats, ROOT_INO};
pub use versions::{MAX_VERSIONS, VERSIONING_ATTR};
pub use write::{may, RenameFlags, SetAttr};

/// Extended attributes of one entry: (name, value) in name order.
pub type Xattrs = Vec<(Vec<u8>, Vec<u8>)>;

/// Version of the on-disk schema (column families, key layout and what
/// quota usage counts). 2: `user.*` attributes are charged to byte quotas
/// (`migrate.rs` upgrades a version-1 store when it opens).
pub const SCHEMA_VERSION: u32 = 2;
