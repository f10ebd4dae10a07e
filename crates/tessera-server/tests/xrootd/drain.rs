//! SIGTERM drains: the real `tesserad` stops accepting, lets the XRootD and
//! HTTPS transfers in flight finish within `[server] drain`, then exits;
//! an upload still running after that leaves nothing behind.

use crate::{adler32, data, Daemon};
use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `tesserad serve --dev` on `dir`, every listener on a port of its own,
/// with `drain` and anonymous HTTPS writes as the owner.
fn daemon(dir: &std::path::Path, drain_s: u64) -> Daemon {
    let overlay = dir.join("overlay.toml");
    std::fs::write(
        &overlay,
        format!("[server]\ndrain = \"{drain_s}s\"\n[https]\nanonymous = \"owner\"\n"),
    )
    .unwrap();
    let dev_config = std::ffi::OsStr::new("--dev-config");
    Daemon::dev(&dir.join("data"), &[dev_config, overlay.as_os_str()])
}

/// `xrdcp - url` fed `body` a MiB at a time, `gap` apart, from a thread.
fn slow_xrdcp(url: &str, body: Vec<u8>, gap: Duration) -> Child {
    let mut child = Command::new("xrdcp")
        .args(["--nopbar", "-", url])
        .env("XRD_CONNECTIONRETRY", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("xrdcp");
    let mut stdin = child.stdin.take().expect("stdin");
    std::thread::spawn(move || {
        for c in body.chunks(1 << 20) {
            if stdin.write_all(c).is_err() {
                return;
            }
            std::thread::sleep(gap);
        }
    });
    child
}

fn stat_size(xrootd: &str, path: &str) -> Option<String> {
    let o = Command::new("xrdfs")
        .args([xrootd, "stat", path])
        .output()
        .expect("xrdfs");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    o.status.success().then(|| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix("Size:"))
            .unwrap_or("")
            .trim()
            .to_string()
    })
}

#[test]
fn transfers_in_flight_finish_when_the_server_is_told_to_stop() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = daemon(dir.path(), 20);
    let ca = dir.path().join("data/dev/ca.pem");
    let up = data(8 << 20, 41);
    // An XRootD upload (about 4 s) and an HTTPS one (curl at 2 MB/s).
    let xr = slow_xrdcp(
        &format!("root://{}//slow-x", d.field("xrootd=")),
        up.clone(),
        Duration::from_millis(500),
    );
    let src = dir.path().join("slow-h");
    std::fs::write(&src, &up).unwrap();
    let curl = Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--limit-rate",
            "2M",
        ])
        .arg("--cacert")
        .arg(&ca)
        .arg("-T")
        .arg(&src)
        .arg(format!(
            "https://{}/slow-h",
            d.field("https=").replace("127.0.0.1", "localhost")
        ))
        .stdout(Stdio::piped())
        .spawn()
        .expect("curl");
    std::thread::sleep(Duration::from_millis(1200));
    let t0 = Instant::now();
    d.signal("-TERM");
    std::thread::sleep(Duration::from_millis(300));
    let x: std::net::SocketAddr = d.field("xrootd=").parse().unwrap();
    assert!(
        std::net::TcpStream::connect_timeout(&x, Duration::from_secs(1)).is_err(),
        "still accepting while draining"
    );
    let xo = xr.wait_with_output().expect("xrdcp");
    assert!(
        xo.status.success(),
        "{}",
        String::from_utf8_lossy(&xo.stderr)
    );
    let co = curl.wait_with_output().expect("curl");
    assert_eq!(
        String::from_utf8_lossy(&co.stdout),
        "201",
        "the upload got its answer"
    );
    let st = d.child.wait().expect("exit");
    assert!(st.success(), "{st:?}");
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    // Both files are there, whole, after a restart.
    let again = daemon(dir.path(), 20);
    let url = format!("root://{}", again.field("xrootd="));
    for p in ["/slow-x", "/slow-h"] {
        assert_eq!(stat_size(&url, p).as_deref(), Some("8388608"), "{p}");
        let o = Command::new("xrdfs")
            .args([&url, "query", "checksum", p])
            .output()
            .expect("xrdfs");
        let sum = String::from_utf8_lossy(&o.stdout);
        assert!(sum.contains(&adler32(&up)), "{p}: {sum}");
    }
}

#[test]
fn an_upload_cut_at_the_end_of_the_drain_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = daemon(dir.path(), 1);
    // 10 s of upload, 1 s of drain.
    let xr = slow_xrdcp(
        &format!("root://{}//cut", d.field("xrootd=")),
        data(10 << 20, 42),
        Duration::from_secs(1),
    );
    std::thread::sleep(Duration::from_millis(1500));
    let t0 = Instant::now();
    d.signal("-TERM");
    let st = d.child.wait().expect("exit");
    assert!(st.success(), "{st:?}");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    let xo = xr.wait_with_output().expect("xrdcp");
    assert!(!xo.status.success(), "the upload was cut");
    let again = daemon(dir.path(), 1);
    assert_eq!(
        stat_size(&format!("root://{}", again.field("xrootd=")), "/cut"),
        None
    );
}
