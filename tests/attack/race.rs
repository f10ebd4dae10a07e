//! `storage.create` never overwrites, the race included: a writer with a
//! create-only token that asked to replace (xrdcp -f's `kXR_delete`, any
//! HTTP PUT) opens while the file is absent; another writer, allowed to
//! modify, commits the file meanwhile; the first writer's commit must be
//! refused with the protocol's permission error and the other file stay.
//! Interleaved deterministically: the slow writer is a raw XRootD client
//! (or a Python HTTPS client) that holds its upload open while the other
//! writer runs.

use crate::raw::{addr_of, handle, Raw, OK, REDIRECT};
use crate::topo::{text, upload_file, Shape, Topo};
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

/// kXR_delete | kXR_open_updt, as xrdcp -f opens.
const OPEN_REPLACE: u16 = 0x0002 | 0x0020;

fn xrootd_race(shape: Shape) {
    let t = Topo::start(shape);
    let create_only = t.token("storage.create:/atk", &[], 600);
    let modify = t.token("storage.modify:/atk", &[], 600);
    let path = "/atk/race-x";
    // The slow writer opens (following a redirect by hand) and writes.
    let mut slow = Raw::login(addr_of(&t.xrd), None, "mallory");
    let target = format!("{path}?authz=Bearer%20{create_only}");
    let mut r = slow.open(&target, OPEN_REPLACE, 0o644);
    if r.status == REDIRECT {
        let (port, _, cgi) = r.redirect();
        slow = Raw::login(([127, 0, 0, 1], port).into(), None, "mallory");
        r = slow.open(&format!("{path}?{cgi}"), OPEN_REPLACE, 0o644);
    }
    let fh = handle(&r);
    assert_eq!(slow.write(fh, 0, b"the create-only writer").status, OK);
    // Meanwhile another writer commits the file.
    let other = upload_file(t.dir.path(), "other", 5_000);
    let o = t.run(
        t.cmd("xrdcp")
            .env("BEARER_TOKEN", &modify)
            .args(["--nopbar", "-f"])
            .arg(&other)
            .arg(format!("{}/{path}", t.xrds)),
    );
    assert!(o.status.success(), "{}", text(&o));
    // The slow writer's close is refused, the other file intact.
    let c = slow.close(fh);
    assert_eq!(c.errnum(), 3010, "{shape:?}: {}", c.text());
    assert_eq!(t.content(path), Some(std::fs::read(&other).unwrap()));
}

/// A PUT that sends its headers and half its body, says `started`, waits
/// for a line on stdin, sends the rest and prints the status. Follows one
/// 307 first (a metadata service's, to a gateway).
const SLOW_PUT: &str = r#"
import http.client, ssl, sys, urllib.parse
url, ca, token = sys.argv[1], sys.argv[2], sys.argv[3]
body = b"x" * 200000
ctx = ssl.create_default_context(cafile=ca)
def start(url, auth):
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=60)
    c.putrequest("PUT", u.path + ("?" + u.query if u.query else ""))
    if auth:
        c.putheader("Authorization", "Bearer " + token)
    c.putheader("Content-Length", str(len(body)))
    c.endheaders()
    return c
c = start(url, True)
c.sock.settimeout(1.0)
try:
    r = c.getresponse()
    if r.status == 307:
        c = start(r.getheader("Location"), False)
    else:
        print("early", r.status); sys.exit(0)
except (TimeoutError, ssl.SSLError, OSError):
    c.sock.settimeout(60)
c.send(body[:100000])
print("started", flush=True)
sys.stdin.readline()
c.send(body[100000:])
r = c.getresponse()
print("status", r.status, r.read().decode(errors="replace"), flush=True)
"#;

fn https_race(shape: Shape) {
    let t = Topo::start(shape);
    let create_only = t.token("storage.create:/atk", &[], 600);
    let modify = t.token("storage.modify:/atk", &[], 600);
    let path = "/atk/race-h";
    let url = format!("{}{path}", t.https);
    let mut slow = t
        .cmd("/usr/bin/python3")
        .args(["-c", SLOW_PUT, &url, t.ca.to_str().unwrap(), &create_only])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut out = BufReader::new(slow.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "started", "{shape:?}");
    let other = upload_file(t.dir.path(), "other", 5_000);
    let auth = format!("Authorization: Bearer {modify}");
    let (code, _) = t.curl(&["-L", "-H", &auth, "-T", other.to_str().unwrap(), &url]);
    assert_eq!(code, 201, "{shape:?}: the other writer");
    slow.stdin.take().unwrap().write_all(b"go\n").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    let _ = slow.wait();
    assert!(line.starts_with("status 403"), "{shape:?}: {line}");
    assert_eq!(t.content(path), Some(std::fs::read(&other).unwrap()));
}

#[test]
fn create_only_race_xrootd_single() {
    xrootd_race(Shape::Single);
}

#[test]
fn create_only_race_xrootd_gateways() {
    xrootd_race(Shape::Cluster);
}

#[test]
fn create_only_race_https_single() {
    https_race(Shape::Single);
}

#[test]
fn create_only_race_https_gateways() {
    https_race(Shape::Cluster);
}
