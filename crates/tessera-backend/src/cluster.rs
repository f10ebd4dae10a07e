//! Watching a Ceph cluster through librados mon commands: overall health,
//! fullness, and which CephFS file systems have an active MDS. Placement
//! avoids file systems whose cluster is in error, full, or whose MDS is down.
#![allow(unsafe_code)] // FFI to librados; every call is wrapped below

use crate::BackendError;
use std::ffi::{c_char, c_int, CString};
use std::io;

#[repr(C)]
pub(crate) struct RadosT {
    _private: [u8; 0],
}

#[link(name = "rados")]
extern "C" {
    fn rados_create(cluster: *mut *mut RadosT, id: *const c_char) -> c_int;
    fn rados_conf_read_file(cluster: *mut RadosT, path: *const c_char) -> c_int;
    fn rados_conf_set(cluster: *mut RadosT, option: *const c_char, value: *const c_char) -> c_int;
    fn rados_connect(cluster: *mut RadosT) -> c_int;
    fn rados_shutdown(cluster: *mut RadosT);
    fn rados_mon_command(
        cluster: *mut RadosT,
        cmd: *mut *const c_char,
        cmdlen: usize,
        inbuf: *const c_char,
        inbuflen: usize,
        outbuf: *mut *mut c_char,
        outbuflen: *mut usize,
        outs: *mut *mut c_char,
        outslen: *mut usize,
    ) -> c_int;
    fn rados_buffer_free(buf: *mut c_char);
}

/// What a cluster reports about itself.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterStatus {
    /// HEALTH_OK, HEALTH_WARN or HEALTH_ERR.
    pub health: String,
    /// Names of the health checks that are raised.
    pub checks: Vec<String>,
    /// Those of severity HEALTH_ERR that concern the whole cluster (not
    /// one CephFS file system or its MDS: those are judged per file
    /// system, by whether it has an active MDS).
    pub cluster_errors: Vec<String>,
    /// A pool or OSD is full.
    pub full: bool,
    /// CephFS file systems and whether each has an active MDS.
    pub filesystems: Vec<(String, bool)>,
}

impl ClusterStatus {
    /// May new stripes go to file system `fs` of this cluster? Each file
    /// system on its own: one whose MDS failed (HEALTH_ERR, `FS_DEGRADED`)
    /// says nothing about the others.
    pub fn writable(&self, fs: &str) -> bool {
        self.cluster_errors.is_empty()
            && !self.full
            && self
                .filesystems
                .iter()
                .any(|(n, active)| n == fs && *active)
    }

    /// Parse the JSON of `health` and `fs dump`.
    pub fn parse(health: &str, fs_dump: &str) -> Result<ClusterStatus, BackendError> {
        let bad =
            |e: serde_json::Error| BackendError::Unavailable(format!("unexpected mon reply: {e}"));
        let h: serde_json::Value = serde_json::from_str(health).map_err(bad)?;
        let d: serde_json::Value = serde_json::from_str(fs_dump).map_err(bad)?;
        let checks: Vec<String> = h["checks"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        let full = checks
            .iter()
            .any(|c| c.contains("FULL") && !c.contains("NEARFULL"));
        // A check without a severity (older mons) counts as the overall
        // status says.
        let overall = h["status"].as_str().unwrap_or("UNKNOWN");
        let cluster_errors = h["checks"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(_, v)| v["severity"].as_str().unwrap_or(overall) == "HEALTH_ERR")
                    .map(|(k, _)| k.clone())
                    .filter(|k| !k.starts_with("FS_") && !k.starts_with("MDS_"))
                    .collect()
            })
            .unwrap_or_default();
        let filesystems = d["filesystems"]
            .as_array()
            .map(|fss| {
                fss.iter()
                    .map(|f| {
                        let m = &f["mdsmap"];
                        let name = m["fs_name"].as_str().unwrap_or_default().to_string();
                        let active = m["info"]
                            .as_object()
                            .map(|i| i.values().any(|v| v["state"] == "up:active"))
                            .unwrap_or(false);
                        (name, active)
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(ClusterStatus {
            health: h["status"].as_str().unwrap_or("UNKNOWN").to_string(),
            checks,
            cluster_errors,
            full,
            filesystems,
        })
    }
}

/// A librados connection used for mon commands only.
pub struct CephCluster {
    handle: *mut RadosT,
}

// SAFETY: a connected librados handle may be used from several threads.
unsafe impl Send for CephCluster {}
// SAFETY: as above.
unsafe impl Sync for CephCluster {}

impl Drop for CephCluster {
    fn drop(&mut self) {
        // SAFETY: the handle came from rados_create and is shut down once.
        unsafe { rados_shutdown(self.handle) };
    }
}

pub(crate) fn check(what: &str, rc: c_int) -> Result<(), BackendError> {
    if rc < 0 {
        Err(BackendError::io(what, io::Error::from_raw_os_error(-rc)))
    } else {
        Ok(())
    }
}

pub(crate) fn cstr(s: &str) -> Result<CString, BackendError> {
    CString::new(s).map_err(|_| BackendError::BadLocator(format!("NUL in {s:?}")))
}

impl CephCluster {
    /// The librados handle (for the lease's calls).
    pub(crate) fn handle(&self) -> *mut RadosT {
        self.handle
    }

    /// Connect as client.admin with `conf`; mon commands time out after 5 s.
    pub fn connect(conf: &str) -> Result<CephCluster, BackendError> {
        let mut h: *mut RadosT = std::ptr::null_mut();
        let id = cstr("admin")?;
        // SAFETY: rados_create writes a new handle into `h`.
        check("rados_create", unsafe { rados_create(&mut h, id.as_ptr()) })?;
        let c = CephCluster { handle: h };
        let path = cstr(conf)?;
        let (k1, v1) = (cstr("rados_mon_op_timeout")?, cstr("5")?);
        let (k2, v2) = (cstr("client_mount_timeout")?, cstr("10")?);
        // An OSD operation (a lease's) that gets no answer fails, not hangs.
        let (k3, v3) = (cstr("rados_osd_op_timeout")?, cstr("10")?);
        // SAFETY: a created, unconnected handle; NUL-terminated strings.
        unsafe {
            check(
                "rados_conf_read_file",
                rados_conf_read_file(c.handle, path.as_ptr()),
            )?;
            check(
                "rados_conf_set",
                rados_conf_set(c.handle, k1.as_ptr(), v1.as_ptr()),
            )?;
            check(
                "rados_conf_set",
                rados_conf_set(c.handle, k2.as_ptr(), v2.as_ptr()),
            )?;
            check(
                "rados_conf_set",
                rados_conf_set(c.handle, k3.as_ptr(), v3.as_ptr()),
            )?;
            check("rados_connect", rados_connect(c.handle))
                .map_err(|e| BackendError::Unavailable(format!("ceph cluster {conf}: {e}")))?;
        }
        Ok(c)
    }

    /// Run one mon command (JSON) and return its output.
    pub fn mon_command(&self, json: &str) -> Result<String, BackendError> {
        let cmd = cstr(json)?;
        let mut cmds = [cmd.as_ptr()];
        let (mut out, mut outlen, mut outs, mut outslen) =
            (std::ptr::null_mut(), 0usize, std::ptr::null_mut(), 0usize);
        // SAFETY: one command string; librados allocates the output
        // buffers, which are copied and freed below.
        let rc = unsafe {
            rados_mon_command(
                self.handle,
                cmds.as_mut_ptr(),
                1,
                std::ptr::null(),
                0,
                &mut out,
                &mut outlen,
                &mut outs,
                &mut outslen,
            )
        };
        let text = if out.is_null() {
            String::new()
        } else {
            // SAFETY: librados returned `outlen` valid bytes at `out`.
            let bytes = unsafe { std::slice::from_raw_parts(out.cast::<u8>(), outlen) };
            String::from_utf8_lossy(bytes).into_owned()
        };
        // SAFETY: buffers returned by rados_mon_command, freed once.
        unsafe {
            if !out.is_null() {
                rados_buffer_free(out);
            }
            if !outs.is_null() {
                rados_buffer_free(outs);
            }
        }
        check(json, rc)?;
        Ok(text)
    }

    /// Health, fullness and MDS state of every file system.
    pub fn status(&self) -> Result<ClusterStatus, BackendError> {
        let health = self.mon_command(r#"{"prefix": "health", "format": "json"}"#)?;
        let dump = self.mon_command(r#"{"prefix": "fs dump", "format": "json"}"#)?;
        ClusterStatus::parse(&health, &dump)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_health_and_fs_dump() {
        let ok = r#"{"status":"HEALTH_OK","checks":{},"mutes":[]}"#;
        let dump = r#"{"filesystems":[
            {"mdsmap":{"fs_name":"fs1","info":{"gid_4124":{"state":"up:active"}}}},
            {"mdsmap":{"fs_name":"fs2","info":{}}}]}"#;
        let s = ClusterStatus::parse(ok, dump).expect("parse");
        assert_eq!(s.health, "HEALTH_OK");
        assert!(s.writable("fs1"));
        assert!(!s.writable("fs2"), "no active MDS");
        assert!(!s.writable("fs3"), "unknown file system");
        let full = r#"{"status":"HEALTH_ERR","checks":{"POOL_FULL":{}},"mutes":[]}"#;
        let s = ClusterStatus::parse(full, dump).expect("parse");
        assert!(s.full && !s.writable("fs1"));
        let warn = r#"{"status":"HEALTH_WARN","checks":{"OSD_NEARFULL":{}},"mutes":[]}"#;
        assert!(ClusterStatus::parse(warn, dump)
            .expect("parse")
            .writable("fs1"));
        // fs2's MDS failed (`ceph fs fail fs2`): HEALTH_ERR, but fs1 is
        // as writable as before.
        let fs_err = r#"{"status":"HEALTH_ERR","checks":{
            "FS_DEGRADED":{"severity":"HEALTH_WARN"},
            "MDS_ALL_DOWN":{"severity":"HEALTH_ERR"}},"mutes":[]}"#;
        let s = ClusterStatus::parse(fs_err, dump).expect("parse");
        assert!(s.writable("fs1") && !s.writable("fs2"), "{s:?}");
        // A cluster-wide error stops every file system.
        let mon = r#"{"status":"HEALTH_ERR","checks":{
            "PG_DAMAGED":{"severity":"HEALTH_ERR"}},"mutes":[]}"#;
        assert!(!ClusterStatus::parse(mon, dump)
            .expect("parse")
            .writable("fs1"));
    }
}
