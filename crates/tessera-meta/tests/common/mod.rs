//! Helpers the store's integration tests share.
#![allow(dead_code)] // each test binary uses a different subset

use tessera_meta::*;
use tessera_types::{ErrorKind, Identity, NsPath};

pub fn p(s: &str) -> NsPath {
    NsPath::parse(s).expect("valid path")
}

/// A store in `dir` (buffered, the root 0777).
pub fn open(dir: &std::path::Path) -> MetaStore {
    MetaStore::open(
        dir,
        MetaOptions {
            durability: Durability::Buffered,
            root_mode: 0o777,
            ..Default::default()
        },
    )
    .expect("open")
}

pub fn root() -> Identity {
    Identity::root("test")
}

/// A fresh store (see [`open`]) in a temporary directory to keep, and
/// the root identity.
pub fn fresh() -> (tempfile::TempDir, MetaStore, Identity) {
    let d = tempfile::tempdir().expect("tmp");
    let m = open(d.path());
    (d, m, root())
}

/// The users of the permission tests.
pub fn alice() -> Identity {
    Identity::user(1000, 100, "alice", "test")
}

pub fn bob() -> Identity {
    Identity::user(1001, 101, "bob", "test")
}

/// A file of `size` (its bytes are the data layer's business) at `path`.
pub fn write(m: &MetaStore, path: &str, who: &Identity, size: u64) -> Result<Inode, MetaError> {
    let r = m.begin_write(&p(path), who, 0o644, true, size)?;
    Ok(m.commit_write(
        r.id,
        CommitWrite {
            size,
            ..Default::default()
        },
    )?
    .0)
}

/// The call failed (`why` is what the failure is), with this kind of error.
#[track_caller]
pub fn refused<T: std::fmt::Debug>(r: Result<T, MetaError>, why: &str, want: ErrorKind) {
    assert_eq!(r.expect_err(why).kind(), want);
}

/// The record of `target` in a quota report (`what` names it).
#[track_caller]
pub fn entry<'a>(show: &'a QuotaNodeReport, target: QuotaTarget, what: &str) -> &'a QuotaEntry {
    show.entries
        .iter()
        .find(|e| e.target == target)
        .expect(what)
}

/// The store's own full check finds nothing wrong.
pub fn assert_clean(m: &MetaStore) {
    let rep = m.check().expect("check runs");
    assert!(rep.is_clean(), "inconsistent: {:#?}", rep.problems);
}
