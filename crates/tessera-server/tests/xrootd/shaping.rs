//! I/O shaping (issue 39) with the real clients: two applications
//! reading the same file at once under `tessera access shape` rules of 8
//! and 4 MB/s each get their share within 15 % (xrdcp with XRD_APPNAME,
//! which XRootD's login carries as `xrd.appname`); a shaped upload and a
//! shaped curl GET (its User-Agent's product) likewise; the bytes are
//! counted per application in `tessera_io_bytes_total`. A reservation of
//! 8 of 12 MB/s: another application alone is not held back, beside the
//! reserved one it gets the 4 MB/s left, within 15 %.

use crate::devd::{cli, metric};
use crate::{data, run_ok, Daemon};

fn daemon(dir: &Path) -> Daemon {
    crate::devd::daemon(dir, "[https]\nanonymous = \"owner\"\n")
}

use std::path::Path;
use std::process::Command;
use std::time::Instant;

fn xrdcp(app: &str, args: &[&str]) -> Command {
    let mut c = Command::new("xrdcp");
    c.env("XRD_APPNAME", app).arg("--nopbar").args(args);
    c
}

/// `tessera access ACTION SUBJECT --ops OPS --rate RATE`.
fn bandwidth(d: &Daemon, dir: &Path, action: &str, subject: &str, ops: &str, rate: &str) {
    cli(
        d,
        dir,
        &["access", action, subject, "--ops", ops, "--rate", rate],
    );
}

/// Bytes per second of `bytes` in `secs`, against `want`: within 15 %.
#[track_caller]
fn near(what: &str, bytes: usize, secs: f64, want: f64) {
    let got = bytes as f64 / secs;
    assert!(
        (got / want - 1.0).abs() <= 0.15,
        "{what}: {got:.0} B/s for a share of {want:.0}"
    );
}

#[test]
fn two_applications_get_their_shares_and_shaped_transfers_keep_their_rate() {
    let dir = tempfile::tempdir().unwrap();
    let d = daemon(dir.path());
    let (xr, https) = (d.field("xrootd="), d.field("https="));
    let body = data(24 << 20, 39);
    let src = dir.path().join("src");
    std::fs::write(&src, &body).unwrap();
    let url = format!("root://{xr}//data/f");
    run_ok(
        &mut xrdcp("setup", &[src.to_str().unwrap(), &url]),
        "xrdcp up",
    );
    bandwidth(&d, dir.path(), "shape", "app:alpha", "read", "8M");
    bandwidth(&d, dir.path(), "shape", "app:beta", "read", "4M");
    bandwidth(&d, dir.path(), "shape", "app:gamma", "write", "5M");
    bandwidth(&d, dir.path(), "shape", "app:curl", "read", "6M");
    let ls = cli(&d, dir.path(), &["access", "ls"]);
    assert!(ls.contains("read 8.00 MB/s"), "{ls}");
    // Both at once: each its own share.
    let run = |app: &'static str| {
        let (url, out) = (url.clone(), dir.path().join(app));
        std::thread::spawn(move || {
            let t = Instant::now();
            run_ok(&mut xrdcp(app, &["-f", &url, out.to_str().unwrap()]), app);
            (t.elapsed().as_secs_f64(), std::fs::read(out).unwrap())
        })
    };
    let (a, b) = (run("alpha"), run("beta"));
    let (ta, got_a) = a.join().unwrap();
    let (tb, got_b) = b.join().unwrap();
    assert!(got_a == body && got_b == body, "the bytes are the file's");
    near("alpha", body.len(), ta, 8e6);
    near("beta", body.len(), tb, 4e6);
    // A shaped upload (24 MiB at 5 MB/s) and a shaped curl GET.
    let t = Instant::now();
    let up = format!("root://{xr}//data/up");
    run_ok(
        &mut xrdcp("gamma", &[src.to_str().unwrap(), &up]),
        "gamma up",
    );
    near("gamma's upload", body.len(), t.elapsed().as_secs_f64(), 5e6);
    let t = Instant::now();
    let o = Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{size_download}",
            "--cacert",
        ])
        .arg(dir.path().join("data/dev/ca.pem"))
        .arg(format!("https://{https}/data/f"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), body.len().to_string());
    near("curl's GET", body.len(), t.elapsed().as_secs_f64(), 6e6);
    // Counted per application.
    let alpha = metric(
        &d,
        "tessera_io_bytes_total{direction=\"read\",app=\"alpha\"}",
    );
    assert!(alpha >= body.len() as f64, "alpha's bytes counted: {alpha}");
    // And by the client's uid (the loopback login's: this process's).
    let me = Command::new("id").arg("-u").output().unwrap();
    let me = String::from_utf8_lossy(&me.stdout).trim().to_string();
    let by_uid =
        format!("tessera_io_owner_bytes_total{{direction=\"read\",kind=\"uid\",id=\"{me}\"}}");
    let uid = metric(&d, &by_uid);
    assert!(
        uid >= 2.0 * body.len() as f64,
        "read bytes counted by uid {me}: {uid}"
    );
    let gamma = metric(
        &d,
        "tessera_io_bytes_total{direction=\"write\",app=\"gamma\"}",
    );
    assert!(gamma >= body.len() as f64, "gamma's bytes counted: {gamma}");
}

#[test]
fn a_reservation_keeps_its_share_while_the_rest_shares_what_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let d = crate::devd::daemon(dir.path(), "[io]\nread_capacity = \"12M\"\n");
    let xr = d.field("xrootd=");
    let (big, small) = (data(48 << 20, 1), data(16 << 20, 2));
    for (name, body) in [("big", &big), ("small", &small)] {
        let src = dir.path().join(name);
        std::fs::write(&src, body).unwrap();
        let url = format!("root://{xr}//data/{name}");
        run_ok(
            &mut xrdcp("setup", &[src.to_str().unwrap(), &url]),
            "xrdcp up",
        );
    }
    // alpha reads at 8 MB/s (a shape, so that it runs long enough) with
    // 8 MB/s of the 12 reserved.
    bandwidth(&d, dir.path(), "shape", "app:alpha", "read", "8M");
    bandwidth(&d, dir.path(), "reserve", "app:alpha", "read", "8M");
    let read = |app: &'static str, name: &'static str| {
        let (url, out) = (format!("root://{xr}//data/{name}"), dir.path().join(app));
        std::thread::spawn(move || {
            let t = Instant::now();
            run_ok(&mut xrdcp(app, &["-f", &url, out.to_str().unwrap()]), app);
            t.elapsed().as_secs_f64()
        })
    };
    // beta alone: alpha is not active, nothing holds it back.
    let alone = read("beta", "small").join().unwrap();
    let fast = small.len() as f64 / alone;
    assert!(fast > 20e6, "beta alone: {fast:.0} B/s");
    // Both: while alpha reads, beta shares the 4 MB/s left.
    let a = read("alpha", "big");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let b = read("beta", "small");
    let tb = b.join().unwrap();
    let ta = a.join().unwrap();
    near("beta beside the reservation", small.len(), tb, 4e6);
    near("alpha, reserved", big.len(), ta, 8e6);
}
