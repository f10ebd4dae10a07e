//! File versions (`sys.versioning`): what owners see and do with the
//! versions the store keeps on overwrite (`tessera_meta`'s `versions.rs`
//! keeps them): list, restore one, purge the oldest.

use crate::{Core, CoreError};
use std::sync::Arc;
use tessera_meta::Inode;
use tessera_types::{Identity, NsPath};

impl Core {
    /// `path`'s versions, oldest first (`ctime_ns`: when each was
    /// replaced).
    pub async fn file_versions(
        &self,
        who: &Identity,
        path: NsPath,
    ) -> Result<Vec<Inode>, CoreError> {
        let w = who.clone();
        self.run("versions", who, path.display(), move |m| {
            crate::scopes::read(&w, &path)?;
            m.versions(&w, &path)
        })
        .await
    }

    /// Make version `id` of `path` current (the current file becomes a
    /// version).
    pub async fn restore_version(
        &self,
        who: &Identity,
        path: NsPath,
        id: u64,
    ) -> Result<Inode, CoreError> {
        let w = who.clone();
        self.run("restore-version", who, path.display(), move |m| {
            crate::scopes::modify(&w, &path)?;
            m.restore_version(&w, &path, id)
        })
        .await
    }

    /// Keep the newest `keep` versions of `path`; how many went.
    pub async fn purge_versions(
        &self,
        who: &Identity,
        path: NsPath,
        keep: u32,
    ) -> Result<usize, CoreError> {
        let w = who.clone();
        let fs = Arc::clone(&self.fs);
        self.run("purge-versions", who, path.display(), move |m| {
            crate::scopes::modify(&w, &path)?;
            let gone = m.purge_versions(&w, &path, keep)?;
            for v in &gone {
                crate::ledger::drop_stripes_of(&fs, v);
            }
            Ok(gone.len())
        })
        .await
    }
}
