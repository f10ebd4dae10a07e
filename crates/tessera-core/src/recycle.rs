//! The recycle bins (EOS `recycle`): deletes go into them in
//! `tree.rs`'s `Deleter`; here are what owners and admins do with what
//! they hold (list, restore, purge), how a bin is set on a directory, and
//! the background purge by age and volume, a bounded amount per round.

use crate::{Core, CoreError};
use std::sync::Arc;
use tessera_meta::{MetaError, RecycleBin, RecycleEntry, Restored, RECYCLE_ATTR};
use tessera_types::{ErrorKind, Identity, NsPath};

/// Inodes removed per purge transaction.
const PURGE_STEP: usize = 1024;

/// What a purge removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Purged {
    pub entries: u64,
    pub bytes: u64,
    pub inodes: u64,
    /// Entries left for the next round (the round's budget ran out).
    pub left: u64,
}

/// A bin's settings as an admin gives them.
#[derive(Debug, Clone)]
pub struct BinSettings {
    /// Where deletes go into it from (`sys.recycle` is set there).
    pub dir: NsPath,
    /// The bin's name (default: the directory's path).
    pub name: Option<String>,
    pub lifetime_secs: u64,
    pub max_bytes: u64,
    pub max_inodes: u64,
    /// `false`: deletes under `dir` no longer go to the bin (what it
    /// holds stays until purged).
    pub enabled: bool,
}

impl Core {
    /// What wakes the background purge (a bin passed its volume cap).
    pub fn recycle_kick(&self) -> Arc<tokio::sync::Notify> {
        Arc::clone(&self.recycle_kick)
    }

    /// Every bin with its account (admins).
    pub async fn recycle_bins(&self, who: &Identity) -> Result<Vec<RecycleBin>, CoreError> {
        let w = who.clone();
        self.run("recycle-bins", who, String::new(), move |m| {
            if !w.is_root() {
                return Err(MetaError::NotPermitted(
                    "only an admin lists recycle bins".into(),
                ));
            }
            m.recycle_bins()
        })
        .await
    }

    /// Set a bin on a directory (admins): its settings, and `sys.recycle`
    /// on the directory so that deletes under it go there.
    pub async fn recycle_config(
        &self,
        who: &Identity,
        s: BinSettings,
    ) -> Result<RecycleBin, CoreError> {
        let w = who.clone();
        self.run("recycle-config", who, s.dir.display(), move |m| {
            let name = s.name.clone().unwrap_or_else(|| s.dir.display());
            if !w.is_root() {
                return Err(MetaError::NotPermitted(
                    "only an admin configures recycle bins".into(),
                ));
            }
            let dir = m.stat(&w, &s.dir)?;
            if !dir.is_dir() {
                return Err(MetaError::NotADirectory(s.dir.display()));
            }
            if s.enabled {
                let caps = (s.max_bytes, s.max_inodes);
                let bin = m.recycle_set_bin(&w, &name, s.lifetime_secs, caps)?;
                m.xattr_set(&s.dir, &w, RECYCLE_ATTR, name.as_bytes())?;
                return Ok(bin);
            }
            // Off: the bin keeps its settings and what it holds.
            match m.xattr_rm(&s.dir, &w, RECYCLE_ATTR) {
                Err(MetaError::NotFound(_)) | Ok(()) => {}
                Err(e) => return Err(e),
            }
            let bin = m.recycle_bins()?.into_iter().find(|b| b.name == name);
            let bin = bin.unwrap_or(RecycleBin {
                name,
                ..RecycleBin::default()
            });
            Ok(bin)
        })
        .await
    }

    /// Entries after `after` (ids), up to `limit`: the caller's own, or
    /// with `all` everyone's (admins); of one bin when given.
    pub async fn recycle_list(
        &self,
        who: &Identity,
        bin: Option<String>,
        all: bool,
        after: u64,
        limit: usize,
    ) -> Result<Vec<RecycleEntry>, CoreError> {
        let w = who.clone();
        self.run(
            "recycle-ls",
            who,
            bin.clone().unwrap_or_default(),
            move |m| {
                let limit = limit.clamp(1, 10_000);
                let mut es = m.recycle_list(&w, bin.as_deref(), all, after, limit)?;
                // A token sees the entries of the paths it may read.
                es.retain(|e| {
                    NsPath::parse(e.path.as_bytes())
                        .is_ok_and(|p| crate::scopes::read(&w, &p).is_ok())
                });
                Ok(es)
            },
        )
        .await
    }

    /// Put entry `id` back (its owner or an admin), at its path or `to`;
    /// an existing entry there only with `force`.
    pub async fn recycle_restore(
        &self,
        who: &Identity,
        id: u64,
        to: Option<NsPath>,
        force: bool,
    ) -> Result<Restored, CoreError> {
        let w = who.clone();
        let fs = Arc::clone(&self.fs);
        let desc = to
            .as_ref()
            .map(|p| p.display())
            .unwrap_or_else(|| id.to_string());
        let r = self
            .run("recycle-restore", who, desc, move |m| {
                // A token reads what it restores (where it was) and
                // creates where it goes (replacing there: modifies).
                let was = NsPath::parse(m.recycle_entry(&w, id)?.path.as_bytes())?;
                crate::scopes::read(&w, &was)?;
                let target = to.clone().unwrap_or(was);
                crate::scopes::create(&w, &target)?;
                if force {
                    crate::scopes::modify(&w, &target)?;
                }
                let r = m.recycle_restore(&w, id, to.as_ref(), force)?;
                for old in &r.replaced {
                    crate::ledger::drop_stripes_of(&fs, old);
                }
                Ok(r)
            })
            .await?;
        self.metrics.recycle.restored.inc();
        Ok(r)
    }

    /// Purge entry `id` now (its owner or an admin), whole.
    pub async fn recycle_purge(&self, who: &Identity, id: u64) -> Result<Purged, CoreError> {
        let w = who.clone();
        let core = self.clone();
        self.run("recycle-purge", who, id.to_string(), move |m| {
            let path = NsPath::parse(m.recycle_entry(&w, id)?.path.as_bytes())?;
            crate::scopes::modify(&w, &path)?;
            let mut p = Purged::default();
            core.purge_entry(&w, id, usize::MAX, &mut p)?;
            Ok(p)
        })
        .await
    }

    /// Purge entry `id` in steps until it is gone or `budget` inodes went;
    /// the stripes of every purged file are removed after its step.
    fn purge_entry(
        &self,
        who: &Identity,
        id: u64,
        mut budget: usize,
        p: &mut Purged,
    ) -> Result<(), MetaError> {
        while budget > 0 {
            let s = self
                .meta
                .recycle_purge_step(who, id, budget.min(PURGE_STEP))?;
            for f in &s.files {
                crate::ledger::drop_stripes_of(&self.fs, f);
            }
            p.bytes += s.bytes;
            p.inodes += s.inodes;
            self.metrics.recycle.purged_bytes.inc_by(s.bytes);
            budget = budget.saturating_sub(s.inodes as usize);
            if s.done {
                p.entries += 1;
                self.metrics.recycle.purged_entries.inc();
                return Ok(());
            }
        }
        p.left += 1;
        Ok(())
    }

    /// One background round (blocking): entries past their bin's lifetime
    /// and, in bins past their volume cap, the oldest, purged until
    /// `budget` inodes went; then every bin's account into the metrics.
    pub fn recycle_purge_round(&self, budget: usize) -> Result<Purged, CoreError> {
        self.meta.may_write()?;
        let root = Identity::root("recycle");
        let mut p = Purged::default();
        let now = crate::fsck::now_ns() as i64;
        let mut left = budget;
        for id in self.meta.recycle_due(now, 10_000)? {
            if left == 0 {
                p.left += 1;
                continue;
            }
            let before = p.inodes;
            match self.purge_entry(&root, id, left, &mut p) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
            left = left.saturating_sub((p.inodes - before) as usize);
        }
        for b in self.meta.recycle_bins()? {
            self.metrics.recycle.set_bin(
                &b.name,
                b.used_bytes,
                b.used_inodes,
                b.entries,
                b.max_bytes,
            );
        }
        Ok(p)
    }
}
