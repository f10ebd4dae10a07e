//! A directory of 1,000,000 entries listed by every client at once
//! (`xrdfs ls -l`, curl `PROPFIND Depth: 1`, `davix-ls`, `rclone lsf`,
//! `tessera ls -l`) while other clients keep reading and writing: every
//! listing complete and in order, the streamed ones' first bytes early,
//! the server's memory bounded, the other clients served throughout. The
//! directory is made in the namespace directly (`MetaStore::create_many`)
//! while the server is stopped: a million creates over the wire would
//! take the suite's whole budget.

use crate::devd::{daemon, tessera};
use crate::{run_ok, Daemon};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const N: u64 = 1_000_000;
const OVERLAY: &str = "[meta]\nblock_cache = \"32M\"\n";

fn name(i: u64) -> Vec<u8> {
    format!("run{i:07}.root").into_bytes()
}

/// The server's resident memory, bytes.
fn rss(d: &Daemon) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{}/status", d.child.id())).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |k| k << 10)
}

/// Populate `/data/big` with `N` empty files while no server runs.
fn populate(dir: &Path) {
    // A first start makes the dev namespace (/data), then it stops.
    let d = daemon(dir, OVERLAY);
    d.signal("-TERM");
    let mut d = d;
    let _ = d.child.wait();
    let opts = tessera_meta::MetaOptions {
        durability: tessera_meta::Durability::Buffered,
        ..Default::default()
    };
    let m = tessera_meta::MetaStore::open(&dir.join("data/meta"), opts).unwrap();
    let big = tessera_types::NsPath::parse("/data/big").unwrap();
    m.mkdir(&big, &tessera_types::Identity::root("test"), 0o755, false)
        .unwrap();
    let t = Instant::now();
    let made = m
        .create_many(&big, (1000, 1000, 0o644), (0..N).map(name), 50_000)
        .unwrap();
    assert_eq!(made, N);
    eprintln!("populated {N} entries in {:?}", t.elapsed());
}

/// Run `c` to the end: (lines of its stdout, seconds to its first byte,
/// seconds in all). The output is counted as it arrives, never kept.
fn count_lines(mut c: Command, what: &str, keep_first: usize) -> (u64, f64, f64, Vec<String>) {
    use std::io::Read;
    let t = Instant::now();
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let (mut lines, mut first, mut head) = (0u64, None, Vec::new());
    let mut partial = Vec::new();
    loop {
        let n = out.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        first.get_or_insert(t.elapsed().as_secs_f64());
        for &b in &buf[..n] {
            if b == b'\n' {
                lines += 1;
                if head.len() < keep_first {
                    head.push(String::from_utf8_lossy(&partial).into_owned());
                }
                partial.clear();
            } else if head.len() < keep_first {
                partial.push(b);
            }
        }
    }
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    (lines, first.unwrap_or(0.0), t.elapsed().as_secs_f64(), head)
}

#[test]
fn a_million_entries_listed_by_every_client_while_others_work() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    populate(dir);
    let d = daemon(dir, OVERLAY);
    let xr = d.field("xrootd=");
    let https = format!(
        "https://localhost:{}",
        d.field("https=").rsplit(':').next().unwrap()
    );
    let ca = dir.join("data/dev/ca.pem");
    let capath = dir.join("data/dev/certificates");
    let base_rss = rss(&d);

    // Other clients work throughout: small uploads and reads, each timed.
    let stop = Arc::new(AtomicBool::new(false));
    let worst = Arc::new(Mutex::new(0f64));
    let small = dir.join("small");
    std::fs::write(&small, vec![7u8; 100_000]).unwrap();
    let worker = {
        let (stop, worst, xr, small) = (stop.clone(), worst.clone(), xr.clone(), small.clone());
        let back = dir.join("back");
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                let url = format!("root://{xr}//data/other/f{}", n % 20);
                run_ok(
                    Command::new("xrdcp").args(["--nopbar", "-f", small.to_str().unwrap(), &url]),
                    "xrdcp up",
                );
                run_ok(
                    Command::new("xrdcp").args(["--nopbar", "-f", &url, back.to_str().unwrap()]),
                    "xrdcp down",
                );
                assert_eq!(std::fs::read(&back).unwrap().len(), 100_000);
                let mut w = worst.lock().unwrap();
                *w = w.max(t.elapsed().as_secs_f64());
                n += 1;
            }
            n
        })
    };
    // Memory sampled throughout.
    let peak = Arc::new(Mutex::new(base_rss));
    let sampler = {
        let (stop, peak, pid) = (stop.clone(), peak.clone(), d.child.id());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                if let Some(k) = s
                    .lines()
                    .find_map(|l| l.strip_prefix("VmRSS:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                {
                    let mut p = peak.lock().unwrap();
                    *p = (*p).max(k << 10);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };

    // Every lister at once.
    let mut listers: Vec<(&str, Command)> = Vec::new();
    let mut c = Command::new("xrdfs");
    c.args([&xr, "ls", "-l", "/data/big"]);
    listers.push(("xrdfs ls -l", c));
    let mut c = Command::new("curl");
    c.args([
        "-sS",
        "--cacert",
        ca.to_str().unwrap(),
        "-X",
        "PROPFIND",
        "-H",
        "Depth: 1",
    ])
    .arg(format!("{https}/data/big/"));
    listers.push(("curl PROPFIND", c));
    let mut c = Command::new("davix-ls");
    c.args(["--capath", capath.to_str().unwrap()])
        .arg(format!("{https}/data/big/"));
    listers.push(("davix-ls", c));
    let conf = dir.join("rclone.conf");
    std::fs::write(
        &conf,
        format!("[t]\ntype = webdav\nurl = {https}/\nvendor = other\n"),
    )
    .unwrap();
    let mut c = Command::new("rclone");
    c.args([
        "--config",
        conf.to_str().unwrap(),
        "--ca-cert",
        ca.to_str().unwrap(),
        "lsf",
        "t:data/big",
    ]);
    listers.push(("rclone lsf", c));
    listers.push((
        "tessera ls -l",
        tessera(&d, dir, &["ls", "-l", "/data/big"]),
    ));
    let handles: Vec<_> = listers
        .into_iter()
        .map(|(what, c)| (what, std::thread::spawn(move || count_lines(c, what, 2))))
        .collect();
    let mut results = Vec::new();
    for (what, h) in handles {
        let r = h.join().unwrap();
        eprintln!(
            "{what}: {} lines, first byte {:.3} s, all {:.1} s, starts {:?}",
            r.0, r.1, r.2, r.3
        );
        results.push((what, r));
    }
    stop.store(true, Ordering::Relaxed);
    let rounds = worker.join().unwrap();
    sampler.join().unwrap();
    let grew = peak.lock().unwrap().saturating_sub(base_rss);
    let worst = *worst.lock().unwrap();
    eprintln!(
        "other clients: {rounds} rounds, slowest {worst:.2} s; server RSS grew {} MiB",
        grew >> 20
    );

    for (what, (lines, first, _, head)) in &results {
        match *what {
            // PROPFIND: one response per entry and one for the directory,
            // on lines of their own.
            "curl PROPFIND" => assert!(*lines > N, "{what}: {lines} lines"),
            _ => assert_eq!(*lines, N, "{what}"),
        }
        if *what != "curl PROPFIND" {
            assert!(
                head.iter().any(|l| l.contains("run0000000.root")),
                "{what}: {head:?}"
            );
        }
        // Streamed answers start long before a whole listing could be
        // made (xrdfs and rclone print only once they have it all).
        if matches!(*what, "curl PROPFIND" | "tessera ls -l") {
            assert!(*first < 2.0, "{what}: first bytes after {first:.3} s");
        }
    }
    assert!(rounds >= 1, "other clients were served");
    assert!(
        worst < 10.0,
        "a small transfer took {worst:.1} s during the listings"
    );
    assert!(grew < 256 << 20, "server RSS grew {} MiB", grew >> 20);
}
