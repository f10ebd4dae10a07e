//! A stripe of a folder backend: written in place or under a temporary
//! name, handed to write-out as it grows, sealed with the fsyncs its file
//! system needs; read with positioned reads (and from the page cache only
//! when asked).

use crate::dirsync::{DirSyncer, Ticket};
use crate::*;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A durable stripe's bytes are handed to the disk's write-out every this
/// many bytes as they are written, so that its seal waits for the last few
/// MiB, not for the whole file (a 1 GiB stripe otherwise waits for 1 GiB of
/// write-out after its last byte).
const WRITE_OUT_STEP: u64 = 8 << 20;

pub(crate) struct FolderWrite {
    pub(crate) file: File,
    /// Where the stripe is being written.
    pub(crate) path: PathBuf,
    pub(crate) name: Naming,
    pub(crate) dirsync: Arc<DirSyncer>,
    /// Start write-out as the stripe grows (off for buffered stripes).
    pub(crate) early: bool,
    /// Bytes before this are handed to write-out.
    pub(crate) started: u64,
    /// End of the bytes written so far.
    pub(crate) end: u64,
}

/// How a stripe being written gets its final name.
pub(crate) enum Naming {
    /// Renamed to `dest` at the seal.
    Temporary { dest: PathBuf },
    /// Written there from the start; `created` is the directory change
    /// the seal's directory fsync must cover.
    Final { created: Ticket },
    /// Written there from the start, on a file system where the fsync of
    /// a new file also makes its directory entry durable (see
    /// [`names_last_with_fsync`]): the seal needs no directory fsync.
    FinalNamedByFsync,
}

impl FolderWrite {
    /// Hand what was written since the last call to the disk's write-out
    /// once it reaches `WRITE_OUT_STEP` (does not wait for it).
    #[allow(unsafe_code)] // sync_file_range(2) has no safe wrapper in rustix
    fn start_write_out(&mut self) {
        if !self.early || self.end < self.started + WRITE_OUT_STEP {
            return;
        }
        use std::os::fd::AsRawFd;
        // Only a hint: an error here (a file system without it) changes
        // nothing, the seal's fsync still makes everything durable.
        // SAFETY: a plain syscall on a descriptor this struct owns.
        unsafe {
            libc::sync_file_range(
                self.file.as_raw_fd(),
                self.started as i64,
                (self.end - self.started) as i64,
                libc::SYNC_FILE_RANGE_WRITE,
            );
        }
        self.started = self.end;
    }
}

pub(crate) struct FolderRead {
    pub(crate) file: File,
    pub(crate) what: String,
}

impl StripeWrite for FolderWrite {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), BackendError> {
        self.file
            .write_all_at(data, offset)
            .map_err(|e| BackendError::io(self.path.display().to_string(), e))?;
        self.end = self.end.max(offset + data.len() as u64);
        self.start_write_out();
        Ok(())
    }

    fn write_parts_at(&mut self, offset: u64, parts: &[&[u8]]) -> Result<(), BackendError> {
        let slices: Vec<std::io::IoSlice<'_>> =
            parts.iter().map(|p| std::io::IoSlice::new(p)).collect();
        let total: usize = parts.iter().map(|p| p.len()).sum();
        let done = rustix::io::pwritev(&self.file, &slices, offset)
            .map_err(|e| BackendError::io(self.path.display().to_string(), e.into()))?;
        // Short (rare): the rest part by part.
        let mut skip = done;
        let mut at = offset + done as u64;
        for p in parts {
            if skip >= p.len() {
                skip -= p.len();
                continue;
            }
            self.file
                .write_all_at(&p[skip..], at)
                .map_err(|e| BackendError::io(self.path.display().to_string(), e))?;
            at += (p.len() - skip) as u64;
            skip = 0;
        }
        self.end = self.end.max(offset + total as u64);
        self.start_write_out();
        Ok(())
    }

    fn buffered(&mut self) {
        self.early = false;
    }

    fn seal(self: Box<Self>) -> Result<(), BackendError> {
        let w = *self;
        let what = w.path.display().to_string();
        w.file.sync_all().map_err(|e| BackendError::io(&what, e))?;
        let dir_err = |dir: &Path, e| BackendError::io(dir.display().to_string(), e);
        match w.name {
            Naming::Temporary { dest } => {
                std::fs::rename(&w.path, &dest).map_err(|e| BackendError::io(&what, e))?;
                match dest.parent() {
                    Some(dir) => w.dirsync.sync(dir).map_err(|e| dir_err(dir, e)),
                    None => Ok(()),
                }
            }
            Naming::Final { created } => {
                let dir = w.path.parent().unwrap_or(&w.path);
                w.dirsync.wait(created).map_err(|e| dir_err(dir, e))
            }
            Naming::FinalNamedByFsync => Ok(()),
        }
    }

    fn seal_buffered(self: Box<Self>) -> Result<(), BackendError> {
        match &self.name {
            Naming::Temporary { dest } => std::fs::rename(&self.path, dest)
                .map_err(|e| BackendError::io(self.path.display().to_string(), e)),
            Naming::Final { .. } | Naming::FinalNamedByFsync => Ok(()),
        }
    }

    fn abort(self: Box<Self>) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl StripeRead for FolderRead {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize, BackendError> {
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(BackendError::io(&self.what, e)),
            }
        }
        Ok(done)
    }

    fn read_cached(&self, offset: u64, buf: &mut [u8]) -> Option<usize> {
        use rustix::io::{Errno, ReadWriteFlags};
        let mut done = 0;
        // RWF_NOWAIT: EAGAIN rather than a wait for the disk; a short
        // count is what was cached, and the rest is asked for again (0 at
        // the end of the file).
        while done < buf.len() {
            let mut iov = [std::io::IoSliceMut::new(&mut buf[done..])];
            match rustix::io::preadv2(
                &self.file,
                &mut iov,
                offset + done as u64,
                ReadWriteFlags::NOWAIT,
            ) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(Errno::INTR) => {}
                Err(_) => return None,
            }
        }
        Some(done)
    }

    fn len(&self) -> Result<u64, BackendError> {
        self.file
            .metadata()
            .map(|m| m.len())
            .map_err(|e| BackendError::io(&self.what, e))
    }
}
