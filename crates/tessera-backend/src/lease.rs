//! A leader lease on a RADOS object (issue 27, first part): an exclusive
//! `cls_lock` lock with a duration, renewed by its holder, and the fencing
//! of a previous holder by blocklisting its Ceph client. The holder writes
//! its client address into an xattr of the lease object when it takes the
//! lease (an expired lock's entry is dropped by the OSD, so the address
//! could not be read from the lock afterwards); whoever takes the lease
//! next blocklists that address before it acts.
#![allow(unsafe_code)] // FFI to librados; every call is wrapped below

use crate::cluster::{check, cstr, CephCluster, RadosT};
use crate::BackendError;
use std::ffi::{c_char, c_int, CStr};
use std::time::Duration;

#[repr(C)]
struct IoCtxT {
    _private: [u8; 0],
}

#[repr(C)]
struct Timeval {
    tv_sec: libc::time_t,
    tv_usec: libc::suseconds_t,
}

#[link(name = "rados")]
extern "C" {
    fn rados_ioctx_create(cluster: *mut RadosT, pool: *const c_char, io: *mut *mut IoCtxT)
        -> c_int;
    fn rados_ioctx_destroy(io: *mut IoCtxT);
    fn rados_lock_exclusive(
        io: *mut IoCtxT,
        oid: *const c_char,
        name: *const c_char,
        cookie: *const c_char,
        desc: *const c_char,
        duration: *mut Timeval,
        flags: u8,
    ) -> c_int;
    fn rados_unlock(
        io: *mut IoCtxT,
        oid: *const c_char,
        name: *const c_char,
        cookie: *const c_char,
    ) -> c_int;
    fn rados_setxattr(
        io: *mut IoCtxT,
        oid: *const c_char,
        name: *const c_char,
        buf: *const c_char,
        len: usize,
    ) -> c_int;
    fn rados_getxattr(
        io: *mut IoCtxT,
        oid: *const c_char,
        name: *const c_char,
        buf: *mut c_char,
        len: usize,
    ) -> c_int;
    fn rados_getaddrs(cluster: *mut RadosT, addrs: *mut *mut c_char) -> c_int;
    fn rados_blocklist_add(cluster: *mut RadosT, addr: *mut c_char, expire_seconds: u32) -> c_int;
    fn rados_buffer_free(buf: *mut c_char);
}

/// `LIBRADOS_LOCK_FLAG_MUST_RENEW`: renew only a lock this client holds.
const MUST_RENEW: u8 = 1 << 1;
const LOCK_NAME: &str = "tessera.lease";
const HOLDER_XATTR: &str = "tessera.holder";

/// What an attempt to take the lease found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// Taken; the previous holder's client address, if one was recorded
    /// (to be fenced before anything else is done).
    Yes { previous: Option<String> },
    /// Another client holds it and its duration has not run out.
    Busy,
}

/// One node's handle on the lease object: its own Ceph client.
pub struct RadosLease {
    cluster: CephCluster,
    io: *mut IoCtxT,
    oid: std::ffi::CString,
    cookie: std::ffi::CString,
    duration: Duration,
}

// SAFETY: librados handles may be used from several threads.
unsafe impl Send for RadosLease {}
// SAFETY: as above.
unsafe impl Sync for RadosLease {}

impl Drop for RadosLease {
    fn drop(&mut self) {
        // SAFETY: the context came from rados_ioctx_create, destroyed once,
        // before its cluster handle (dropped after this).
        unsafe { rados_ioctx_destroy(self.io) };
    }
}

impl RadosLease {
    /// A new Ceph client (as client.admin with `conf`) on object `oid` of
    /// `pool`, holding leases of `duration`; `cookie` names this node.
    pub fn connect(
        conf: &str,
        pool: &str,
        oid: &str,
        cookie: &str,
        duration: Duration,
    ) -> Result<RadosLease, BackendError> {
        let cluster = CephCluster::connect(conf)?;
        let p = cstr(pool)?;
        let mut io = std::ptr::null_mut();
        // SAFETY: a connected handle; `io` receives a new context.
        check("rados_ioctx_create", unsafe {
            rados_ioctx_create(cluster.handle(), p.as_ptr(), &mut io)
        })?;
        Ok(RadosLease {
            cluster,
            io,
            oid: cstr(oid)?,
            cookie: cstr(cookie)?,
            duration,
        })
    }

    /// This client's address as the OSDs see it (what a blocklist names).
    pub fn address(&self) -> Result<String, BackendError> {
        let mut out: *mut c_char = std::ptr::null_mut();
        // SAFETY: librados allocates a NUL-terminated string, freed below.
        check("rados_getaddrs", unsafe {
            rados_getaddrs(self.cluster.handle(), &mut out)
        })?;
        // SAFETY: as above.
        let s = unsafe { CStr::from_ptr(out) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: returned by rados_getaddrs, freed once.
        unsafe { rados_buffer_free(out) };
        Ok(s)
    }

    fn lock(&self, flags: u8) -> c_int {
        // The whole duration, both fields set (see the issue: Ceph 16's own
        // Python binding leaves tv_usec unset).
        let mut tv = Timeval {
            tv_sec: self.duration.as_secs() as libc::time_t,
            tv_usec: self.duration.subsec_micros() as libc::suseconds_t,
        };
        let (name, desc) = (
            cstr(LOCK_NAME).expect("no NUL"),
            cstr("tessera metadata service lease").expect("no NUL"),
        );
        // SAFETY: NUL-terminated strings and a timeval that outlive the call.
        unsafe {
            rados_lock_exclusive(
                self.io,
                self.oid.as_ptr(),
                name.as_ptr(),
                self.cookie.as_ptr(),
                desc.as_ptr(),
                &mut tv,
                flags,
            )
        }
    }

    /// Try to take the lease. On success this node's address is recorded
    /// on the object and the one recorded before (the previous holder's,
    /// unless it was this node) is returned for fencing.
    pub fn acquire(&self) -> Result<Taken, BackendError> {
        self.acquire_with(&[])
    }

    /// The same, recording `also` (the addresses of this node's other Ceph
    /// clients: its namespace mount) after its own, all to be fenced by
    /// the next holder: `previous` is then every address recorded before,
    /// separated by spaces.
    pub fn acquire_with(&self, also: &[String]) -> Result<Taken, BackendError> {
        let rc = self.lock(0);
        if rc == -libc::EBUSY {
            return Ok(Taken::Busy);
        }
        if rc != -libc::EEXIST {
            check("rados_lock_exclusive", rc)?;
        }
        let me = self.address()?;
        let previous = self
            .holder()?
            .filter(|p| p.split_whitespace().next() != Some(me.as_str()));
        let mut record = me;
        for a in also {
            record.push(' ');
            record.push_str(a);
        }
        self.set_holder(&record)?;
        Ok(Taken::Yes { previous })
    }

    /// Renew the lease this node holds (an error: it is not held any more,
    /// or this client is fenced: stop acting at once).
    pub fn renew(&self) -> Result<(), BackendError> {
        check("renewing the lease", self.lock(MUST_RENEW))
    }

    /// Give the lease up.
    pub fn release(&self) -> Result<(), BackendError> {
        let name = cstr(LOCK_NAME)?;
        // SAFETY: NUL-terminated strings that outlive the call.
        check("rados_unlock", unsafe {
            rados_unlock(
                self.io,
                self.oid.as_ptr(),
                name.as_ptr(),
                self.cookie.as_ptr(),
            )
        })
    }

    /// Fence a client: the OSDs refuse its operations for `expire` (its
    /// session ends with EBLOCKLISTED).
    pub fn blocklist(&self, addr: &str, expire: Duration) -> Result<(), BackendError> {
        let a = cstr(addr)?;
        let secs = expire.as_secs().clamp(1, u32::MAX as u64) as u32;
        // SAFETY: librados reads the NUL-terminated address.
        check("rados_blocklist_add", unsafe {
            rados_blocklist_add(self.cluster.handle(), a.as_ptr() as *mut c_char, secs)
        })
    }

    /// The address the last holder recorded, if any.
    pub fn holder(&self) -> Result<Option<String>, BackendError> {
        self.xattr(HOLDER_XATTR)
    }

    fn xattr(&self, name: &str) -> Result<Option<String>, BackendError> {
        let name = cstr(name)?;
        let mut buf = vec![0u8; 4096];
        // SAFETY: `buf` has `len` writable bytes.
        let n = unsafe {
            rados_getxattr(
                self.io,
                self.oid.as_ptr(),
                name.as_ptr(),
                buf.as_mut_ptr().cast::<c_char>(),
                buf.len(),
            )
        };
        if n == -libc::ENODATA || n == -libc::ENOENT {
            return Ok(None);
        }
        check("rados_getxattr", n)?;
        buf.truncate(n as usize);
        Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
    }

    fn set_holder(&self, addr: &str) -> Result<(), BackendError> {
        self.set_xattr(HOLDER_XATTR, addr)
    }

    fn set_xattr(&self, name: &str, value: &str) -> Result<(), BackendError> {
        let name = cstr(name)?;
        // SAFETY: `value` has `len` readable bytes.
        check("rados_setxattr", unsafe {
            rados_setxattr(
                self.io,
                self.oid.as_ptr(),
                name.as_ptr(),
                value.as_ptr().cast::<c_char>(),
                value.len(),
            )
        })
    }

    /// The duration leases are taken for.
    pub fn duration(&self) -> Duration {
        self.duration
    }
}

const EPOCH_XATTR: &str = "tessera.epoch";
const ACTIVE_XATTR: &str = "tessera.active";

impl RadosLease {
    /// The epoch recorded on the lease object (0: none yet).
    pub fn epoch(&self) -> Result<u64, BackendError> {
        Ok(self
            .xattr(EPOCH_XATTR)?
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0))
    }

    /// Record `epoch` on the lease object (a new holder's, after fencing).
    pub fn set_epoch(&self, epoch: u64) -> Result<(), BackendError> {
        self.set_xattr(EPOCH_XATTR, &epoch.to_string())
    }

    /// What the active node of `epoch` says about itself (where clients
    /// reach it), recorded once it has fenced and set the epoch.
    pub fn set_active(&self, epoch: u64, advert: &str) -> Result<(), BackendError> {
        self.set_xattr(ACTIVE_XATTR, &format!("{epoch} {advert}"))
    }

    /// The last active node's epoch and words about itself.
    pub fn active(&self) -> Result<Option<(u64, String)>, BackendError> {
        Ok(self.xattr(ACTIVE_XATTR)?.and_then(|s| {
            let (e, rest) = s.split_once(' ').unwrap_or((s.as_str(), ""));
            Some((e.parse().ok()?, rest.to_string()))
        }))
    }
}
