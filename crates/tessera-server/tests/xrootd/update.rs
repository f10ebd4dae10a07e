//! Updates of existing files through the Python bindings, as ROOT's
//! `TFile::Open(…, "UPDATE")` makes them: an open for update, writes at
//! offsets inside and beyond the file, a rewrite of bytes written before,
//! a shrinking and a growing truncate, reads of what the update has, the
//! stat's size; checked byte for byte, and against Debian's xrootd doing
//! the same in the same test; and a new file changed before its first
//! close (ROOT's RECREATE rewrites its header). Tesserad's updates are
//! copy-on-write: a
//! reader sees the old bytes until the close, an update never closed
//! leaves the file as it was, and RAIN files update like plain ones.

use crate::{data, Env};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

/// The scenario, run against one server; prints what it saw as JSON.
const SCRIPT: &str = r#"
import sys, json
from XRootD import client
from XRootD.client.flags import OpenFlags
url, path, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
orig = bytes((i * 7 + 3) % 251 for i in range(size))
out = {}
f = client.File()
st, _ = f.open(url + "/" + path, OpenFlags.DELETE | OpenFlags.MAKEPATH, 0o644)
assert st.ok, st
assert f.write(orig, 0)[0].ok
assert f.close()[0].ok
want = bytearray(orig)
def put(off, b):
    global want
    if len(want) < off + len(b):
        want += bytes(off + len(b) - len(want))
    want[off:off + len(b)] = b
f = client.File()
st, _ = f.open(url + "/" + path, OpenFlags.UPDATE)
out["open"] = st.ok
if st.ok:
    steps = []
    def step(name, st):
        steps.append([name, st.ok, st.errno])
    step("write inside", f.write(b"A" * 1000, 5000)[0]); put(5000, b"A" * 1000)
    step("write beyond", f.write(b"B" * 100000, size - 1000)[0]); put(size - 1000, b"B" * 100000)
    st, got = f.read(4990, 20)
    out["read"] = got.hex() if st.ok else None
    step("rewrite", f.write(b"C" * 10, 5500)[0]); put(5500, b"C" * 10)
    shrink = size - 500_000
    step("shrink", f.truncate(shrink)[0]); want = want[:shrink]
    step("grow", f.truncate(shrink + 100_000)[0]); want += bytes(100_000)
    step("write after grow", f.write(b"D" * 7, shrink + 50)[0]); put(shrink + 50, b"D" * 7)
    st, s = f.stat(True)
    out["stat size"] = s.size if st.ok else None
    step("close", f.close()[0])
    out["steps"] = steps
f = client.File()
assert f.open(url + "/" + path)[0].ok
st, got = f.read(0, len(want) + 10)
out["final size"] = len(got)
out["content ok"] = bytes(got) == bytes(want)
f.close()
print(json.dumps(out, sort_keys=True))
"#;

/// A file created and changed before its first close, as ROOT's
/// `TFile::Open(…, "RECREATE")` does (it rewrites its header at close).
const RECREATE: &str = r#"
import sys, json
from XRootD import client
from XRootD.client.flags import OpenFlags
url, path, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
body = bytes((i * 13 + 1) % 253 for i in range(size))
f = client.File()
st, _ = f.open(url + "/" + path, OpenFlags.DELETE | OpenFlags.MAKEPATH, 0o644)
assert st.ok, st
steps = []
for off in range(0, size, 1 << 20):
    steps.append(f.write(body[off:off + (1 << 20)], off)[0].ok)
steps.append(f.write(b"HEADER" * 10, 0)[0].ok)
steps.append(f.truncate(size - 300_000)[0].ok)
steps.append(f.write(b"tail", size - 200_000)[0].ok)
steps.append(f.close()[0].ok)
want = bytearray(body[:size - 300_000])
want[:60] = b"HEADER" * 10
want += bytes(100_000) + b"tail"
g = client.File()
assert g.open(url + "/" + path)[0].ok
st, got = g.read(0, size + 10)
print(json.dumps({"steps": steps, "size": len(got), "content ok": bytes(got) == bytes(want)}))
"#;

fn scenario(url: &str, path: &str, size: usize) -> serde_json::Value {
    run(SCRIPT, url, path, size)
}

fn run(script: &str, url: &str, path: &str, size: usize) -> serde_json::Value {
    let o = crate::run_ok(
        Command::new("/usr/bin/python3")
            .args(["-c", script, url, path, &size.to_string()])
            .env("XRD_REQUESTTIMEOUT", "60"),
        &format!("python3 on {url}"),
    );
    serde_json::from_slice(&o.stdout).expect("json")
}

/// Debian's xrootd serving a directory of its own over root:// (plain,
/// loopback); stopped by PID on drop.
pub struct Reference {
    child: Child,
    pub url: String,
    pub dir: PathBuf,
    pub port: u16,
}

impl Drop for Reference {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Reference {
    pub fn start() -> Reference {
        assert!(
            Path::new("/usr/bin/xrootd").exists(),
            "Debian's xrootd server not found: apt-get install xrootd-server (scripts/test does)"
        );
        let [port] = crate::common::spare_ports::<1>();
        let dir = PathBuf::from(format!(
            "/var/tmp/tessera-xrd-upd-{}-{port}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        for d in ["data", "run", "home"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        let d = dir.display();
        let cfg = format!(
            "all.export /\noss.localroot {d}/data\nall.adminpath {d}/run\n\
             all.pidpath {d}/run\nxrd.port {port}\nall.role server\n"
        );
        std::fs::write(dir.join("xrd.cfg"), cfg).unwrap();
        crate::common::chown_xrootd(&dir);
        let child = crate::common::spawn_xrootd(&dir, "upd");
        let r = Reference {
            child,
            url: format!("root://127.0.0.1:{port}/"),
            dir,
            port,
        };
        for _ in 0..300 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return r;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("the reference xrootd did not start");
    }
}

#[test]
fn updates_match_the_reference_byte_for_byte() {
    let e = Env::start();
    e.rain_dir("/rain");
    let size = 3_000_000;
    let reference = Reference::start();
    let want = scenario(&reference.url, "/upd/f", size);
    // The reference does every step (so that agreeing is not agreeing
    // on a failure), and ends with the bytes the script expects.
    assert_eq!(want["content ok"], true, "the reference itself: {want}");
    let steps = want["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 7, "{want}");
    assert!(steps.iter().all(|s| s[1] == true), "{want}");
    assert_eq!(want["stat size"], size as u64 - 400_000, "{want}");
    for path in ["/upd/f", "/rain/f"] {
        let got = scenario(&format!("{}/", e.url), path, size);
        assert_eq!(got, want, "{path}: tesserad, then the reference");
    }
    // A new file changed before its first close (ROOT's RECREATE).
    let want = run(RECREATE, &reference.url, "/upd/new", size);
    assert_eq!(want["content ok"], true, "the reference itself: {want}");
    for path in ["/upd/new", "/rain/new"] {
        let got = run(RECREATE, &format!("{}/", e.url), path, size);
        assert_eq!(got, want, "{path}: tesserad, then the reference");
    }
}

#[test]
fn an_update_is_invisible_until_its_close_and_lost_if_never_closed() {
    let e = Env::start();
    let body = data(2 << 20, 4);
    let f = e.local("f");
    std::fs::write(&f, &body).unwrap();
    e.ok(
        "xrdcp",
        &["-s", f.to_str().unwrap(), &format!("{}//u/f", e.url)],
    );
    let script = r#"
import os, sys
from XRootD import client
from XRootD.client.flags import OpenFlags
url, mode = sys.argv[1], sys.argv[2]
up = client.File()
assert up.open(url, OpenFlags.UPDATE)[0].ok
assert up.write(b"Z" * 4096, 8192)[0].ok
r = client.File()
assert r.open(url)[0].ok
st, old = r.read(8192, 4096)
assert st.ok and old != b"Z" * 4096, "a reader saw the update before its close"
if mode == "abandon":
    os._exit(0)
assert up.close()[0].ok
r2 = client.File()
assert r2.open(url)[0].ok
st, new = r2.read(8192, 4096)
assert st.ok and new == b"Z" * 4096, "the update is not there after its close"
"#;
    let url = format!("{}//u/f", e.url);
    for mode in ["abandon", "close"] {
        crate::run_ok(
            Command::new("/usr/bin/python3").args(["-c", script, &url, mode]),
            mode,
        );
        let back = e.local(mode);
        e.ok("xrdcp", &["-s", "-f", &url, back.to_str().unwrap()]);
        let got = std::fs::read(&back).unwrap();
        let mut want = body.clone();
        if mode == "close" {
            want[8192..12288].fill(b'Z');
        }
        assert!(got == want, "{mode}: the file after the update");
    }
}
