//! The clients the failover tests drive besides xrdcp uploads: the CLI
//! with both admin addresses, curl over HTTPS (GET and PUT, following a
//! standby's redirects), xrdcp downloads, and the node's metrics.

use super::Node;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// `tessera --admin A,B ARGS` (the CLI finds the active node): its
/// standard output, or `None` when it failed.
pub(crate) fn cli(admins: &str, token: &Path, args: &[&str]) -> Option<String> {
    let bin = super::common::workspace_bin("tessera");
    let o = Command::new(bin)
        .args(["--admin", admins, "--token-file"])
        .arg(token)
        .args(args)
        .output()
        .unwrap();
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
}

/// A metric of the active node `n`.
pub(crate) fn metric(n: &Node, name: &str) -> Option<f64> {
    let o = Command::new("curl")
        .args(["-s", "-m", "2"])
        .arg(format!("http://{}/metrics", n.metrics))
        .output()
        .ok()?;
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// curl following redirects, retrying a refused or failed connection.
const CURL_RETRYING: [&str; 10] = [
    "-sS",
    "-f",
    "-L",
    "-m",
    "20",
    "--retry",
    "5",
    "--retry-all-errors",
    "--retry-delay",
    "1",
];

/// `curl -L -T SRC URL` (a PUT, redirected by a standby) with the nodes'
/// CA, retried as `curl_get`: whether it was acknowledged.
fn curl_put(ca: &Path, src: &Path, url: &str) -> bool {
    Command::new("curl")
        .args(CURL_RETRYING)
        .args(["-o", "/dev/null", "--cacert"])
        .arg(ca)
        .arg("-T")
        .arg(src)
        .arg(url)
        .status()
        .is_ok_and(|s| s.success())
}

/// `curl -L` GET of `url` with the nodes' CA, retried as curl does on a
/// refused or failed connection: the body, or `None`.
fn curl_get(ca: &Path, url: &str) -> Option<Vec<u8>> {
    let o = Command::new("curl")
        .args(CURL_RETRYING)
        .args(["--cacert"])
        .arg(ca)
        .arg(url)
        .output()
        .ok()?;
    o.status.success().then_some(o.stdout)
}

/// Clients across the failover: a file read with curl -L over HTTPS and
/// with xrdcp over XRootD through the standby's addresses, files put with
/// curl -L over HTTPS there (each acknowledged one logged with the
/// writers'), and `tessera ls` and `tessera mkdir -p` (creates through the
/// CLI, logged apart) with both admin addresses; each attempt's start and
/// outcome.
pub(crate) type Seen = Arc<Mutex<Vec<(Instant, &'static str, bool)>>>;

/// Names acknowledged, logged by several threads.
pub(crate) type Names = Arc<Mutex<Vec<String>>>;

pub(crate) fn readers(
    (a, b): (&Node, &Node),
    file: &str,
    (src, size): (&Path, usize),
    (acked, made): (&Names, &Names),
    stop: &Arc<AtomicBool>,
) -> (Seen, Vec<std::thread::JoinHandle<()>>) {
    let seen: Seen = Arc::default();
    let (ca, token) = (a.dir.join("dev/ca.pem"), a.dir.join("dev/admin.token"));
    let https = format!("https://{}{file}", b.https);
    let root = format!("root://{}/{file}", b.xrootd);
    let admins = format!("{},{}", a.admin, b.admin);
    let out = a.dir.with_extension("read");
    // One thread per kind: a client stuck until its own timeout holds no
    // other kind back.
    let each = |kind: &'static str, f: Box<dyn Fn() -> bool + Send>| {
        let (s, stop) = (Arc::clone(&seen), Arc::clone(stop));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                let ok = f();
                s.lock().unwrap().push((t, kind, ok));
            }
        })
    };
    let (put_ca, src, put_to, acked) = (
        ca.clone(),
        src.to_path_buf(),
        format!("https://{}/data/put-", b.https),
        Arc::clone(acked),
    );
    let puts = std::sync::atomic::AtomicU64::new(0);
    // Creates through the CLI too (directories: /cli/dN), logged apart.
    let (dirs, made) = (std::sync::atomic::AtomicU64::new(0), Arc::clone(made));
    let threads = vec![
        each(
            "curl",
            Box::new(move || curl_get(&ca, &https).is_some_and(|b| b.len() == size)),
        ),
        each(
            "put",
            Box::new(move || {
                let n = puts.fetch_add(1, Ordering::Relaxed);
                let ok = curl_put(&put_ca, &src, &format!("{put_to}{n}"));
                if ok {
                    acked.lock().unwrap().push(format!("/data/put-{n}"));
                }
                ok
            }),
        ),
        each(
            "xrdcp",
            Box::new(move || {
                Command::new("xrdcp")
                    .args(["-s", "-f", &root])
                    .arg(&out)
                    .env("XRD_REQUESTTIMEOUT", "30")
                    .status()
                    .is_ok_and(|st| st.success())
                    && std::fs::metadata(&out).is_ok_and(|m| m.len() == size as u64)
            }),
        ),
        each(
            "ls",
            Box::new({
                let (admins, token) = (admins.clone(), token.clone());
                move || cli(&admins, &token, &["ls", "/data"]).is_some()
            }),
        ),
        each(
            "mkdir",
            Box::new(move || {
                let n = dirs.fetch_add(1, Ordering::Relaxed);
                let d = format!("/cli/d{n}");
                let ok = cli(&admins, &token, &["mkdir", "-p", &d]).is_some();
                if ok {
                    made.lock().unwrap().push(format!("d{n}"));
                }
                ok
            }),
        ),
    ];
    (seen, threads)
}
