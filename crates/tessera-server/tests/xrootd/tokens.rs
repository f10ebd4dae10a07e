//! Bearer tokens over XRootD with the real clients and the dev issuer:
//! `ztn` over roots:// (xrdcp and xrdfs with BEARER_TOKEN), the `authz=`
//! CGI over root://, and the refusals as `kXR_NotAuthorized` (3010) or a
//! failed login, with no side effect.

use crate::{data, write_file, Env};
use tessera_auth::dev::DevIssuer;

pub fn token(e: &Env, scope: &str, lifetime_offset: i64) -> String {
    let dev = e.dir.path().join("data").join("dev");
    let k = DevIssuer::load_or_create(&dev).unwrap();
    let info = DevIssuer::read_info(&dev).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    k.sign(&serde_json::json!({
        "wlcg.ver": "1.0", "iss": info.issuer, "sub": "alice", "aud": info.audience,
        "scope": scope, "iat": now, "nbf": now, "exp": now + lifetime_offset,
    }))
    .unwrap()
}

#[test]
fn ztn_and_authz() {
    // Clients log in as nobody: only tokens grant anything beyond reads.
    let e = Env::start_with(|c| c.xrootd.unix = tessera_server::config::UnixCfg::ReadOnly);
    let f = e.local("f");
    let body = data(300_000, 3);
    write_file(&f, &body);
    let core = e.core();
    e.rt.block_on(async {
        core.mkdir(&Env::root(), Env::path("/x"), 0o777, false)
            .await
            .unwrap();
    });
    let t = token(&e, "storage.read:/ storage.create:/x", 600);
    let tls = |p: &str| format!("{}/{p}", e.tls_url);
    // `prog args` with BEARER_TOKEN set (the client then offers ztn).
    let with = |tok: &str, prog: &str, args: &[&str]| {
        e.cmd(prog)
            .env("BEARER_TOKEN", tok)
            .args(args)
            .output()
            .unwrap()
    };
    // ztn over roots://: within the scope.
    let ok = with(
        &t,
        "xrdcp",
        &["--nopbar", f.to_str().unwrap(), &tls("/x/a")],
    );
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let back = e.local("back");
    let ok = with(
        &t,
        "xrdcp",
        &["--nopbar", &tls("/x/a"), back.to_str().unwrap()],
    );
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(std::fs::read(&back).unwrap() == body);
    // Outside it, and overwriting with a create scope: 3010.
    for (dst, force) in [("/y/b", false), ("/x/a", true)] {
        let mut args = vec!["--nopbar"];
        if force {
            args.push("-f");
        }
        let target = tls(dst);
        args.extend([f.to_str().unwrap(), target.as_str()]);
        let o = with(&t, "xrdcp", &args);
        let msg = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!o.status.success() && msg.contains("3010"), "{dst}: {msg}");
    }
    let o = with(&t, "xrdfs", &[e.tls_url.as_str(), "rm", "/x/a"]);
    assert!(!o.status.success(), "create scope does not delete");
    // Without a token (unix, as nobody): no write.
    let o = e.run("xrdcp", &["--nopbar", f.to_str().unwrap(), &tls("/x/anon")]);
    assert!(!o.status.success());
    // authz= CGI over root://.
    let url = format!("{}//x/c?authz=Bearer%20{t}", e.url);
    e.ok("xrdcp", &["--nopbar", f.to_str().unwrap(), &url]);
    // An expired token: refused at login (ztn) or as 3010 (authz).
    let old = token(&e, "storage.modify:/", -3600);
    let o = with(
        &old,
        "xrdcp",
        &["--nopbar", f.to_str().unwrap(), &tls("/x/d")],
    );
    assert!(!o.status.success());
    let url = format!("{}//x/e?authz=Bearer%20{old}", e.url);
    let msg = e.fails("xrdcp", &["--nopbar", f.to_str().unwrap(), &url]);
    assert!(msg.contains("3010") && msg.contains("expired"), "{msg}");
    let ls = e.ok("xrdfs", &[&e.url, "ls", "/x"]);
    assert_eq!(ls.lines().collect::<Vec<_>>(), ["/x/a", "/x/c"], "{ls}");
}
