//! The bytes of one read, left in the buffers the stripes were read into
//! (blocks interleaved with their CRCs), so that a gateway can hand them to
//! a vectored socket write without copying them again; and the pool those
//! buffers come from and go back to, so that reads do not fault in and zero
//! fresh memory each time.

use std::io::IoSlice;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Reads up to this size may reuse an idle buffer up to this size.
const SMALL: usize = 64 << 10;
/// Idle buffers kept at most (each `take` looks at all of them).
const MAX_IDLE: usize = 256;
/// An idle buffer no read took for this long is freed: the pool holds
/// what the reads of the moment reuse, not every size ever read (a mix of
/// sizes filled it to its cap and kept it there).
pub const IDLE_AGE: Duration = Duration::from_secs(10);

/// Reusable read buffers, shared by every reader of a process (the core
/// owns one). Holds at most `max_bytes` of idle buffers; the rest is
/// freed, and so is a buffer idle for longer than [`IDLE_AGE`] at the next
/// `put` or `idle_bytes` (the metrics scrape calls it).
#[derive(Debug)]
pub struct BufPool {
    free: Mutex<Vec<(Instant, Vec<u8>)>>,
    max_bytes: usize,
    age: Duration,
    /// Bytes its readers keep for short reads (`recent.rs`).
    pub(crate) kept: Arc<AtomicUsize>,
}

impl BufPool {
    pub fn new(max_bytes: usize) -> Arc<BufPool> {
        BufPool::with_idle_age(max_bytes, IDLE_AGE)
    }

    /// A pool whose idle buffers are freed after `age`.
    pub fn with_idle_age(max_bytes: usize, age: Duration) -> Arc<BufPool> {
        Arc::new(BufPool {
            free: Mutex::new(Vec::new()),
            max_bytes,
            age,
            kept: Arc::default(),
        })
    }

    /// A buffer of exactly `len` bytes (contents unspecified: the caller
    /// overwrites them). Reuses the smallest idle buffer that holds `len`,
    /// but none more than 4 times larger (or 64 KiB for small reads): a
    /// small read must not take, and shrink, a big buffer that big reads
    /// then have to zero out again. Only bytes beyond what the buffer held
    /// initialised before are zeroed.
    pub fn take(&self, len: usize) -> Vec<u8> {
        let limit = len.saturating_mul(4).max(SMALL);
        let found = {
            let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
            free.iter()
                .enumerate()
                .filter(|(_, (_, b))| (len..=limit).contains(&b.capacity()))
                .min_by_key(|(_, (_, b))| (b.capacity(), usize::MAX - b.len()))
                .map(|(i, _)| i)
                .map(|i| free.swap_remove(i).1)
        };
        let mut b = found.unwrap_or_default();
        b.resize(len, 0);
        b
    }

    /// Give buffers back (as they are: their length is what is known to
    /// be initialised); what does not fit under the cap is freed.
    pub fn put(&self, bufs: impl IntoIterator<Item = Vec<u8>>) {
        let now = Instant::now();
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        self.prune(&mut free, now);
        let mut held: usize = free.iter().map(|(_, b)| b.capacity()).sum();
        for b in bufs {
            if held + b.capacity() <= self.max_bytes && free.len() < MAX_IDLE {
                held += b.capacity();
                free.push((now, b));
            }
        }
    }

    /// Bytes its readers keep for short reads now (`recent.rs`).
    pub fn kept_bytes(&self) -> usize {
        self.kept.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Bytes held idle (for tests and metrics); what has been idle too
    /// long is freed first.
    pub fn idle_bytes(&self) -> usize {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        self.prune(&mut free, Instant::now());
        free.iter().map(|(_, b)| b.capacity()).sum()
    }

    /// Frees what has been idle `age` or longer. Compared as instants (a
    /// put per read element: no duration arithmetic per idle buffer).
    fn prune(&self, free: &mut Vec<(Instant, Vec<u8>)>, now: Instant) {
        if let Some(cutoff) = now.checked_sub(self.age) {
            free.retain(|(at, _)| *at > cutoff);
        }
    }
}

/// The result of [`crate::FileReader::read`]: file bytes in order, as
/// slices of the stripe buffers. Dropping it returns the buffers to the
/// pool.
#[derive(Debug)]
pub struct ReadData {
    bufs: Vec<Vec<u8>>,
    /// (buffer, start, end) in file order.
    parts: Vec<(usize, usize, usize)>,
    len: usize,
    pool: Arc<BufPool>,
    /// Stored page checksums of the blocks read, in file order, where the
    /// read had them (`pagesums.rs`).
    sums: Vec<crate::pagesums::BlockSums>,
}

impl ReadData {
    pub(crate) fn new(pool: Arc<BufPool>) -> ReadData {
        ReadData {
            bufs: Vec::new(),
            parts: Vec::new(),
            len: 0,
            pool,
            sums: Vec::new(),
        }
    }

    /// Bytes that no stripe read holds (an update's view of a file): one
    /// buffer, returned to no pool.
    pub fn from_vec(b: Vec<u8>) -> ReadData {
        let mut d = ReadData::new(BufPool::new(0));
        let n = b.len();
        let id = d.adopt(b);
        d.push(id, 0, n);
        d
    }

    /// Record a block's stored page checksums (blocks in file order).
    pub(crate) fn push_sums(&mut self, s: crate::pagesums::BlockSums) {
        self.sums.push(s);
    }

    pub(crate) fn sums(&self) -> &[crate::pagesums::BlockSums] {
        &self.sums
    }

    /// Buffer `id` (adopted).
    pub(crate) fn buf(&self, id: usize) -> &[u8] {
        &self.bufs[id]
    }

    /// Adopt a buffer; returns its index for [`ReadData::push`].
    pub(crate) fn adopt(&mut self, b: Vec<u8>) -> usize {
        self.bufs.push(b);
        self.bufs.len() - 1
    }

    /// Append bytes `start..end` of buffer `buf` (merged with the previous
    /// part when contiguous).
    pub(crate) fn push(&mut self, buf: usize, start: usize, end: usize) {
        if start >= end {
            return;
        }
        self.len += end - start;
        if let Some(last) = self.parts.last_mut() {
            if last.0 == buf && last.2 == start {
                last.2 = end;
                return;
            }
        }
        self.parts.push((buf, start, end));
    }

    /// Number of bytes read.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Memory the buffers hold: whole verified blocks, so a short read
    /// holds far more than it returns.
    pub fn held(&self) -> usize {
        self.bufs.iter().map(Vec::capacity).sum()
    }

    /// The bytes in file order.
    pub fn slices(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.parts.iter().map(|&(b, s, e)| &self.bufs[b][s..e])
    }

    /// The same, for `write_vectored`.
    pub fn io_slices(&self) -> Vec<IoSlice<'_>> {
        self.slices().map(IoSlice::new).collect()
    }

    /// Copy into `out` (which must hold `len()` bytes); returns `len()`.
    pub fn copy_to(&self, out: &mut [u8]) -> usize {
        self.copy_from(0, out)
    }

    /// The bytes from `at` (counted from the start of this read), up to
    /// `len` of them, as slices of the buffers.
    fn range(&self, mut at: u64, mut len: usize) -> impl Iterator<Item = &[u8]> + '_ {
        self.slices().filter_map(move |s| {
            let n = s.len() as u64;
            if len == 0 || at >= n {
                at = at.saturating_sub(n);
                return None;
            }
            let take = len.min((n - at) as usize);
            let part = &s[at as usize..at as usize + take];
            (at, len) = (0, len - take);
            Some(part)
        })
    }

    /// Append up to `len` bytes from `at` (counted from the start of this
    /// read) to `out`, as many as are there, without first zeroing the
    /// room for them; returns how many.
    pub fn extend_into(&self, at: u64, len: usize, out: &mut Vec<u8>) -> usize {
        let before = out.len();
        self.range(at, len).for_each(|p| out.extend_from_slice(p));
        out.len() - before
    }

    /// Copy the bytes from `at` (counted from the start of this read) into
    /// `out`, as many as fit or are there; returns how many.
    pub fn copy_from(&self, at: u64, out: &mut [u8]) -> usize {
        let mut filled = 0;
        for p in self.range(at, out.len()) {
            out[filled..filled + p.len()].copy_from_slice(p);
            filled += p.len();
        }
        filled
    }

    /// Take the buffers apart: the buffers, the parts `(buffer, start,
    /// end)` in file order, and the pool the buffers should go back to
    /// (a gateway hands the parts on without copying them).
    #[allow(clippy::type_complexity)]
    pub fn into_parts(mut self) -> (Vec<Vec<u8>>, Vec<(usize, usize, usize)>, Arc<BufPool>) {
        let bufs = std::mem::take(&mut self.bufs);
        let parts = std::mem::take(&mut self.parts);
        (bufs, parts, Arc::clone(&self.pool))
    }

    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = vec![0u8; self.len];
        self.copy_to(&mut v);
        v
    }
}

impl Drop for ReadData {
    fn drop(&mut self) {
        self.pool.put(std::mem::take(&mut self.bufs));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_reuses_and_caps() {
        let p = BufPool::new(1 << 20);
        let a = p.take(1000);
        assert_eq!(a.len(), 1000);
        let ptr = a.as_ptr();
        p.put([a]);
        let b = p.take(500);
        assert_eq!((b.len(), b.as_ptr()), (500, ptr), "reused");
        p.put([b, vec![0u8; 2 << 20]]);
        assert!(p.idle_bytes() <= 1 << 20, "over the cap is freed");
    }

    #[test]
    fn idle_buffers_go_after_their_age() {
        let p = BufPool::with_idle_age(64 << 20, Duration::from_millis(50));
        p.put([vec![0u8; 4 << 20], vec![0u8; 1 << 20]]);
        assert_eq!(p.idle_bytes(), 5 << 20);
        std::thread::sleep(Duration::from_millis(80));
        assert_eq!(p.idle_bytes(), 0, "no read took them: freed");
        p.put([vec![0u8; 1 << 20]]);
        let b = p.take(1 << 20);
        assert_eq!(b.capacity(), 1 << 20, "a recent one is reused");
    }

    #[test]
    fn small_reads_leave_big_buffers_alone() {
        let p = BufPool::new(64 << 20);
        let big = p.take(4 << 20);
        let big_ptr = big.as_ptr();
        p.put([big]);
        // A 4 KiB read gets a buffer of its own, not the 4 MiB one.
        let small = p.take(4096);
        assert_ne!(small.as_ptr(), big_ptr);
        let small_ptr = small.as_ptr();
        p.put([small]);
        let again = p.take(4096);
        assert_eq!(again.as_ptr(), small_ptr, "the small one reused");
        // A 3 MiB read may use the 4 MiB buffer, and it comes back at
        // the length it was used at.
        let b = p.take(3 << 20);
        assert_eq!((b.as_ptr(), b.len()), (big_ptr, 3 << 20));
        p.put([b]);
        let whole = p.take(4 << 20);
        assert_eq!(whole.as_ptr(), big_ptr);
        // At most MAX_IDLE buffers are kept.
        p.put((0..MAX_IDLE + 10).map(|_| vec![0u8; 16]));
        assert!(p.free.lock().unwrap().len() <= MAX_IDLE);
    }

    #[test]
    fn parts_merge_and_copy() {
        let mut d = ReadData::new(BufPool::new(0));
        let i = d.adopt(b"abcdefgh".to_vec());
        d.push(i, 0, 3);
        d.push(i, 3, 5);
        d.push(i, 6, 8);
        assert_eq!(d.parts.len(), 2);
        assert_eq!(d.to_vec(), b"abcdegh");
        assert_eq!(d.io_slices().len(), 2);
    }
}
