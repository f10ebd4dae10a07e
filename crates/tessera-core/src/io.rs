//! File data: write and read sessions over the data layer, committed to
//! the namespace only once every stripe is durable. Session methods block
//! (disk and CephFS I/O); async front-ends call them from `spawn_blocking`.

use crate::fs::Filesystems;
use crate::ledger::{drop_stripes, Ledger, LocalLedger};
use crate::{Core, CoreError, ReadSession, SessionLog};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use tessera_backend::Backend;
use tessera_data::{FileReader, FileWriter, Placement};
use tessera_meta::{Checksum, CommitWrite, Inode};
use tessera_obs::{AccessLog, Metrics};
use tessera_types::{Identity, NsPath};

/// How much quota a write reserves at a time beyond what it has written.
const RESERVE_STEP: u64 = 64 << 20;
/// Memory a write session leases first (a longer file: its whole ceiling).
pub const FIRST_LEASE: u64 = 64 << 10;
/// The space used when a directory names none.
pub const DEFAULT_SPACE: &str = "default";

/// What a write needs before its first byte: its reservation, the file id
/// its stripes are named after, the layout and the filesystems chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WritePlan {
    pub resv_id: u64,
    pub fid: u64,
    pub placement: Placement,
}

/// What a file's data must turn out to be: digests a sender announced
/// (a third-party copy's source). `None`: not checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Expect {
    pub adler32: Option<u32>,
    pub crc32c: Option<u32>,
}

/// A file being written. Dropping it without `close` aborts it.
pub struct WriteSession {
    pub(crate) ledger: Arc<dyn Ledger>,
    pub(crate) fs: Arc<Filesystems>,
    pub(crate) plan: WritePlan,
    reserved: u64,
    pub(crate) writer: Option<FileWriter>,
    path: NsPath,
    /// Where the close is logged (`close_write`).
    log: Option<SessionLog>,
    /// Memory budget its buffers hold (see [`WriteSession::memory_wanted`]).
    memory: crate::Lease,
    pub(crate) durable: bool, // stripes synced at their seal
}

impl WriteSession {
    pub fn path(&self) -> &NsPath {
        &self.path
    }

    /// Log this session's close (or abort) there.
    pub fn set_log(&mut self, log: SessionLog) {
        self.log = Some(log);
    }

    /// The file id the file will have.
    pub fn fid(&self) -> u64 {
        self.plan.fid
    }

    pub fn written(&self) -> u64 {
        self.writer.as_ref().map_or(0, |w| w.size())
    }

    /// Whether appending `len` bytes is only a copy into memory: no stripe
    /// I/O and no reservation to extend, so it never blocks (an async
    /// caller may do it in line).
    pub fn write_is_buffered(&self, len: usize) -> bool {
        self.writer
            .as_ref()
            .is_some_and(|w| w.buffers(len) && w.size() + len as u64 <= self.reserved)
    }

    /// How many more bytes of the process's memory budget the session
    /// must hold before `len` more bytes are appended (0: it holds enough).
    /// The group buffer grows with the file: a file of up to
    /// [`FIRST_LEASE`] bytes takes that much, a longer one the writer's
    /// whole ceiling (a group and its parity). Front-ends lease this from
    /// the budget before they append, and hand it over with
    /// [`WriteSession::hold_memory`]; it goes back when the session ends.
    pub fn memory_wanted(&self, len: u64) -> usize {
        let Some(w) = &self.writer else { return 0 };
        let ceiling = w.memory_ceiling() as u64;
        let after = w.pending() as u64 + len;
        let target = if after <= FIRST_LEASE {
            FIRST_LEASE.min(ceiling)
        } else {
            ceiling
        };
        target.saturating_sub(self.memory.bytes() as u64) as usize
    }

    /// Keep `lease` (bytes of the memory budget) until the session ends.
    pub fn hold_memory(&mut self, lease: crate::Lease) {
        self.memory.merge(lease);
    }

    /// Append bytes (quota is extended as the file grows).
    pub fn write(&mut self, data: &[u8]) -> Result<(), CoreError> {
        let w = self
            .writer
            .as_mut()
            .ok_or_else(|| CoreError::Invalid("write after close".into()))?;
        let need = w.size() + data.len() as u64;
        if need > self.reserved {
            // Reserve ahead in steps; near a limit, exactly what is needed.
            let exact = need - self.reserved;
            let id = self.plan.resv_id;
            let more = match self.ledger.extend(id, exact.max(RESERVE_STEP)) {
                Ok(()) => exact.max(RESERVE_STEP),
                Err(_) if exact < RESERVE_STEP => {
                    self.ledger.extend(id, exact)?;
                    exact
                }
                Err(e) => return Err(e),
            };
            self.reserved += more;
        }
        if let Err(e) = w.write(data) {
            return Err(self.noted(e));
        }
        Ok(())
    }

    /// A failed stripe write marks its filesystem degraded.
    fn noted(&self, e: tessera_data::DataError) -> CoreError {
        if let tessera_data::DataError::Backend { index, source } = &e {
            if let Some(id) = self.plan.placement.fsids.get(*index) {
                self.fs.note_failure(*id, source);
            }
        }
        e.into()
    }

    /// Seal every stripe, then make the file visible in one namespace step.
    pub fn close(self) -> Result<Inode, CoreError> {
        self.close_expecting(Expect::default())
    }

    /// As [`WriteSession::close`], but a digest in `want` that the data
    /// does not match aborts the write instead (nothing visible; a file
    /// being replaced stays as it was).
    pub fn close_expecting(mut self, want: Expect) -> Result<Inode, CoreError> {
        let log = self.log.take();
        let bytes = self.written();
        let r = self.close_inner(want);
        if let Some(l) = log {
            l.write_closed(bytes, &r);
        }
        r
    }

    pub(crate) fn close_inner(&mut self, want: Expect) -> Result<Inode, CoreError> {
        let w = self
            .writer
            .take()
            .ok_or_else(|| CoreError::Invalid("closed twice".into()))?;
        let done = match w.finish() {
            Ok(d) => d,
            Err(e) => {
                self.ledger.abort(self.plan.resv_id);
                return Err(self.noted(e));
            }
        };
        let wrong = [
            ("adler32", want.adler32, done.adler32),
            ("crc32c", want.crc32c, done.crc32c),
        ]
        .into_iter()
        .find(|(_, w, got)| w.is_some_and(|w| w != *got));
        if let Some((name, w, got)) = wrong {
            drop_stripes(&self.fs, &done.placement, self.plan.fid);
            self.ledger.abort(self.plan.resv_id);
            return Err(CoreError::Mismatch(format!(
                "{name} of the data is {got:08x}, the sender announced {:08x}",
                w.unwrap_or_default()
            )));
        }
        let commit = CommitWrite {
            size: done.size,
            checksum: Some(Checksum {
                kind: "adler32".into(),
                value: done.adler32.to_be_bytes().to_vec(),
            }),
            crc32c: Some(done.crc32c),
            layout: done.placement.encode(),
            mtime_ns: None,
        };
        match self.ledger.commit(self.plan.resv_id, commit) {
            Ok(inode) => Ok(inode),
            Err(e) => {
                // Never visible: remove what was sealed.
                drop_stripes(&self.fs, &done.placement, self.plan.fid);
                Err(e)
            }
        }
    }

    /// Give up: nothing becomes visible, the reservation is released.
    pub fn abort(mut self) {
        self.abort_inner();
    }

    fn abort_inner(&mut self) {
        if let Some(w) = self.writer.take() {
            let bytes = w.size();
            w.abort();
            self.ledger.abort(self.plan.resv_id);
            if let Some(l) = self.log.take() {
                l.write_aborted(bytes);
            }
        }
    }
}

impl Drop for WriteSession {
    fn drop(&mut self) {
        self.abort_inner();
    }
}

/// The data path without the namespace: opened filesystems and read
/// buffers. A data gateway has one built from the metadata service's
/// filesystem list; the core hands out one over its own.
#[derive(Clone)]
pub struct DataPath {
    /// Stripes sealed with fsync (false with `buffered` durability).
    durable: bool,
    pub(crate) fs: Arc<Filesystems>,
    read_pool: Arc<tessera_data::BufPool>,
    /// Threads parallel stripe reads run on, shared by every open file.
    read_threads: tessera_data::ReadThreads,
    /// Where reads report damaged stripes (`None`: only logged).
    damage: Option<Arc<dyn Ledger>>,
    /// The metrics and access log that sessions opened here are logged to
    /// (the core's, or a gateway's own).
    pub(crate) obs: Option<(Arc<Metrics>, Arc<AccessLog>)>,
}

impl DataPath {
    /// Over the filesystems in `records` (a gateway).
    pub fn from_records(records: Vec<tessera_meta::FsRecord>) -> DataPath {
        DataPath {
            durable: true,
            fs: Arc::new(Filesystems::from_records(records)),
            read_pool: tessera_data::BufPool::new(crate::service::READ_POOL_BYTES),
            read_threads: tessera_data::ReadThreads::default(),
            damage: None,
            obs: None,
        }
    }

    /// Log the closes of sessions given a [`DataPath::session_log`] to
    /// `access` and count them in `metrics` (a gateway).
    pub fn observed_by(mut self, metrics: Arc<Metrics>, access: Arc<AccessLog>) -> DataPath {
        self.obs = Some((metrics, access));
        self
    }

    /// The close logger of a session `who` opened on `path` at `opened`,
    /// when this data path has a log.
    pub fn session_log(
        &self,
        who: &Identity,
        path: &NsPath,
        opened: std::time::Instant,
    ) -> Option<SessionLog> {
        let (m, a) = self.obs.as_ref()?;
        Some(SessionLog::new(
            Arc::clone(m),
            Arc::clone(a),
            who,
            path,
            opened,
        ))
    }

    /// Report damaged stripes that reads run into to `ledger` (a
    /// gateway's metadata service).
    pub fn reporting_to(mut self, ledger: Arc<dyn Ledger>) -> DataPath {
        self.damage = Some(ledger);
        self
    }

    /// Seal stripes without fsync (a gateway whose metadata service runs
    /// with `buffered` durability).
    pub fn buffered(mut self) -> DataPath {
        self.durable = false;
        self
    }

    /// How many filesystems this data path knows (a gateway learns them
    /// from its metadata service).
    pub fn filesystems(&self) -> usize {
        self.fs.count()
    }

    /// Take a new filesystem list (added, changed and removed ones).
    pub fn update(&self, records: Vec<tessera_meta::FsRecord>) {
        self.fs.replace_records(records);
    }

    /// Open the stripes of a planned write (blocking).
    pub fn start_write(
        &self,
        plan: WritePlan,
        ledger: Arc<dyn Ledger>,
        path: NsPath,
        size_hint: u64,
    ) -> Result<WriteSession, CoreError> {
        let mut plan = plan;
        let writer = match self.create_stripes(&mut plan) {
            Ok(w) if self.durable => w,
            Ok(w) => w.buffered(),
            Err(e) => {
                ledger.abort(plan.resv_id);
                return Err(e);
            }
        };
        Ok(WriteSession {
            ledger,
            fs: Arc::clone(&self.fs),
            reserved: size_hint,
            plan,
            writer: Some(writer),
            path,
            log: None,
            memory: crate::Lease::default(),
            durable: self.durable,
        })
    }

    /// Create the stripes of `plan`. A filesystem that fails with an I/O
    /// error (read-only, full, broken) is marked degraded and its stripe
    /// placed on another one where the layout still fits (`plan` then
    /// says where).
    fn create_stripes(&self, plan: &mut WritePlan) -> Result<FileWriter, CoreError> {
        let mut tries = plan.placement.fsids.len();
        loop {
            let targets: Vec<(u32, Arc<dyn Backend>)> = plan
                .placement
                .fsids
                .iter()
                .filter_map(|id| self.fs.backend(*id).map(|b| (*id, b)))
                .collect();
            let err =
                match FileWriter::create(plan.placement.layout, plan.fid, plan.resv_id, &targets) {
                    Ok(w) => return Ok(w),
                    Err(e) => e,
                };
            let tessera_data::DataError::Backend { index, source } = &err else {
                return Err(err.into());
            };
            let failed = plan.placement.fsids[*index];
            self.fs.note_failure(failed, source);
            if !crate::health::is_storage_failure(source) || tries == 0 {
                return Err(err.into());
            }
            tries -= 1;
            let Some(other) = self.fs.replacement(&plan.placement, *index, plan.fid) else {
                return Err(err.into());
            };
            tracing::info!(
                fid = plan.fid,
                stripe = index,
                from = failed,
                to = other,
                "stripe placed again: {source}"
            );
            plan.placement.fsids[*index] = other;
        }
    }

    /// Open a file whose inode the caller has (and has checked access to).
    /// Reads nothing (its stripes are opened at the first read), so an
    /// async caller may do it on its own thread.
    pub fn open_inode(&self, inode: Inode) -> Result<ReadSession, CoreError> {
        let (reader, fsids) = if inode.layout.is_empty() {
            (None, Vec::new()) // created empty (touch): no stripes
        } else {
            let p = Placement::decode(&inode.layout)?;
            let fsids = p.fsids.clone();
            let backends = p
                .fsids
                .iter()
                .map(|id| self.fs.backend_for_read(*id))
                .collect();
            let r = FileReader::new(p, inode.ino, inode.size, backends)?
                .with_pool(Arc::clone(&self.read_pool))
                .with_threads(self.read_threads.clone());
            (Some(r), fsids)
        };
        Ok(ReadSession {
            inode,
            reader,
            damage: self.damage.clone(),
            fsids,
            log: None,
            read_bytes: AtomicU64::new(0),
            reads_in_line: AtomicU64::new(0),
            failed: std::sync::OnceLock::new(),
            pace: std::sync::OnceLock::new(),
        })
    }
}

impl Core {
    /// The local namespace as the ledger of writes.
    pub fn ledger(&self) -> Arc<dyn Ledger> {
        Arc::new(LocalLedger {
            meta: Arc::clone(&self.meta),
            fs: Arc::clone(&self.fs),
        })
    }

    /// The data path over this server's filesystems.
    pub fn data(&self) -> DataPath {
        DataPath {
            durable: self.meta.options().durability == tessera_meta::Durability::Sync,
            fs: Arc::clone(&self.fs),
            read_pool: Arc::clone(&self.read_pool),
            read_threads: self.read_threads.clone(),
            damage: Some(self.ledger()),
            obs: Some((Arc::clone(&self.metrics), Arc::clone(&self.access))),
        }
    }

    /// Open a file for reading (blocking).
    pub fn open_read(&self, who: &Identity, path: &NsPath) -> Result<ReadSession, CoreError> {
        let start = std::time::Instant::now();
        let r = self
            .readable_file(who, path)
            .and_then(|inode| self.data().open_inode(inode));
        self.log_open_read(who, path, start, r)
    }

    /// Log an open for reading begun at `start`; the session logs its close.
    pub(crate) fn log_open_read(
        &self,
        who: &Identity,
        path: &NsPath,
        start: std::time::Instant,
        mut r: Result<ReadSession, CoreError>,
    ) -> Result<ReadSession, CoreError> {
        self.finish("open_read", who, &path.display(), start, &r);
        if let Ok(rs) = &mut r {
            let (m, a) = (Arc::clone(&self.metrics), Arc::clone(&self.access));
            rs.set_log(SessionLog::new(m, a, who, path, start));
        }
        r
    }

    /// The inode of a file `who` may read (a point read, no I/O on data):
    /// EISDIR for a directory, EACCES without read permission.
    pub fn readable_file(&self, who: &Identity, path: &NsPath) -> Result<Inode, CoreError> {
        self.readable_with(
            who,
            path,
            |p| self.meta.stat(who, p).map(Some),
            |i| self.meta.may_read(who, i).map(Some),
        )?
        .ok_or_else(|| CoreError::Task("a namespace read from storage gave no answer".into()))
    }

    /// `readable_file` for an async caller: from memory right here, else
    /// on the blocking pool (never waits for storage on its thread).
    pub async fn readable(&self, who: &Identity, path: &NsPath) -> Result<Inode, CoreError> {
        if let Some(i) = self.readable_file_nowait(who, path)? {
            return Ok(i);
        }
        let (core, who, path) = (self.clone(), who.clone(), path.clone());
        crate::blocking(move || core.readable_file(&who, &path)).await?
    }

    /// `readable_file` from memory only (see `MetaStore::stat_nowait`):
    /// `None` when the answer needs a read from storage.
    pub fn readable_file_nowait(
        &self,
        who: &Identity,
        path: &NsPath,
    ) -> Result<Option<Inode>, CoreError> {
        self.readable_with(
            who,
            path,
            |p| self.meta.stat_nowait(who, p),
            |i| self.meta.may_read_nowait(who, i),
        )
    }

    /// `readable_file` with the namespace reads given (`None`: no answer
    /// without storage).
    fn readable_with(
        &self,
        who: &Identity,
        path: &NsPath,
        stat: impl FnOnce(&NsPath) -> Result<Option<Inode>, tessera_meta::MetaError>,
        may_read: impl FnOnce(&Inode) -> Result<Option<bool>, tessera_meta::MetaError>,
    ) -> Result<Option<Inode>, CoreError> {
        // A token that may look at the path learns that nothing is there
        // (ENOENT, as a stat tells it) before the read scope is asked
        // for: gfal2 checks a copy's destination this way with a token
        // that may only create there.
        crate::scopes::look(who, path)?;
        let Some(inode) = stat(path)? else {
            return Ok(None);
        };
        crate::scopes::read(who, path)?;
        // As open(2) then read(2): read permission first, then EISDIR.
        let Some(may) = may_read(&inode)? else {
            return Ok(None);
        };
        if may && inode.is_dir() {
            return Err(tessera_meta::MetaError::IsADirectory(path.display()).into());
        }
        if !may {
            return Err(tessera_meta::MetaError::PermissionDenied(format!(
                "{} may not read {} (uid {} gid {}, mode {:o}, or its directory's ACL)",
                who.name,
                path.display(),
                inode.uid,
                inode.gid,
                inode.mode
            ))
            .into());
        }
        Ok(Some(inode))
    }
}
