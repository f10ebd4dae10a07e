//! Opening the database, the writer lock and durable commits.

use crate::dircache::DirCache;
use crate::error::MetaError;
use crate::keys::*;
use crate::quota::{QuotaTarget, Reservation};
use crate::read::Reach;
use crate::readcache::ReadCache;
use crate::records::*;
use crate::txn::{Txn, WriterCache};
use rocksdb::{ColumnFamilyDescriptor, Options, WriteOptions, DB};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

/// The root directory's inode number.
pub const ROOT_INO: u64 = 1;

/// When a mutation is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// After the write-ahead log is fsynced (group commit: concurrent writers
    /// share one fsync). Survives a machine crash.
    Sync,
    /// After the write-ahead log is written to the OS. Survives a process
    /// crash (`kill -9`), not a power loss.
    Buffered,
}

/// Whether this node may change the namespace now: asked before every
/// change is applied and again before it is acknowledged (metadata HA:
/// the node holds a lease it can prove). `Err` says why not.
pub type Gate = std::sync::Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

#[derive(Clone)]
pub struct MetaOptions {
    pub durability: Durability,
    /// Owner and mode of `/`, used only when a new namespace is created.
    pub root_uid: u32,
    pub root_gid: u32,
    pub root_mode: u32,
    /// RocksDB block cache in bytes.
    pub block_cache_bytes: usize,
    /// Largest subtree a directory rename across quota nodes (or a new quota
    /// node) may re-account; larger ones are refused with EXDEV.
    pub max_reaccount_entries: u64,
    /// None: every change is allowed (one node alone).
    pub gate: Option<Gate>,
    /// Commits only append to RocksDB's log buffer; the synced flush
    /// that acknowledges them writes and syncs it (`Durability::Sync`).
    /// On a network file system whose appends wait for a sync in
    /// progress (ceph-fuse), this lets commits go on during a sync, so
    /// one sync covers them all (metadata HA on CephFS: docs/ha.md).
    pub buffer_wal: bool,
}

impl std::fmt::Debug for MetaOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetaOptions")
            .field("durability", &self.durability)
            .field("block_cache_bytes", &self.block_cache_bytes)
            .field("max_reaccount_entries", &self.max_reaccount_entries)
            .field("gate", &self.gate.is_some())
            .field("buffer_wal", &self.buffer_wal)
            .finish_non_exhaustive()
    }
}

impl Default for MetaOptions {
    fn default() -> Self {
        MetaOptions {
            durability: Durability::Sync,
            root_uid: 0,
            root_gid: 0,
            root_mode: 0o755,
            block_cache_bytes: 2 << 30,
            max_reaccount_entries: 5_000_000,
            gate: None,
            buffer_wal: false,
        }
    }
}

/// State only writers touch; guarded by the writer lock.
pub(crate) struct WriterState {
    pub next_ino: u64,
    /// Persisted bound: no inode number at or above it was handed out.
    pub ino_ceiling: u64,
    pub next_resv: u64,
    pub reservations: HashMap<u64, Reservation>,
    /// Sum of open reservations per quota record: (bytes, inodes).
    pub reserved: HashMap<(u64, QuotaTarget), (u64, u64)>,
}

/// Counts for metrics, from the per-node project records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NsStats {
    /// Files and directories, the root excluded.
    pub inodes: u64,
    pub bytes: u64,
    pub quota_nodes: u64,
    pub open_reservations: u64,
}

pub struct MetaStore {
    pub(crate) db: DB,
    pub(crate) writer: Mutex<WriterState>,
    pub(crate) opts: MetaOptions,
    cache: Mutex<WriterCache>,
    pub(crate) dircache: DirCache,
    pub(crate) readcache: ReadCache,
    synced_seq: Mutex<u64>,
    /// The inode ceiling as last written to `META_NEXT_INO`.
    persisted_ceiling: AtomicU64,
    /// RocksDB's block cache (for its usage).
    block_cache: rocksdb::Cache,
}

/// What the namespace store holds in memory, bytes (see
/// [`MetaStore::memory`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MetaMemory {
    /// Memtables of every column family (each flushed at 16 MiB).
    pub memtables: u64,
    /// The block cache (at most `block_cache_bytes`).
    pub block_cache: u64,
    /// Index and filter blocks of the open table files.
    pub table_readers: u64,
    /// The reader-side caches of records and directory lookups
    /// (`readcache.rs`, `dircache.rs`; each starts over at 262,144 entries).
    pub record_caches: u64,
}

pub(crate) fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

thread_local! {
    /// RocksDB's perf counters are off on this thread.
    static PERF_OFF: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// RocksDB counts every key comparison and memtable step in a per-thread
/// perf context unless told not to (through the shared library's TLS
/// resolver each time: ~8 k instructions per file written). Nothing reads
/// those counters: each thread that works on the store turns them off,
/// once.
fn perf_counters_off() {
    PERF_OFF.with(|off| {
        if !off.get() {
            rocksdb::perf::set_perf_stats(rocksdb::perf::PerfStatsLevel::Disable);
            off.set(true);
        }
    })
}

impl MetaStore {
    /// Open (or create) the namespace under `dir`. Cost does not depend on
    /// the namespace size: nothing is loaded into memory.
    // long-fn: column families, format checks and the writer state, in the order RocksDB needs them.
    pub fn open(dir: &Path, opts: MetaOptions) -> Result<MetaStore, MetaError> {
        let mut db_opts = Options::default();
        db_opts.create_if_missing(true);
        db_opts.create_missing_column_families(true);
        db_opts.set_max_background_jobs(2);
        // Open table files lazily: boot must not touch every SST.
        db_opts.set_max_open_files(10_000);
        db_opts.set_bytes_per_sync(1 << 20);
        // Bound what a restart after a crash must replay: boot time then
        // does not grow with the namespace size.
        db_opts.set_max_total_wal_size(16 << 20);
        if opts.buffer_wal && opts.durability == Durability::Sync {
            db_opts.set_manual_wal_flush(true);
        }
        // RocksDB's own LOG: Debian's library defaults to debug level,
        // which writes a line for every synced commit ("FlushWAL
        // sync=true": a line per file written, growing without end and
        // costing ~7 k instructions a commit). Info and up, in at most
        // five 16 MiB files.
        db_opts.set_log_level(rocksdb::LogLevel::Info);
        db_opts.set_max_log_file_size(16 << 20);
        db_opts.set_keep_log_file_num(5);
        let mut block = rocksdb::BlockBasedOptions::default();
        let cache = rocksdb::Cache::new_lru_cache(opts.block_cache_bytes)?;
        block.set_block_cache(&cache);
        block.set_bloom_filter(10.0, false);
        // Index and filter blocks stay in the table readers (tables stay
        // open): kept in the LRU they were evicted by data blocks at 10 M
        // entries and re-read from disk on every miss.
        block.set_cache_index_and_filter_blocks(false);
        block.set_format_version(5);
        block.set_data_block_index_type(rocksdb::DataBlockIndexType::BinaryAndHash);
        let mut cf_opts = Options::default();
        cf_opts.set_write_buffer_size(16 << 20);
        cf_opts.set_memtable_whole_key_filtering(true);
        cf_opts.set_memtable_prefix_bloom_ratio(0.05);
        cf_opts.set_block_based_table_factory(&block);
        cf_opts.set_compression_type(rocksdb::DBCompressionType::Lz4);
        let cfs = ALL_CFS
            .iter()
            .map(|n| ColumnFamilyDescriptor::new(*n, cf_opts.clone()))
            .collect::<Vec<_>>();
        let db = DB::open_cf_descriptors(&db_opts, dir, cfs)?;

        let stored_schema = db.get(META_SCHEMA)?;
        let mut schema = crate::SCHEMA_VERSION as u64;
        let next_ino = match stored_schema {
            None => {
                let mut batch = rocksdb::WriteBatch::default();
                let now = now_ns();
                let root = Inode {
                    quota_node: true,
                    ..Inode::new_dir(
                        ROOT_INO,
                        ROOT_INO,
                        Vec::new(),
                        (opts.root_uid, opts.root_gid),
                        opts.root_mode,
                        now,
                    )
                };
                let cf_inode = db.cf_handle(CF_INODE).expect("opened with this cf");
                batch.put_cf(cf_inode, ino_key(ROOT_INO), encode_inode(&root));
                batch.put(META_NEXT_INO, encode_u64(ROOT_INO + 1));
                batch.put(META_SCHEMA, encode_u64(crate::SCHEMA_VERSION as u64));
                let mut wo = WriteOptions::default();
                wo.set_sync(true);
                db.write_opt(batch, &wo)?;
                ROOT_INO + 1
            }
            Some(raw) => {
                let v = decode_u64("schema_version", &raw)?;
                schema = v;
                if v == 0 || v > crate::SCHEMA_VERSION as u64 {
                    return Err(MetaError::Version {
                        what: "schema".into(),
                        version: v as u8,
                        max: crate::SCHEMA_VERSION as u8,
                    });
                }
                let raw = db
                    .get(META_NEXT_INO)?
                    .ok_or_else(|| crate::error::corrupt("next_ino", "missing"))?;
                decode_u64("next_ino", &raw)?
            }
        };
        let store = MetaStore {
            db,
            writer: Mutex::new(WriterState {
                next_ino,
                ino_ceiling: next_ino,
                next_resv: 1,
                reservations: HashMap::new(),
                reserved: HashMap::new(),
            }),
            opts,
            cache: Mutex::new(WriterCache::default()),
            block_cache: cache,
            dircache: DirCache::new(),
            readcache: ReadCache::new(),
            synced_seq: Mutex::new(0),
            persisted_ceiling: AtomicU64::new(next_ino),
        };
        store.upgrade(schema)?;
        Ok(store)
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, WriterState> {
        // A panic while holding the lock cannot leave a half-applied batch
        // (batches are atomic), so a poisoned lock is safe to take over.
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn txn(&self) -> Txn<'_> {
        perf_counters_off();
        Txn::new(&self.db, &self.cache, &self.readcache)
    }

    /// Point reads of committed state, through the reader cache.
    pub(crate) fn reader(&self) -> crate::read::DbGet<'_> {
        perf_counters_off();
        crate::read::DbGet(&self.db, Some(&self.readcache), Reach::Storage)
    }

    /// The same, from memory only (see [`crate::read::nowait`]).
    pub(crate) fn reader_nowait(&self) -> crate::read::DbGet<'_> {
        perf_counters_off();
        crate::read::DbGet(&self.db, Some(&self.readcache), Reach::Memory)
    }

    /// Point reads straight from RocksDB: for walks over a whole tree
    /// (through the reader cache they would only push out what is hot), and
    /// for tests that compare with the cached reads.
    pub(crate) fn uncached(&self) -> crate::read::DbGet<'_> {
        perf_counters_off();
        crate::read::DbGet(&self.db, None, Reach::Storage)
    }

    /// Apply a transaction atomically, then wait for durability (outside the
    /// writer lock when the caller drops it first; see `finish`).
    pub(crate) fn commit(&self, txn: Txn<'_>, st: &WriterState) -> Result<u64, MetaError> {
        self.may_change()?;
        let dirs_changed = txn.dirs_changed();
        // The inode ceiling only when it moved (commits hold the writer
        // lock, so they see and set it in order).
        let ceiling = st.ino_ceiling;
        let moved = ceiling != self.persisted_ceiling.load(Ordering::Relaxed);
        let res = txn.write(|batch| {
            if moved {
                batch.put(META_NEXT_INO, encode_u64(ceiling))
            }
        });
        if moved && res.is_ok() {
            self.persisted_ceiling.store(ceiling, Ordering::Relaxed);
        }
        if dirs_changed || res.is_err() {
            self.dircache.invalidate();
        }
        res?;
        Ok(self.db.latest_sequence_number())
    }

    /// Make everything up to `seq` durable according to the options. Many
    /// writers waiting here share one fsync (group commit).
    pub(crate) fn make_durable(&self, seq: u64) -> Result<(), MetaError> {
        if self.opts.durability == Durability::Buffered {
            return self.may_change();
        }
        let mut synced = self.synced_seq.lock().unwrap_or_else(|p| p.into_inner());
        // A node that lost its lease syncs nothing more (its mount may be
        // fenced; RocksDB must not sync a log again after a failed sync).
        self.may_change()?;
        if *synced < seq {
            let upto = self.db.latest_sequence_number();
            self.db.flush_wal(true)?;
            *synced = upto;
        }
        // Not acknowledged by a node that lost its lease meanwhile.
        self.may_change()
    }

    /// Write `b` synced, behind the HA gate (checked before and after:
    /// a node fenced meanwhile reports it). For the registries (access
    /// rules, filesystems), whose changes are rare and must last.
    pub(crate) fn write_synced(&self, b: rocksdb::WriteBatch) -> Result<(), MetaError> {
        let mut wo = rocksdb::WriteOptions::default();
        wo.set_sync(true);
        self.may_change()?;
        self.db.write_opt(b, &wo)?;
        self.may_change()
    }

    /// Whether this node may change the namespace now (background work
    /// asks before it starts).
    pub fn may_write(&self) -> Result<(), MetaError> {
        self.may_change()
    }

    /// The gate's answer (see [`Gate`]).
    pub(crate) fn may_change(&self) -> Result<(), MetaError> {
        match &self.opts.gate {
            Some(g) => g().map_err(MetaError::NotActive),
            None => Ok(()),
        }
    }

    /// Flush memtables (used at clean shutdown so the next boot replays no WAL).
    /// Not on a node whose gate is shut (its files may be fenced: RocksDB
    /// must not sync them again after a failed sync).
    pub fn flush(&self) -> Result<(), MetaError> {
        self.may_change()?;
        for cf in ALL_CFS {
            if let Some(h) = self.db.cf_handle(cf) {
                self.db.flush_cf(h)?;
            }
        }
        Ok(())
    }

    /// Compact every column family fully (admin maintenance; benchmarks).
    pub fn compact(&self) -> Result<(), MetaError> {
        for cf in ALL_CFS {
            if let Some(h) = self.db.cf_handle(cf) {
                self.db.compact_range_cf(h, None::<&[u8]>, None::<&[u8]>);
            }
        }
        Ok(())
    }

    pub fn options(&self) -> &MetaOptions {
        &self.opts
    }

    /// What RocksDB holds in memory now, summed over column families.
    pub fn memory(&self) -> MetaMemory {
        let mut m = MetaMemory {
            block_cache: self.block_cache.get_usage() as u64,
            record_caches: (self.readcache.bytes() + self.dircache.bytes()) as u64,
            ..MetaMemory::default()
        };
        for cf in ALL_CFS {
            let Some(h) = self.db.cf_handle(cf) else {
                continue;
            };
            let prop = |name: &str| {
                self.db
                    .property_int_value_cf(h, name)
                    .ok()
                    .flatten()
                    .unwrap_or(0)
            };
            m.memtables += prop("rocksdb.cur-size-all-mem-tables");
            m.table_readers += prop("rocksdb.estimate-table-readers-mem");
        }
        m
    }
}
