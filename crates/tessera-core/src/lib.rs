//! The core service: the one entry point every protocol front-end calls.
//!
//! It turns a request (identity + normalised path + arguments) into calls
//! on the namespace store, off the async runtime (`spawn_blocking`), and
//! records one metric sample and one access-log line per operation.
//! Token scopes are checked here before the store is touched
//! (`scopes.rs`); mode bits are the store's own check.

mod accept;
mod attrs;
mod authz;
mod balance;
mod budget;
mod conns;
mod copy;
mod error;
mod fs;
mod fsck;
mod fsident;
mod health;
mod io;
mod ledger;
mod patched;
pub mod peer;
mod plan;
mod pool;
mod readsession;
mod recycle;
mod remote;
mod repair;
pub mod rules;
mod scopes;
mod service;
mod sessionlog;
mod shaping;
mod stall;
mod standby;
mod tree;
mod truncate;
mod update;
mod upload;
mod versions;
pub mod zerofill;

pub use accept::Acceptor;
pub use balance::{BalanceRound, BalanceStatus};
pub use budget::{Budget, Lease, Share, DEFAULT_BUDGET_BYTES, DEFAULT_BUDGET_WAIT, MIN_SHARE};
pub use conns::{default_limits, ConnGuard, ConnLimits, ConnMark, Refused};
pub use copy::{stored_checksums, TreeCopy};
pub use error::CoreError;
pub use fs::{FsChange, FsView, SpaceView};
pub use fsck::{DrainReport, FileIssue, FsckReport, Orphan};
pub use health::{Health, HealthState, PROBE_DEADLINE};
pub use io::{DataPath, Expect, WritePlan, WriteSession, DEFAULT_SPACE, FIRST_LEASE};
pub use ledger::Ledger;
pub use plan::Found;
pub use pool::{blocking, lock};
pub use readsession::ReadSession;
pub use recycle::{BinSettings, Purged};
pub use remote::RemotePolicy;
pub use repair::{RepairPlan, RepairReport, ORPHAN_GRACE};
pub use service::{Core, Unlogged};
pub use sessionlog::SessionLog;
pub use shaping::Pace;
pub use stall::{ReadOpen, Stall, STALL_ATTR};
pub use standby::{ActiveNode, Advert, MgmAddr};
pub use tessera_data::StripeState;
pub use tessera_data::{BufPool, Layout, Placement, ReadData, ReadEvent};
pub use tessera_meta::{may, FsConfigStatus, FsRecord, Overwrite};
pub use tessera_meta::{BalanceRecord, RecycleBin, RecycleEntry, Restored};
pub use tessera_meta::{
    CheckReport, Checksum, CommitWrite, EntryKind, Inode, MetaOptions, MetaStore, NsStats,
    QuotaEntry, QuotaKind, QuotaNodeReport, QuotaTarget, RenameFlags, Reservation, SetAttr,
};
pub use tree::{RemoveReport, TreeRemoval};
pub use truncate::REWRITE_MEMORY;
pub use update::{Update, MAX_PATCH_BYTES};
pub use upload::{Done, Holds, Ran, Step, Upload};
