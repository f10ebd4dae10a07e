//! XRootD `gsi` (issue 36): stock xrdcp, xrdfs, the Python bindings and
//! uproot log in with an X.509 proxy (`X509_USER_PROXY`, gsi forced with
//! `XrdSecPROTOCOL=gsi` so that nothing falls back to `unix`), on the PKI
//! tests/pki/make.sh makes with openssl and voms-proxy-fake: the same
//! mapping as HTTPS client certificates (grid-mapfile: alice → daemon;
//! VOMS role map: production → bin), limited proxies read only, and
//! every bad certificate is refused with its reason.

use crate::{pki, Env};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A dev server whose host certificate is the PKI's (RSA, localhost) and
/// that takes its proxies.
fn start() -> (Env, PathBuf) {
    let p = pki();
    let q = p.clone();
    let e = Env::start_with(move |c| {
        c.tls.cert = Some(q.join("host.pem"));
        c.tls.key = Some(q.join("host.key"));
        c.x509.ca_dir = Some(q.join("certificates"));
        c.x509.vomsdir = Some(q.join("vomsdir"));
        c.x509.grid_mapfile = Some(q.join("grid-mapfile"));
        c.x509.voms_mapfile = Some(q.join("vorolemap"));
    });
    (e, p)
}

fn url(e: &Env, path: &str) -> String {
    // The host name the certificate names.
    format!("{}/{path}", e.url.replace("127.0.0.1", "localhost"))
}

/// A client run with proxy `proxy` and gsi only.
fn with(e: &Env, p: &Path, proxy: &str, prog: &str) -> Command {
    let mut c = e.cmd(prog);
    c.env("X509_USER_PROXY", p.join(proxy))
        .env("X509_CERT_DIR", p.join("certificates"))
        .env("XrdSecPROTOCOL", "gsi");
    c
}

fn run(mut c: Command) -> (bool, String) {
    let o = c.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success(), text)
}

fn private_dir(e: &Env, path: &str, uid: u32) {
    crate::private_dir(&e.rt, e.core(), path, uid);
}

fn owner(e: &Env, path: &str) -> u32 {
    e.rt.block_on(e.core().stat(&Env::root(), Env::path(path)))
        .expect(path)
        .uid
}

#[test]
fn xrdcp_and_xrdfs_log_in_with_proxies() {
    let (e, p) = start();
    private_dir(&e, "/bin", 2);
    private_dir(&e, "/daemon", 1);
    let src = e.dir.path().join("src");
    let body: Vec<u8> = (0..3_000_000u32).map(|i| (i % 241) as u8).collect();
    std::fs::write(&src, &body).unwrap();
    let src = src.to_str().unwrap();
    // The production role maps to bin: it writes in bin's directory.
    let mut c = with(&e, &p, "alice-voms.pem", "xrdcp");
    c.args(["-f", src, &url(&e, "/bin/up")]);
    let (ok, out) = run(c);
    assert!(ok, "xrdcp up: {out}");
    assert_eq!(owner(&e, "/bin/up"), 2);
    let back = e.dir.path().join("back");
    let mut c = with(&e, &p, "alice-voms.pem", "xrdcp");
    c.args(["-f", &url(&e, "/bin/up")]).arg(&back);
    let (ok, out) = run(c);
    assert!(ok, "xrdcp down: {out}");
    assert!(std::fs::read(&back).unwrap() == body);
    let mut c = with(&e, &p, "alice-voms.pem", "xrdfs");
    c.args([&url(&e, ""), "stat", "/bin/up"]);
    let (ok, out) = run(c);
    assert!(ok && out.contains("3000000"), "xrdfs stat: {out}");
    // Her plain proxy is daemon: its own directory, not bin's.
    let mut c = with(&e, &p, "alice-plain.pem", "xrdcp");
    c.args(["-f", src, &url(&e, "/daemon/up")]);
    let (ok, out) = run(c);
    assert!(ok, "{out}");
    assert_eq!(owner(&e, "/daemon/up"), 1);
    let mut c = with(&e, &p, "alice-plain.pem", "xrdfs");
    c.args([&url(&e, ""), "stat", "/bin/up"]);
    assert!(!run(c).0, "daemon in bin's 0700 directory");
    // A legacy proxy logs in too; a limited one reads and never writes.
    let mut c = with(&e, &p, "alice-legacy.pem", "xrdfs");
    c.args([&url(&e, ""), "stat", "/daemon/up"]);
    let (ok, out) = run(c);
    assert!(ok, "legacy proxy: {out}");
    let mut c = with(&e, &p, "alice-limited.pem", "xrdfs");
    c.args([&url(&e, ""), "stat", "/bin/up"]);
    let (ok, out) = run(c);
    assert!(ok, "limited proxy reads: {out}");
    let mut c = with(&e, &p, "alice-limited.pem", "xrdcp");
    c.args(["-f", src, &url(&e, "/bin/lim")]);
    let (ok, out) = run(c);
    assert!(
        !ok && out.contains("limited proxy"),
        "limited proxy writes: {out}"
    );
}

#[test]
fn bad_certificates_are_refused_with_the_reason() {
    let (e, p) = start();
    for (proxy, why) in [
        ("bob-voms.pem", "revoked"),
        ("mallory-plain.pem", "signature"),
        ("carol-plain.pem", "not mapped"),
    ] {
        // XrdCl prints the server's reason in its log ("No protocols left
        // to try" on its own).
        let mut c = with(&e, &p, proxy, "xrdfs");
        c.env("XRD_LOGLEVEL", "Error")
            .args([&url(&e, ""), "stat", "/"]);
        let (ok, out) = run(c);
        assert!(!ok && out.contains(why), "{proxy}: {out}");
    }
    // An expired proxy: XrdCl refuses to send it at all.
    let mut c = with(&e, &p, "alice-expired.pem", "xrdfs");
    c.args([&url(&e, ""), "stat", "/"]);
    assert!(!run(c).0, "an expired proxy");
}

#[test]
fn python_bindings_and_uproot_with_a_proxy() {
    let (e, p) = start();
    private_dir(&e, "/bin", 2);
    let py = crate::uproot::python();
    assert!(
        Path::new(&py).exists(),
        "{py} not found: scripts/test makes the uproot environment"
    );
    let local = e.dir.path().join("t.root");
    let w = e.dir.path().join("w.py");
    std::fs::write(&w, crate::uproot::SCRIPT).unwrap();
    let o = Command::new(&py).arg(&w).arg(&local).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Up with the Python bindings, as bin.
    let script = r#"
import sys
from XRootD import client
from XRootD.client.flags import OpenFlags
url, local, base, path = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
f = client.File()
st, _ = f.open(url, OpenFlags.NEW | OpenFlags.MAKEPATH)
assert st.ok, st.message
data = open(local, "rb").read()
st, _ = f.write(data)
assert st.ok, st.message
st, _ = f.close()
assert st.ok, st.message
fs = client.FileSystem(base)
st, info = fs.stat(path)
assert st.ok, st.message
print("size", info.size)
"#;
    let s = e.dir.path().join("b.py");
    std::fs::write(&s, script).unwrap();
    let base = e.url.replace("127.0.0.1", "localhost");
    let target = format!("{base}//bin/t.root");
    let mut c = with(&e, &p, "alice-voms.pem", "/usr/bin/python3");
    c.arg(&s)
        .arg(&target)
        .arg(&local)
        .arg(&base)
        .arg("/bin/t.root");
    let (ok, out) = run(c);
    let size = std::fs::metadata(&local).unwrap().len();
    assert!(
        ok && out.contains(&format!("size {size}")),
        "python bindings: {out}"
    );
    assert_eq!(owner(&e, "/bin/t.root"), 2);
    // uproot reads it back over root:// with the proxy.
    let r = e.dir.path().join("r.py");
    std::fs::write(&r, crate::uproot::READ).unwrap();
    let mut c = with(&e, &p, "alice-voms.pem", &py);
    c.arg(&r).arg(&local).arg("xrootd").arg(&target);
    let (ok, out) = run(c);
    assert!(ok && out.contains("ok"), "uproot: {out}");
}
