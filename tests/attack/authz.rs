//! Authorization is one decision, on every path: the same table of cases
//! runs against a single server and against a metadata service with two
//! gateways, through curl (`-L -T`), xrdcp (ztn over roots://, with and
//! without `-f`) and a raw XRootD open without `kXR_mkpath` from the
//! Python bindings (`authz=` over root://). Every refusal must leave no
//! trace: the target as it was, nothing new in the directory, quota usage
//! unchanged. Allowed cases are controls: they prove the clients and the
//! topology would have written.

use crate::topo::{text, upload_file, Shape, Topo, ORIGINAL};

struct Case {
    what: &'static str,
    scope: &'static str,
    groups: &'static [&'static str],
    /// Where to write; `{c}` becomes the client's name (fresh files).
    path: &'static str,
    /// The client asks to replace (`-f`, `kXR_delete`; a PUT always does).
    overwrite: bool,
    allowed: bool,
}

const CASES: &[Case] = &[
    Case {
        what: "a read-only token creates",
        scope: "storage.read:/atk",
        groups: &[],
        path: "/atk/new-{c}",
        overwrite: false,
        allowed: false,
    },
    Case {
        what: "an openid-only token creates",
        scope: "openid",
        groups: &[],
        path: "/atk/new-{c}",
        overwrite: false,
        allowed: false,
    },
    Case {
        what: "a read-only token overwrites",
        scope: "storage.read:/atk",
        groups: &[],
        path: "/atk/existing",
        overwrite: true,
        allowed: false,
    },
    Case {
        what: "a create-only token overwrites",
        scope: "storage.create:/atk",
        groups: &[],
        path: "/atk/existing",
        overwrite: true,
        allowed: false,
    },
    Case {
        what: "a modify token for a sibling prefix (/at) writes in /atk",
        scope: "storage.modify:/at",
        groups: &[],
        path: "/atk/new-{c}",
        overwrite: true,
        allowed: false,
    },
    Case {
        what: "a modify token for elsewhere writes",
        scope: "storage.modify:/elsewhere storage.read:/",
        groups: &[],
        path: "/atk/new-{c}",
        overwrite: true,
        allowed: false,
    },
    Case {
        what: "group /cms overwrites where the ACL says g:/cms:!u",
        scope: "storage.modify:/atk",
        groups: &["/cms"],
        path: "/atk/acl/existing",
        overwrite: true,
        allowed: false,
    },
    // Controls.
    Case {
        what: "a create-only token creates",
        scope: "storage.create:/atk",
        groups: &[],
        path: "/atk/created-{c}",
        overwrite: false,
        allowed: true,
    },
    Case {
        what: "group /atlas creates and overwrites under the ACL",
        scope: "storage.modify:/atk",
        groups: &["/atlas"],
        path: "/atk/acl/atlas-{c}",
        overwrite: true,
        allowed: true,
    },
];

/// A raw XRootD open (no `kXR_mkpath`), a write and a close: prints
/// `open <errno>` when the open is refused, else `close <errno or 0>`.
const RAW_OPEN: &str = r#"
import sys
from XRootD import client
from XRootD.client.flags import OpenFlags
url, overwrite = sys.argv[1], sys.argv[2] == "1"
f = client.File()
st, _ = f.open(url, OpenFlags.DELETE if overwrite else OpenFlags.NEW, timeout=30)
if not st.ok:
    print("open", st.errno, st.message)
    sys.exit(0)
st, _ = f.write(b"written by the raw client", 0)
if not st.ok:
    print("write", st.errno, st.message)
    sys.exit(0)
st, _ = f.close()
print("close", 0 if st.ok else st.errno, st.message)
"#;

#[derive(Clone, Copy, Debug)]
enum Client {
    Curl,
    Xrdcp,
    XrdcpForce,
    RawOpen,
}

impl Client {
    fn name(self) -> &'static str {
        match self {
            Client::Curl => "curl",
            Client::Xrdcp => "xrdcp",
            Client::XrdcpForce => "xrdcp-f",
            Client::RawOpen => "raw",
        }
    }
}

/// Write `file` to `path` with `token`: Ok(()) when the client says it
/// wrote, Err(what it said) otherwise.
fn attempt(
    t: &Topo,
    c: Client,
    token: &str,
    path: &str,
    file: &std::path::Path,
    overwrite: bool,
) -> Result<(), String> {
    match c {
        Client::Curl => {
            let auth = format!("Authorization: Bearer {token}");
            let url = format!("{}{path}", t.https);
            let (code, body) = t.curl(&["-L", "-H", &auth, "-T", file.to_str().unwrap(), &url]);
            match code {
                201 | 204 => Ok(()),
                403 => Err(format!("403 {}", String::from_utf8_lossy(&body))),
                other => panic!("curl {path}: unexpected {other}"),
            }
        }
        Client::Xrdcp | Client::XrdcpForce => {
            let url = format!("{}/{path}", t.xrds);
            let mut cmd = t.cmd("xrdcp");
            cmd.env("BEARER_TOKEN", token).arg("--nopbar");
            if matches!(c, Client::XrdcpForce) {
                cmd.arg("-f");
            }
            let o = t.run(cmd.arg(file).arg(&url));
            if o.status.success() {
                Ok(())
            } else {
                let msg = text(&o);
                assert!(msg.contains("3010"), "xrdcp {path}: not a refusal: {msg}");
                Err(msg)
            }
        }
        Client::RawOpen => {
            let url = format!("{}/{path}?authz=Bearer%20{token}", t.xrd);
            let flag = if overwrite { "1" } else { "0" };
            let out = text(&t.python(RAW_OPEN, &[&url, flag]));
            if out.starts_with("close 0") {
                Ok(())
            } else {
                assert!(out.starts_with("open 3010"), "raw open {path}: {out}");
                Err(out)
            }
        }
    }
}

/// Quota usage of `/atk` (bytes, inodes) per target.
fn usage(t: &Topo) -> Vec<(u64, u64)> {
    let r =
        t.rt.block_on(t.core().quota_show(&Topo::root(), Topo::path("/atk"), 0, 0))
            .expect("quota");
    r.entries
        .iter()
        .map(|e| (e.used_bytes, e.used_inodes))
        .collect()
}

fn listing(t: &Topo, dir: &str) -> Vec<String> {
    let entries =
        t.rt.block_on(t.core().list(&Topo::root(), Topo::path(dir), None, 1000))
            .expect("list");
    entries
        .iter()
        .map(|i| String::from_utf8_lossy(&i.name).into_owned())
        .collect()
}

fn run_table(shape: Shape) {
    let t = Topo::start(shape);
    t.rt.block_on(t.core().quota_set(
        &Topo::root(),
        Topo::path("/atk"),
        tessera_core::QuotaTarget::user(crate::topo::DEV_UID),
        Some(1 << 30),
        Some(10_000),
    ))
    .expect("quota node");
    let file = upload_file(t.dir.path(), "upload", 100_000);
    let clients = [
        Client::Curl,
        Client::Xrdcp,
        Client::XrdcpForce,
        Client::RawOpen,
    ];
    let mut failures = Vec::new();
    for case in CASES {
        let token = t.token(case.scope, case.groups, 600);
        for c in clients {
            // A plain xrdcp never asks to replace.
            if case.overwrite && matches!(c, Client::Xrdcp) {
                continue;
            }
            if !case.overwrite && matches!(c, Client::XrdcpForce) && case.allowed {
                continue;
            }
            let path = case.path.replace("{c}", c.name());
            let before_content = t.content(&path);
            let before_list = (listing(&t, "/atk"), listing(&t, "/atk/acl"));
            let before_usage = usage(&t);
            let r = attempt(&t, c, &token, &path, &file, case.overwrite);
            eprintln!("{shape:?} {} {}: {r:?}", case.what, c.name());
            match (case.allowed, r) {
                (true, Ok(())) => {
                    assert!(t.content(&path).is_some(), "{}: nothing written", case.what);
                    if case.overwrite {
                        // A second write replaces it.
                        if let Err(e) = attempt(&t, c, &token, &path, &file, true) {
                            failures.push(format!(
                                "{shape:?} {} {}: replace: {e}",
                                case.what,
                                c.name()
                            ));
                        }
                    }
                }
                (true, Err(e)) => failures.push(format!(
                    "{shape:?} {} {}: refused: {e}",
                    case.what,
                    c.name()
                )),
                (false, Ok(())) => {
                    failures.push(format!("{shape:?} {} {}: ALLOWED", case.what, c.name()))
                }
                (false, Err(_)) => {
                    // No side effect at all.
                    assert_eq!(
                        t.content(&path),
                        before_content,
                        "{shape:?} {} {}: content",
                        case.what,
                        c.name()
                    );
                    assert_eq!(
                        (listing(&t, "/atk"), listing(&t, "/atk/acl")),
                        before_list,
                        "{shape:?} {}: entries",
                        case.what
                    );
                    assert_eq!(usage(&t), before_usage, "{shape:?} {}: quota", case.what);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(t.content("/atk/existing").as_deref(), Some(ORIGINAL));
    assert_eq!(t.content("/atk/acl/existing").as_deref(), Some(ORIGINAL));
    if shape == Shape::Cluster {
        // The controls went through the gateways (nothing was served by
        // the metadata service itself).
        let served: u64 = t
            .gateways
            .iter()
            .map(|g| {
                let x = g
                    .xrootd_stats
                    .as_ref()
                    .unwrap()
                    .opens
                    .load(std::sync::atomic::Ordering::Relaxed);
                let h = g
                    .https_stats
                    .as_ref()
                    .unwrap()
                    .served
                    .load(std::sync::atomic::Ordering::Relaxed);
                x + h
            })
            .sum();
        assert!(served >= 4, "gateways served {served} writes");
    }
}

#[test]
fn writes_single_server() {
    run_table(Shape::Single);
}

#[test]
fn writes_through_gateways() {
    run_table(Shape::Cluster);
}
