//! FTS with nothing but a proxy, between tesserad and the reference
//! (issue 36): Debian's xrootd with XrdHttp, XrdHttpTPC, XrdMacaroons and
//! gsi (its grid-mapfile mapping alice to its own user), both on the host
//! certificate of the test PKI. gfal-copy asks each end for a macaroon
//! (`application/macaroon-request`, authenticated by the proxy) and hands
//! them to the copy: pull and push, each server active in turn. And the
//! same proxy logs in to both with gsi over root://.

use crate::reference::Reference;
use crate::{pki, Env};
use std::os::unix::fs::PermissionsExt;

/// tesserad on the PKI's host certificate, taking its proxies, allowed to
/// copy to loopback; and the reference beside it.
fn both() -> (Env, Reference, std::path::PathBuf) {
    both_with_crl(0)
}

/// As `both`, with the reference's gsi CRL option `crl` (0: not checked,
/// 1: checked when present).
fn both_with_crl(crl: u8) -> (Env, Reference, std::path::PathBuf) {
    let p = pki();
    let q = p.clone();
    let (mut e, _) = crate::x509::start(move |c| {
        c.tls.cert = Some(q.join("host.pem"));
        c.tls.key = Some(q.join("host.key"));
        c.https.tpc_ca_files.push(q.join("ca/ca.pem"));
        c.https.tpc_allow = vec!["127.0.0.0/8".into(), "::1".into()];
    });
    e.ca = p.join("ca/ca.pem");
    e.ca_dir = p.join("certificates");
    let x = Reference::launch(
        &e,
        [&p.join("host.pem"), &p.join("host.key")],
        &p.join("certificates"),
        |dir| {
            let pk = dir.join("pki");
            // As XrdMacaroons' own advice makes it (base64 lines).
            let st = std::process::Command::new("openssl")
                .args(["rand", "-base64", "-out"])
                .arg(pk.join("macaroon.secret"))
                .arg("64")
                .status()
                .unwrap();
            assert!(st.success(), "openssl rand");
            std::fs::set_permissions(
                pk.join("macaroon.secret"),
                std::fs::Permissions::from_mode(0o600),
            )
            .unwrap();
            std::fs::write(
                pk.join("grid-mapfile"),
                "\"/DC=org/DC=tessera/OU=Users/CN=Alice Smith\" xrootd\n\
                 \"/DC=org/DC=tessera/OU=Users/CN=Bob Jones\" xrootd\n",
            )
            .unwrap();
            std::fs::write(pk.join("authdb"), "u * / a\n").unwrap();
            let k = pk.display();
            let tls_crl = if crl > 0 { " crlcheck all" } else { "" };
            format!(
                "all.sitename tessera-ref\n\
                 xrootd.seclib libXrdSec.so\n\
                 sec.protocol gsi -certdir:{k}/certificates -cert:{k}/cert.pem -key:{k}/key.pem \
                 -gridmap:{k}/grid-mapfile -gmapopt:2 -dlgpxy:ignore -crl:{crl}\n\
                 sec.protbind * only gsi\n\
                 xrd.tlsca certdir {k}/certificates{tls_crl}\n\
                 http.exthandler xrdmacaroons libXrdMacaroons.so\n\
                 http.gridmap {k}/grid-mapfile\n\
                 macaroons.secretkey {k}/macaroon.secret\n\
                 ofs.authlib ++ libXrdMacaroons.so\n\
                 ofs.authorize 1\n\
                 acc.authdb {k}/authdb\n"
            )
        },
    );
    (e, x, p)
}

#[test]
fn gfal_copy_with_a_proxy_only_both_ways_with_the_reference() {
    let (e, x, p) = both();
    let proxy = p.join("alice-voms.pem");
    let px = proxy.to_str().unwrap();
    crate::private_dir(&e.rt, e.core(), "/bin", 2);
    let body = crate::data(4_000_037, 36);
    let f = e.file("src", &body);
    let src = format!("{}/bin/src.bin", e.url);
    let (code, _) = e.curl(&["--cert", px, "--key", px, "-T", f.to_str().unwrap(), &src]);
    assert_eq!(code, 201);
    let gfal = |mode: &str, from: &str, to: &str| {
        let o = e
            .cmd("gfal-copy")
            .env("X509_USER_PROXY", &proxy)
            .args(["-f", "-t", "240", "--copy-mode", mode, "-K", "ADLER32"])
            .arg(from.replace("https://", "davs://"))
            .arg(to.replace("https://", "davs://"))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "gfal-copy {mode} {from} {to}: {}\nreference log:\n{}",
            crate::common::out_err(&o),
            x.log_tail()
        );
    };
    for mode in ["pull", "push"] {
        // tesserad → reference (the reference active in pull mode), and back.
        let there = format!("{}/{mode}.bin", x.url);
        gfal(mode, &src, &there);
        let back = format!("{}/bin/back-{mode}.bin", e.url);
        gfal(mode, &there, &back);
        let (code, got) = e.curl(&["--cert", px, "--key", px, &back]);
        assert!(code == 200 && got == body, "{mode}: {code}");
        let i =
            e.rt.block_on(e.core().stat(
                &crate::Env::root(),
                crate::Env::path(&format!("/bin/back-{mode}.bin")),
            ))
            .unwrap();
        assert_eq!(i.uid, 2, "written as the account the proxy maps to");
    }
    // gsi over root:// to both, with the same proxy.
    let tess = e.server.as_ref().unwrap().xrootd_addr.unwrap();
    for url in [format!("root://localhost:{}", tess.port()), x.root.clone()] {
        crate::run_ok(
            e.cmd("xrdfs")
                .env("X509_USER_PROXY", &proxy)
                .env("XrdSecPROTOCOL", "gsi")
                .args([url.as_str(), "ls", "/"]),
            &format!("xrdfs {url}"),
        );
    }
}

/// What each server does with the same bad certificates (issue 36), side
/// by side: an upload over HTTPS with the proxy as client certificate, and
/// a gsi login over root://. Both columns are asserted as observed
/// (Debian's xrootd 5.5 with gsi `-crl:2` and `xrd.tlsca ... crlcheck
/// all`; its authorization lets any mapped or unmapped user write) and
/// printed as the table docs/security.md shows.
#[test]
fn bad_certificates_side_by_side_with_the_reference() {
    let (e, x, p) = both_with_crl(2);
    crate::private_dir(&e.rt, e.core(), "/bin", 2);
    let f = e.file("small", b"side by side\n");
    let tess_root = format!(
        "root://localhost:{}",
        e.server.as_ref().unwrap().xrootd_addr.unwrap().port()
    );
    // (proxy, HTTPS upload status at tesserad and at the reference (0: the
    // TLS handshake failed), gsi login at tesserad and at the reference)
    let cases: [(&str, [u16; 2], [bool; 2]); 9] = [
        ("alice-voms", [201, 200], [true, true]),
        ("alice-expired", [401, 0], [false, false]),
        ("dave-expired", [401, 0], [false, false]),
        ("bob-voms", [401, 200], [false, true]),
        ("mallory-plain", [401, 0], [false, false]),
        ("carol-plain", [403, 200], [false, false]),
        ("alice-forged", [403, 200], [true, true]),
        ("alice-acexpired", [403, 200], [true, true]),
        ("alice-limited", [403, 200], [true, true]),
    ];
    let mut table = String::from(
        "| proxy | tesserad https | reference https | tesserad gsi | reference gsi |\n",
    );
    for (name, codes, logins) in cases {
        let px = p.join(format!("{name}.pem"));
        let px = px.to_str().unwrap();
        let up =
            |url: String| e.curl(&["--cert", px, "--key", px, "-T", f.to_str().unwrap(), &url]);
        let (tc, tb) = up(format!("{}/bin/{name}", e.url));
        let (rc, _) = up(format!("{}/{name}", x.url));
        let login = |url: &str| {
            e.cmd("xrdfs")
                .env("X509_USER_PROXY", px)
                .env("XrdSecPROTOCOL", "gsi")
                .args([url, "stat", "/"])
                .output()
                .unwrap()
                .status
                .success()
        };
        let (tl, rl) = (login(&tess_root), login(&x.root));
        table.push_str(&format!("| {name} | {tc} | {rc} | {tl} | {rl} |\n"));
        assert_eq!(tc, codes[0], "{name}: {}", String::from_utf8_lossy(&tb));
        assert_eq!(rc, codes[1], "{name} at the reference: {}", x.log_tail());
        assert_eq!([tl, rl], logins, "{name} gsi (tesserad, reference)");
    }
    eprintln!("{table}");
}
