//! The native CephFS backend: libcephfs (Debian `libcephfs-dev`), no mount.
//! Locator: `cephfs:<ceph.conf path>:<file system name>:<directory>`.
#![allow(unsafe_code)] // FFI to libcephfs; every call is wrapped below

use crate::*;
use std::ffi::{c_char, c_int, CStr, CString};
use std::io;

#[repr(C)]
struct MountInfo {
    _private: [u8; 0],
}
#[repr(C)]
struct DirResult {
    _private: [u8; 0],
}

/// `struct ceph_statx` (cephfs/ceph_ll_client.h): the C layout, of which
/// only the size and mtime are read.
#[repr(C)]
#[allow(dead_code)]
struct CephStatx {
    stx_mask: u32,
    stx_blksize: u32,
    stx_nlink: u32,
    stx_uid: u32,
    stx_gid: u32,
    stx_mode: u16,
    stx_ino: u64,
    stx_size: u64,
    stx_blocks: u64,
    stx_dev: libc::dev_t,
    stx_rdev: libc::dev_t,
    stx_atime: libc::timespec,
    stx_ctime: libc::timespec,
    stx_mtime: libc::timespec,
    stx_btime: libc::timespec,
    stx_version: u64,
}
const CEPH_STATX_MTIME: u32 = 0x40;
const CEPH_STATX_SIZE: u32 = 0x200;

#[link(name = "cephfs")]
extern "C" {
    fn ceph_statx(
        cmount: *mut MountInfo,
        path: *const c_char,
        stx: *mut CephStatx,
        want: u32,
        flags: u32,
    ) -> c_int;
    fn ceph_create(cmount: *mut *mut MountInfo, id: *const c_char) -> c_int;
    fn ceph_conf_read_file(cmount: *mut MountInfo, path: *const c_char) -> c_int;
    fn ceph_conf_get(
        cmount: *mut MountInfo,
        option: *const c_char,
        buf: *mut c_char,
        len: libc::size_t,
    ) -> c_int;
    fn ceph_select_filesystem(cmount: *mut MountInfo, fs_name: *const c_char) -> c_int;
    fn ceph_mount(cmount: *mut MountInfo, root: *const c_char) -> c_int;
    fn ceph_unmount(cmount: *mut MountInfo) -> c_int;
    fn ceph_release(cmount: *mut MountInfo) -> c_int;
    fn ceph_statfs(cmount: *mut MountInfo, path: *const c_char, st: *mut libc::statvfs) -> c_int;
    fn ceph_opendir(
        cmount: *mut MountInfo,
        name: *const c_char,
        dirpp: *mut *mut DirResult,
    ) -> c_int;
    fn ceph_readdir(cmount: *mut MountInfo, dirp: *mut DirResult) -> *mut libc::dirent;
    fn ceph_closedir(cmount: *mut MountInfo, dirp: *mut DirResult) -> c_int;
    fn ceph_mkdirs(cmount: *mut MountInfo, path: *const c_char, mode: libc::mode_t) -> c_int;
    fn ceph_unlink(cmount: *mut MountInfo, path: *const c_char) -> c_int;
    fn ceph_rename(cmount: *mut MountInfo, from: *const c_char, to: *const c_char) -> c_int;
    fn ceph_open(
        cmount: *mut MountInfo,
        path: *const c_char,
        flags: c_int,
        mode: libc::mode_t,
    ) -> c_int;
    fn ceph_close(cmount: *mut MountInfo, fd: c_int) -> c_int;
    fn ceph_read(
        cmount: *mut MountInfo,
        fd: c_int,
        buf: *mut c_char,
        size: i64,
        offset: i64,
    ) -> c_int;
    fn ceph_write(
        cmount: *mut MountInfo,
        fd: c_int,
        buf: *const c_char,
        size: i64,
        offset: i64,
    ) -> c_int;
    fn ceph_fsync(cmount: *mut MountInfo, fd: c_int, syncdataonly: c_int) -> c_int;
    fn ceph_lseek(cmount: *mut MountInfo, fd: c_int, offset: i64, whence: c_int) -> i64;
}

/// A mounted libcephfs client. libcephfs serialises calls on one mount
/// internally, so the handle may be shared between threads.
struct Mount(*mut MountInfo);
// SAFETY: a libcephfs mount handle is safe to use from several threads.
unsafe impl Send for Mount {}
// SAFETY: as above.
unsafe impl Sync for Mount {}

impl Drop for Mount {
    fn drop(&mut self) {
        // SAFETY: the handle came from ceph_create and is released once.
        unsafe {
            ceph_unmount(self.0);
            ceph_release(self.0);
        }
    }
}

fn cstr(s: &str) -> Result<CString, BackendError> {
    CString::new(s).map_err(|_| BackendError::BadLocator(format!("NUL in {s:?}")))
}

fn check(what: &str, rc: c_int) -> Result<c_int, BackendError> {
    if rc < 0 {
        Err(BackendError::io(what, io::Error::from_raw_os_error(-rc)))
    } else {
        Ok(rc)
    }
}

pub struct CephFsBackend {
    mount: Arc<Mount>,
    fs: String,
    root: String,
    /// The cluster: its fsid from the configuration, else the
    /// configuration file's canonical path.
    cluster_key: String,
}

use std::sync::Arc;

impl CephFsBackend {
    /// Connect with `conf`, select file system `fs`, and use directory
    /// `root` in it (created, with its marker, when `format`).
    pub fn connect(
        conf: &str,
        fs: &str,
        root: &str,
        format: bool,
    ) -> Result<CephFsBackend, BackendError> {
        if !root.starts_with('/') {
            return Err(BackendError::BadLocator(format!(
                "directory must be absolute: {root}"
            )));
        }
        let mut m: *mut MountInfo = std::ptr::null_mut();
        // SAFETY: ceph_create writes a new handle into `m`.
        check("ceph_create", unsafe {
            ceph_create(&mut m, std::ptr::null())
        })?;
        let mount = Mount(m);
        let c = cstr(conf)?;
        let f = cstr(fs)?;
        let slash = cstr("/")?;
        // SAFETY: `mount.0` is a created, not yet mounted handle; strings are NUL-terminated.
        unsafe {
            check(
                "ceph_conf_read_file",
                ceph_conf_read_file(mount.0, c.as_ptr()),
            )?;
            check(
                "ceph_select_filesystem",
                ceph_select_filesystem(mount.0, f.as_ptr()),
            )?;
            check("ceph_mount", ceph_mount(mount.0, slash.as_ptr()))
                .map_err(|e| BackendError::Unavailable(format!("cephfs {fs}: {e}")))?;
        }
        let mut buf = vec![0u8; 128];
        let key = cstr("fsid")?;
        // SAFETY: valid mount; `buf` has the length given.
        let rc =
            unsafe { ceph_conf_get(mount.0, key.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        let fsid = if rc == 0 {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            String::from_utf8_lossy(&buf[..end]).into_owned()
        } else {
            String::new()
        };
        let cluster_key = if fsid.is_empty() {
            std::fs::canonicalize(conf)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| conf.to_string())
        } else {
            fsid
        };
        let b = CephFsBackend {
            mount: Arc::new(mount),
            fs: fs.to_string(),
            root: root.trim_end_matches('/').to_string(),
            cluster_key,
        };
        if format {
            b.mkdirs(&b.root)?;
            let marker = format!("{}/{}", b.root, crate::MARKER);
            let fd = b.open_fd(&marker, libc::O_CREAT | libc::O_WRONLY, 0o644)?;
            let w = CephWrite {
                mount: Arc::clone(&b.mount),
                fd,
                temp: String::new(),
                dest: String::new(),
                dir: String::new(),
            };
            w.write_all(0, b"tessera stripe folder, format 1\n")?;
            w.close();
        }
        Ok(b)
    }

    fn m(&self) -> *mut MountInfo {
        self.mount.0
    }

    fn mkdirs(&self, path: &str) -> Result<(), BackendError> {
        let p = cstr(path)?;
        // SAFETY: valid mount and path.
        match unsafe { ceph_mkdirs(self.m(), p.as_ptr(), 0o755) } {
            rc if rc >= 0 || rc == -libc::EEXIST => Ok(()),
            rc => check(path, rc).map(|_| ()),
        }
    }

    fn open_fd(&self, path: &str, flags: c_int, mode: libc::mode_t) -> Result<c_int, BackendError> {
        let p = cstr(path)?;
        // SAFETY: valid mount and path.
        check(path, unsafe {
            ceph_open(self.m(), p.as_ptr(), flags, mode)
        })
    }

    fn check_marker(&self) -> Result<(), BackendError> {
        let marker = format!("{}/{}", self.root, crate::MARKER);
        match self.open_fd(&marker, libc::O_RDONLY, 0) {
            Ok(fd) => {
                // SAFETY: fd was just opened on this mount.
                unsafe { ceph_close(self.m(), fd) };
                Ok(())
            }
            Err(_) => Err(BackendError::Unavailable(format!(
                "cephfs {}:{} has no {}",
                self.fs,
                self.root,
                crate::MARKER
            ))),
        }
    }

    fn path(&self, name: &StripeName) -> String {
        format!("{}/{}/{}", self.root, name.dir(), name.file())
    }

    fn read_dir(&self, path: &str) -> Result<Vec<String>, BackendError> {
        let p = cstr(path)?;
        let mut d: *mut DirResult = std::ptr::null_mut();
        // SAFETY: valid mount and path; `d` receives the directory handle.
        check(path, unsafe { ceph_opendir(self.m(), p.as_ptr(), &mut d) })?;
        let mut out = Vec::new();
        loop {
            // SAFETY: `d` is an open directory of this mount; the entry is
            // valid until the next readdir/closedir, and copied out at once.
            let e = unsafe { ceph_readdir(self.m(), d) };
            if e.is_null() {
                break;
            }
            // SAFETY: d_name is a NUL-terminated array inside the entry.
            let name = unsafe { CStr::from_ptr((*e).d_name.as_ptr()) }
                .to_string_lossy()
                .into_owned();
            if name != "." && name != ".." {
                out.push(name);
            }
        }
        // SAFETY: closes the handle opened above.
        unsafe { ceph_closedir(self.m(), d) };
        Ok(out)
    }

    /// The root directory about to be registered: it must exist (a
    /// directory) unless `create`, which makes it.
    pub fn prepare_root(&self, create: bool) -> Result<(), BackendError> {
        let r = cstr(&self.root)?;
        // SAFETY: valid mount and path; the fd is closed right after.
        let fd = unsafe { ceph_open(self.m(), r.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY, 0) };
        if fd >= 0 {
            // SAFETY: fd is an open directory of this mount.
            unsafe { ceph_close(self.m(), fd) };
            return Ok(());
        }
        if fd == -libc::ENOENT && create {
            return self.mkdirs(&self.root);
        }
        Err(BackendError::BadLocator(format!(
            "cephfs {}:{}: {} (give --create to make it)",
            self.fs,
            self.root,
            io::Error::from_raw_os_error(-fd)
        )))
    }

    /// A small file's whole content (`None`: it does not exist).
    fn read_small(&self, path: &str) -> Result<Option<Vec<u8>>, BackendError> {
        let fd = match self.open_fd(path, libc::O_RDONLY, 0) {
            Ok(fd) => fd,
            Err(BackendError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        let r = CephRead {
            mount: Arc::clone(&self.mount),
            fd,
            what: path.to_string(),
        };
        let mut buf = vec![0u8; 4096];
        let n = r.read_at(0, &mut buf)?;
        buf.truncate(n);
        Ok(Some(buf))
    }

    /// A file's size and last modification.
    fn stat_file(&self, path: &str) -> Result<(u64, std::time::SystemTime), BackendError> {
        let c = cstr(path)?;
        // SAFETY: CephStatx is plain data; ceph_statx fills it.
        let mut st: CephStatx = unsafe { std::mem::zeroed() };
        // SAFETY: valid mount, path and output struct.
        check(path, unsafe {
            ceph_statx(
                self.m(),
                c.as_ptr(),
                &mut st,
                CEPH_STATX_SIZE | CEPH_STATX_MTIME,
                0,
            )
        })?;
        let mtime = std::time::UNIX_EPOCH
            + std::time::Duration::new(
                st.stx_mtime.tv_sec.max(0) as u64,
                st.stx_mtime.tv_nsec.clamp(0, 999_999_999) as u32,
            );
        Ok((st.stx_size, mtime))
    }
}

struct CephWrite {
    mount: Arc<Mount>,
    fd: c_int,
    temp: String,
    dest: String,
    dir: String,
}

impl CephWrite {
    fn write_all(&self, mut off: u64, mut data: &[u8]) -> Result<(), BackendError> {
        while !data.is_empty() {
            let n = data.len().min(1 << 30);
            // SAFETY: `data[..n]` is readable; fd is open for writing.
            let rc = unsafe {
                ceph_write(
                    self.mount.0,
                    self.fd,
                    data.as_ptr().cast(),
                    n as i64,
                    off as i64,
                )
            };
            let w = check(&self.temp, rc)? as usize;
            if w == 0 {
                return Err(BackendError::io(
                    &self.temp,
                    io::Error::from(io::ErrorKind::WriteZero),
                ));
            }
            data = &data[w..];
            off += w as u64;
        }
        Ok(())
    }

    fn close(&self) {
        // SAFETY: fd is open on this mount and closed once (by seal/abort/close).
        unsafe { ceph_close(self.mount.0, self.fd) };
    }
}

impl StripeWrite for CephWrite {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), BackendError> {
        self.write_all(offset, data)
    }

    fn seal(self: Box<Self>) -> Result<(), BackendError> {
        let m = self.mount.0;
        // SAFETY: fd is open on this mount.
        let rc = unsafe { ceph_fsync(m, self.fd, 0) };
        self.close();
        check(&self.temp, rc)?;
        let (t, d) = (cstr(&self.temp)?, cstr(&self.dest)?);
        // SAFETY: valid mount and paths.
        check(&self.temp, unsafe {
            ceph_rename(m, t.as_ptr(), d.as_ptr())
        })?;
        // Make the rename durable: fsync the directory.
        let dir = cstr(&self.dir)?;
        // SAFETY: valid mount and path; the fd is closed right after.
        let fd = unsafe { ceph_open(m, dir.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY, 0) };
        if fd >= 0 {
            // SAFETY: fd is an open directory of this mount.
            let rc = unsafe { ceph_fsync(m, fd, 0) };
            // SAFETY: as above.
            unsafe { ceph_close(m, fd) };
            check(&self.dir, rc)?;
        }
        Ok(())
    }

    fn abort(self: Box<Self>) {
        self.close();
        if let Ok(t) = cstr(&self.temp) {
            // SAFETY: valid mount and path.
            unsafe { ceph_unlink(self.mount.0, t.as_ptr()) };
        }
    }
}

struct CephRead {
    mount: Arc<Mount>,
    fd: c_int,
    what: String,
}

impl Drop for CephRead {
    fn drop(&mut self) {
        // SAFETY: fd is open on this mount and closed once.
        unsafe { ceph_close(self.mount.0, self.fd) };
    }
}

impl StripeRead for CephRead {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize, BackendError> {
        let mut done = 0;
        while done < buf.len() {
            let n = (buf.len() - done).min(1 << 30);
            // SAFETY: buf[done..done+n] is writable; fd is open for reading.
            let rc = unsafe {
                ceph_read(
                    self.mount.0,
                    self.fd,
                    buf[done..].as_mut_ptr().cast(),
                    n as i64,
                    (offset + done as u64) as i64,
                )
            };
            let r = check(&self.what, rc)? as usize;
            if r == 0 {
                break;
            }
            done += r;
        }
        Ok(done)
    }

    fn len(&self) -> Result<u64, BackendError> {
        // SAFETY: fd is open on this mount; the position is not used by reads.
        let len = unsafe { ceph_lseek(self.mount.0, self.fd, 0, libc::SEEK_END) };
        if len < 0 {
            return check(&self.what, len as c_int).map(|_| 0);
        }
        Ok(len as u64)
    }
}

impl Backend for CephFsBackend {
    fn create(
        &self,
        name: &StripeName,
        write_id: u64,
    ) -> Result<Box<dyn StripeWrite>, BackendError> {
        self.check_marker()?;
        let dir = format!("{}/{}", self.root, name.dir());
        self.mkdirs(&dir)?;
        let temp = format!("{dir}/{}", name.temp_file(write_id));
        let fd = self.open_fd(&temp, libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY, 0o644)?;
        Ok(Box::new(CephWrite {
            mount: Arc::clone(&self.mount),
            fd,
            temp,
            dest: self.path(name),
            dir,
        }))
    }

    fn open(&self, name: &StripeName) -> Result<Box<dyn StripeRead>, BackendError> {
        let p = self.path(name);
        let fd = self.open_fd(&p, libc::O_RDONLY, 0)?;
        Ok(Box::new(CephRead {
            mount: Arc::clone(&self.mount),
            fd,
            what: p,
        }))
    }

    fn remove(&self, name: &StripeName, write_id: Option<u64>) -> Result<(), BackendError> {
        let p = match write_id {
            Some(w) => format!("{}/{}/{}", self.root, name.dir(), name.temp_file(w)),
            None => self.path(name),
        };
        let c = cstr(&p)?;
        // SAFETY: valid mount and path.
        check(&p, unsafe { ceph_unlink(self.m(), c.as_ptr()) }).map(|_| ())
    }

    fn list(&self) -> Result<Vec<ListedStripe>, BackendError> {
        self.check_marker()?;
        let mut files = Vec::new();
        for d in self
            .read_dir(&self.root)?
            .into_iter()
            .filter(|d| crate::is_fanout_dir(d))
        {
            let dir = format!("{}/{d}", self.root);
            for f in self.read_dir(&dir)? {
                let (bytes, modified) = match self.stat_file(&format!("{dir}/{f}")) {
                    Ok((b, m)) => (b, Some(m)),
                    Err(_) => (0, None),
                };
                files.push((f, bytes, modified));
            }
        }
        Ok(crate::listing(files))
    }

    fn capacity(&self) -> Result<Capacity, BackendError> {
        self.check_marker()?;
        let p = cstr(&self.root)?;
        // SAFETY: statvfs is plain data; ceph_statfs fills it.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: valid mount, path and output struct.
        check(&self.root, unsafe {
            ceph_statfs(self.m(), p.as_ptr(), &mut st)
        })?;
        Ok(Capacity {
            total_bytes: st.f_blocks.saturating_mul(st.f_frsize),
            free_bytes: st.f_bavail.saturating_mul(st.f_frsize),
        })
    }

    fn describe(&self) -> String {
        format!("cephfs:{}:{}", self.fs, self.root)
    }

    fn read_marker(&self) -> Result<Option<String>, BackendError> {
        let p = format!("{}/{}", self.root, crate::MARKER);
        Ok(self
            .read_small(&p)?
            .map(|b| String::from_utf8_lossy(&b).into_owned()))
    }

    fn write_marker(&self, text: &str) -> Result<(), BackendError> {
        let dest = format!("{}/{}", self.root, crate::MARKER);
        let temp = format!("{}/.tessera-fs.new", self.root);
        let fd = self.open_fd(&temp, libc::O_CREAT | libc::O_TRUNC | libc::O_WRONLY, 0o644)?;
        let w = Box::new(CephWrite {
            mount: Arc::clone(&self.mount),
            fd,
            temp,
            dest,
            dir: self.root.clone(),
        });
        w.write_all(0, text.as_bytes())?;
        w.seal()
    }

    fn root_id(&self) -> Result<crate::RootId, BackendError> {
        Ok(crate::RootId::Ceph {
            fsid: self.cluster_key.clone(),
            fs: self.fs.clone(),
            dir: self.root.clone(),
        })
    }

    fn remote(&self) -> bool {
        true
    }
}
