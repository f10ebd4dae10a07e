//! Metadata HA on the loopback Ceph cluster (issue 27). `scripts/test`
//! runs these with `--ignored` after `deploy/ceph/up.sh`, `CEPH_CONF` from
//! the cluster's env file. Two real `tesserad` processes with the same
//! `[ha]` (a lease object and a namespace directory of the test's own on
//! CephFS `fs1`, 5 s leases), each mounting the namespace with its own
//! ceph-fuse:
//!
//! - `kill -9` of the active node while 16 writers create files through
//!   the standby's address with `xrdcp`, and other clients read, put and
//!   create through both nodes (each acknowledged create logged):
//!   the standby is active within 10 s, every acknowledged file is there
//!   with its bytes, and no file is there half;
//! - `SIGSTOP` of the active beyond its lease: the standby takes over
//!   (fencing the stopped node's lease client and mount) and acknowledges
//!   writes; after `SIGCONT` the old node acknowledges nothing of its own
//!   (a write sent to it fails or is redirected to the new active node),
//!   goes back to standby, and everything acknowledged is there.

#[path = "../common/mod.rs"]
#[allow(dead_code)]
mod common;
use common::spare_ports;

mod clients;
mod gateway;
use clients::{cli, metric, readers};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One metadata node: its process (its log in `<dir>.log`), data
/// directory and addresses.
struct Node {
    d: Option<std::process::Child>,
    dir: PathBuf,
    xrootd: String,
    https: String,
    admin: String,
    metrics: String,
}

impl Node {
    fn start(dir: &Path, name: &str, tag: &str) -> Node {
        Node::start_with(dir, name, tag, "")
    }

    /// The same with `extra` TOML appended to its configuration.
    fn start_with(dir: &Path, name: &str, tag: &str, extra: &str) -> Node {
        let conf = std::env::var("CEPH_CONF").expect("CEPH_CONF: source $TC_DIR/env");
        let [admin, metrics, xrootd, https] = spare_ports::<4>();
        let cfg = dir.with_extension("toml");
        std::fs::write(
            &cfg,
            format!(
                "[listen]\nadmin = \"127.0.0.1:{admin}\"\nmetrics = \"127.0.0.1:{metrics}\"\n\
                 xrootd = \"127.0.0.1:{xrootd}\"\nhttps = \"127.0.0.1:{https}\"\n\
                 [server]\ndrain = \"1s\"\n[https]\nanonymous = \"owner\"\n\
                 [ha]\nenabled = true\nnode = \"{name}\"\nceph_conf = \"{conf}\"\nfs = \"fs1\"\n\
                 dir = \"ha-ns-{tag}\"\nobject = \"lease-{tag}\"\nlease = \"5s\"\n{extra}"
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.with_extension("log")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_tesserad"))
            .args(["serve", "--dev", "--data-dir"])
            .arg(dir)
            .arg("--dev-config")
            .arg(&cfg)
            .stdout(std::process::Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("tesserad");
        use std::io::BufRead;
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let ready = lines.next().expect("ready line").expect("utf8");
        assert!(ready.starts_with("tesserad ready"), "{ready}");
        // The rest (the dev banner) drained: a closed pipe would end it.
        std::thread::spawn(move || for _ in lines {});
        Node {
            d: Some(child),
            dir: dir.to_path_buf(),
            xrootd: format!("127.0.0.1:{xrootd}"),
            https: format!("localhost:{https}"),
            admin: format!("127.0.0.1:{admin}"),
            metrics: format!("127.0.0.1:{metrics}"),
        }
    }

    /// Whether it serves as the active node (only the active one has a
    /// namespace, and with it the metrics listener's `/readyz`).
    fn active(&self) -> bool {
        let o = Command::new("curl")
            .args(["-s", "-m", "2", "-o", "/dev/null", "-w", "%{http_code}"])
            .arg(format!("http://{}/readyz", self.metrics))
            .output()
            .expect("curl");
        o.stdout == b"200"
    }

    /// Wait until it is active: how long that took.
    fn until_active(&self, limit: Duration) -> Duration {
        let t = Instant::now();
        while !self.active() {
            assert!(t.elapsed() < limit, "not active within {limit:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
        t.elapsed()
    }

    fn signal(&self, sig: &str) {
        let pid = self.d.as_ref().expect("running").id();
        let ok = Command::new("kill")
            .args([sig, &pid.to_string()])
            .status()
            .unwrap();
        assert!(ok.success(), "kill {sig}");
    }

    /// `kill -9`: the node dies with its mount left behind (as a machine
    /// would lose it); the test then stops that ceph-fuse by its PID.
    fn kill9(&mut self) {
        self.signal("-KILL");
        if let Some(mut d) = self.d.take() {
            let _ = d.wait();
        }
    }

    /// The ceph-fuse this node started (its PID file), unmounted cleanly
    /// (ending its MDS session), else stopped, and its mount detached.
    fn clean_mount(&self) {
        let mnt = self.dir.join("ha/mnt");
        let quiet = |lazy: &str| {
            let _ = Command::new("fusermount")
                .arg(lazy)
                .arg(&mnt)
                .stderr(std::process::Stdio::null())
                .status();
        };
        quiet("-u");
        if let Some(pid) = std::fs::read_to_string(self.dir.join("ha/mount.pid"))
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
        {
            let alive = || {
                let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                String::from_utf8_lossy(&cmd).contains("ceph-fuse")
            };
            let t = Instant::now();
            while alive() && t.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(50));
            }
            if alive() {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
        }
        quiet("-uz");
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(pid) = self.d.as_ref().map(|d| d.id()) {
            // SIGTERM first: the node gives its lease up and unmounts.
            for sig in ["-CONT", "-TERM"] {
                let _ = Command::new("kill").args([sig, &pid.to_string()]).status();
            }
        }
        if let Some(d) = self.d.as_mut() {
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(10) {
                if let Ok(Some(_)) = d.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = d.kill();
            let _ = d.wait();
        }
        self.d = None;
        self.clean_mount();
    }
}

/// Two nodes of one metadata service; the first is active.
fn pair(root: &Path, test: &str) -> (Node, Node) {
    pair_with(root, test, "")
}

/// The same with `extra` TOML in both nodes' configuration.
fn pair_with(root: &Path, test: &str, extra: &str) -> (Node, Node) {
    let tag = format!("{test}-{}", std::process::id());
    let a = Node::start_with(&root.join("a"), "node-a", &tag, extra);
    a.until_active(Duration::from_secs(20));
    // One admin credential, CA and server certificate for both nodes, as
    // a site gives its metadata nodes.
    let dev = root.join("b/dev");
    std::fs::create_dir_all(&dev).unwrap();
    for f in std::fs::read_dir(root.join("a/dev")).unwrap().flatten() {
        if f.path().is_file() {
            std::fs::copy(f.path(), dev.join(f.file_name())).unwrap();
        }
    }
    let b = Node::start_with(&root.join("b"), "node-b", &tag, extra);
    (a, b)
}

/// `xrdcp SRC TO`: acknowledged or not (why not is printed).
fn xrdcp(src: &Path, to: &str) -> bool {
    let o = Command::new("xrdcp")
        .args(["-s", "-f"])
        .arg(src)
        .arg(to)
        .env("XRD_REQUESTTIMEOUT", "30")
        .output()
        .expect("xrdcp");
    if !o.status.success() {
        eprintln!(
            "xrdcp to {to}: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    o.status.success()
}

/// Every file of `/data` and its size, through `at`.
fn listing(at: &str) -> Vec<(String, u64)> {
    let o = Command::new("xrdfs")
        .args([at, "ls", "-l", "/data"])
        .output()
        .expect("xrdfs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() >= 7).then(|| (w[6].to_string(), w[3].parse().unwrap_or(u64::MAX)))
        })
        .collect()
}

/// What is there is whole, and every acknowledged file is there.
fn check(at: &str, acked: &[String], size: u64) {
    let have = listing(at);
    for (name, n) in &have {
        assert_eq!(*n, size, "{name} is there with {n} bytes of {size}");
    }
    for a in acked {
        assert!(
            have.iter().any(|(n, _)| n == a),
            "acknowledged {a} is missing ({} files there)",
            have.len()
        );
    }
}

#[test]
#[ignore = "needs the loopback Ceph cluster of deploy/ceph/up.sh"]
fn kill_9_of_the_active_loses_no_acknowledged_create() {
    let root = tempfile::tempdir_in("/var/tmp").unwrap();
    let (mut a, b) = pair(root.path(), "kill");
    let src = root.path().join("src");
    std::fs::write(&src, vec![7u8; 20_000]).unwrap();
    let acked = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    // Through the standby's address: it redirects to the active node, and
    // clients come back to it when that one fails.
    let url = format!("root://{}//data/", b.xrootd);
    let writers: Vec<_> = (0..16)
        .map(|w| {
            let (acked, stop, src, url) = (
                Arc::clone(&acked),
                Arc::clone(&stop),
                src.clone(),
                url.clone(),
            );
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let name = format!("/data/w{w}-f{n}");
                    if xrdcp(&src, &format!("{url}w{w}-f{n}")) {
                        acked.lock().unwrap().push(name);
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let first = acked
        .lock()
        .unwrap()
        .first()
        .cloned()
        .expect("a file written");
    let made = Arc::new(Mutex::new(Vec::new()));
    let (seen, reader) = readers((&a, &b), &first, (&src, 20_000), (&acked, &made), &stop);
    std::thread::sleep(Duration::from_secs(2));
    let before = acked.lock().unwrap().len();
    a.kill9();
    let took = b.until_active(Duration::from_secs(10));
    let active_at = Instant::now();
    eprintln!("failover: {took:?} after kill -9 ({before} files acknowledged before)");
    // Until every kind of reader has had an attempt that began once the
    // standby served (and a second for its listeners).
    let since = active_at + Duration::from_secs(1);
    let t = Instant::now();
    while !["curl", "put", "xrdcp", "ls", "mkdir"].iter().all(|k| {
        seen.lock()
            .unwrap()
            .iter()
            .any(|(at, kind, _)| kind == k && *at > since)
    }) {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "readers after the takeover"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    for r in reader {
        r.join().unwrap();
    }
    // Every client that began after the takeover succeeded, of each kind.
    let seen = seen.lock().unwrap().clone();
    for kind in ["curl", "put", "xrdcp", "ls", "mkdir"] {
        let after: Vec<bool> = seen
            .iter()
            .filter(|(t, k, _)| *k == kind && *t > since)
            .map(|(_, _, ok)| *ok)
            .collect();
        assert!(
            !after.is_empty() && after.iter().all(|ok| *ok),
            "{kind} after the takeover: {after:?}"
        );
    }
    assert_eq!(metric(&b, "tessera_ha_epoch"), Some(2.0));
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() > before,
        "nothing acknowledged after the takeover"
    );
    check(&format!("root://{}", b.xrootd), &acked, 20_000);
    // Every directory the CLI was told it made is there.
    let admins = format!("{},{}", a.admin, b.admin);
    let listed = cli(&admins, &a.dir.join("dev/admin.token"), &["ls", "/cli"]).unwrap();
    let made = made.lock().unwrap().clone();
    assert!(!made.is_empty());
    for d in &made {
        assert!(
            listed.split_whitespace().any(|w| w == d),
            "{d} not in {listed}"
        );
    }
    // The killed node, started again, cleans its fenced mount up and is
    // the standby; it takes over when the other one is killed in turn.
    let tag = format!("kill-{}", std::process::id());
    let a = Node::start(&root.path().join("a"), "node-a", &tag);
    std::thread::sleep(Duration::from_secs(2));
    assert!(!a.active(), "the restarted node is the standby");
    // Its metrics say so, with the epoch of the active node it sees.
    assert_eq!(metric(&a, "tessera_ha_active"), Some(0.0));
    assert_eq!(metric(&a, "tessera_ha_epoch"), Some(2.0));
    assert_eq!(metric(&b, "tessera_ha_active"), Some(1.0));
    let mut b = b;
    b.kill9();
    a.until_active(Duration::from_secs(10));
    assert_eq!(metric(&a, "tessera_ha_epoch"), Some(3.0));
    // The epoch is in the namespace too.
    let admins = format!("{},{}", a.admin, b.admin);
    let token = a.dir.join("dev/admin.token");
    let got = cli(
        &admins,
        &token,
        &["attr", "get", "sys.tessera.ha.epoch", "/"],
    );
    assert!(got.as_deref().is_some_and(|v| v.contains('3')), "{got:?}");
    check(&format!("root://{}", a.xrootd), &acked, 20_000);
    b.clean_mount();
}

#[test]
#[ignore = "needs the loopback Ceph cluster of deploy/ceph/up.sh"]
fn a_stopped_active_is_fenced_and_acknowledges_nothing_after() {
    let root = tempfile::tempdir_in("/var/tmp").unwrap();
    let (a, b) = pair(root.path(), "stop");
    let src = root.path().join("src");
    std::fs::write(&src, vec![3u8; 10_000]).unwrap();
    let mut acked = Vec::new();
    assert!(xrdcp(&src, &format!("root://{}//data/before", b.xrootd)));
    acked.push("/data/before".to_string());
    a.signal("-STOP");
    b.until_active(Duration::from_secs(12));
    assert!(xrdcp(&src, &format!("root://{}//data/after", b.xrootd)));
    acked.push("/data/after".to_string());
    a.signal("-CONT");
    // Sent to the old node at once: it must not acknowledge it itself
    // (its lease is gone and its mount fenced); redirected to the new
    // active node is fine.
    if xrdcp(&src, &format!("root://{}//data/to-old", a.xrootd)) {
        acked.push("/data/to-old".to_string());
    }
    // It goes back to standby: no namespace, clients sent to the other.
    let t = Instant::now();
    while a.active() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the old node still serves"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(2));
    assert!(b.active(), "the new node stays active");
    let t = Instant::now();
    loop {
        if xrdcp(&src, &format!("root://{}//data/via-old", a.xrootd)) {
            acked.push("/data/via-old".to_string());
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the old node never redirects"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    check(&format!("root://{}", b.xrootd), &acked, 10_000);
}
