//! No unauthenticated or cheap exhaustion, against a `tesserad` process of
//! its own: while each attack runs, a normal xrdcp and curl still succeed,
//! the admin API and the metrics still answer, and the server's memory
//! and descriptors stay bounded.

use crate::proc::Proc;
use crate::raw::{handle, Raw, KXR_WRITE};
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const MIB: u64 = 1 << 20;

/// A 24 MiB upload and download with xrdcp (token in `authz=`) and an
/// upload and download with curl: all must succeed.
pub fn normal_clients_work(p: &Proc, tag: &str) {
    let tok = p.token("storage.modify:/data storage.read:/data");
    let f = p.dir.path().join(format!("up-{tag}"));
    let body: Vec<u8> = (0..24 * MIB as usize).map(|i| (i % 251) as u8).collect();
    std::fs::write(&f, &body).unwrap();
    let url = format!("root://{}//data/{tag}.x?authz=Bearer%20{tok}", p.xrootd);
    let o = p
        .cmd("xrdcp")
        .args(["--nopbar", "-f"])
        .arg(&f)
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{tag}: xrdcp up: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let back = p.dir.path().join(format!("down-{tag}"));
    let o = p
        .cmd("xrdcp")
        .args(["--nopbar", "-f"])
        .arg(&url)
        .arg(&back)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{tag}: xrdcp down: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(std::fs::read(&back).unwrap() == body, "{tag}: xrdcp bytes");
    let h = format!("Authorization: Bearer {tok}");
    let u = format!("{}/data/{tag}.h", p.https);
    let curl = |args: &[&str]| -> String {
        let o = p
            .cmd("curl")
            .args(["-sS", "--max-time", "60", "--cacert"])
            .arg(&p.ca)
            .args(["-o", "/dev/null", "-w", "%{http_code}"])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert_eq!(
        curl(&["-H", &h, "-T", f.to_str().unwrap(), &u]),
        "201",
        "{tag}: curl PUT"
    );
    assert_eq!(curl(&["-H", &h, &u]), "200", "{tag}: curl GET");
}

fn admin_and_metrics_answer(p: &Proc, tag: &str) {
    let o = p.cli(&["ls", "/"]);
    assert!(
        o.status.success(),
        "{tag}: tessera ls: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        p.metric("tessera_buffers_limit_bytes").is_some(),
        "{tag}: /metrics"
    );
}

/// The write-budget trickle: connections that announce 64 MiB writes and
/// send a byte now and then. Before login they are closed at once; logged
/// in without a file open for writing, their bytes are drained, never
/// held; authorized writers hold what they have sent (leased as it comes),
/// not what they announced. A writer that stops sending is given up after
/// the body timeout, its file never visible.
#[test]
fn announced_writes_hold_nothing_they_have_not_sent() {
    let budget = 256 * MIB;
    let p = Proc::start(
        None,
        "[buffers]\nmax = \"256MiB\"\n[xrootd]\nbody_timeout = \"4s\"\n",
    );
    let tok = p.token("storage.modify:/data");
    let announce = |r: &mut Raw, fh: [u8; 4]| {
        let mut params = [0u8; 16];
        params[0..4].copy_from_slice(&fh);
        r.send(KXR_WRITE, params, 64 << 20, &[1u8]);
    };
    // Before login.
    let mut early = Vec::new();
    for _ in 0..20 {
        let mut r = Raw::connect_from(p.xrootd, None).unwrap();
        r.hello();
        announce(&mut r, [0, 0, 0, 1]);
        early.push(r);
    }
    for r in &mut early {
        assert!(
            r.closed_within(Duration::from_secs(5)),
            "a write before login is closed"
        );
    }
    // Logged in, no file open for writing.
    let mut tricklers = Vec::new();
    for _ in 0..20 {
        let mut r = Raw::login(p.xrootd, None, "eve");
        announce(&mut r, [0, 0, 0, 1]);
        tricklers.push(r);
    }
    // Authorized writers, each with a file open.
    for i in 0..8 {
        let mut r = Raw::login(p.xrootd, None, "alice");
        let open = r.open(
            &format!("/data/stalled{i}?authz=Bearer%20{tok}"),
            0x0008 | 0x0020,
            0o644,
        );
        announce(&mut r, handle(&open));
        tricklers.push(r);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let streams: Vec<std::net::TcpStream> =
        tricklers.iter().map(|r| r.s.try_clone().unwrap()).collect();
    let s2 = Arc::clone(&stop);
    let trickle = std::thread::spawn(move || {
        let mut streams = streams;
        while !s2.load(Ordering::Relaxed) {
            for s in &mut streams {
                let _ = s.write_all(&[7u8]);
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    });
    std::thread::sleep(Duration::from_secs(2));
    let held = p.metric("tessera_buffers_in_use_bytes").expect("metrics");
    assert!(held < (16 * MIB) as f64, "the tricklers hold {held} bytes");
    normal_clients_work(&p, "trickle");
    admin_and_metrics_answer(&p, "trickle");
    let rss = p.rss();
    assert!(
        rss < budget + 320 * MIB,
        "server RSS {rss} over the budget and margin"
    );
    stop.store(true, Ordering::Relaxed);
    trickle.join().unwrap();
    // Stalled: given up after the body timeout, nothing visible.
    for r in tricklers.iter_mut().skip(20) {
        assert!(
            r.closed_within(Duration::from_secs(10)),
            "a stalled write is given up"
        );
    }
    let o = p.cli(&["ls", "/data"]);
    let ls = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        !ls.contains("stalled"),
        "nothing of a stalled write is visible: {ls}"
    );
    assert!(
        p.wait_for(Duration::from_secs(5), || p
            .metric("tessera_buffers_in_use_bytes")
            == Some(0.0)),
        "the budget comes back"
    );
}

/// 1,000 idle logged-in connections against a server with 400
/// descriptors: one address gets its share and the rest are refused
/// (`kXR_Overloaded`), so clients elsewhere still work; many addresses
/// together reach the process's limit, and the admin API and the metrics
/// still answer from the reserve; idle connections are closed after the
/// idle timeout, and everything works again.
#[test]
fn idle_connections_cannot_take_the_descriptors() {
    let p = Proc::start(Some(400), "[xrootd]\nidle_timeout = \"8s\"\n");
    let (total, per) = tessera_core::default_limits(400);
    let from = |last: u8| Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, last)));
    let mut held = Vec::new();
    let mut refused = 0;
    for _ in 0..1000 {
        match Raw::try_login(p.xrootd, from(2), "eve") {
            Ok(r) => held.push(r),
            Err(e) => {
                assert!(e.contains("3024"), "refused with kXR_Overloaded: {e}");
                refused += 1;
            }
        }
    }
    assert_eq!((held.len(), refused), (per, 1000 - per));
    // The limit is the process's, HTTPS included: that address gets a 503.
    let o = p
        .cmd("curl")
        .args(["-sS", "--interface", "127.0.0.2", "--cacert"])
        .arg(&p.ca)
        .args(["-o", "/dev/null", "-w", "%{http_code}"])
        .arg(format!("{}/data/", p.https))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "503",
        "HTTPS from the same address"
    );
    normal_clients_work(&p, "one-address");
    admin_and_metrics_answer(&p, "one-address");
    assert!(p.fds() < 400, "descriptors: {}", p.fds());
    // Many addresses: up to the process's limit.
    for last in 3..=12 {
        for _ in 0..per {
            if let Ok(r) = Raw::try_login(p.xrootd, from(last), "eve") {
                held.push(r);
            }
        }
    }
    assert_eq!(held.len(), total, "the process's limit");
    admin_and_metrics_answer(&p, "at-the-limit");
    assert_eq!(p.metric("tessera_connections_open"), Some(total as f64));
    assert!(p.fds() < 400, "descriptors: {}", p.fds());
    // Idle: closed.
    for r in &mut held {
        assert!(
            r.closed_within(Duration::from_secs(30)),
            "an idle connection is closed"
        );
    }
    assert!(p.wait_for(Duration::from_secs(5), || p
        .metric("tessera_connections_open")
        == Some(0.0)));
    normal_clients_work(&p, "after");
}

/// The range flood: anonymous GETs of a 1 MiB file with 1,024 overlapping
/// ranges (a 6 KB request) get each byte once, not 1 GiB; with eight at
/// once, normal clients still work and the server's memory stays bounded.
#[test]
fn overlapping_ranges_send_each_byte_once() {
    let p = Proc::start(None, "");
    let tok = p.token("storage.modify:/data");
    let f = p.dir.path().join("mib");
    std::fs::write(&f, vec![5u8; MIB as usize]).unwrap();
    let url = format!("{}/data/mib", p.https);
    let put = p
        .cmd("curl")
        .args(["-sS", "--cacert"])
        .arg(&p.ca)
        .args(["-o", "/dev/null", "-w", "%{http_code}", "-H"])
        .arg(format!("Authorization: Bearer {tok}"))
        .arg("-T")
        .arg(&f)
        .arg(&url)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&put.stdout), "201");
    let ranges: Vec<String> = (0..1024).map(|i| format!("{i}-")).collect();
    let header = format!("Range: bytes={}", ranges.join(","));
    let flood = || {
        p.cmd("curl")
            .args(["-sS", "--max-time", "120", "--cacert"])
            .arg(&p.ca)
            .args([
                "-o",
                "/dev/null",
                "-w",
                "%{http_code} %{size_download}",
                "-H",
                &header,
                &url,
            ])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let children: Vec<_> = (0..8).map(|_| flood()).collect();
    normal_clients_work(&p, "ranges");
    let rss = p.rss();
    for c in children {
        let o = c.wait_with_output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let (code, size) = out.split_once(' ').expect("code and size");
        let size: u64 = size.parse().unwrap();
        assert!(code == "206" || code == "200", "{out}");
        assert!(size <= MIB + 4096, "a range flood got {size} bytes");
    }
    assert!(rss < 2048 * MIB + 320 * MIB, "server RSS {rss}");
}
