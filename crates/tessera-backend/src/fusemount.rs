//! The metadata service's own CephFS mount (issue 27): a `ceph-fuse`
//! process this node starts, with an admin socket of its own so that the
//! mount's Ceph client address can be read (it is recorded with the lease
//! and fenced by the next active node: a blocklisted mount fails every
//! write and fsync with EBLOCKLISTED, errno 108). A fenced mount is
//! useless for good: the node unmounts it and mounts afresh (a new client,
//! a new address) before it may take the lease again.

use crate::BackendError;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What to mount and where.
#[derive(Debug, Clone)]
pub struct FuseSpec {
    /// ceph.conf (monitors, keyring).
    pub conf: PathBuf,
    /// The Ceph user (`admin` for client.admin).
    pub id: String,
    /// The CephFS file system's name.
    pub fs: String,
    pub mountpoint: PathBuf,
    /// The admin socket the mount answers on.
    pub asok: PathBuf,
}

/// A running `ceph-fuse` mount, unmounted and stopped (by its PID) on drop.
pub struct FuseMount {
    child: Child,
    spec: FuseSpec,
}

fn io(what: &str, source: std::io::Error) -> BackendError {
    BackendError::Io {
        what: what.into(),
        source,
    }
}

impl FuseMount {
    /// Mount (waiting up to `wait` for the mount to appear).
    pub fn mount(spec: &FuseSpec, wait: Duration) -> Result<FuseMount, BackendError> {
        // A mount left by a previous run of this node (it died): away,
        // and its ceph-fuse stopped (by the PID that run recorded). First:
        // a dead mount makes the mountpoint unusable (ENOTCONN).
        stop_recorded(spec);
        fusermount("-uz", &spec.mountpoint);
        std::fs::create_dir_all(&spec.mountpoint).map_err(|e| io("the mountpoint", e))?;
        let _ = std::fs::remove_file(&spec.asok);
        let child = Command::new("ceph-fuse")
            .arg("-f")
            .arg("-c")
            .arg(&spec.conf)
            .arg("--id")
            .arg(&spec.id)
            .arg(format!("--client_fs={}", spec.fs))
            .arg(format!("--admin_socket={}", spec.asok.display()))
            .arg(&spec.mountpoint)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| io("starting ceph-fuse", e))?;
        let _ = std::fs::write(pid_file(spec), child.id().to_string());
        let mut m = FuseMount {
            child,
            spec: spec.clone(),
        };
        let until = Instant::now() + wait;
        while !(is_mountpoint(&spec.mountpoint) && spec.asok.exists()) {
            if let Ok(Some(st)) = m.child.try_wait() {
                return Err(BackendError::Unavailable(format!(
                    "ceph-fuse of {} exited: {st}",
                    spec.fs
                )));
            }
            if Instant::now() > until {
                return Err(BackendError::TimedOut(format!(
                    "mounting {} on {}",
                    spec.fs,
                    spec.mountpoint.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(m)
    }

    pub fn path(&self) -> &Path {
        &self.spec.mountpoint
    }

    /// The mount's Ceph client address (what a blocklist names).
    pub fn address(&self) -> Result<String, BackendError> {
        let st = self.status()?;
        st.get("addr_str")
            .and_then(|v| v.as_str())
            .map(str::to_string)
            .ok_or_else(|| BackendError::Unavailable("no addr_str in the mount's status".into()))
    }

    /// Whether the cluster has fenced this mount.
    pub fn blocklisted(&self) -> Result<bool, BackendError> {
        Ok(self.status()?.get("blocklisted") == Some(&serde_json::Value::Bool(true)))
    }

    /// `status` from the admin socket: a command as JSON and a NUL; the
    /// answer's length (4 bytes, big-endian), then the answer.
    fn status(&self) -> Result<serde_json::Value, BackendError> {
        let mut s = std::os::unix::net::UnixStream::connect(&self.spec.asok)
            .map_err(|e| io("the mount's admin socket", e))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .map_err(|e| io("the mount's admin socket", e))?;
        s.write_all(b"{\"prefix\":\"status\"}\0")
            .map_err(|e| io("the mount's admin socket", e))?;
        let mut n = [0u8; 4];
        s.read_exact(&mut n)
            .map_err(|e| io("the mount's admin socket", e))?;
        let mut body = vec![0u8; u32::from_be_bytes(n) as usize];
        s.read_exact(&mut body)
            .map_err(|e| io("the mount's admin socket", e))?;
        serde_json::from_slice(&body)
            .map_err(|e| BackendError::Unavailable(format!("the mount's status: {e}")))
    }
}

impl Drop for FuseMount {
    fn drop(&mut self) {
        // A clean unmount ends ceph-fuse and its MDS session (a session
        // left to time out holds its capabilities for minutes, and the
        // next node's first change in the same directory waits for them);
        // a mount still busy or dead is detached and its process killed.
        fusermount("-u", &self.spec.mountpoint);
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until && matches!(self.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        fusermount("-uz", &self.spec.mountpoint);
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.spec.asok);
        let _ = std::fs::remove_file(pid_file(&self.spec));
    }
}

/// Where the ceph-fuse PID is recorded (next to its admin socket).
fn pid_file(spec: &FuseSpec) -> PathBuf {
    spec.asok.with_extension("pid")
}

/// Stop the ceph-fuse a previous run of this node started, if it still
/// runs (the PID's command line names this mountpoint: not a reused PID).
fn stop_recorded(spec: &FuseSpec) {
    let Some(pid) = std::fs::read_to_string(pid_file(spec))
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
    else {
        return;
    };
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let ours = words.iter().any(|w| w.ends_with(b"ceph-fuse"))
        && words
            .iter()
            .any(|w| *w == spec.mountpoint.as_os_str().as_encoded_bytes());
    if ours {
        fusermount("-u", &spec.mountpoint);
        std::thread::sleep(Duration::from_millis(500));
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let _ = std::fs::remove_file(pid_file(spec));
}

fn is_mountpoint(p: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (Ok(me), Some(Ok(up))) = (std::fs::metadata(p), p.parent().map(std::fs::metadata)) else {
        return false;
    };
    me.dev() != up.dev()
}

/// `fusermount FLAG p`: `-u` a clean unmount (ceph-fuse then ends and
/// closes its session), `-uz` detach whatever is mounted (a dead or busy
/// mount too).
fn fusermount(flag: &str, p: &Path) {
    let _ = Command::new("fusermount")
        .arg(flag)
        .arg(p)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}
