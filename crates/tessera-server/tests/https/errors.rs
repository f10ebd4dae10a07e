//! Bad input and failures: the right status, bounded work, nothing partial
//! left behind, and the connection usable afterwards.

use crate::{data, first_fsid, set_fs_status, Env};
use std::io::{Read, Write};
use tessera_core::QuotaTarget;

#[test]
fn quota_traversal_and_bounds() {
    let e = Env::start();
    let core = e.core();
    crate::quota_dir(&e.rt, core, ("/q", 0o755), QuotaTarget::user(0), 1 << 20);
    let f = e.file("big", data(2 << 20, 1));
    let (code, body) = e.curl(&["-T", f.to_str().unwrap(), &format!("{}/q/big", e.url)]);
    assert_eq!(code, 507, "{}", String::from_utf8_lossy(&body));
    assert!(
        e.rt.block_on(core.stat(&Env::root(), Env::path("/q/big")))
            .is_err(),
        "nothing left"
    );
    // Chunked (no length announced): the 507 still reaches the client,
    // not a broken pipe, however much it was still sending.
    let big = e.file("bigger", data(24 << 20, 2));
    for round in 0..6 {
        let (code, body) = e.curl(&[
            "-T",
            big.to_str().unwrap(),
            "-H",
            "Transfer-Encoding: chunked",
            &format!("{}/q/chunked", e.url),
        ]);
        assert_eq!(
            code,
            507,
            "round {round}: {}",
            String::from_utf8_lossy(&body)
        );
        assert!(String::from_utf8_lossy(&body).contains("quota"));
    }
    assert!(
        e.rt.block_on(core.stat(&Env::root(), Env::path("/q/chunked")))
            .is_err(),
        "nothing left"
    );
    // Percent-encoded traversal stays inside the namespace.
    assert_eq!(
        e.curl(&[
            "--path-as-is",
            &format!("{}/%2e%2e/%2E%2E/etc/passwd", e.url)
        ])
        .0,
        404
    );
    assert_eq!(e.curl(&["--path-as-is", &format!("{}/a%zz", e.url)]).0, 400);
    // Too many headers: refused, not buffered without end.
    let args: Vec<String> = (0..200)
        .map(|i| format!("X-Junk-{i}: {}", "v".repeat(50)))
        .collect();
    let mut a: Vec<&str> = Vec::new();
    for h in &args {
        a.push("-H");
        a.push(h);
    }
    a.push(&e.url);
    let code = e.curl(&a).0;
    assert!(code == 431 || code == 0, "huge headers: {code}");
    // A PROPFIND body over the limit: 413.
    let big = e.file("prop.xml", "<a>".repeat(40_000));
    let arg = format!("@{}", big.display());
    assert_eq!(
        e.curl(&["-X", "PROPFIND", "--data-binary", &arg, &e.url]).0,
        413
    );
    // A partial PUT (Content-Range) is refused and the file stays whole.
    let whole = e.file("whole", data(100_000, 7));
    let url = format!("{}/q/whole", e.url);
    assert_eq!(e.curl(&["-T", whole.to_str().unwrap(), &url]).0, 201);
    let part = e.file("part", b"0123456789");
    let (code, body) = e.curl(&[
        "-T",
        part.to_str().unwrap(),
        "-H",
        "Content-Range: bytes 0-9/100000",
        &url,
    ]);
    assert_eq!(code, 400, "{}", String::from_utf8_lossy(&body));
    let (code, got) = e.curl(&[&url]);
    assert!(
        code == 200 && got == std::fs::read(&whole).unwrap(),
        "{code}: {}",
        String::from_utf8_lossy(&got[..got.len().min(300)])
    );
    // A MKCOL with a body: 415, nothing made.
    let mk = format!("{}/q/withbody", e.url);
    assert_eq!(e.curl(&["-X", "MKCOL", "-d", "<x/>", &mk]).0, 415);
    assert_eq!(e.curl(&["-X", "MKCOL", &mk]).0, 201);
    // The server still answers.
    assert_eq!(e.curl(&["-X", "OPTIONS", &e.url]).0, 200);
}

#[test]
fn a_client_that_vanishes_mid_upload_leaves_nothing() {
    let e = Env::start();
    // curl sends a body shorter than its Content-Length, then gives up.
    short_put(&e, "/v/cut", "5");
    // Give the server a moment to see the connection end.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        e.rt.block_on(e.core().stat(&Env::root(), Env::path("/v/cut")))
            .is_err(),
        "no partial file"
    );
    // Plain garbage on the TLS port is dropped without harming others.
    let mut s = std::net::TcpStream::connect(e.addr).unwrap();
    let _ = s.write_all(b"\x16\x03\x01garbage that is not a handshake");
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    assert_eq!(e.curl(&["-X", "OPTIONS", &e.url]).0, 200);
}

/// A client that stops sending in the middle of a body (slow-loris on the
/// body) is answered 408 once `body_timeout` passes without data, and
/// its upload leaves nothing: no file, no stripes.
#[test]
fn a_stalled_upload_is_abandoned_with_408() {
    let e = Env::start_with(|c| c.https.body_timeout = Some(std::time::Duration::from_secs(2)));
    let t = std::time::Instant::now();
    assert_eq!(short_put(&e, "/v/stalled", "60"), "408");
    assert!(
        t.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        t.elapsed()
    );
    assert!(
        e.rt.block_on(e.core().stat(&Env::root(), Env::path("/v/stalled")))
            .is_err(),
        "no partial file"
    );
    let scan = e.core().fsck_scan(false).expect("scan");
    assert!(scan.orphans.is_empty(), "{:?}", scan.orphans);
    assert_eq!(e.curl(&["-X", "OPTIONS", &e.url]).0, 200);
}

/// curl PUTs 100 kB with `Content-Length: 1000000` to `path`, then waits
/// (at most `max_time` seconds); returns the status curl saw.
fn short_put(e: &Env, path: &str, max_time: &str) -> String {
    let f = e.file("short", data(100_000, 3));
    let o = e.curl_run(&[
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "-X",
        "PUT",
        "-H",
        "Content-Length: 1000000",
        "--data-binary",
        &format!("@{}", f.display()),
        "--max-time",
        max_time,
        &format!("{}{path}", e.url),
    ]);
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// EOS's `sys.stall.unavailable` over HTTPS: a file whose filesystem is
/// off is a 503 with `Retry-After` when its directory asks for it (a 5xx
/// failure of the read otherwise), and a 200 once the filesystem is back.
#[test]
fn unavailable_files_say_when_to_retry() {
    let e = Env::start();
    let root = Env::root();
    let body = data(200_000, 9);
    let src = e.file("src", &body);
    let u = format!("{}/st/f", e.url);
    assert_eq!(e.curl(&["-T", src.to_str().unwrap(), &u]).0, 201);
    let core = e.core();
    e.rt.block_on(core.xattr_set(
        &root,
        Env::path("/st"),
        tessera_core::STALL_ATTR.as_bytes().to_vec(),
        b"7".to_vec(),
    ))
    .unwrap();
    let id = first_fsid(&e.rt, core, "/st/f");
    let status = |st: tessera_core::FsConfigStatus| set_fs_status(&e.rt, core, id, st);
    status(tessera_core::FsConfigStatus::Off);
    let hdrs = e.local("headers");
    let (code, text) = e.curl(&["-D", hdrs.to_str().unwrap(), &u]);
    assert_eq!(code, 503, "{}", String::from_utf8_lossy(&text));
    let h = std::fs::read_to_string(&hdrs).unwrap().to_ascii_lowercase();
    assert!(h.contains("retry-after: 7"), "{h}");
    status(tessera_core::FsConfigStatus::Rw);
    let (code, got) = e.curl(&[&u]);
    assert_eq!((code, got == body), (200, true));
}

/// GETs take their parts from the process's memory budget: while none of
/// it is free, a GET of a file too large to serve from memory is a 503
/// with `Retry-After` (after the budget's wait), a small file is still
/// served, and once the budget is free again the GET is served in full.
#[test]
fn a_get_without_memory_is_told_to_come_back() {
    let e = Env::start_with(|c| {
        c.buffers.max_mib = Some(16);
        c.buffers.wait_ms = Some(300);
    });
    let big = data(6 << 20, 3);
    let small = data(100_000, 4);
    for (name, body) in [("big", &big), ("small", &small)] {
        let src = e.local(name);
        std::fs::write(&src, body).unwrap();
        let u = format!("{}/mem/{name}", e.url);
        assert_eq!(e.curl(&["-T", src.to_str().unwrap(), &u]).0, 201);
    }
    let buffers = e.server.as_ref().unwrap().buffers.clone();
    let all =
        e.rt.block_on(buffers.lease(16 << 20))
            .expect("the whole budget");
    let hdrs = e.local("headers");
    let u = format!("{}/mem/big", e.url);
    let (code, text) = e.curl(&["-D", hdrs.to_str().unwrap(), &u]);
    assert_eq!(code, 503, "{}", String::from_utf8_lossy(&text));
    let h = std::fs::read_to_string(&hdrs).unwrap().to_ascii_lowercase();
    assert!(h.contains("retry-after: 5"), "{h}");
    let (code, got) = e.curl(&[&format!("{}/mem/small", e.url)]);
    assert_eq!((code, got == small), (200, true));
    drop(all);
    let (code, got) = e.curl(&[&u]);
    assert_eq!((code, got == big), (200, true));
    // Every part's bytes go back once sent.
    assert_eq!(in_use_after(&buffers), 0);
}

/// A PUT's group buffer comes from the same budget: with none of it free,
/// an upload past its first 64 KiB is a 503 with `Retry-After` and leaves
/// nothing behind (not even a small file's name); with the budget free
/// again the same upload is stored whole, and its memory goes back.
#[test]
fn a_put_without_memory_is_told_to_come_back() {
    let e = Env::start_with(|c| {
        c.buffers.max_mib = Some(16);
        c.buffers.wait_ms = Some(300);
    });
    let body = data(3 << 20, 8);
    let src = e.file("up", &body);
    let u = format!("{}/mem/up", e.url);
    let buffers = e.server.as_ref().unwrap().buffers.clone();
    let all =
        e.rt.block_on(buffers.lease(16 << 20))
            .expect("the whole budget");
    let hdrs = e.local("headers");
    let (code, text) = e.curl(&[
        "-D",
        hdrs.to_str().unwrap(),
        "-T",
        src.to_str().unwrap(),
        &u,
    ]);
    assert_eq!(code, 503, "{}", String::from_utf8_lossy(&text));
    let h = std::fs::read_to_string(&hdrs).unwrap().to_ascii_lowercase();
    assert!(h.contains("retry-after: 5"), "{h}");
    assert_eq!(e.curl(&["-I", &u]).0, 404, "a refused upload left a file");
    drop(all);
    assert_eq!(e.curl(&["-T", src.to_str().unwrap(), &u]).0, 201);
    let (code, got) = e.curl(&[&u]);
    assert_eq!((code, got == body), (200, true));
    assert_eq!(in_use_after(&buffers), 0);
}

/// A file that cannot be read (three stripes of a RAIN 4+2 file gone):
/// HTTPS answers an error status before the first byte, not a 200 that
/// breaks off; neither HTTPS nor XRootD tells the client where the server
/// keeps its stripes.
#[test]
fn an_unreadable_file_is_an_error_status_without_server_paths() {
    let e = Env::start();
    let core = e.core();
    e.rt.block_on(async {
        core.mkdir(&Env::root(), Env::path("/r"), 0o755, false)
            .await
            .expect("mkdir");
        core.xattr_set(
            &Env::root(),
            Env::path("/r"),
            b"sys.forced.layout".to_vec(),
            b"raiddp".to_vec(),
        )
        .await
        .expect("layout");
    });
    let f = e.file("big", data(6 << 20, 9));
    let url = format!("{}/r/big", e.url);
    assert_eq!(e.curl(&["-T", f.to_str().unwrap(), &url]).0, 201);
    let fs_root = e.dir.path().join("data").join("fs");
    let mut gone = 0;
    for fs in std::fs::read_dir(&fs_root).unwrap().flatten() {
        for d in std::fs::read_dir(fs.path()).unwrap().flatten() {
            if !d.path().is_dir() {
                continue;
            }
            for s in std::fs::read_dir(d.path()).unwrap().flatten() {
                let name = s.file_name().to_string_lossy().into_owned();
                if [".0", ".1", ".2"].iter().any(|x| name.ends_with(x)) {
                    std::fs::remove_file(s.path()).unwrap();
                    gone += 1;
                }
            }
        }
    }
    assert_eq!(gone, 3, "stripes 0-2 of the one file");
    let secret = e.dir.path().to_string_lossy().into_owned();
    let (code, body) = e.curl(&[&url]);
    let body = String::from_utf8_lossy(&body);
    assert_eq!(code, 500, "an error status, not a 200 cut short: {body}");
    assert!(body.contains("cannot read"), "{body}");
    assert!(!body.contains(&secret), "no server paths: {body}");
    // A range past the first part too.
    let (code, _) = e.curl(&["-r", "5000000-5000100", &url]);
    assert_eq!(code, 500);
    // XRootD: the error names no stripe file either.
    let x = e.server.as_ref().unwrap().xrootd_addr.expect("xrootd");
    let out = std::process::Command::new("xrdcp")
        .args(["-f", "--nopbar"])
        .arg(format!("root://127.0.0.1:{}//r/big", x.port()))
        .arg(e.local("big.back"))
        .output()
        .expect("xrdcp");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{text}");
    assert!(!text.contains(&secret), "no server paths: {text}");
    assert!(!text.contains("/fs/fs"), "no server paths: {text}");
    // A write that cannot be placed once a folder is read-only (4+2 needs
    // all six): the error says what, not where.
    let fs3 = fs_root.join("fs3");
    let d3 = fs3.to_str().unwrap();
    let mount = |a: &[&str]| {
        let ok = std::process::Command::new("mount")
            .args(a)
            .status()
            .unwrap();
        assert!(ok.success(), "mount {a:?} (tests run as root)");
    };
    mount(&["--bind", d3, d3]);
    struct Umount<'a>(&'a str);
    impl Drop for Umount<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(self.0).status();
        }
    }
    let _guard = Umount(d3);
    mount(&["-o", "remount,bind,ro", d3]);
    let (code, body) = e.curl(&["-T", f.to_str().unwrap(), &format!("{}/r/new", e.url)]);
    let body = String::from_utf8_lossy(&body);
    assert!(code >= 500, "{code}: {body}");
    assert!(!body.contains(&secret), "no server paths: {body}");
    let out = std::process::Command::new("xrdcp")
        .args(["-f", "--nopbar"])
        .arg(&f)
        .arg(format!("root://127.0.0.1:{}//r/new2", x.port()))
        .output()
        .expect("xrdcp");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{text}");
    assert!(!text.contains(&secret), "no server paths: {text}");
    assert!(
        text.contains("Read-only") || text.contains("failure domains"),
        "{text}"
    );
}

/// What `buffers` still has in use once it reaches 0, or after 5 s.
fn in_use_after(buffers: &tessera_core::Budget) -> u64 {
    let t = std::time::Instant::now();
    while buffers.in_use() > 0 && t.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    buffers.in_use()
}
