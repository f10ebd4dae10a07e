//! `FileReader`: a file's ranges read through `striped.rs`, with
//! read-ahead for sequential readers. When a read starts where the
//! previous one ended, the next range of the same length is read in the
//! background while the caller sends this one; a read that asks for
//! exactly that range takes it (waiting for it if it is still coming).
//! Only one range is read ahead per file, none while that range is
//! already being read by a request of its own (a client that keeps several
//! requests in flight, as xrdcp does, does its own read-ahead), and none for
//! small requests (the kernel's read-ahead covers those).

use crate::layout::Placement;
use crate::readdata::{BufPool, ReadData};
use crate::recent::{self, Recent};
use crate::striped::{ReadEvent, Striped};
use crate::DataError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;
use tessera_backend::Backend;

/// Pages between two ranges below which they are read as one (format 2):
/// one page (copying and checking more costs more than a second read from
/// the page cache: `scripts/bench-short`, `docs/benchmarks.md`).
const MERGE_PAGES: u64 = 1;

/// Requests smaller than this are not read ahead.
pub const READ_AHEAD_MIN: usize = 512 << 10;

/// A range being read in the background, and where its result lands.
struct Pending {
    off: u64,
    len: usize,
    slot: Arc<Slot>,
}

#[derive(Default)]
struct Slot {
    done: Mutex<Option<Result<ReadData, DataError>>>,
    cv: Condvar,
}

impl Slot {
    fn wait(&self) -> Result<ReadData, DataError> {
        let mut g = self.done.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(r) = g.take() {
                return r;
            }
            g = self.cv.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// Fills a slot once; dropped unfilled (a panic), it fills it with an
/// error so that whoever waits goes on (and reads for itself).
struct Fill(Option<Arc<Slot>>);

impl Fill {
    fn put(mut self, r: Result<ReadData, DataError>) {
        if let Some(slot) = self.0.take() {
            *slot.done.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
            slot.cv.notify_all();
        }
    }
}

impl Drop for Fill {
    fn drop(&mut self) {
        if let Some(slot) = self.0.take() {
            *slot.done.lock().unwrap_or_else(|p| p.into_inner()) =
                Some(Err(DataError::Layout("read-ahead failed".into())));
            slot.cv.notify_all();
        }
    }
}

#[derive(Default)]
struct Ahead {
    /// Where the last request ended: a request starting here is sequential.
    next: u64,
    pending: Option<Pending>,
    /// Offsets of the requests being served now.
    serving: Vec<u64>,
}

/// Counters (for tests and benchmarks).
#[derive(Debug, Default)]
pub struct AheadStats {
    /// Ranges read ahead.
    pub issued: AtomicU64,
    /// Requests served from a range read ahead.
    pub hits: AtomicU64,
    /// Short requests served from the blocks of an earlier one.
    pub kept_hits: AtomicU64,
    /// Short requests served from the pages they touch.
    pub page_reads: AtomicU64,
}

/// Reads a file's stripes: any range, each block's CRC checked, damaged
/// blocks rebuilt (degraded read), with read-ahead for sequential readers.
pub struct FileReader {
    striped: Arc<Striped>,
    ahead: Mutex<Ahead>,
    read_ahead: bool,
    stats: AheadStats,
    /// The blocks of the last short read.
    recent: Recent,
    /// Where the last short read ended: one starting there is sequential.
    short_next: AtomicU64,
}

impl FileReader {
    /// `backends[i]` serves stripe i (`None`: its filesystem is unknown or off).
    pub fn new(
        placement: Placement,
        fid: u64,
        size: u64,
        backends: Vec<Option<Arc<dyn Backend>>>,
    ) -> Result<FileReader, DataError> {
        Ok(FileReader {
            striped: Arc::new(Striped::new(placement, fid, size, backends)?),
            ahead: Mutex::new(Ahead::default()),
            read_ahead: true,
            stats: AheadStats::default(),
            recent: Recent::default(),
            short_next: AtomicU64::new(u64::MAX),
        })
    }

    fn striped_mut(&mut self) -> &mut Striped {
        Arc::get_mut(&mut self.striped).expect("configured before the first read")
    }

    /// Take read buffers from `pool` (shared with other readers) instead
    /// of this reader's own.
    pub fn with_pool(mut self, pool: Arc<BufPool>) -> FileReader {
        self.striped_mut().set_pool(pool);
        self
    }

    /// Run parallel stripe reads on `threads` (shared with other readers)
    /// instead of this reader's own.
    pub fn with_threads(mut self, threads: crate::ReadThreads) -> FileReader {
        self.striped_mut().set_threads(threads);
        self
    }

    /// Treat a stripe as missing when it takes longer than `slow`.
    pub fn with_slow_threshold(mut self, slow: Duration) -> FileReader {
        self.striped_mut().set_slow_threshold(slow);
        self
    }

    /// Turn read-ahead on or off (on by default).
    pub fn with_read_ahead(mut self, on: bool) -> FileReader {
        self.read_ahead = on;
        self
    }

    pub fn size(&self) -> u64 {
        self.striped.size()
    }

    /// Two ranges less than this apart cost less read as one (with the
    /// bytes between) than as two: with page checksums (format 2) a few
    /// pages, else a whole block (each range reads its blocks anyway).
    pub fn merge_gap(&self) -> u64 {
        let l = self.striped.placement().layout;
        match l.page {
            0 => l.block_size as u64,
            p => MERGE_PAGES * p as u64,
        }
    }

    /// What went wrong so far (degraded reads), read-ahead included.
    pub fn events(&self) -> Vec<ReadEvent> {
        self.striped.events()
    }

    pub fn read_ahead_stats(&self) -> &AheadStats {
        &self.stats
    }

    fn state(&self) -> MutexGuard<'_, Ahead> {
        self.ahead.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Read up to `buf.len()` bytes at `offset` into `buf`; short only at
    /// end of file. (One copy more than [`FileReader::read`].)
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize, DataError> {
        let d = self.read(offset, buf.len())?;
        Ok(d.copy_to(buf))
    }

    /// Read up to `len` bytes at `offset`, left in the stripe buffers
    /// (see [`ReadData`]); short only at end of file. Whatever the range
    /// covers of a group is read with one request per stripe, a range over
    /// several groups too (up to 64 MiB at a time); damage falls back to
    /// group-by-group degraded reads.
    pub fn read(&self, offset: u64, len: usize) -> Result<ReadData, DataError> {
        let size = self.size();
        if len > 0 && len < recent::SHORT && offset < size {
            return self.short(offset, len);
        }
        let hit = {
            let mut st = self.state();
            let hit = match st.pending.take() {
                Some(p) if p.off == offset && p.len == len => Some(p.slot),
                // Anything else read ahead is dropped (when its thread
                // ends, its buffers go back to the pool).
                _ => None,
            };
            let sequential = offset == st.next;
            st.next = offset.saturating_add(len as u64);
            let next = st.next;
            if self.read_ahead
                && sequential
                && len >= READ_AHEAD_MIN
                && next < size
                && !st.serving.contains(&next)
            {
                st.pending = self.spawn(next, len);
            }
            st.serving.push(offset);
            hit
        };
        let r = match hit {
            Some(slot) => match slot.wait() {
                Ok(d) => {
                    self.stats.hits.fetch_add(1, Ordering::Relaxed);
                    Ok(d)
                }
                // Read again in the foreground: the error (or a slow
                // stripe) may be gone, and it is reported as this read's.
                Err(_) => self.striped.read(offset, len),
            },
            None => self.striped.read(offset, len),
        };
        let mut st = self.state();
        if let Some(i) = st.serving.iter().position(|o| *o == offset) {
            st.serving.swap_remove(i);
        }
        r
    }

    /// A short read answered from the blocks the last short read kept;
    /// `None` when they do not hold it (nothing is read from storage).
    pub fn read_kept(&self, offset: u64, len: usize) -> Option<ReadData> {
        if len == 0 || len >= recent::SHORT {
            return None;
        }
        let d = self.recent.serve(offset, len, self.striped.pool())?;
        self.stats.kept_hits.fetch_add(1, Ordering::Relaxed);
        Some(d)
    }

    /// A short read (up to `recent::SHORT`) from memory only, on the
    /// caller's thread: from the blocks kept, or from stripes the kernel
    /// holds in its page cache. `None` when it would wait for storage, is
    /// longer, or needs a degraded read: then [`FileReader::read`].
    pub fn read_cached(&self, offset: u64, len: usize) -> Option<ReadData> {
        // What is there to read (a client asks for more than a small file
        // holds: xrdcp asks for 8 MiB).
        let len = len.min(self.size().saturating_sub(offset) as usize);
        if len == 0 || len >= recent::SHORT {
            return None;
        }
        self.short_from(offset, len, true).ok().flatten()
    }

    /// A short read: from the blocks the last short read kept; else, when
    /// it does not continue the last short read, from the pages it
    /// touches (format 2: a random read costs what it asks for); else by
    /// reading the whole blocks it touches and keeping them for the short
    /// reads that follow (`recent.rs`).
    fn short(&self, offset: u64, len: usize) -> Result<ReadData, DataError> {
        crate::striped::answered(self.short_from(offset, len, false))
    }

    /// `short`; with `cached` from memory only (`None`: not now).
    fn short_from(
        &self,
        offset: u64,
        len: usize,
        cached: bool,
    ) -> Result<Option<ReadData>, DataError> {
        let end = self.size().min(offset + len as u64);
        // Only a read that is answered moves the mark: a memory-only try
        // that steps aside must leave a sequential read sequential for
        // the read from storage that follows it.
        let follows = self.short_next.load(Ordering::Relaxed) == offset;
        let r = self.short_served(offset, len, end, cached, follows);
        if let Ok(Some(_)) = &r {
            self.short_next.store(end, Ordering::Relaxed);
        }
        r
    }

    /// `short_from`'s reads; `follows`: it continues the last short read.
    fn short_served(
        &self,
        offset: u64,
        len: usize,
        end: u64,
        cached: bool,
        follows: bool,
    ) -> Result<Option<ReadData>, DataError> {
        if let Some(d) = self.read_kept(offset, len) {
            return Ok(Some(d));
        }
        if !follows {
            if let Some(d) = self.striped.read_pages(offset, len, cached) {
                self.stats.page_reads.fetch_add(1, Ordering::Relaxed);
                return Ok(Some(d));
            }
            // One look at memory per request: a miss there has started the
            // kernel's read-ahead, and a second look would race it.
            if cached && self.striped.placement().layout.page != 0 {
                return Ok(None);
            }
        }
        let pool = Arc::clone(self.striped.pool());
        let (from, _) = self.striped.block_of(offset);
        let (_, to) = self.striped.block_of(end - 1);
        let n = (to - from) as usize;
        let wide = if cached {
            match self.striped.read_cached(from, n) {
                Some(w) => w,
                None => return Ok(None),
            }
        } else {
            self.striped.read(from, n)?
        };
        let d = recent::part(&wide, offset - from, (end - offset) as usize, &pool);
        self.recent.keep(from, wide, &pool.kept);
        Ok(Some(d))
    }

    /// Start reading `len` bytes at `off` in the background.
    fn spawn(&self, off: u64, len: usize) -> Option<Pending> {
        let slot = Arc::new(Slot::default());
        let (s, sl) = (Arc::clone(&self.striped), Arc::clone(&slot));
        let started = std::thread::Builder::new()
            .name("tessera-ahead".into())
            .spawn(move || {
                // Filled even if the read panics: a waiter never hangs.
                let fill = Fill(Some(sl));
                let r = s.read(off, len);
                fill.put(r);
            });
        // No thread, no read-ahead: the request reads for itself.
        started.ok()?;
        self.stats.issued.fetch_add(1, Ordering::Relaxed);
        Some(Pending { off, len, slot })
    }
}
