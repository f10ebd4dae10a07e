//! File data: write and read sessions over the data layer, committed to
//! the namespace only once every stripe is durable. Session methods block
//! (disk and CephFS I/O); async front-ends call them from `spawn_blocking`.

use crate::fs::Filesystems;
use crate::{Core, CoreError};
use std::sync::Arc;
use tessera_backend::{Backend, StripeName};
use tessera_data::{FileReader, FileWriter, Layout, Placement, ReadData, ReadEvent};
use tessera_meta::{Checksum, CommitWrite, Inode, MetaStore, Reservation};
use tessera_types::{Identity, NsPath};

/// How much quota a write reserves at a time beyond what it has written.
const RESERVE_STEP: u64 = 64 << 20;
/// The space used when a directory names none.
pub const DEFAULT_SPACE: &str = "default";

/// Remove every stripe of a file (best effort: what fails is an orphan for fsck).
pub(crate) fn drop_stripes(fs: &Filesystems, p: &Placement, fid: u64) {
    for (i, id) in p.fsids.iter().enumerate() {
        if let Some(b) = fs.backend(*id) {
            if let Err(e) = b.remove(&StripeName::new(fid, i as u8), None) {
                tracing::warn!(fid, stripe = i, fsid = id, "stripe not removed: {e}");
            }
        }
    }
}

pub(crate) fn drop_stripes_of(fs: &Filesystems, inode: &Inode) {
    if inode.layout.is_empty() {
        return;
    }
    match Placement::decode(&inode.layout) {
        Ok(p) => drop_stripes(fs, &p, inode.ino),
        Err(e) => tracing::warn!(fid = inode.ino, "unreadable placement: {e}"),
    }
}

/// A file being written. Dropping it without `close` aborts it.
pub struct WriteSession {
    meta: Arc<MetaStore>,
    fs: Arc<Filesystems>,
    resv: Reservation,
    reserved: u64,
    writer: Option<FileWriter>,
    path: NsPath,
}

impl WriteSession {
    pub fn path(&self) -> &NsPath {
        &self.path
    }

    /// The file id the file will have.
    pub fn fid(&self) -> u64 {
        self.resv.ino
    }

    pub fn written(&self) -> u64 {
        self.writer.as_ref().map_or(0, |w| w.size())
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
            let more = match self
                .meta
                .extend_write(self.resv.id, exact.max(RESERVE_STEP))
            {
                Ok(()) => exact.max(RESERVE_STEP),
                Err(_) if exact < RESERVE_STEP => {
                    self.meta.extend_write(self.resv.id, exact)?;
                    exact
                }
                Err(e) => return Err(e.into()),
            };
            self.reserved += more;
        }
        w.write(data)?;
        Ok(())
    }

    /// Seal every stripe, then make the file visible in one namespace step.
    pub fn close(mut self) -> Result<Inode, CoreError> {
        let w = self
            .writer
            .take()
            .ok_or_else(|| CoreError::Invalid("closed twice".into()))?;
        let done = match w.finish() {
            Ok(d) => d,
            Err(e) => {
                let _ = self.meta.abort_write(self.resv.id);
                return Err(e.into());
            }
        };
        let commit = CommitWrite {
            size: done.size,
            checksum: Some(Checksum {
                kind: "adler32".into(),
                value: done.adler32.to_be_bytes().to_vec(),
            }),
            layout: done.placement.encode(),
            mtime_ns: None,
        };
        match self.meta.commit_write(self.resv.id, commit) {
            Ok((inode, replaced)) => {
                if let Some(old) = replaced {
                    drop_stripes_of(&self.fs, &old);
                }
                Ok(inode)
            }
            Err(e) => {
                // Never visible: remove what was sealed.
                drop_stripes(&self.fs, &done.placement, self.resv.ino);
                Err(e.into())
            }
        }
    }

    /// Give up: nothing becomes visible, the reservation is released.
    pub fn abort(mut self) {
        self.abort_inner();
    }

    fn abort_inner(&mut self) {
        if let Some(w) = self.writer.take() {
            w.abort();
            let _ = self.meta.abort_write(self.resv.id);
        }
    }
}

impl Drop for WriteSession {
    fn drop(&mut self) {
        self.abort_inner();
    }
}

/// A file open for reading.
pub struct ReadSession {
    inode: Inode,
    reader: Option<FileReader>,
    seen: Arc<crate::fsck::ReadErrors>,
}

impl Drop for ReadSession {
    /// Hand what went wrong to fsck (`read_errors_n`).
    fn drop(&mut self) {
        if let Some(r) = &self.reader {
            for e in r.events() {
                self.seen.push(self.inode.ino, e.stripe, e.what);
            }
        }
    }
}

impl ReadSession {
    pub fn inode(&self) -> &Inode {
        &self.inode
    }

    pub fn size(&self) -> u64 {
        self.inode.size
    }

    /// Read up to `buf.len()` bytes at `offset`; short only at end of file.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize, CoreError> {
        match &self.reader {
            Some(r) => Ok(r.read_at(offset, buf)?),
            None => Ok(0),
        }
    }

    /// Read up to `len` bytes at `offset` without copying them out of the
    /// stripe buffers (hand `slices()` to a vectored write).
    pub fn read(&self, offset: u64, len: usize) -> Result<Option<ReadData>, CoreError> {
        match &self.reader {
            Some(r) => Ok(Some(r.read(offset, len)?)),
            None => Ok(None),
        }
    }

    /// Stripes that failed during this session (degraded reads).
    pub fn events(&self) -> Vec<ReadEvent> {
        self.reader.as_ref().map(|r| r.events()).unwrap_or_default()
    }
}

/// The layout and space for new files in a directory, from its
/// `sys.forced.*` attributes (EOS names).
fn layout_of(meta: &MetaStore, dir: &NsPath) -> Result<(Layout, String), CoreError> {
    let attrs = meta.xattr_list(dir)?;
    let get = |k: &str| {
        attrs
            .iter()
            .find(|(n, _)| n == k.as_bytes())
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
    };
    let layout = match get("sys.forced.layout") {
        Some(l) => Layout::from_eos(
            &l,
            get("sys.forced.nstripes").as_deref(),
            get("sys.forced.blocksize").as_deref(),
        )?,
        None => Layout::plain(),
    };
    let space = get("sys.forced.space").unwrap_or_else(|| DEFAULT_SPACE.to_string());
    Ok((layout, space))
}

impl Core {
    /// Open `path` for writing (blocking). Checks the namespace and
    /// permissions, reserves quota, picks the layout from the directory and
    /// the filesystems by placement; nothing is visible until `close`.
    pub fn open_write(
        &self,
        who: &Identity,
        path: &NsPath,
        mode: u32,
        overwrite: bool,
        size_hint: u64,
    ) -> Result<WriteSession, CoreError> {
        let (parent, _) = path
            .split_last()
            .ok_or_else(|| CoreError::Invalid("cannot write /".into()))?;
        let resv = self
            .meta
            .begin_write(path, who, mode, overwrite, size_hint)?;
        let fail = |e: CoreError| {
            let _ = self.meta.abort_write(resv.id);
            e
        };
        let (layout, space) = layout_of(&self.meta, &parent).map_err(fail)?;
        let candidates = self.fs.candidates(&space);
        let fsids =
            tessera_data::place(&layout, &candidates, resv.ino).map_err(|e| fail(e.into()))?;
        let targets: Vec<(u32, Arc<dyn Backend>)> = fsids
            .iter()
            .filter_map(|id| self.fs.backend(*id).map(|b| (*id, b)))
            .collect();
        let writer =
            FileWriter::create(layout, resv.ino, resv.id, &targets).map_err(|e| fail(e.into()))?;
        Ok(WriteSession {
            meta: Arc::clone(&self.meta),
            fs: Arc::clone(&self.fs),
            reserved: size_hint,
            resv,
            writer: Some(writer),
            path: path.clone(),
        })
    }

    /// Open a file for reading (blocking).
    pub fn open_read(&self, who: &Identity, path: &NsPath) -> Result<ReadSession, CoreError> {
        let inode = self.meta.stat(path)?;
        if inode.is_dir() {
            return Err(tessera_meta::MetaError::IsADirectory(path.display()).into());
        }
        if !tessera_meta::may(who, &inode, 4) {
            return Err(tessera_meta::MetaError::PermissionDenied(format!(
                "{} may not read {} (uid {} gid {}, mode {:o})",
                who.name,
                path.display(),
                inode.uid,
                inode.gid,
                inode.mode
            ))
            .into());
        }
        let reader = if inode.layout.is_empty() {
            None // created empty (touch): no stripes
        } else {
            let p = Placement::decode(&inode.layout)?;
            let backends = p.fsids.iter().map(|id| self.fs.backend(*id)).collect();
            Some(
                FileReader::new(p, inode.ino, inode.size, backends)?
                    .with_pool(Arc::clone(&self.read_pool)),
            )
        };
        Ok(ReadSession {
            inode,
            reader,
            seen: Arc::clone(&self.read_errors),
        })
    }
}

impl Core {
    /// Set a file's size (blocking): shorter keeps the first `size` bytes,
    /// longer appends zeros. The file is rewritten under the same rules as
    /// any write (permissions, quota, layout) and replaced in one step.
    pub fn truncate(&self, who: &Identity, path: &NsPath, size: u64) -> Result<Inode, CoreError> {
        let old = self.meta.stat(path)?;
        if old.is_dir() {
            return Err(tessera_meta::MetaError::IsADirectory(path.display()).into());
        }
        if old.size == size {
            return Ok(old);
        }
        let src = if size > 0 && old.size > 0 {
            Some(self.open_read(who, path)?)
        } else {
            None
        };
        let mut w = self.open_write(who, path, old.mode, true, size)?;
        let chunk = 8u64 << 20;
        let mut pos = 0u64;
        let mut buf = vec![0u8; chunk as usize];
        while pos < size {
            let n = chunk.min(size - pos) as usize;
            let got = match &src {
                Some(r) if pos < old.size => r.read_at(pos, &mut buf[..n])?,
                _ => 0,
            };
            buf[got..n].fill(0);
            w.write(&buf[..n])?;
            pos += n as u64;
        }
        w.close()
    }
}
