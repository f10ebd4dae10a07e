//! Tokens as an attacker shapes them: scope paths that climb or hide
//! (the whole token refused, never normalised); a session kept open past
//! its token's expiry; floods of tokens with unknown keys (no more key
//! fetches than the per-issuer limit) and of one valid token (one
//! signature check, then cache lookups).

use crate::proc::Proc;
use crate::topo::{text, upload_file, Shape, Topo, DEV_UID};
use base64::Engine;

#[test]
fn scope_paths_that_climb_or_hide_refuse_the_token() {
    for shape in [Shape::Single, Shape::Cluster] {
        let t = Topo::start(shape);
        let file = upload_file(t.dir.path(), "f", 1000);
        for scope in [
            "storage.modify:/elsewhere/../atk",
            "storage.modify:/atk/./x/..",
            "storage.modify://atk",
            "storage.modify:/atk%2Fsub",
            "storage.modify:/%2e%2e/atk",
        ] {
            let tok = t.token(scope, &[], 600);
            let auth = format!("Authorization: Bearer {tok}");
            let url = format!("{}/atk/climb", t.https);
            let (code, _) = t.curl(&["-L", "-H", &auth, "-T", file.to_str().unwrap(), &url]);
            assert_eq!(code, 401, "{shape:?} {scope}: curl");
            let o = t.run(
                t.cmd("xrdcp")
                    .env("BEARER_TOKEN", &tok)
                    .arg("--nopbar")
                    .arg(&file)
                    .arg(format!("{}//atk/climb", t.xrds)),
            );
            assert!(!o.status.success(), "{shape:?} {scope}: xrdcp");
            let authz = format!("{}//atk/climb?authz=Bearer%20{tok}", t.xrd);
            let o = t.run(t.cmd("xrdcp").arg("--nopbar").arg(&file).arg(&authz));
            assert!(text(&o).contains("3010"), "{shape:?} {scope}: {}", text(&o));
            assert_eq!(t.content("/atk/climb"), None, "{shape:?} {scope}");
        }
    }
}

/// Reads a file over roots:// with the token in BEARER_TOKEN (ztn: the
/// session's identity), waits, reads again on the same open file: prints
/// each read's outcome.
const SESSION: &str = r#"
import sys, time
from XRootD import client
from XRootD.client.flags import OpenFlags
url, wait = sys.argv[1], float(sys.argv[2])
f = client.File()
st, _ = f.open(url, OpenFlags.READ, timeout=20)
print("open", st.ok, st.errno, flush=True)
st, d = f.read(0, 10, timeout=20)
print("read1", st.ok, st.errno, flush=True)
time.sleep(wait)
st, d = f.read(0, 10, timeout=20)
print("read2", st.ok, st.errno, st.message.replace("\n", " "), flush=True)
"#;

/// HTTP keep-alive: the same request on one connection, before and after
/// the token's expiry.
const KEEPALIVE: &str = r#"
import http.client, ssl, sys, time, urllib.parse
url, ca, token, wait = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
u = urllib.parse.urlsplit(url)
c = http.client.HTTPSConnection(u.hostname, u.port, context=ssl.create_default_context(cafile=ca))
for i in (1, 2):
    c.request("GET", u.path, headers={"Authorization": "Bearer " + token})
    r = c.getresponse(); r.read()
    print("get%d" % i, r.status, flush=True)
    time.sleep(wait)
"#;

#[test]
fn a_session_does_not_outlive_its_token() {
    let t = Topo::start_with(Shape::Single, |c| c.auth.leeway_secs = 1);
    // Readable by the token's identity only: after expiry, anonymous
    // rights (which a reconnecting client falls back to) read nothing.
    let dev = tessera_types::Identity::user(DEV_UID, DEV_UID, "dev", "test");
    let mut w = t
        .core()
        .open_write(&dev, &Topo::path("/atk/private"), 0o600, false, 0)
        .unwrap();
    w.write(b"private bytes of the token's owner").unwrap();
    w.close().unwrap();
    let url = format!("{}//atk/private", t.xrds);
    // Control: no wait, both reads work.
    let tok = t.token("storage.read:/atk", &[], 600);
    let o = t.run(
        t.cmd("/usr/bin/python3")
            .env("BEARER_TOKEN", &tok)
            .args(["-c", SESSION, &url, "0"]),
    );
    assert!(text(&o).contains("read2 True"), "control: {}", text(&o));
    // A token good for 4 more seconds (1 s of leeway): the session ends
    // with it.
    let tok = t.token("storage.read:/atk", &[], 4);
    let o = t.run(
        t.cmd("/usr/bin/python3")
            .env("BEARER_TOKEN", &tok)
            .args(["-c", SESSION, &url, "6"]),
    );
    let out = text(&o);
    assert!(out.contains("read1 True"), "{out}");
    assert!(
        out.contains("read2 False"),
        "a read after the token expired: {out}"
    );
    // HTTPS: every request carries its token; after expiry, 401.
    let tok = t.token("storage.read:/atk", &[], 4);
    let hurl = format!("{}/atk/private", t.https);
    let o = t.run(t.cmd("/usr/bin/python3").args([
        "-c",
        KEEPALIVE,
        &hurl,
        t.ca.to_str().unwrap(),
        &tok,
        "6",
    ]));
    let out = text(&o);
    assert!(
        out.contains("get1 200") && out.contains("get2 401"),
        "{out}"
    );
}

/// Sends one GET per token in the file (one per line) on one keep-alive
/// connection; prints how many of each status.
const FLOOD: &str = r#"
import collections, http.client, ssl, sys, urllib.parse
url, ca, tokens = sys.argv[1], sys.argv[2], open(sys.argv[3]).read().split()
u = urllib.parse.urlsplit(url)
c = http.client.HTTPSConnection(u.hostname, u.port, context=ssl.create_default_context(cafile=ca))
seen = collections.Counter()
for t in tokens:
    c.request("GET", u.path, headers={"Authorization": "Bearer " + t})
    r = c.getresponse(); r.read()
    seen[r.status] += 1
print(dict(seen))
"#;

#[test]
fn token_floods_cost_no_key_fetches_and_one_signature_check() {
    let p = Proc::start(None, "");
    let valid = p.token("storage.read:/data");
    // Tokens whose key id no issuer has: each would be a reason to fetch
    // the issuer's keys again.
    let forged: Vec<String> = (0..300)
        .map(|i| {
            let mut parts: Vec<&str> = valid.split('.').collect();
            let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
            let mut h: serde_json::Value =
                serde_json::from_slice(&b64.decode(parts[0]).unwrap()).unwrap();
            h["kid"] = format!("unknown-key-{i}").into();
            let header = b64.encode(serde_json::to_vec(&h).unwrap());
            parts[0] = &header;
            parts.join(".")
        })
        .collect();
    let list = p.dir.path().join("tokens");
    let url = format!("{}/data/", p.https);
    // One GET per token of `tokens`: how many of each status.
    let flood = |tokens: &[&str]| -> String {
        std::fs::write(&list, tokens.join("\n")).unwrap();
        let o = p
            .cmd("/usr/bin/python3")
            .args(["-c", FLOOD, &url])
            .arg(&p.ca)
            .arg(&list)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let fetches = || p.metric("tessera_token_key_fetches").expect("metric");
    let checks = || p.metric("tessera_token_signature_checks").expect("metric");
    // The background refresh's first fetch at start-up.
    assert!(p.wait_for(std::time::Duration::from_secs(10), || fetches() >= 1.0));
    let before = fetches();
    let forged: Vec<&str> = forged.iter().map(String::as_str).collect();
    let out = flood(&forged);
    assert!(
        out.contains("401: 300"),
        "every forged token refused: {out}"
    );
    let extra = fetches() - before;
    assert!(
        extra <= 1.0,
        "300 unknown key ids caused {extra} key fetches"
    );
    // One valid token replayed 300 times: one signature check.
    let before = checks();
    let out = flood(&[valid.as_str(); 300]);
    assert!(
        out.contains("207: 300") || out.contains("200: 300"),
        "{out}"
    );
    assert_eq!(checks() - before, 1.0, "a replayed token is checked once");
}
