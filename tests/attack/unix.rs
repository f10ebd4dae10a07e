//! The XRootD `unix` security protocol only claims a user name. A claim
//! alone never grants more than the anonymous rights: in `owner` mode (the
//! dev default) the kernel's socket table must say the client runs as the
//! server's own user; in `trust` mode a loopback claim the kernel
//! contradicts, and an unknown name, get the anonymous rights. The lying
//! client is a raw XRootD client run as `nobody` (setpriv) that claims to
//! be root.

use crate::topo::{text, Shape, Topo};
use tessera_server::config::UnixCfg;

/// Log in claiming `user`, then open `path` for a new file (with
/// kXR_mkpath): prints `open <status> <errnum>`, then `close <status>`.
const CLAIM: &str = r#"
import socket, struct, sys
host, port, user, path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
s = socket.create_connection((host, port), timeout=20)
def recvn(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c: raise SystemExit("closed")
        b += c
    return b
def req(code, params, payload=b""):
    s.sendall(struct.pack(">HH", 1, code) + params.ljust(16, b"\0") + struct.pack(">i", len(payload)) + payload)
def reply():
    sid, st, n = struct.unpack(">HHI", recvn(8))
    return st, recvn(n)
s.sendall(struct.pack(">iiiii", 0, 0, 0, 4, 2012))
req(3006, struct.pack(">i", 0x500))
recvn(16); reply()
req(3007, struct.pack(">i", 1) + user.encode()[:8].ljust(8, b"\0"))
reply()
cred = b"unix\0" + user.encode() + b"\0"
req(3000, b"\0" * 12 + b"unix", cred)
st, _ = reply()
assert st == 0, st
req(3010, struct.pack(">HH", 0o644, 0x0008 | 0x0020 | 0x0100), path.encode())
st, body = reply()
err = struct.unpack(">i", body[:4])[0] if st == 4003 else 0
print("open", st, err, flush=True)
if st == 0:
    req(3003, body[:4])
    print("close", reply()[0], flush=True)
"#;

fn claim(t: &Topo, as_nobody: bool, user: &str, path: &str) -> String {
    let port = crate::raw::addr_of(&t.xrd).port().to_string();
    let mut c = if as_nobody {
        let mut c = t.cmd("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/python3",
        ]);
        c
    } else {
        t.cmd("/usr/bin/python3")
    };
    let o = t.run(c.args(["-c", CLAIM, "127.0.0.1", &port, user, path]));
    text(&o)
}

fn euid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").unwrap().uid()
}

#[test]
fn owner_mode_believes_the_kernel_not_the_claim() {
    assert_eq!(euid(), 0, "these tests run as root (scripts/test does)");
    let t = Topo::start_with(Shape::Single, |c| c.xrootd.unix = UnixCfg::Owner);
    // The server's own user, as the kernel says: it writes.
    let out = claim(&t, false, "root", "/owner/by-root");
    assert!(out.contains("open 0 0") && out.contains("close 0"), "{out}");
    // Someone else claiming to be root: the anonymous (read-only) rights.
    let out = claim(&t, true, "root", "/owner/by-liar");
    assert!(out.contains("open 4003 3010"), "{out}");
    assert_eq!(t.content("/owner/by-liar"), None);
    // The claim is irrelevant for the owner: any name, the owner's rights.
    let out = claim(&t, false, "daemon", "/owner/by-root-as-daemon");
    assert!(out.contains("close 0"), "{out}");
    let i =
        t.rt.block_on(
            t.core()
                .stat(&Topo::root(), Topo::path("/owner/by-root-as-daemon")),
        )
        .unwrap();
    assert_eq!(i.uid, 0, "written as the kernel's uid");
}

#[test]
fn trust_mode_refuses_claims_the_kernel_contradicts_and_unknown_names() {
    let t = Topo::start_with(Shape::Single, |c| c.xrootd.unix = UnixCfg::Trust);
    // Only root may write in /closed; everyone in /open.
    t.rt.block_on(async {
        let core = t.core();
        core.mkdir(&Topo::root(), Topo::path("/closed"), 0o755, false)
            .await
            .unwrap();
        core.mkdir(&Topo::root(), Topo::path("/open"), 0o777, false)
            .await
            .unwrap();
    });
    let out = claim(&t, false, "root", "/closed/by-root");
    assert!(
        out.contains("close 0"),
        "the claim the kernel confirms: {out}"
    );
    let out = claim(&t, true, "root", "/closed/by-liar");
    assert!(
        out.contains("open 4003 3010"),
        "a contradicted claim: {out}"
    );
    assert_eq!(t.content("/closed/by-liar"), None);
    // An unknown name: exactly nobody.
    let out = claim(&t, false, "no-such-user-here", "/open/unknown");
    assert!(out.contains("close 0"), "{out}");
    let i =
        t.rt.block_on(t.core().stat(&Topo::root(), Topo::path("/open/unknown")))
            .unwrap();
    assert_eq!((i.uid, i.gid), (65534, 65534), "the anonymous identity");
}
