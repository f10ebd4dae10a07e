//! The namespace calls of `Core` (stat, list, mkdir, remove, rename,
//! attributes, quotas): each checks the token's scopes, runs the store on
//! the blocking pool and leaves one metric sample and one access line.

use crate::fs::Filesystems;
use crate::CoreError;
use std::sync::Arc;
use std::time::Instant;
use tessera_meta::*;
use tessera_obs::{AccessLog, AccessRecord, Metrics, QuotaLabels};
use tessera_types::{Identity, NsPath};

/// A request answered but not yet logged: its access-log record and
/// metrics are made when this is dropped (its duration runs until then).
pub struct Unlogged<'a> {
    core: &'a Core,
    op: &'static str,
    who: &'a Identity,
    path: NsPath,
    start: Instant,
    status: &'static str,
    errno: i32,
}

impl Drop for Unlogged<'_> {
    fn drop(&mut self) {
        self.core.log(
            self.op,
            self.who,
            &self.path.display(),
            self.start,
            self.status,
            self.errno,
        );
    }
}

/// Idle read buffers kept for reuse across all open files.
pub const READ_POOL_BYTES: usize = 256 << 20;

#[derive(Clone)]
pub struct Core {
    pub(crate) meta: Arc<MetaStore>,
    pub(crate) fs: Arc<Filesystems>,
    /// Read buffers shared by every open file.
    pub(crate) read_pool: Arc<tessera_data::BufPool>,
    /// Threads parallel stripe reads run on, shared by every open file.
    pub(crate) read_threads: tessera_data::ReadThreads,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) access: Arc<AccessLog>,
    /// The operator's access rules in force (`rules.rs`).
    pub(crate) rules: Arc<crate::rules::RulesCell>,
    /// Wake the recycle bins' purge (`recycle.rs`); the balancer's state.
    pub(crate) recycle_kick: Arc<tokio::sync::Notify>,
    pub(crate) balancer: Arc<crate::balance::Balancer>,
    pub(crate) shaper: Arc<crate::shaping::Shaper>,
}

impl Core {
    /// The core over an opened namespace; opens every registered filesystem.
    pub fn new(
        meta: Arc<MetaStore>,
        metrics: Arc<Metrics>,
        access: Arc<AccessLog>,
    ) -> Result<Core, CoreError> {
        let fs = Arc::new(Filesystems::load(&meta)?);
        let rules = crate::rules::Rules::new(meta.access_list()?);
        metrics.rules.rules.set(rules.len() as u64);
        Ok(Core {
            meta,
            fs,
            read_pool: tessera_data::BufPool::new(READ_POOL_BYTES),
            read_threads: tessera_data::ReadThreads::default(),
            metrics,
            access,
            rules: Arc::new(crate::rules::RulesCell::new(rules)),
            recycle_kick: Arc::new(tokio::sync::Notify::new()),
            balancer: Arc::default(),
            shaper: Arc::default(),
        })
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The metrics, shared (for a task that outlives a borrow).
    pub fn metrics_handle(&self) -> Arc<Metrics> {
        Arc::clone(&self.metrics)
    }

    /// Run one operation off the async runtime, timed and logged.
    pub(crate) async fn run<T, F>(
        &self,
        op: &'static str,
        who: &Identity,
        path: String,
        f: F,
    ) -> Result<T, CoreError>
    where
        T: Send + 'static,
        F: FnOnce(&MetaStore) -> Result<T, MetaError> + Send + 'static,
    {
        let start = Instant::now();
        let meta = Arc::clone(&self.meta);
        let res = crate::blocking(move || f(&meta))
            .await
            .and_then(|r| r.map_err(CoreError::from));
        self.finish(op, who, &path, start, &res);
        res
    }

    /// A short read: `in_memory` right here (point reads from memory take
    /// microseconds, less than a hop to the blocking pool), or, when it
    /// has no answer without storage (`None`), `from_storage` on the
    /// blocking pool. Logged when the returned [`Unlogged`] is dropped.
    async fn read<'a, T, F>(
        &'a self,
        op: &'static str,
        who: &'a Identity,
        path: NsPath,
        in_memory: impl FnOnce(&MetaStore, &NsPath) -> Result<Option<T>, MetaError>,
        from_storage: F,
    ) -> (Result<T, CoreError>, Unlogged<'a>)
    where
        T: Send + 'static,
        F: FnOnce(&MetaStore, &NsPath) -> Result<T, MetaError> + Send + 'static,
    {
        let start = Instant::now();
        let res = match in_memory(&self.meta, &path) {
            Ok(Some(v)) => Ok(v),
            Err(e) => Err(CoreError::from(e)),
            Ok(None) => {
                let (meta, p) = (Arc::clone(&self.meta), path.clone());
                crate::blocking(move || from_storage(&meta, &p))
                    .await
                    .and_then(|r| r.map_err(CoreError::from))
            }
        };
        let (status, errno) = crate::error::outcome(&res);
        let done = Unlogged {
            core: self,
            op,
            who,
            path,
            start,
            status,
            errno,
        };
        (res, done)
    }

    pub(crate) fn finish<T>(
        &self,
        op: &'static str,
        who: &Identity,
        path: &str,
        start: Instant,
        res: &Result<T, CoreError>,
    ) {
        let (status, errno) = crate::error::outcome(res);
        self.log(op, who, path, start, status, errno);
    }

    fn log(
        &self,
        op: &'static str,
        who: &Identity,
        path: &str,
        start: Instant,
        status: &'static str,
        errno: i32,
    ) {
        let secs = start.elapsed().as_secs_f64();
        self.metrics.observe(who.protocol, op, status, secs);
        self.access.record(&AccessRecord {
            protocol: who.protocol,
            op,
            path,
            ruid: who.uid,
            rgid: who.gid,
            name: &who.name,
            dn: who.x509.as_ref().map_or("", |x| x.dn.as_str()),
            fqan: who
                .x509
                .as_ref()
                .and_then(|x| x.fqans.first())
                .map_or("", String::as_str),
            status,
            errno,
            duration_s: secs,
            bytes: 0,
        });
    }

    pub async fn stat(&self, who: &Identity, path: NsPath) -> Result<Inode, CoreError> {
        self.stat_log_later(who, path).await.0
    }

    /// [`Core::stat`], its access-log record and metrics made when the
    /// returned [`Unlogged`] is dropped: a front end that drops it after
    /// sending its reply does not make the client wait for them.
    pub async fn stat_log_later<'a>(
        &'a self,
        who: &'a Identity,
        path: NsPath,
    ) -> (Result<Inode, CoreError>, Unlogged<'a>) {
        self.read(
            "stat",
            who,
            path,
            |m, path| {
                crate::scopes::look(who, path)?;
                m.stat_nowait(who, path)
            },
            {
                let w = who.clone();
                move |m, path| m.stat(&w, path)
            },
        )
        .await
    }

    pub async fn list(
        &self,
        who: &Identity,
        path: NsPath,
        after: Option<Vec<u8>>,
        limit: usize,
    ) -> Result<Vec<Inode>, CoreError> {
        let w = who.clone();
        self.run("list", who, path.display(), move |m| {
            crate::scopes::read(&w, &path)?;
            m.list(&w, &path, after.as_deref(), limit)
        })
        .await
    }

    pub async fn mkdir(
        &self,
        who: &Identity,
        path: NsPath,
        mode: u32,
        parents: bool,
    ) -> Result<Inode, CoreError> {
        let w = who.clone();
        self.run("mkdir", who, path.display(), move |m| {
            crate::scopes::mkdir(&w, &path)?;
            m.mkdir(&path, &w, mode, parents)
        })
        .await
    }

    pub async fn touch(&self, who: &Identity, path: NsPath, mode: u32) -> Result<Inode, CoreError> {
        let w = who.clone();
        self.run("touch", who, path.display(), move |m| {
            crate::scopes::create(&w, &path)?;
            m.create(&path, &w, mode)
        })
        .await
    }

    pub async fn rename(
        &self,
        who: &Identity,
        src: NsPath,
        dst: NsPath,
        flags: RenameFlags,
    ) -> Result<Inode, CoreError> {
        let w = who.clone();
        let fs = Arc::clone(&self.fs);
        let desc = format!("{src} -> {dst}");
        self.run("mv", who, desc, move |m| {
            // Renaming within create scopes is allowed; replacing an
            // existing destination needs modify.
            crate::scopes::create(&w, &src)?;
            crate::scopes::create(&w, &dst)?;
            // Without a modify scope on the destination the store refuses
            // to replace it, atomically; that refusal is the token's.
            let scoped = !flags.no_replace && !crate::scopes::may_replace(&w, &dst);
            let flags = RenameFlags {
                no_replace: flags.no_replace || scoped,
            };
            let moved =
                m.rename_dropping(&src, &dst, &w, flags)
                    .map_err(|e| match e {
                        MetaError::AlreadyExists(_) if scoped => MetaError::PermissionDenied(
                            format!("the token of {} may not replace {}", w.name, dst.display()),
                        ),
                        e => e,
                    })?;
            // A replaced file that went for good (not kept as a version).
            for old in &moved.1 {
                crate::ledger::drop_stripes_of(&fs, old);
            }
            Ok(moved.0)
        })
        .await
    }

    pub async fn setattr(
        &self,
        who: &Identity,
        path: NsPath,
        a: SetAttr,
    ) -> Result<Inode, CoreError> {
        let w = who.clone();
        self.run("setattr", who, path.display(), move |m| {
            crate::scopes::modify(&w, &path)?;
            m.setattr(&path, &w, a)
        })
        .await
    }

    pub async fn xattr_set(
        &self,
        who: &Identity,
        path: NsPath,
        name: Vec<u8>,
        value: Vec<u8>,
    ) -> Result<(), CoreError> {
        if let Err(e) = self.check_attr(who, &path, &name, &value).await {
            let start = Instant::now();
            let r = Err(e);
            self.finish("attr_set", who, &path.display(), start, &r);
            return r;
        }
        let w = who.clone();
        self.run("attr_set", who, path.display(), move |m| {
            crate::scopes::modify(&w, &path)?;
            m.xattr_set(&path, &w, &name, &value)
        })
        .await
    }

    pub async fn xattr_get(
        &self,
        who: &Identity,
        path: NsPath,
        name: Vec<u8>,
    ) -> Result<Vec<u8>, CoreError> {
        let w = who.clone();
        self.run("attr_get", who, path.display(), move |m| {
            crate::scopes::look(&w, &path)?;
            m.xattr_get(&w, &path, &name)
        })
        .await
    }

    pub async fn xattr_list(
        &self,
        who: &Identity,
        path: NsPath,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, CoreError> {
        let w = who.clone();
        self.run("attr_ls", who, path.display(), move |m| {
            crate::scopes::look(&w, &path)?;
            m.xattr_list(&w, &path)
        })
        .await
    }

    /// The attributes of the entries `children` (name, inode) of a
    /// listing of `dir`, in one step: search permission on `dir` checked
    /// once, each entry's token scope, no path resolved per entry.
    pub async fn xattr_list_children(
        &self,
        who: &Identity,
        dir: NsPath,
        children: Vec<(NsPath, u64)>,
    ) -> Result<Vec<Result<Vec<(Vec<u8>, Vec<u8>)>, CoreError>>, CoreError> {
        let w = who.clone();
        self.run("attr_ls", who, dir.display(), move |m| {
            let inos: Vec<u64> = children.iter().map(|c| c.1).collect();
            let all = m.xattr_list_children(&w, &dir, &inos)?;
            Ok(children
                .iter()
                .zip(all)
                .map(|((p, _), a)| Ok(crate::scopes::look(&w, p).map(|()| a)?))
                .collect())
        })
        .await
    }

    pub async fn xattr_rm(
        &self,
        who: &Identity,
        path: NsPath,
        name: Vec<u8>,
    ) -> Result<(), CoreError> {
        let w = who.clone();
        self.run("attr_rm", who, path.display(), move |m| {
            crate::scopes::modify(&w, &path)?;
            m.xattr_rm(&path, &w, &name)
        })
        .await
    }

    /// Set and remove `user.*` attributes in one step, in order (WebDAV's
    /// PROPPATCH: all of them or none).
    pub async fn xattr_patch(
        &self,
        who: &Identity,
        path: NsPath,
        ops: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<(), CoreError> {
        let w = who.clone();
        self.run("attr_set", who, path.display(), move |m| {
            crate::scopes::modify(&w, &path)?;
            if let Some((n, _)) = ops.iter().find(|(n, _)| !n.starts_with(b"user.")) {
                return Err(MetaError::Invalid(format!(
                    "{} is not a user.* attribute",
                    String::from_utf8_lossy(n)
                )));
            }
            m.xattr_patch(&path, &w, &ops)
        })
        .await
    }

    pub async fn quota_set(
        &self,
        who: &Identity,
        path: NsPath,
        target: QuotaTarget,
        max_bytes: Option<u64>,
        max_inodes: Option<u64>,
    ) -> Result<(), CoreError> {
        self.run("quota_set", who, path.display(), move |m| {
            m.quota_set(&path, target, max_bytes, max_inodes)
        })
        .await
    }

    pub async fn quota_rm(
        &self,
        who: &Identity,
        path: NsPath,
        target: QuotaTarget,
        bytes: bool,
        inodes: bool,
    ) -> Result<(), CoreError> {
        self.run("quota_rm", who, path.display(), move |m| {
            m.quota_rm(&path, target, bytes, inodes)
        })
        .await
    }

    pub async fn quota_rmnode(&self, who: &Identity, path: NsPath) -> Result<(), CoreError> {
        self.run("quota_rmnode", who, path.display(), move |m| {
            m.quota_rmnode(&path)
        })
        .await
    }

    pub async fn quota_ls(
        &self,
        who: &Identity,
        path: NsPath,
    ) -> Result<Vec<QuotaNodeReport>, CoreError> {
        let mut nodes = self
            .run("quota_ls", who, path.display(), move |m| m.quota_ls(&path))
            .await?;
        // As `eos quota ls`: a user sees their own record, their groups'
        // and the projects', not other users'.
        if !who.is_root() {
            for n in &mut nodes {
                n.entries.retain(|e| match e.target.kind {
                    QuotaKind::User => e.target.id == who.uid,
                    QuotaKind::Group => e.target.id == who.gid || who.groups.contains(&e.target.id),
                    QuotaKind::Project => true,
                });
            }
            nodes.retain(|n| !n.entries.is_empty());
        }
        Ok(nodes)
    }

    pub async fn quota_show(
        &self,
        who: &Identity,
        path: NsPath,
        uid: u32,
        gid: u32,
    ) -> Result<QuotaNodeReport, CoreError> {
        let own_group = gid == who.gid || who.groups.contains(&gid);
        if !who.is_root() && (uid != who.uid || !own_group) {
            return Err(CoreError::Denied(
                "a user sees only their own quota (and their groups')".into(),
            ));
        }
        let w = who.clone();
        self.run("quota_show", who, path.display(), move |m| {
            m.quota_show(&w, &path, uid, gid)
        })
        .await
    }

    pub async fn check(&self, who: &Identity) -> Result<CheckReport, CoreError> {
        self.run("ns_check", who, "/".into(), |m| m.check()).await
    }

    pub async fn ns_stats(&self, who: &Identity) -> Result<NsStats, CoreError> {
        self.run("ns_stat", who, "/".into(), |m| m.ns_stats()).await
    }

    /// Refresh the namespace and quota gauges (called on each scrape).
    pub async fn refresh_gauges(&self) -> Result<(), CoreError> {
        let meta = Arc::clone(&self.meta);
        let (stats, nodes) = crate::blocking(move || {
            Ok::<_, MetaError>((meta.ns_stats()?, meta.quota_ls(&NsPath::root())?))
        })
        .await??;
        let m = &self.metrics;
        let mem = self.meta.memory();
        let kept = self.read_pool.kept_bytes() as u64;
        for (part, v) in [
            ("rocksdb_memtables", mem.memtables),
            ("rocksdb_block_cache", mem.block_cache),
            ("rocksdb_table_readers", mem.table_readers),
            ("meta_record_caches", mem.record_caches),
            ("read_pool_idle", self.read_pool.idle_bytes() as u64),
            ("read_blocks_kept", kept),
        ] {
            let l = tessera_obs::PartLabels { part: part.into() };
            m.memory.get_or_create(&l).set(v);
        }
        m.namespace_inodes.set(stats.inodes);
        m.namespace_bytes.set(stats.bytes);
        m.quota_nodes.set(stats.quota_nodes);
        m.open_writes.set(stats.open_reservations);
        m.quota_used_bytes.clear();
        m.quota_used_inodes.clear();
        m.quota_limit_bytes.clear();
        m.quota_limit_inodes.clear();
        m.quota_used_ratio.clear();
        for n in nodes {
            let l = QuotaLabels {
                node: n.path.display(),
            };
            for e in n
                .entries
                .iter()
                .filter(|e| e.target.kind == QuotaKind::Project)
            {
                m.quota_used_bytes.get_or_create(&l).set(e.used_bytes);
                m.quota_used_inodes.get_or_create(&l).set(e.used_inodes);
                if let Some(x) = e.max_bytes {
                    m.quota_limit_bytes.get_or_create(&l).set(x);
                }
                if let Some(x) = e.max_inodes {
                    m.quota_limit_inodes.get_or_create(&l).set(x);
                }
                let ratio =
                    |used: u64, max: Option<u64>| max.map(|x| used as f64 / x.max(1) as f64);
                let r = [
                    ratio(e.used_bytes, e.max_bytes),
                    ratio(e.used_inodes, e.max_inodes),
                ];
                if let Some(worst) = r.into_iter().flatten().reduce(f64::max) {
                    m.quota_used_ratio.get_or_create(&l).set(worst);
                }
            }
        }
        Ok(())
    }

    /// At a clean shutdown: the namespace's memtables and the access log.
    pub fn flush(&self) -> Result<(), CoreError> {
        self.access.flush();
        Ok(self.meta.flush()?)
    }
}
