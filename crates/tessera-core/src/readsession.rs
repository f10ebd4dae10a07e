//! A file open for reading: reads over the data layer, counted for the
//! access log, and the stripes they found damaged handed to the ledger
//! when the session ends.

use crate::{CoreError, Ledger, SessionLog};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tessera_data::{FileReader, ReadData, ReadEvent};
use tessera_meta::Inode;

/// A file open for reading.
pub struct ReadSession {
    pub(crate) inode: Inode,
    pub(crate) reader: Option<FileReader>,
    /// Where damaged stripes are reported (fsck's `read_errors_n`).
    pub(crate) damage: Option<Arc<dyn Ledger>>,
    pub(crate) fsids: Vec<u32>,
    /// Where the close is logged (`close_read`), with the bytes read.
    pub(crate) log: Option<SessionLog>,
    pub(crate) read_bytes: AtomicU64,
    /// Reads served by `read_cached` (for the metrics).
    pub(crate) reads_in_line: AtomicU64,
    /// The first error a read met (the session's logged outcome).
    pub(crate) failed: std::sync::OnceLock<tessera_types::ErrorKind>,
    /// I/O shaping and the bytes counted per application (`shaping.rs`).
    pub(crate) pace: std::sync::OnceLock<crate::Pace>,
}

impl Drop for ReadSession {
    /// Report the stripes reads found damaged, one entry per stripe (the
    /// first thing that went wrong with it).
    fn drop(&mut self) {
        let events = self.reader.as_ref().map(|r| r.events()).unwrap_or_default();
        if let Some(l) = self.log.take() {
            l.read_closed(
                *self.read_bytes.get_mut(),
                *self.reads_in_line.get_mut(),
                self.failed.get().copied(),
            );
            // Groups rebuilt (one per group, whatever failed in it), and
            // stripe requests given up for slowness.
            let mut groups: Vec<u64> = events
                .iter()
                .filter(|e| !e.what.starts_with(tessera_data::SKIPPED_PREFIX))
                .map(|e| e.group)
                .collect();
            groups.sort_unstable();
            groups.dedup();
            let hedged = events
                .iter()
                .filter(|e| e.what.starts_with(tessera_data::SLOW_PREFIX))
                .count();
            l.read_events(groups.len() as u64, hedged as u64);
        }
        let Some(r) = &self.reader else { return };
        let mut per: Vec<(u8, u32, String)> = Vec::new();
        for e in r.events() {
            if e.what.starts_with(tessera_data::SKIPPED_PREFIX)
                || per.iter().any(|(s, _, _)| *s as usize == e.stripe)
            {
                continue;
            }
            let fsid = self.fsids.get(e.stripe).copied().unwrap_or(0);
            per.push((e.stripe as u8, fsid, e.what));
        }
        if per.is_empty() {
            return;
        }
        match &self.damage {
            Some(l) => l.damaged(self.inode.ino, per),
            None => {
                for (stripe, fsid, what) in per {
                    tracing::warn!(fid = self.inode.ino, stripe, fsid, "degraded read: {what}");
                }
            }
        }
    }
}

impl ReadSession {
    pub fn inode(&self) -> &Inode {
        &self.inode
    }

    /// Ranges of this file less than this apart are cheaper read as one
    /// (see `FileReader::merge_gap`).
    pub fn merge_gap(&self) -> u64 {
        self.reader.as_ref().map_or(0, |r| r.merge_gap())
    }

    pub fn size(&self) -> u64 {
        self.inode.size
    }

    /// Log this session's close there (with the bytes it read).
    pub fn set_log(&mut self, log: SessionLog) {
        self.log = Some(log);
    }

    /// Note the session's first failure; the error, for the caller.
    fn failure(&self, e: tessera_data::DataError) -> CoreError {
        let e = CoreError::from(e);
        let _ = self.failed.set(e.kind());
        e
    }

    fn count(&self, n: usize) {
        self.read_bytes.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Read up to `buf.len()` bytes at `offset`; short only at end of file.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize, CoreError> {
        match &self.reader {
            Some(r) => {
                let n = r.read_at(offset, buf).map_err(|e| self.failure(e))?;
                self.count(n);
                Ok(n)
            }
            None => Ok(0),
        }
    }

    /// Read up to `len` bytes at `offset` without copying them out of the
    /// stripe buffers (hand `slices()` to a vectored write).
    pub fn read(&self, offset: u64, len: usize) -> Result<Option<ReadData>, CoreError> {
        match &self.reader {
            Some(r) => {
                let d = r.read(offset, len).map_err(|e| self.failure(e))?;
                self.count(d.len());
                Ok(Some(d))
            }
            None => Ok(None),
        }
    }

    /// A short read (under 512 KiB) from memory only, so that an async
    /// caller can do it without leaving its thread: `None` when it would
    /// wait for storage (or needs a degraded read, or the file has no
    /// stripes): then [`ReadSession::read`].
    pub fn read_cached(&self, offset: u64, len: usize) -> Option<ReadData> {
        let d = self.reader.as_ref()?.read_cached(offset, len)?;
        self.count(d.len());
        self.reads_in_line.fetch_add(1, Ordering::Relaxed);
        Some(d)
    }

    /// Pace and count this session's reads (set once, when it opens:
    /// [`crate::Core::pace`]).
    pub fn pace_with(&self, p: crate::Pace) {
        let _ = self.pace.set(p);
    }

    /// Read up to `len` bytes at `offset` from async code, the one rule
    /// for every front-end: copied right here when memory holds them
    /// ([`ReadSession::read_cached`]), else read on the blocking pool.
    /// Paced first, when shaped (nothing is held while it waits).
    pub async fn fetch(
        self: &Arc<Self>,
        offset: u64,
        len: usize,
    ) -> Result<Option<ReadData>, CoreError> {
        if let Some(p) = self.pace.get() {
            p.bytes(len.min(self.size().saturating_sub(offset) as usize))
                .await;
        }
        if let Some(d) = self.read_cached(offset, len) {
            return Ok(Some(d));
        }
        let me = Arc::clone(self);
        crate::blocking(move || me.read(offset, len)).await?
    }

    /// Stripes that failed during this session (degraded reads).
    pub fn events(&self) -> Vec<ReadEvent> {
        self.reader.as_ref().map(|r| r.events()).unwrap_or_default()
    }
}
