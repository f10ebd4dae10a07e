//! The balancer (issue 39) with real filesystems and real clients: four
//! tmpfs mounts of 24 MiB stand in for disks (each its own capacity), two
//! filled to about a third, two added empty; the balancer, paced to
//! 3 MB/s, moves stripes until the fill levels are within 10 % of each
//! other while xrdcp reads and writes, `tesserad` is killed with -9 twice
//! during it, and every file reads back byte-exact.

use crate::devd::{cli, field};
use crate::{data, run_ok, Daemon};

fn daemon(dir: &Path) -> Daemon {
    crate::devd::daemon(dir, "[balance]\ninterval = \"1s\"\n")
}

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// tmpfs mounts, unmounted when dropped.
struct Mounts(Vec<PathBuf>);

impl Mounts {
    fn new(at: &Path, n: usize) -> Mounts {
        let mut v = Vec::new();
        for i in 1..=n {
            let p = at.join(format!("t{i}"));
            std::fs::create_dir_all(&p).unwrap();
            run_ok(
                Command::new("mount")
                    .args(["-t", "tmpfs", "-o", "size=24m", "tmpfs"])
                    .arg(&p),
                "mount tmpfs (the test runs as root)",
            );
            v.push(p);
        }
        Mounts(v)
    }
}

impl Drop for Mounts {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = Command::new("umount").arg("-l").arg(p).status();
        }
    }
}

/// (moved stripes, balanced, fill levels of space `bal`).
fn status(d: &Daemon, dir: &Path) -> (u64, bool, Vec<f64>) {
    let out = cli(d, dir, &["-m", "balance", "status"]);
    let first = out.lines().next().expect("status line");
    let fills = out
        .lines()
        .filter(|l| l.contains("space=bal"))
        .map(|l| field(l, "fill").parse().unwrap())
        .collect();
    (
        field(first, "movedstripes").parse().unwrap(),
        field(first, "balanced") == "true",
        fills,
    )
}

fn wait_for(what: &str, secs: u64, mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn xrdcp(args: &[&str]) -> Command {
    let mut c = Command::new("xrdcp");
    c.env("XRD_CONNECTIONRETRY", "1").arg("--nopbar").args(args);
    c
}

/// The files written so far: (name, bytes).
type Files = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// Reads and writes until `stop`: every read that succeeds must be
/// byte-exact; the files written are added to `files`.
fn clients(
    xr: Arc<Mutex<String>>,
    files: Files,
    scratch: PathBuf,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<(u64, u64)> {
    std::thread::spawn(move || {
        let (mut reads, mut writes) = (0, 0);
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            n += 1;
            let host = xr.lock().unwrap().clone();
            let (name, body) = {
                let f = files.lock().unwrap();
                f[(n as usize * 7) % f.len()].clone()
            };
            let got = scratch.join("got");
            let url = format!("root://{host}//data/bal/{name}");
            if xrdcp(&["-f", &url, got.to_str().unwrap()])
                .output()
                .unwrap()
                .status
                .success()
            {
                assert_eq!(
                    std::fs::read(&got).unwrap(),
                    body,
                    "{name} read during the balance"
                );
                reads += 1;
            }
            let body = data(300_000, 1000 + n);
            let src = scratch.join("src");
            std::fs::write(&src, &body).unwrap();
            let name = format!("w{n}");
            let url = format!("root://{host}//data/bal/{name}");
            if xrdcp(&[src.to_str().unwrap(), &url])
                .output()
                .unwrap()
                .status
                .success()
            {
                files.lock().unwrap().push((name, body));
                writes += 1;
            }
        }
        (reads, writes)
    })
}

#[test]
fn two_full_and_two_new_filesystems_even_out_through_two_kill_9s() {
    let dir = tempfile::tempdir().unwrap();
    let mounts = Mounts::new(&dir.path().join("b"), 4);
    let mut d = daemon(dir.path());
    let add = |d: &Daemon, i: usize| {
        let loc = format!("folder:{}/fs", mounts.0[i - 1].display());
        let (label, domain) = (format!("b{i}"), format!("bd{i}"));
        cli(
            d,
            dir.path(),
            &[
                "fs", "add", "--label", &label, "--create", "--domain", &domain, "--space", "bal",
                &loc,
            ],
        );
    };
    add(&d, 1);
    add(&d, 2);
    cli(&d, dir.path(), &["mkdir", "-p", "/data/bal"]);
    cli(
        &d,
        dir.path(),
        &["attr", "set", "sys.forced.space=bal", "/data/bal"],
    );
    cli(
        &d,
        dir.path(),
        &["attr", "set", "sys.forced.layout=plain", "/data/bal"],
    );
    let xr = Arc::new(Mutex::new(d.field("xrootd=")));
    let mut files = Vec::new();
    for i in 0..34 {
        let body = data(512 << 10, i);
        let src = dir.path().join("up");
        std::fs::write(&src, &body).unwrap();
        let url = format!("root://{}//data/bal/f{i}", xr.lock().unwrap());
        run_ok(&mut xrdcp(&[src.to_str().unwrap(), &url]), "xrdcp up");
        files.push((format!("f{i}"), body));
    }
    // The next round sees them a third full, and even.
    wait_for("two filesystems a third full", 10, || {
        let (_, balanced, fills) = status(&d, dir.path());
        balanced && fills.len() == 2 && fills[0] > 0.3
    });
    cli(
        &d,
        dir.path(),
        &[
            "balance",
            "start",
            "--rate",
            "3M",
            "--grace",
            "2",
            "--threshold",
            "10",
        ],
    );
    let files = Arc::new(Mutex::new(files));
    let stop = Arc::new(AtomicBool::new(false));
    let scratch = dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let load = clients(
        Arc::clone(&xr),
        Arc::clone(&files),
        scratch,
        Arc::clone(&stop),
    );
    add(&d, 3);
    add(&d, 4);
    // Killed twice while it moves stripes.
    for kill in 0..2 {
        wait_for("stripes moving", 30, || status(&d, dir.path()).0 >= 3);
        d.signal("-KILL");
        drop(d);
        d = daemon(dir.path());
        *xr.lock().unwrap() = d.field("xrootd=");
        eprintln!("kill -9 number {} done", kill + 1);
    }
    wait_for("fill levels within 10 %", 90, || {
        let (_, balanced, fills) = status(&d, dir.path());
        balanced && fills.len() == 4
    });
    stop.store(true, Ordering::Relaxed);
    let (reads, writes) = load.join().expect("clients");
    assert!(
        reads > 5 && writes > 5,
        "clients ran: {reads} reads, {writes} writes"
    );
    let (_, _, fills) = status(&d, dir.path());
    let (lo, hi) = fills
        .iter()
        .fold((1f64, 0f64), |(l, h), f| (l.min(*f), h.max(*f)));
    assert!(hi - lo <= 0.10, "fill levels {fills:?}");
    assert!(lo > 0.05, "the new filesystems took stripes: {fills:?}");
    // Every file, old and new, byte-exact.
    let host = d.field("xrootd=");
    let got = dir.path().join("check");
    for (name, body) in files.lock().unwrap().iter() {
        let url = format!("root://{host}//data/bal/{name}");
        run_ok(
            &mut xrdcp(&["-f", &url, got.to_str().unwrap()]),
            "xrdcp down",
        );
        assert_eq!(&std::fs::read(&got).unwrap(), body, "{name}");
    }
    let check = cli(&d, dir.path(), &["ns", "check"]);
    assert!(check.contains("problems := 0"), "{check}");
    let fsck = cli(&d, dir.path(), &["-m", "fsck", "report"]);
    for tag in ["rep_missing_n", "unavail_n", "blockxs_err", "bad_header_n"] {
        assert!(fsck.contains(&format!("tag={tag} count=0")), "{fsck}");
    }
    drop(d);
}
