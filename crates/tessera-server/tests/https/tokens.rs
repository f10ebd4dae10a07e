//! Bearer tokens over HTTPS with the real clients, against the dev mode's
//! own issuer (its JWKS served by the server itself over HTTPS and fetched
//! by its validator): anonymous clients may read and list; writes need a
//! token; every refusal is 401 (bad token, or none) or 403 (outside its scopes)
//! with no side effect.

use crate::{data, Env};
use tessera_auth::dev::DevIssuer;

/// A dev server as the dev default has it: anonymous read-only.
fn start() -> Env {
    Env::start_with(|c| c.https.anonymous = tessera_server::config::AnonymousCfg::ReadOnly)
}

fn issuer(e: &Env) -> (DevIssuer, tessera_auth::dev::IssuerInfo) {
    let dev = e.dir.path().join("data").join("dev");
    (
        DevIssuer::load_or_create(&dev).unwrap(),
        DevIssuer::read_info(&dev).unwrap(),
    )
}

pub fn token(e: &Env, scope: &str) -> String {
    let (k, info) = issuer(e);
    k.issue(&info, "alice", scope, 600).unwrap()
}

fn bearer(t: &str) -> String {
    format!("Authorization: Bearer {t}")
}

#[test]
fn tokens_over_https() {
    let e = start();
    let f = e.file("f", data(100_000, 1));
    let body = std::fs::read(&f).unwrap();
    let u = |p: &str| format!("{}{p}", e.url);
    // Anonymous: read and list yes, write no: asked to log in (401 with
    // a Bearer challenge), not refused as if it had.
    let hdr = e.local("anon.hdr");
    assert_eq!(
        e.curl(&[
            "-D",
            hdr.to_str().unwrap(),
            "-T",
            f.to_str().unwrap(),
            &u("/data/t/anon")
        ])
        .0,
        401
    );
    let head = std::fs::read_to_string(&hdr).unwrap();
    assert!(
        head.contains("www-authenticate: Bearer realm=\"tessera\""),
        "{head}"
    );
    let t = token(
        &e,
        "storage.read:/ storage.create:/data/t storage.modify:/data/m",
    );
    let auth = bearer(&t);
    assert_eq!(
        e.curl(&["-H", &auth, "-T", f.to_str().unwrap(), &u("/data/t/a")])
            .0,
        201
    );
    let (code, got) = e.curl(&[&u("/data/t/a")]);
    assert_eq!((code, got == body), (200, true), "anonymous read");
    assert_eq!(
        e.curl(&["-X", "PROPFIND", "-H", "Depth: 1", &u("/data/t")])
            .0,
        207
    );
    assert_eq!(e.curl(&["-X", "DELETE", &u("/data/t/a")]).0, 401);
    // Create scope: no overwrite, no delete; modify scope: both.
    assert_eq!(
        e.curl(&["-H", &auth, "-T", f.to_str().unwrap(), &u("/data/t/a")])
            .0,
        403
    );
    assert_eq!(
        e.curl(&["-H", &auth, "-X", "DELETE", &u("/data/t/a")]).0,
        403
    );
    assert_eq!(
        e.curl(&["-H", &auth, "-T", f.to_str().unwrap(), &u("/data/m/b")])
            .0,
        201
    );
    assert_eq!(
        e.curl(&["-H", &auth, "-T", f.to_str().unwrap(), &u("/data/m/b")])
            .0,
        204
    );
    assert_eq!(
        e.curl(&["-H", &auth, "-X", "DELETE", &u("/data/m/b")]).0,
        204
    );
    // Outside the scopes, a sibling prefix, traversal (plain and encoded).
    for p in [
        "/data/other/x",
        "/data/tt/x",
        "/data/t/../other/x",
        "/data/t/%2e%2e/other/y",
    ] {
        let (code, _) = e.curl(&[
            "--path-as-is",
            "-H",
            &auth,
            "-T",
            f.to_str().unwrap(),
            &u(p),
        ]);
        assert_eq!(code, 403, "{p}");
    }
    for p in ["/data/other", "/data/tt", "/data/other/y"] {
        assert_ne!(e.curl(&[&u(p)]).0, 200, "{p} must not exist");
    }
    // The token in the query, as `?authz=`.
    let q = format!("{}?authz=Bearer%20{t}", u("/data/t/q"));
    assert_eq!(e.curl(&["-T", f.to_str().unwrap(), &q]).0, 201);
    // A read scope does not write.
    let ro = bearer(&token(&e, "storage.read:/"));
    assert_eq!(
        e.curl(&["-H", &ro, "-T", f.to_str().unwrap(), &u("/data/t/ro")])
            .0,
        403
    );
    // Bad tokens: 401, nothing written.
    let (k, info) = issuer(&e);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut c = serde_json::json!({
            "wlcg.ver": "1.0", "iss": info.issuer, "sub": "alice", "aud": info.audience,
            "scope": "storage.modify:/", "iat": now, "nbf": now, "exp": now + 600,
        });
        f(&mut c);
        k.sign(&c).unwrap()
    };
    let bad = [
        (
            "expired",
            claims(&|c| c["exp"] = serde_json::json!(now - 3600)),
        ),
        (
            "not yet valid",
            claims(&|c| c["nbf"] = serde_json::json!(now + 3600)),
        ),
        (
            "wrong issuer",
            claims(&|c| c["iss"] = serde_json::json!("https://evil.example")),
        ),
        (
            "wrong audience",
            claims(&|c| c["aud"] = serde_json::json!("https://elsewhere")),
        ),
        ("tampered", {
            let mut p: Vec<String> = t.split('.').map(str::to_string).collect();
            p[2] = p[2].chars().rev().collect();
            p.join(".")
        }),
        ("garbage", "abc.def.ghi".to_string()),
    ];
    for (what, tok) in &bad {
        let (code, out) = e.curl(&[
            "-H",
            &bearer(tok),
            "-T",
            f.to_str().unwrap(),
            &u("/data/m/bad"),
        ]);
        assert_eq!(code, 401, "{what}: {}", String::from_utf8_lossy(&out));
    }
    assert_eq!(e.curl(&[&u("/data/m/bad")]).0, 404, "nothing written");
    // gfal2 and davix with the token.
    let g = e
        .cmd("gfal-copy")
        .env("BEARER_TOKEN", &t)
        .args(["-f", &format!("file://{}", f.display()), &u("/data/t/gfal")])
        .output()
        .unwrap();
    assert!(g.status.success(), "{}", String::from_utf8_lossy(&g.stderr));
    let capath = e.ca_dir.to_str().unwrap().to_string();
    e.ok(
        "davix-put",
        &[
            "--capath",
            &capath,
            "-H",
            &auth,
            f.to_str().unwrap(),
            &u("/data/t/davix"),
        ],
    );
    assert_eq!(e.curl(&[&u("/data/t/davix")]).1, body);
    let o = e.run(
        "davix-put",
        &[
            "--capath",
            &capath,
            f.to_str().unwrap(),
            &u("/data/t/davix2"),
        ],
    );
    assert!(!o.status.success(), "davix without a token must fail");
}
