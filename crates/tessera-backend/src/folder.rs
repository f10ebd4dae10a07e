//! A backend that is a directory: a CephFS mount (ceph-fuse or the kernel
//! client) or, in dev mode, a local folder.

use crate::dirsync::DirSyncer;
use crate::*;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::folder_stripe::{FolderRead, FolderWrite, Naming};
use crate::marker::MARKER;

pub struct FolderBackend {
    root: PathBuf,
    dirsync: Arc<DirSyncer>,
}

impl FolderBackend {
    /// Make `root` (created if missing) a filesystem: write the marker.
    pub fn format(root: impl Into<PathBuf>) -> Result<FolderBackend, BackendError> {
        let root = root.into();
        std::fs::create_dir_all(&root)
            .map_err(|e| BackendError::io(root.display().to_string(), e))?;
        let marker = root.join(MARKER);
        if !marker.exists() {
            std::fs::write(&marker, b"tessera stripe folder, format 1\n")
                .map_err(|e| BackendError::io(marker.display().to_string(), e))?;
        }
        Ok(FolderBackend {
            root,
            dirsync: Arc::default(),
        })
    }

    /// Use an existing filesystem folder. Opening does not check the
    /// marker (a filesystem may be down now and back later); writes,
    /// listings and capacity do.
    pub fn open(root: impl Into<PathBuf>) -> FolderBackend {
        FolderBackend {
            root: root.into(),
            dirsync: Arc::default(),
        }
    }

    /// `format` then use: for tests and tools.
    pub fn new(root: impl Into<PathBuf>) -> Result<FolderBackend, BackendError> {
        Self::format(root)
    }

    /// A folder about to be registered: it must exist and be a mount
    /// point or carry a marker, unless `create` (then it is made if
    /// missing). A path that does not exist would otherwise be made on
    /// whatever disk holds its parent.
    pub fn prepare(root: impl Into<PathBuf>, create: bool) -> Result<FolderBackend, BackendError> {
        let root = root.into();
        let shown = root.display().to_string();
        match std::fs::metadata(&root) {
            Ok(m) if !m.is_dir() => {
                return Err(BackendError::BadLocator(format!(
                    "{shown} is not a directory"
                )))
            }
            Ok(_) => {
                let marked = root.join(MARKER).is_file();
                if !create && !marked && !is_mount_point(&root) {
                    return Err(BackendError::BadLocator(format!(
                        "{shown} is neither a mount point nor a Tessera filesystem (no {MARKER}): \
                         mount the storage there, or give --create to use this directory as it is"
                    )));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
                std::fs::create_dir_all(&root).map_err(|e| BackendError::io(&shown, e))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(BackendError::BadLocator(format!(
                    "{shown} does not exist: mount the storage there first (or give --create \
                     for a dev or test folder)"
                )))
            }
            Err(e) => return Err(BackendError::io(&shown, e)),
        }
        Ok(FolderBackend::open(root))
    }

    fn check_marker(&self) -> Result<(), BackendError> {
        if self.root.join(MARKER).is_file() {
            Ok(())
        } else {
            Err(BackendError::Unavailable(format!(
                "{} has no {MARKER}: not mounted, or not a Tessera filesystem",
                self.root.display()
            )))
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, name: &StripeName) -> PathBuf {
        self.root.join(name.dir()).join(name.file())
    }

    /// Create stripe `name`: under the temporary name of `write_id`, or
    /// (`None`) under its final name.
    fn create_as(
        &self,
        name: &StripeName,
        write_id: Option<u64>,
    ) -> Result<Box<dyn StripeWrite>, BackendError> {
        let dir = self.root.join(name.dir());
        let path = match write_id {
            Some(w) => dir.join(name.temp_file(w)),
            None => dir.join(name.file()),
        };
        let create = || OpenOptions::new().write(true).create_new(true).open(&path);
        // The stripe's directory usually exists: try the file first and
        // make the directory only when it is missing (saves a mkdir and
        // two stats per stripe). Only then is the marker checked: a folder
        // whose mount has gone is an empty directory without the stripe
        // directories, and it must not get new ones.
        let file = match create() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.check_marker()?;
                std::fs::create_dir_all(&dir)
                    .map_err(|e| BackendError::io(dir.display().to_string(), e))?;
                // The new fan-out directory's own entry must last too.
                File::open(&self.root)
                    .and_then(|d| d.sync_all())
                    .map_err(|e| BackendError::io(self.root.display().to_string(), e))?;
                create()
            }
            r => r,
        }
        .map_err(|e| BackendError::io(path.display().to_string(), e))?;
        let name = match write_id {
            Some(_) => Naming::Temporary {
                dest: self.path(name),
            },
            None if names_last_with_fsync(&file) => Naming::FinalNamedByFsync,
            None => Naming::Final {
                created: self.dirsync.ticket(&dir),
            },
        };
        Ok(Box::new(FolderWrite {
            file,
            path,
            name,
            dirsync: Arc::clone(&self.dirsync),
            early: true,
            started: 0,
            end: 0,
        }))
    }
}

impl Backend for FolderBackend {
    fn create(
        &self,
        name: &StripeName,
        write_id: u64,
    ) -> Result<Box<dyn StripeWrite>, BackendError> {
        self.create_as(name, Some(write_id))
    }

    /// A new file id's stripe goes straight to its final name: no rename
    /// at the seal, and the directory fsync it needs (none on a local disk
    /// file system) is often another writer's, done between its open and
    /// its seal.
    fn create_new(
        &self,
        name: &StripeName,
        _write_id: u64,
    ) -> Result<Box<dyn StripeWrite>, BackendError> {
        self.create_as(name, None)
    }

    fn open(&self, name: &StripeName) -> Result<Box<dyn StripeRead>, BackendError> {
        let p = self.path(name);
        // A stripe not there on a folder without its marker (a mount that
        // went away) is unavailable, not missing: nothing is known of it.
        let file = match File::open(&p) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.check_marker()?;
                Err(e)
            }
            r => r,
        }
        .map_err(|e| BackendError::io(p.display().to_string(), e))?;
        Ok(Box::new(FolderRead {
            file,
            what: p.display().to_string(),
        }))
    }

    fn open_cached(&self, name: &StripeName) -> Option<Box<dyn StripeRead>> {
        use rustix::fs::{Mode, OFlags, ResolveFlags};
        // A network file system (CephFS, FUSE) may wait for its servers in
        // the open itself, whatever the kernel's caches hold.
        if !local_fs(&self.root) {
            return None;
        }
        let p = self.path(name);
        let open = |noatime| {
            rustix::fs::openat2(
                rustix::fs::CWD,
                &p,
                OFlags::RDONLY | OFlags::CLOEXEC | noatime,
                Mode::empty(),
                ResolveFlags::CACHED,
            )
        };
        // No access-time update, which could wait for the journal (allowed
        // to the files' owner only).
        let fd = match open(OFlags::NOATIME) {
            Err(rustix::io::Errno::PERM) => open(OFlags::empty()),
            r => r,
        }
        .ok()?;
        Some(Box::new(FolderRead {
            file: File::from(fd),
            what: p.display().to_string(),
        }))
    }

    fn remove(&self, name: &StripeName, write_id: Option<u64>) -> Result<(), BackendError> {
        let p = match write_id {
            Some(w) => self.root.join(name.dir()).join(name.temp_file(w)),
            None => self.path(name),
        };
        std::fs::remove_file(&p).map_err(|e| BackendError::io(p.display().to_string(), e))
    }

    fn list(&self) -> Result<Vec<ListedStripe>, BackendError> {
        self.check_marker()?;
        let err = |p: &Path, e| BackendError::io(p.display().to_string(), e);
        let mut files = Vec::new();
        for d in std::fs::read_dir(&self.root).map_err(|e| err(&self.root, e))? {
            let d = d.map_err(|e| err(&self.root, e))?;
            let is_dir = d.file_type().map(|t| t.is_dir()).unwrap_or(false);
            if !is_dir || !d.file_name().to_str().is_some_and(crate::is_fanout_dir) {
                continue;
            }
            for f in std::fs::read_dir(d.path()).map_err(|e| err(&d.path(), e))? {
                let f = f.map_err(|e| err(&d.path(), e))?;
                if let Some(name) = f.file_name().to_str() {
                    let m = f.metadata().ok();
                    files.push((
                        name.to_string(),
                        m.as_ref().map(|m| m.len()).unwrap_or(0),
                        m.and_then(|m| m.modified().ok()),
                    ));
                }
            }
        }
        Ok(crate::listing(files))
    }

    fn capacity(&self) -> Result<Capacity, BackendError> {
        self.check_marker()?;
        let s = rustix::fs::statvfs(&self.root)
            .map_err(|e| BackendError::io(self.root.display().to_string(), e.into()))?;
        Ok(Capacity {
            total_bytes: s.f_blocks.saturating_mul(s.f_frsize),
            free_bytes: s.f_bavail.saturating_mul(s.f_frsize),
        })
    }

    fn describe(&self) -> String {
        format!("folder:{}", self.root.display())
    }

    fn read_marker(&self) -> Result<Option<String>, BackendError> {
        let p = self.root.join(MARKER);
        match std::fs::read(&p) {
            Ok(b) => Ok(Some(String::from_utf8_lossy(&b).into_owned())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(BackendError::io(p.display().to_string(), e)),
        }
    }

    fn write_marker(&self, text: &str) -> Result<(), BackendError> {
        let (p, tmp) = (self.root.join(MARKER), self.root.join(".tessera-fs.new"));
        let err = |p: &Path, e| BackendError::io(p.display().to_string(), e);
        let f = File::create(&tmp).map_err(|e| err(&tmp, e))?;
        f.write_all_at(text.as_bytes(), 0)
            .map_err(|e| err(&tmp, e))?;
        f.sync_all().map_err(|e| err(&tmp, e))?;
        std::fs::rename(&tmp, &p).map_err(|e| err(&p, e))?;
        File::open(&self.root)
            .and_then(|d| d.sync_all())
            .map_err(|e| err(&self.root, e))
    }

    fn root_id(&self) -> Result<crate::RootId, BackendError> {
        use std::os::unix::fs::MetadataExt;
        let shown = self.root.display().to_string();
        let path = self
            .root
            .canonicalize()
            .map_err(|e| BackendError::io(&shown, e))?;
        let m = std::fs::metadata(&path).map_err(|e| BackendError::io(&shown, e))?;
        Ok(crate::RootId::Folder {
            path,
            dev: m.dev(),
            ino: m.ino(),
        })
    }

    /// Not on a local disk file system (CephFS through FUSE or the
    /// kernel, NFS): asked with a statfs that may itself hang, so on a
    /// thread of its own, for at most 2 s (no answer: remote).
    fn remote(&self) -> bool {
        let root = self.root.clone();
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let spawned = std::thread::Builder::new()
            .name("tessera-statfs".into())
            .spawn(move || {
                let _ = tx.send(local_fs(&root));
            });
        spawned.is_err()
            || !rx
                .recv_timeout(std::time::Duration::from_secs(2))
                .unwrap_or(false)
    }
}

/// Whether `p` is where a file system is mounted: its device differs from
/// its parent's (or it is `/`).
fn is_mount_point(p: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(c) = p.canonicalize() else {
        return false;
    };
    let Some(parent) = c.parent() else {
        return true;
    };
    match (std::fs::metadata(&c), std::fs::metadata(parent)) {
        (Ok(a), Ok(b)) => a.dev() != b.dev(),
        _ => false,
    }
}

/// Local disk file systems (`statfs` magic numbers): ext4, XFS, btrfs,
/// tmpfs.
const LOCAL_FS: [u32; 4] = [0xEF53, 0x5846_5342, 0x9123_683E, 0x0102_1994];

/// Whether `root` is on a local disk file system, where an open or read
/// that finds everything in the kernel's caches does not wait.
fn local_fs(root: &Path) -> bool {
    rustix::fs::statfs(root).is_ok_and(|s| is_local(&s))
}

fn is_local(s: &rustix::fs::StatFs) -> bool {
    LOCAL_FS.contains(&(s.f_type as u32))
}

/// Whether `file`, just created, is on a file system whose fsync of a new
/// file also makes the file's directory entry durable. ext4 (with a
/// journal, the fsync commits the transaction holding the create, entry
/// included; without one, it syncs the parent of a new inode), XFS (the
/// fsync forces the log past the create, one transaction with the entry)
/// and btrfs (its fsync logs a new inode's names) do; tmpfs keeps nothing
/// over a restart either way. Anything else (CephFS, FUSE, NFS) gets the
/// directory fsync.
pub(crate) fn names_last_with_fsync(file: &File) -> bool {
    rustix::fs::fstatfs(file).is_ok_and(|s| is_local(&s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_seal_read_list_remove() {
        let d = tempfile::tempdir().expect("tmp");
        let b = FolderBackend::new(d.path().join("fs1")).expect("backend");
        let n = StripeName::new(42, 3);
        let mut w = b.create(&n, 7).expect("create");
        w.write_at(0, b"hello").expect("write");
        w.write_at(10, b"world").expect("write");
        assert_eq!(b.list().expect("list")[0].temp_of_write, Some(7));
        assert!(matches!(b.open(&n), Err(BackendError::NotFound(_))));
        w.seal().expect("seal");
        let r = b.open(&n).expect("open");
        let mut buf = [0u8; 32];
        assert_eq!(r.read_at(0, &mut buf).expect("read"), 15);
        assert_eq!(&buf[10..15], b"world");
        assert_eq!(&buf[5..10], &[0u8; 5]);
        let l = b.list().expect("list");
        assert_eq!(l.len(), 1);
        assert_eq!((l[0].name, l[0].temp_of_write, l[0].bytes), (n, None, 15));
        assert!(b.capacity().expect("statfs").total_bytes > 0);
        // Without the marker (a mount that went away) nothing is written.
        let gone = FolderBackend::open(d.path().join("not-mounted"));
        assert!(matches!(
            gone.create(&n, 9),
            Err(BackendError::Unavailable(_))
        ));
        assert!(!d.path().join("not-mounted").exists());
        let w2 = b.create(&StripeName::new(43, 0), 8).expect("create");
        w2.abort();
        b.remove(&n, None).expect("remove");
        assert!(b.list().expect("list").is_empty());
    }

    /// On a local disk file system a new stripe's seal needs no directory
    /// fsync (its own fsync makes the name durable); a replacement written
    /// under a temporary name and renamed does.
    #[test]
    fn new_stripes_on_local_disks_skip_the_directory_fsync() {
        let d = tempfile::tempdir().expect("tmp");
        let b = FolderBackend::new(d.path().join("fs1")).expect("backend");
        let n = StripeName::new(11, 2);
        let mut w = b.create_new(&n, 1).expect("create");
        w.write_at(0, b"new").expect("write");
        w.seal().expect("seal");
        assert_eq!(b.dirsync.dirs_tracked(), 0);
        let mut r = b.create(&n, 2).expect("create");
        r.write_at(0, b"replaced").expect("write");
        r.seal().expect("seal");
        assert_eq!(b.dirsync.dirs_tracked(), 1);
        let mut buf = [0u8; 16];
        let got = b
            .open(&n)
            .expect("open")
            .read_at(0, &mut buf)
            .expect("read");
        assert_eq!(&buf[..got], b"replaced");
        assert!(names_last_with_fsync(
            &File::open(b.path(&n)).expect("open")
        ));
        // Not on a local disk (here: procfs): the directory is synced.
        assert!(!names_last_with_fsync(
            &File::open("/proc/self/status").expect("open")
        ));
    }

    /// What an async caller may do in line: open and read a stripe the
    /// kernel holds in memory; anything that would wait steps aside.
    #[test]
    fn opens_and_reads_from_memory_or_steps_aside() {
        let d = tempfile::tempdir().expect("tmp");
        let b = FolderBackend::new(d.path().join("fs1")).expect("backend");
        let n = StripeName::new(7, 0);
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let mut w = b.create(&n, 1).expect("create");
        w.write_at(0, &data).expect("write");
        w.seal().expect("seal");
        // Just written: path and pages are cached.
        let r = b.open_cached(&n).expect("cached open");
        let mut buf = vec![0u8; 400_000];
        assert_eq!(r.read_cached(1000, &mut buf), Some(data.len() - 1000));
        assert_eq!(&buf[..data.len() - 1000], &data[1000..]);
        // A stripe that is not there: the ordinary open says what is wrong.
        assert!(b.open_cached(&StripeName::new(8, 0)).is_none());
        // Pages dropped from the page cache (clean: the seal synced them):
        // the read steps aside instead of waiting for the disk.
        // (The kernel may keep a page a moment longer, e.g. still under
        // writeback on a busy machine: ask again, briefly.)
        let f = File::open(b.path(&n)).expect("open");
        let mut stepped_aside = false;
        for _ in 0..50 {
            rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed).expect("fadvise");
            if r.read_cached(0, &mut buf[..4096]).is_none() {
                stepped_aside = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(
            stepped_aside,
            "pages out of the cache: the read steps aside"
        );
        assert_eq!(r.read_at(0, &mut buf[..4096]).expect("read"), 4096);
        assert_eq!(&buf[..4096], &data[..4096]);
        // A network file system is never tried (here: not a local one).
        assert!(local_fs(d.path()));
        assert!(!local_fs(Path::new("/proc")));
    }
}
