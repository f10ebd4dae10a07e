//! Each failure reaches the client as its own kXR error number: not found,
//! permission denied, over quota (nothing left behind), is a directory,
//! exists; and a malformed request closes only its own connection.

use crate::{data, first_fsid, set_fs_status, write_file, Env};
use std::io::{Read, Write};
use tessera_core::{QuotaTarget, SetAttr};
use tessera_xrdproto::{err, req, status};

const SCRIPT: &str = r#"
import sys
from XRootD import client
from XRootD.client.flags import OpenFlags, MkDirFlags
url, case = sys.argv[1], sys.argv[2]
fs = client.FileSystem(url)
def code(st):
    return st.errno if not st.ok else 0
if case == "notfound":
    st, _ = fs.stat("/nothing/here"); print(code(st))
    f = client.File(); st, _ = f.open(url + "//nothing/here"); print(code(st))
elif case == "isdir":
    f = client.File(); st, _ = f.open(url + "//dir"); print(code(st))
elif case == "exists":
    st, _ = fs.mkdir("/dir"); print(code(st))
    f = client.File(); st, _ = f.open(url + "//dir/file", OpenFlags.NEW); print(code(st))
elif case == "denied":
    f = client.File(); st, _ = f.open(url + "//private/secret"); print(code(st))
    st, _ = fs.dirlist("/private"); print(code(st))
    f = client.File(); st, _ = f.open(url + "//private/new", OpenFlags.NEW); print(code(st))
    st, _ = fs.rm("/dir/file"); print(code(st))
elif case == "quota":
    f = client.File(); st, _ = f.open(url + "//q/big", OpenFlags.NEW)
    print(code(st))
    if st.ok:
        st, _ = f.write(b"x" * (2 << 20), 0); print(code(st))
        st, _ = f.close(); print(code(st))
"#;

fn codes(e: &Env, case: &str, as_nobody: bool) -> Vec<i32> {
    let script = e.local("errs.py");
    std::fs::write(&script, SCRIPT).unwrap();
    let mut c = if as_nobody {
        let mut c = e.cmd("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/python3",
        ]);
        c
    } else {
        e.cmd("/usr/bin/python3")
    };
    let o = c
        .arg(&script)
        .args([&e.url, case])
        .env("HOME", e.dir.path())
        .output()
        .expect("python");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.trim().parse().expect("a code"))
        .collect()
}

#[test]
fn kxr_error_numbers() {
    let e = Env::start();
    let core = e.core();
    let root = Env::root();
    let f = e.local("f");
    write_file(&f, &data(1000, 1));
    e.ok("xrdfs", &[&e.url, "mkdir", "/dir"]);
    e.ok(
        "xrdcp",
        &[
            "--nopbar",
            f.to_str().unwrap(),
            &format!("{}//dir/file", e.url),
        ],
    );
    e.ok(
        "xrdcp",
        &[
            "--nopbar",
            f.to_str().unwrap(),
            &format!("{}//private/secret", e.url),
        ],
    );
    for (p, mode) in [("/private", 0o700), ("/private/secret", 0o600)] {
        let a = SetAttr {
            mode: Some(mode),
            ..SetAttr::default()
        };
        e.rt.block_on(core.setattr(&root, Env::path(p), a))
            .expect("chmod");
    }
    crate::quota_dir(&e.rt, core, ("/q", 0o777), QuotaTarget::user(0), 1 << 20);
    assert_eq!(
        codes(&e, "notfound", false),
        [err::NOT_FOUND, err::NOT_FOUND]
    );
    assert_eq!(codes(&e, "isdir", false), [err::IS_DIRECTORY]);
    assert_eq!(
        codes(&e, "exists", false),
        [err::ITEM_EXISTS, err::ITEM_EXISTS]
    );
    // nobody: not the owner of anything, / is 0755.
    assert_eq!(
        codes(&e, "denied", true),
        [
            err::NOT_AUTHORIZED,
            err::NOT_AUTHORIZED,
            err::NOT_AUTHORIZED,
            err::NOT_AUTHORIZED
        ]
    );
    // Over quota: refused at write (xrdcp's oss.asize makes it the open)
    // and nothing is left behind.
    let q = codes(&e, "quota", false);
    assert!(
        q == [0, err::OVER_QUOTA, err::OVER_QUOTA] || q == [err::OVER_QUOTA],
        "{q:?}"
    );
    let big = e.local("big");
    write_file(&big, &data(2 << 20, 2));
    let msg = e.fails(
        "xrdcp",
        &[
            "--nopbar",
            big.to_str().unwrap(),
            &format!("{}//q/big2", e.url),
        ],
    );
    assert!(msg.contains("3021"), "{msg}");
    for p in ["/q/big", "/q/big2"] {
        let gone = e.rt.block_on(core.stat(&root, Env::path(p)));
        assert!(gone.is_err(), "{p} must not exist");
    }
}

#[test]
fn malformed_requests_close_only_their_connection() {
    let e = Env::start();
    let addr = e.url.trim_start_matches("root://").to_string();
    // Not a handshake at all.
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.write_all(b"GET / HTTP/1.0\r\n\r\n\r\n").unwrap();
    let mut buf = Vec::new();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let _ = s.read_to_end(&mut buf);
    assert!(buf.is_empty(), "no XRootD reply to garbage");
    // A valid handshake, then a request claiming a 2 GiB payload.
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    let mut req = [0u8; 24];
    req[2..4].copy_from_slice(&req::STAT.to_be_bytes());
    req[20..24].copy_from_slice(&i32::MAX.to_be_bytes());
    s.write_all(&handshake_then(&req)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    assert!(got.len() >= 16, "handshake answered");
    // The server closed that connection; others work.
    e.ok("xrdfs", &[&e.url, "ls", "/"]);
}

/// A request that stops arriving halfway (slow-loris) closes its
/// connection after `request_stall`; an idle connection between
/// requests is kept.
#[test]
fn a_request_that_stalls_halfway_closes_its_connection() {
    let e = Env::start_with(|c| c.xrootd.request_stall = Some(std::time::Duration::from_secs(1)));
    let addr = e.url.trim_start_matches("root://").to_string();
    let connect = || {
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        // Handshake, then kXR_protocol (answered).
        let mut req = [0u8; 24];
        req[2..4].copy_from_slice(&req::PROTOCOL.to_be_bytes());
        req[4..8].copy_from_slice(&0x500i32.to_be_bytes());
        s.write_all(&handshake_then(&req)).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(3)))
            .unwrap();
        // The handshake's reply, then kXR_protocol's (header and body).
        let mut first = [0u8; 16];
        s.read_exact(&mut first).unwrap();
        let mut h = [0u8; 8];
        s.read_exact(&mut h).unwrap();
        let mut body = vec![0u8; i32::from_be_bytes(h[4..8].try_into().unwrap()) as usize];
        s.read_exact(&mut body).unwrap();
        s
    };
    // Idle after a complete request: still open after twice the limit.
    let mut idle = connect();
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let mut rest = vec![0u8; 4096];
    match idle.read(&mut rest) {
        Ok(n) => assert!(n > 0, "an idle connection was closed"),
        Err(err) => assert!(
            matches!(
                err.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "{err}"
        ),
    }
    // Ten bytes of a request header, then nothing: closed within seconds.
    let mut s = connect();
    let t = std::time::Instant::now();
    s.write_all(&[0u8, 2, 0x0b, 0xc6, 0, 0, 0, 0, 0, 0])
        .unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let mut buf = Vec::new();
    let r = s.read_to_end(&mut buf);
    assert!(r.is_ok(), "the server closed it: {r:?}");
    assert!(
        t.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        t.elapsed()
    );
    e.ok("xrdfs", &[&e.url, "ls", "/"]);
}

/// EOS's `sys.stall.unavailable`: a file whose filesystem is off is
/// answered with `kXR_wait` when its directory asks for it, and xrdcp
/// gets it once the filesystem is back; elsewhere the read fails at once.
#[test]
fn unavailable_files_stall_when_the_directory_asks() {
    let e = Env::start();
    let root = Env::root();
    let body = data(100_000, 5);
    let f = e.dir.path().join("f");
    write_file(&f, &body);
    for d in ["st", "nost"] {
        e.ok(
            "xrdcp",
            &[
                "--nopbar",
                f.to_str().unwrap(),
                &format!("{}//{d}/f", e.url),
            ],
        );
    }
    let core = e.core();
    let set = |name: &str, value: &str| {
        e.rt.block_on(core.xattr_set(
            &root,
            Env::path("/st"),
            name.as_bytes().to_vec(),
            value.as_bytes().to_vec(),
        ))
    };
    assert!(
        set(tessera_core::STALL_ATTR, "soon").is_err(),
        "seconds only"
    );
    set(tessera_core::STALL_ATTR, "2").unwrap();
    let fsid_of = |p: &str| first_fsid(&e.rt, core, p);
    let status = |id: u32, st: tessera_core::FsConfigStatus| set_fs_status(&e.rt, core, id, st);
    let out = e.dir.path().join("out");
    // Without the attribute: an error, at once.
    let id = fsid_of("/nost/f");
    status(id, tessera_core::FsConfigStatus::Off);
    let t = std::time::Instant::now();
    e.fails(
        "xrdcp",
        &[
            "-f",
            "--nopbar",
            &format!("{}//nost/f", e.url),
            out.to_str().unwrap(),
        ],
    );
    assert!(t.elapsed() < std::time::Duration::from_secs(10));
    status(id, tessera_core::FsConfigStatus::Rw);
    // With it: the client waits, and reads once the filesystem is back.
    let id = fsid_of("/st/f");
    status(id, tessera_core::FsConfigStatus::Off);
    let t = std::time::Instant::now();
    let mut cp = e
        .cmd("xrdcp")
        .args([
            "-f",
            "--nopbar",
            &format!("{}//st/f", e.url),
            out.to_str().unwrap(),
        ])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(3000));
    assert!(cp.try_wait().unwrap().is_none(), "xrdcp waits");
    status(id, tessera_core::FsConfigStatus::Rw);
    assert!(cp.wait().unwrap().success());
    assert!(t.elapsed() >= std::time::Duration::from_secs(3));
    assert_eq!(std::fs::read(&out).unwrap(), body);
}

/// A new file in a directory that does not exist: its parents are made
/// when the open asks (`kXR_mkpath`, or `kXR_async` as XrdCl always
/// sends), and the open is `kXR_NotFound` when it does not.
#[test]
fn missing_parents_are_made_only_when_asked() {
    use crate::bounds::{errnum, Raw};
    let e = Env::start();
    let root = Env::root();
    let exists = |p: &str| e.rt.block_on(e.core().stat(&root, Env::path(p))).is_ok();
    // kXR_new | kXR_open_updt
    let plain = 0x0008 | 0x0020;
    match Raw::try_open(&e, "/none/deep/f", plain, 0o644) {
        Ok(_) => panic!("opened without its parents"),
        Err((st, b)) => assert_eq!((st, errnum(&b)), (status::ERROR, err::NOT_FOUND)),
    }
    assert!(!exists("/none"), "nothing made");
    for (options, dir) in [
        (plain | 0x0100, "/made/by/mkpath"),
        (plain | 0x0040, "/made/by/async"),
    ] {
        let mut r = Raw::try_open(&e, &format!("{dir}/f"), options, 0o644).expect("open");
        assert_eq!(r.call(req::WRITE, 0, 0, b"bytes").0, 0, "write");
        assert_eq!(r.call(req::CLOSE, 0, 0, b"").0, 0, "close");
        assert!(exists(dir), "{dir}");
        let got = e.ok("xrdfs", &[&e.url, "cat", &format!("{dir}/f")]);
        assert_eq!(got, "bytes");
    }
}

/// The XRootD handshake (`0 0 0 4 2012`) followed by `first`.
pub fn handshake_then(first: &[u8]) -> Vec<u8> {
    let mut hs = vec![0u8; 12];
    hs.extend_from_slice(&4i32.to_be_bytes());
    hs.extend_from_slice(&2012i32.to_be_bytes());
    hs.extend_from_slice(first);
    hs
}
