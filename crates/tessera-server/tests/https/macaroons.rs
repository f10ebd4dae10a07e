//! Macaroons (issue 36): asked for with a proxy (`POST` with
//! `application/macaroon-request`), used as bearer tokens, never wider
//! than their holder; and the FTS workflow of a holder of nothing but a
//! proxy: gfal-copy asks both ends for macaroons and hands them to the
//! third-party copy, pull and push.

use crate::x509::start;
use crate::Env;
use std::path::Path;

fn ask(e: &Env, proxy: Option<&Path>, url: &str, body: &str) -> (u16, String) {
    let p = proxy.map(|p| p.to_str().unwrap().to_string());
    let mut a: Vec<&str> = Vec::new();
    if let Some(p) = &p {
        a.extend(["--cert", p, "--key", p]);
    }
    a.extend([
        "-X",
        "POST",
        "-H",
        "Content-Type: application/macaroon-request",
        "--data-binary",
        body,
        url,
    ]);
    let (c, b) = e.curl(&a);
    (c, String::from_utf8_lossy(&b).into_owned())
}

/// `mac` with its last character changed.
fn tamper(mac: &str) -> String {
    let last = if mac.ends_with('A') { 'B' } else { 'A' };
    format!("{}{last}", &mac[..mac.len() - 1])
}

fn macaroon_of(json: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(json).expect(json);
    v["macaroon"].as_str().expect(json).to_string()
}

fn own(e: &Env, path: &str, uid: u32) {
    crate::private_dir(&e.rt, e.core(), path, uid);
}

#[test]
fn a_proxy_gets_a_macaroon_no_wider_than_itself() {
    let (e, p) = start(|_| {});
    own(&e, "/bin", 2);
    own(&e, "/daemon", 1);
    let u = |path: &str| format!("{}{path}", e.url);
    let voms = p.join("alice-voms.pem");
    let (c, json) = ask(
        &e,
        Some(&voms),
        &u("/bin/"),
        r#"{"caveats":["activity:DOWNLOAD,UPLOAD,LIST"],"validity":"PT10M"}"#,
    );
    assert_eq!(c, 200, "{json}");
    let mac = macaroon_of(&json);
    let bearer = format!("Authorization: Bearer {mac}");
    let f = e.file("m", b"macaroon bytes");
    let src = f.to_str().unwrap();
    // Within its caveats, as the account the proxy maps to (bin).
    assert_eq!(e.curl(&["-H", &bearer, "-T", src, &u("/bin/m")]).0, 201);
    let i =
        e.rt.block_on(e.core().stat(&Env::root(), Env::path("/bin/m")))
            .unwrap();
    assert_eq!(i.uid, 2);
    assert_eq!(e.curl(&["-H", &bearer, &u("/bin/m")]).1, b"macaroon bytes");
    // Over XRootD too, as `authz=` (the reference server's CGI).
    let x = e.server.as_ref().unwrap().xrootd_addr.unwrap();
    let out = e.local("m.out");
    let xrd = |authz: &str| {
        e.cmd("xrdcp")
            .args([
                "-f",
                "-s",
                &format!("root://127.0.0.1:{}//bin/m{authz}", x.port()),
            ])
            .arg(&out)
            .output()
            .unwrap()
    };
    let o = xrd(&format!("?authz={mac}"));
    assert!(
        o.status.success(),
        "xrdcp: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"macaroon bytes");
    // (Without `authz=` this root-run xrdcp is the server's owner: dev
    // mode's unix = "owner".) A tampered macaroon is refused.
    let o = xrd(&format!("?authz={}", tamper(&mac)));
    assert!(!o.status.success(), "a tampered macaroon over XRootD");
    // Outside them: no DELETE activity, no other path.
    assert_eq!(
        e.curl(&["-H", &bearer, "-X", "DELETE", &u("/bin/m")]).0,
        403
    );
    assert_eq!(e.curl(&["-H", &bearer, "-T", src, &u("/daemon/m")]).0, 403);
    // Tampered: 401 with the reason.
    let bad = format!("Authorization: Bearer {}", tamper(&mac));
    let (c, b) = e.curl(&["-H", &bad, &u("/bin/m")]);
    assert_eq!(c, 401, "{}", String::from_utf8_lossy(&b));
    // A limited proxy gets no upload; nobody without credentials gets one.
    let lim = p.join("alice-limited.pem");
    let (c, b) = ask(
        &e,
        Some(&lim),
        &u("/bin/"),
        r#"{"caveats":["activity:UPLOAD"]}"#,
    );
    assert_eq!(c, 403, "{b}");
    assert_eq!(ask(&e, None, &u("/bin/"), "{}").0, 401);
    // A malformed request says why.
    let (c, b) = ask(&e, Some(&voms), &u("/bin/"), r#"{"validity":"sixty"}"#);
    assert!(c == 403 && b.contains("ISO 8601"), "{c} {b}");
}

#[test]
fn gfal_copy_with_a_proxy_only_pull_and_push() {
    let (a, p) = start(|_| {});
    let a_ca = a.ca.clone();
    let (b, _) = start(move |c| {
        c.https.tpc_ca_files.push(a_ca);
        c.https.tpc_allow = vec!["127.0.0.0/8".into()];
    });
    own(&a, "/bin", 2);
    own(&b, "/bin", 2);
    let body: Vec<u8> = (0..2_000_003u32).map(|i| (i * 7 % 251) as u8).collect();
    let f = a.file("src", &body);
    let proxy = p.join("alice-voms.pem");
    let px = proxy.to_str().unwrap();
    let up = format!("{}/bin/src.bin", a.url);
    assert_eq!(
        a.curl(&["--cert", px, "--key", px, "-T", f.to_str().unwrap(), &up])
            .0,
        201
    );
    let both = b.local("cas");
    std::fs::create_dir_all(&both).unwrap();
    for e in [&a, &b] {
        for entry in std::fs::read_dir(&e.ca_dir).unwrap() {
            let path = entry.unwrap().path();
            if path.to_string_lossy().ends_with(".0") {
                std::fs::copy(&path, both.join(path.file_name().unwrap())).unwrap();
            }
        }
    }
    // A copy by `mode` from `src` to `path` at `to`: all the bytes there,
    // owned by the account the proxy maps to.
    let gfal = |mode: &str, src: &str, (to, path): (&Env, &str)| {
        let dst = format!("{}{path}", to.url).replace("https://", "davs://");
        crate::run_ok(
            b.cmd("gfal-copy")
                .env("X509_CERT_DIR", &both)
                .env("X509_USER_PROXY", &proxy)
                .args(["--copy-mode", mode, "-K", "ADLER32", src, &dst]),
            &format!("gfal-copy {mode}"),
        );
        let got = to
            .rt
            .block_on(to.core().stat(&Env::root(), Env::path(path)))
            .unwrap();
        assert_eq!((got.size, got.uid), (body.len() as u64, 2), "{mode}");
        dst
    };
    let src = format!("{}/bin/src.bin", a.url).replace("https://", "davs://");
    let dst = gfal("pull", &src, (&b, "/bin/pulled.bin"));
    gfal("push", &dst, (&a, "/bin/pushed.bin"));
}
