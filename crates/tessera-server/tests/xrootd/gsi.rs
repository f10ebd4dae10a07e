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
use tessera_xrdproto::{req, status};

/// A dev server whose host certificate is the PKI's (RSA, localhost) and
/// that takes its proxies.
fn start() -> (Env, PathBuf) {
    let p = pki();
    let q = p.clone();
    let e = Env::start_with(move |c| grid(c, &q));
    (e, p)
}

/// `c` on the PKI `p`: its host certificate, CAs, vomsdir and mappings.
pub fn grid(c: &mut tessera_server::config::Config, p: &Path) {
    c.tls.cert = Some(p.join("host.pem"));
    c.tls.key = Some(p.join("host.key"));
    crate::take_pki(c, p);
}

fn url(e: &Env, path: &str) -> String {
    // The host name the certificate names.
    format!("{}/{path}", e.url.replace("127.0.0.1", "localhost"))
}

/// A client run with proxy `proxy` and gsi only.
pub fn with(e: &Env, p: &Path, proxy: &str, prog: &str) -> Command {
    let mut c = e.cmd(prog);
    c.env("X509_USER_PROXY", p.join(proxy))
        .env("X509_CERT_DIR", p.join("certificates"))
        .env("XrdSecPROTOCOL", "gsi");
    c
}

fn run(mut c: Command) -> (bool, String) {
    let o = c.output().unwrap();
    let text = crate::common::all_output(&o);
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
    // Who the server takes each login to be (`query config whoami`).
    let whoami = |proxy: Option<&str>| {
        let mut c = match proxy {
            Some(x) => with(&e, &p, x, "xrdfs"),
            None => e.cmd("xrdfs"),
        };
        c.args([&url(&e, ""), "query", "config", "whoami"]);
        let (ok, out) = run(c);
        assert!(ok, "whoami {proxy:?}: {out}");
        out
    };
    let w = whoami(Some("alice-voms.pem"));
    for want in [
        "name=bin&uid=2&",
        "auth=x509&protocol=xroot",
        "dn=/DC=org/DC=tessera/OU=Users/CN=Alice Smith",
        "fqans=/cms/Role=production/Capability=NULL,/cms/higgs/Role=NULL/Capability=NULL",
    ] {
        assert!(w.contains(want), "{want} in {w}");
    }
    let w = whoami(Some("alice-limited.pem"));
    assert!(w.contains("limited=true"), "{w}");
    let w = whoami(None);
    assert!(!w.contains("dn=") && !w.contains("auth=x509"), "{w}");
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

/// A raw XRootD connection, logged in (no security protocol yet): the
/// login reply's parameters.
fn raw_login(addr: std::net::SocketAddr) -> (std::net::TcpStream, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let mut hello = vec![0u8; 12];
    hello.extend_from_slice(&4i32.to_be_bytes());
    hello.extend_from_slice(&2012i32.to_be_bytes());
    let mut proto = [0u8; 24];
    proto[2..4].copy_from_slice(&req::PROTOCOL.to_be_bytes());
    proto[4..8].copy_from_slice(&0x500i32.to_be_bytes());
    hello.extend_from_slice(&proto);
    s.write_all(&hello).unwrap();
    let mut first = [0u8; 16];
    s.read_exact(&mut first).unwrap();
    raw_reply(&mut s);
    let mut login = [0u8; 24];
    login[2..4].copy_from_slice(&req::LOGIN.to_be_bytes());
    login[8..12].copy_from_slice(b"atk\0");
    s.write_all(&login).unwrap();
    let (_, body) = raw_reply(&mut s);
    (
        s,
        String::from_utf8_lossy(&body[16.min(body.len())..]).into_owned(),
    )
}

fn raw_reply(s: &mut std::net::TcpStream) -> (u16, Vec<u8>) {
    use std::io::Read;
    let mut h = [0u8; 8];
    s.read_exact(&mut h).unwrap();
    let mut body = vec![0u8; u32::from_be_bytes(h[4..8].try_into().unwrap()) as usize];
    s.read_exact(&mut body).unwrap();
    (u16::from_be_bytes([h[2], h[3]]), body)
}

/// `kXR_auth` with protocol gsi and `cred`.
fn raw_auth(s: &mut std::net::TcpStream, cred: &[u8]) -> (u16, Vec<u8>) {
    use std::io::Write;
    let mut r = vec![0u8; 24];
    r[0..2].copy_from_slice(&1u16.to_be_bytes());
    r[2..4].copy_from_slice(&req::AUTH.to_be_bytes());
    r[16..20].copy_from_slice(b"gsi\0");
    r[20..24].copy_from_slice(&(cred.len() as i32).to_be_bytes());
    r.extend_from_slice(cred);
    s.write_all(&r).unwrap();
    raw_reply(s)
}

#[test]
fn handshakes_are_bounded_and_bad_buffers_refused() {
    use tessera_gsi::buffer::{kind, step, Buffer};
    let (e, _p) = start();
    let addr = e.server.as_ref().unwrap().xrootd_addr.unwrap();
    let (mut s, params) = raw_login(addr);
    assert!(params.contains("&P=gsi,v:10600,c:ssl,ca:"), "{params}");
    // Garbage, a truncated buffer, a second message without a first: the
    // reason, and the connection goes on.
    for bad in [&b"nonsense"[..], &b"gsi\0\0\0\x03\xe9\0\0\x0b"[..]] {
        let (st, body) = raw_auth(&mut s, bad);
        assert_eq!(st, status::ERROR, "{}", String::from_utf8_lossy(&body));
        assert!(String::from_utf8_lossy(&body).contains("Secgsi"));
    }
    let (st, body) = raw_auth(&mut s, &Buffer::new(step::CERT).serialize());
    assert!(st == status::ERROR && String::from_utf8_lossy(&body).contains("kXGC_certreq"));
    // A well-formed first message, again and again: a few are answered
    // (two RSA signatures and a DH key each), then no more.
    let mut inner = Buffer::new(step::CERTREQ);
    inner.push(kind::RTAG, b"abcdefgh".to_vec());
    let mut m = Buffer::new(step::CERTREQ);
    m.push(kind::CRYPTOMOD, b"ssl".to_vec());
    m.push(kind::VERSION, 10600i32.to_be_bytes().to_vec());
    m.push(kind::ISSUER_HASH, b"00000000.0".to_vec());
    m.push(kind::MAIN, inner.serialize());
    let certreq = m.serialize();
    let max = tessera_xrootd::gsi::MAX_HANDSHAKES;
    for i in 0..max {
        let (st, body) = raw_auth(&mut s, &certreq);
        assert_eq!(
            st,
            status::AUTHMORE,
            "handshake {i}: {}",
            String::from_utf8_lossy(&body)
        );
        let reply = Buffer::parse(&body).unwrap();
        assert!(reply.get(kind::X509).is_some() && reply.get(kind::CIPHER).is_some());
    }
    let (st, body) = raw_auth(&mut s, &certreq);
    assert!(
        st == status::ERROR && String::from_utf8_lossy(&body).contains("handshakes"),
        "{st} {}",
        String::from_utf8_lossy(&body)
    );
}

#[test]
fn gfal2_over_root_with_a_proxy() {
    let (e, p) = start();
    private_dir(&e, "/bin", 2);
    let src = e.dir.path().join("g");
    let body: Vec<u8> = (0..1_000_003u32).map(|i| (i % 239) as u8).collect();
    std::fs::write(&src, &body).unwrap();
    let gfal = |args: &[&str]| {
        let mut c = with(&e, &p, "alice-voms.pem", args[0]);
        c.env("GFAL_PYTHONBIN", "/usr/bin/python3").args(&args[1..]);
        run(c)
    };
    let remote = url(&e, "/bin/gfal");
    let (ok, out) = gfal(&["gfal-copy", &format!("file://{}", src.display()), &remote]);
    assert!(ok, "gfal-copy up: {out}");
    assert_eq!(owner(&e, "/bin/gfal"), 2);
    let (ok, out) = gfal(&["gfal-ls", &url(&e, "/bin")]);
    assert!(ok && out.contains("gfal"), "gfal-ls: {out}");
    let (ok, out) = gfal(&["gfal-sum", &remote, "ADLER32"]);
    assert!(
        ok && out.contains(&crate::adler32(&body)),
        "gfal-sum: {out}"
    );
    let back = e.dir.path().join("g.back");
    let (ok, out) = gfal(&["gfal-copy", &remote, &format!("file://{}", back.display())]);
    assert!(
        ok && std::fs::read(&back).unwrap() == body,
        "gfal-copy down: {out}"
    );
    let (ok, out) = gfal(&["gfal-rm", &remote]);
    assert!(ok, "gfal-rm: {out}");
    assert!(e
        .rt
        .block_on(e.core().stat(&Env::root(), Env::path("/bin/gfal")))
        .is_err());
}
