//! ACLs with the real clients, as users other than root: a second server
//! trusts the first one's development issuer (served over HTTPS on
//! loopback) through an ordinary `[auth] issuers` entry with a map file
//! (alice → 1001, bob → 1002) and a `groups` table (`/cms` → 3000).
//! curl (HTTPS) and xrdcp/xrdfs (`ztn` over roots://) then act as those
//! users: an allow beyond the mode bits, deny beats allow, no-delete,
//! `g:` by a token's `wlcg.groups`, and inheritance to new directories
//! and files, each refusal with the protocol's own code and no effect.

use crate::{data, Env};
use tessera_auth::dev::{DevIssuer, IssuerInfo};
use tessera_server::config::{AnonymousCfg, IssuerCfg, UnixCfg};

const AUD: &str = "https://storage.acl.test";

struct Users {
    key: DevIssuer,
    info: IssuerInfo,
}

impl Users {
    fn token(&self, sub: &str, groups: &[&str]) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        self.key
            .sign(&serde_json::json!({
                "wlcg.ver": "1.0", "iss": self.info.issuer, "sub": sub, "aud": AUD,
                "scope": "storage.read:/ storage.modify:/", "wlcg.groups": groups,
                "iat": now, "nbf": now, "exp": now + 600,
            }))
            .unwrap()
    }
}

/// The issuer (a dev server), and the server under test trusting it.
fn start() -> (Env, Env, Users) {
    let issuer = Env::start();
    let dev = issuer.dir.path().join("data").join("dev");
    let key = DevIssuer::load_or_create(&dev).unwrap();
    let mut info = DevIssuer::read_info(&dev).unwrap();
    info.audience = AUD.into();
    let map = issuer.local("users.json");
    std::fs::write(
        &map,
        r#"{"alice": {"uid": 1001, "gid": 1001}, "bob": {"uid": 1002, "gid": 1002}}"#,
    )
    .unwrap();
    let (url, ca) = (info.issuer.clone(), issuer.ca.clone());
    let e = Env::start_with(move |c| {
        c.https.anonymous = AnonymousCfg::ReadOnly;
        c.xrootd.unix = UnixCfg::ReadOnly;
        c.auth.ca_files.push(ca);
        c.auth.issuers.push(IssuerCfg {
            issuer: url,
            audiences: vec![AUD.into()],
            base_path: "/".into(),
            default_uid: 65534,
            default_gid: 65534,
            default_name: "nobody".into(),
            map_file: Some(map),
            groups: [("/cms".to_string(), 3000)].into(),
            may_create: true,
            local_users: false,
        });
    });
    (issuer, e, Users { key, info })
}

#[test]
fn acls_for_token_users_over_https_and_xrootd() {
    let (_issuer, e, users) = start();
    let root = Env::root();
    let core = e.core();
    e.rt.block_on(async {
        core.mkdir(&root, Env::path("/acl"), 0o755, false)
            .await
            .unwrap();
        core.xattr_set(
            &root,
            Env::path("/acl"),
            b"sys.acl".to_vec(),
            b"u:alice:rwx,g:cms:rwxd,z:!d".to_vec(),
        )
        .await
        .unwrap();
    });
    let f = e.file("f", data(50_000, 7));
    let src = f.to_str().unwrap();
    let u = |p: &str| format!("{}{p}", e.url);
    let bearer = |t: &str| format!("Authorization: Bearer {t}");
    let alice = bearer(&users.token("alice", &[]));
    let bob = bearer(&users.token("bob", &[]));
    let bob_cms = bearer(&users.token("bob", &["/cms"]));

    // Mode bits alone (root's 0755 directory): bob may not write.
    assert_eq!(e.curl(&["-H", &bob, "-T", src, &u("/acl/b")]).0, 403);
    // An allow beyond the mode bits: alice may.
    assert_eq!(e.curl(&["-H", &alice, "-T", src, &u("/acl/a")]).0, 201);
    let owner =
        e.rt.block_on(core.stat(&root, Env::path("/acl/a")))
            .unwrap();
    assert_eq!((owner.uid, owner.gid), (1001, 1001), "mapped identity");
    // No-delete (z:!d), even of her own new file: 403, still there.
    assert_eq!(e.curl(&["-H", &alice, "-X", "DELETE", &u("/acl/a")]).0, 403);
    assert_eq!(e.curl(&["-I", &u("/acl/a")]).0, 200);
    // g: by the token's wlcg.groups: bob in /cms may write; his `d`
    // allow loses to z:!d (deny beats allow).
    assert_eq!(e.curl(&["-H", &bob_cms, "-T", src, &u("/acl/b")]).0, 201);
    assert_eq!(
        e.curl(&["-H", &bob_cms, "-X", "DELETE", &u("/acl/b")]).0,
        403
    );
    let b =
        e.rt.block_on(core.stat(&root, Env::path("/acl/b")))
            .unwrap();
    assert_eq!(
        (b.uid, b.gid),
        (1002, 1002),
        "a mapped subject keeps its gid"
    );
    // An unmapped subject acts as the default user, with the first
    // mapped group of its token as its gid.
    let carol = bearer(&users.token("carol", &["/other", "/cms"]));
    assert_eq!(e.curl(&["-H", &carol, "-T", src, &u("/acl/c")]).0, 201);
    let c =
        e.rt.block_on(core.stat(&root, Env::path("/acl/c")))
            .unwrap();
    assert_eq!((c.uid, c.gid), (65534, 3000));
    // Inheritance: a directory alice makes carries the list, and files
    // in it are governed by it.
    assert_eq!(
        e.curl(&["-H", &alice, "-X", "MKCOL", &u("/acl/sub")]).0,
        201
    );
    let inherited =
        e.rt.block_on(core.xattr_get(&root, Env::path("/acl/sub"), b"sys.acl".to_vec()))
            .unwrap();
    assert_eq!(inherited, b"u:alice:rwx,g:cms:rwxd,z:!d");
    assert_eq!(
        e.curl(&["-H", &bob_cms, "-T", src, &u("/acl/sub/c")]).0,
        201
    );
    assert_eq!(
        e.curl(&["-H", &bob_cms, "-X", "DELETE", &u("/acl/sub/c")])
            .0,
        403
    );
    assert_eq!(e.curl(&["-H", &bob, "-T", src, &u("/acl/sub/d")]).0, 403);
    assert_ne!(e.curl(&["-I", &u("/acl/sub/d")]).0, 200, "nothing left");

    // The same users over XRootD (ztn over roots://).
    let x = e.server.as_ref().unwrap().xrootd_addr.unwrap();
    let xr = |p: &str| format!("roots://localhost:{}/{p}", x.port());
    let as_user = |tok: &str, prog: &str, args: &[&str]| {
        let t = tok.trim_start_matches("Authorization: Bearer ");
        let o = e
            .cmd(prog)
            .env("BEARER_TOKEN", t)
            .args(args)
            .output()
            .unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout),
        )
    };
    let (ok, msg) = as_user(&alice, "xrdcp", &["--nopbar", src, &xr("/acl/x")]);
    assert!(ok, "alice writes over xrootd: {msg}");
    let (ok, msg) = as_user(&bob, "xrdcp", &["--nopbar", src, &xr("/acl/y")]);
    assert!(!ok && msg.contains("3010"), "bob refused: {msg}");
    let endpoint = format!("roots://localhost:{}", x.port());
    let (ok, msg) = as_user(&alice, "xrdfs", &[&endpoint, "rm", "/acl/x"]);
    assert!(!ok && msg.contains("3010"), "no-delete over xrootd: {msg}");
    let (ok, msg) = as_user(&bob_cms, "xrdfs", &[&endpoint, "mkdir", "/acl/cms"]);
    assert!(ok, "a /cms member makes a directory: {msg}");
    let names: Vec<String> =
        e.rt.block_on(core.list(&root, Env::path("/acl"), None, 100))
            .map(|l| {
                l.into_iter()
                    .map(|i| String::from_utf8_lossy(&i.name).into_owned())
                    .collect()
            })
            .unwrap_or_default();
    for n in ["a", "b", "x", "sub", "cms"] {
        assert!(names.iter().any(|m| m == n), "{n} in {names:?}");
    }
    assert!(!names.iter().any(|m| m == "y"), "nothing from bob");
}
