//! Helpers the store's integration tests share.
#![allow(dead_code)] // each test binary uses a different subset

use tessera_meta::*;
use tessera_types::{Identity, NsPath};

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

/// The store's own full check finds nothing wrong.
pub fn assert_clean(m: &MetaStore) {
    let rep = m.check().expect("check runs");
    assert!(rep.is_clean(), "inconsistent: {:#?}", rep.problems);
}
