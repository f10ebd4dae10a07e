//! Grid certificates over HTTPS (issue 36): curl, davix and gfal2 with
//! X.509 proxies (RFC 3820, legacy, limited) carrying VOMS attributes,
//! made by openssl and voms-proxy-fake (tests/pki/make.sh). The DN maps
//! through the grid-mapfile (alice → daemon), the production role
//! through the VOMS role map (→ bin); VO groups count in `g:` ACL
//! entries; every bad certificate is refused with its reason.

use crate::{pki, Env};
use std::path::{Path, PathBuf};
use tessera_server::config::AnonymousCfg;

/// A dev server taking certificates of the test PKI; anonymous clients
/// read only.
pub fn start(change: impl FnOnce(&mut tessera_server::config::Config)) -> (Env, PathBuf) {
    let p = pki();
    let q = p.clone();
    let e = Env::start_with(move |c| {
        c.https.anonymous = AnonymousCfg::ReadOnly;
        crate::take_pki(c, &q);
        change(c);
    });
    (e, p)
}

/// curl with proxy `name` of the PKI: (status, body).
fn curl_as(e: &Env, p: &Path, name: &str, args: &[&str]) -> (u16, String) {
    let proxy = p.join(name);
    let proxy = proxy.to_str().unwrap();
    let mut a = vec!["--cert", proxy, "--key", proxy];
    a.extend_from_slice(args);
    let (code, body) = e.curl(&a);
    (code, String::from_utf8_lossy(&body).into_owned())
}

fn owner(e: &Env, path: &str) -> (u32, u32) {
    let i =
        e.rt.block_on(e.core().stat(&Env::root(), Env::path(path)))
            .expect(path);
    (i.uid, i.gid)
}

/// A directory owned by `uid`, mode 0700 (only that account gets in).
fn private_dir(e: &Env, path: &str, uid: u32) {
    crate::private_dir(&e.rt, e.core(), path, uid);
}

#[test]
fn proxies_map_to_accounts_and_write_as_them() {
    let (e, p) = start(|_| {});
    let u = |path: &str| format!("{}{path}", e.url);
    private_dir(&e, "/daemon", 1);
    private_dir(&e, "/bin", 2);
    let f = e.file("f", b"grid bytes\n");
    let src = f.to_str().unwrap();

    // Without a certificate: asked for credentials.
    assert_eq!(e.curl(&["-T", src, &u("/daemon/anon")]).0, 401);
    // alice's plain proxy: the grid-mapfile says daemon.
    let (c, b) = curl_as(&e, &p, "alice-plain.pem", &["-T", src, &u("/daemon/a")]);
    assert_eq!(c, 201, "{b}");
    assert_eq!(owner(&e, "/daemon/a"), (1, 1));
    let (c, b) = curl_as(&e, &p, "alice-plain.pem", &[&u("/daemon/a")]);
    assert_eq!((c, b.as_str()), (200, "grid bytes\n"));
    // The same DN with the production role: the role map says bin.
    let (c, b) = curl_as(&e, &p, "alice-voms.pem", &["-T", src, &u("/bin/a")]);
    assert_eq!(c, 201, "{b}");
    assert_eq!(owner(&e, "/bin/a"), (2, 2));
    assert_eq!(curl_as(&e, &p, "alice-voms.pem", &[&u("/daemon/a")]).0, 403);
    // A legacy Globus proxy and the certificate itself work as well.
    assert_eq!(
        curl_as(&e, &p, "alice-legacy.pem", &["-T", src, &u("/daemon/l")]).0,
        201
    );
    assert_eq!(
        curl_as(&e, &p, "alice-cert.pem", &["-T", src, &u("/daemon/c")]).0,
        201
    );
    // A limited proxy reads, and never writes.
    assert_eq!(curl_as(&e, &p, "alice-limited.pem", &[&u("/bin/a")]).0, 200);
    let (c, b) = curl_as(&e, &p, "alice-limited.pem", &["-T", src, &u("/bin/lim")]);
    assert_eq!(c, 403, "{b}");
    assert!(b.contains("limited proxy"), "{b}");
    let (c, _) = curl_as(&e, &p, "alice-limited.pem", &["-X", "DELETE", &u("/bin/a")]);
    assert_eq!(c, 403);
}

#[test]
fn bad_certificates_are_refused_with_the_reason() {
    let (e, p) = start(|_| {});
    let u = format!("{}/", e.url);
    for (name, code, why) in [
        ("alice-expired.pem", 401, "expired"),
        ("bob-voms.pem", 401, "revoked"),
        ("mallory-plain.pem", 401, "signature"),
        ("dave-expired.pem", 401, "expired"),
        ("carol-plain.pem", 403, "not mapped"),
    ] {
        let (c, b) = curl_as(&e, &p, name, &["-X", "PROPFIND", "-H", "Depth: 0", &u]);
        assert_eq!(c, code, "{name}: {b}");
        assert!(b.contains(why), "{name}: {b}");
    }
    // A forged VOMS AC: its FQANs are ignored (the site's default), the DN
    // still counts (daemon, not bin).
    private_dir(&e, "/bin", 2);
    let (c, _) = curl_as(&e, &p, "alice-forged.pem", &[&format!("{}/bin/", e.url)]);
    assert_eq!(c, 403);
    assert_eq!(curl_as(&e, &p, "alice-forged.pem", &["-I", &u]).0, 200);
}

#[test]
fn forged_attributes_refuse_the_request_when_the_site_says_so() {
    let (e, p) = start(|c| c.x509.bad_voms = tessera_server::config_x509::BadVomsCfg::Refuse);
    let u = format!("{}/", e.url);
    let (c, b) = curl_as(&e, &p, "alice-forged.pem", &["-I", &u]);
    assert_eq!(c, 401, "{b}");
    let (c, b) = curl_as(&e, &p, "alice-forged.pem", &[&u]);
    assert!(c == 401 && b.contains("VOMS"), "{c} {b}");
    let (c, b) = curl_as(&e, &p, "alice-acexpired.pem", &[&u]);
    assert!(c == 401 && b.contains("expired"), "{c} {b}");
    assert_eq!(curl_as(&e, &p, "alice-voms.pem", &["-I", &u]).0, 200);
}

#[test]
fn vo_groups_in_acls_and_other_clients() {
    let (e, p) = start(|_| {});
    let core = e.core();
    e.rt.block_on(async {
        core.mkdir(&Env::root(), Env::path("/higgs"), 0o755, false)
            .await
            .unwrap();
        core.xattr_set(
            &Env::root(),
            Env::path("/higgs"),
            b"sys.acl".to_vec(),
            b"g:/cms/higgs:rwx".to_vec(),
        )
        .await
        .unwrap();
    });
    let f = e.file("g", vec![7u8; 100_000]);
    let src = f.to_str().unwrap();
    let url = format!("{}/higgs/", e.url);
    // alice's plain proxy (daemon, no VO groups) may not write there; with
    // her VOMS proxy (in /cms/higgs) she may.
    assert_eq!(
        curl_as(&e, &p, "alice-plain.pem", &["-T", src, &format!("{url}x")]).0,
        403
    );
    assert_eq!(
        curl_as(&e, &p, "alice-voms.pem", &["-T", src, &format!("{url}x")]).0,
        201
    );

    // davix and gfal2 with the proxy (X509_USER_PROXY, as jobs have it).
    let proxy = p.join("alice-voms.pem");
    let davs = url.replace("https://", "davs://");
    let with_proxy = |prog: &str| {
        let mut c = e.cmd(prog);
        c.env("X509_USER_PROXY", &proxy)
            .env("X509_CERT_DIR", &e.ca_dir)
            .env("X509_USER_CERT", &proxy)
            .env("X509_USER_KEY", &proxy);
        c
    };
    let put = e.file("put", vec![9u8; 50_000]);
    let (ca_dir, cert) = (e.ca_dir.to_str().unwrap(), proxy.to_str().unwrap());
    crate::run_ok(
        with_proxy("davix-put")
            .args(["--capath", ca_dir, "--cert", cert])
            .arg(&put)
            .arg(format!("{url}davix")),
        "davix-put",
    );
    crate::run_ok(
        with_proxy("gfal-copy")
            .arg(format!("file://{}", put.display()))
            .arg(format!("{davs}gfal")),
        "gfal-copy",
    );
    let o = with_proxy("gfal-ls").arg(&davs).output().unwrap();
    let ls = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && ls.contains("gfal") && ls.contains("davix"),
        "{ls}"
    );
    assert_eq!(owner(&e, "/higgs/gfal"), (2, 2));
    assert_eq!(std::fs::read(&put).unwrap().len(), 50_000);
}

#[test]
fn through_data_gateways() {
    let p = pki();
    let q = p.clone();
    let c = crate::scaleout::cluster_with(move |cfg| {
        cfg.https.anonymous = AnonymousCfg::ReadOnly;
        cfg.x509.ca_dir = Some(q.join("certificates"));
        cfg.x509.vomsdir = Some(q.join("vomsdir"));
        cfg.x509.grid_mapfile = Some(q.join("grid-mapfile"));
        cfg.x509.voms_mapfile = Some(q.join("vorolemap"));
    });
    let e = &c.mgm;
    private_dir(e, "/bin", 2);
    let f = e.local("gw");
    let body: Vec<u8> = (0..1_500_000u32).map(|i| (i % 253) as u8).collect();
    std::fs::write(&f, &body).unwrap();
    let src = f.to_str().unwrap();
    let u = format!("{}/bin/gw", e.url);
    // The metadata service maps the proxy (bin) and signs the capability
    // for that identity; the gateway writes and serves as it.
    let (code, b) = curl_as(e, &p, "alice-voms.pem", &["-L", "-T", src, &u]);
    assert_eq!(code, 201, "{b}");
    assert_eq!(owner(e, "/bin/gw"), (2, 2));
    let (code, got) = e.curl(&[
        "-L",
        "--cert",
        p.join("alice-voms.pem").to_str().unwrap(),
        "--key",
        p.join("alice-voms.pem").to_str().unwrap(),
        &u,
    ]);
    assert!(code == 200 && got == body, "{code}");
    assert!(c.gateways.iter().map(crate::scaleout::served).sum::<u64>() >= 2);
    // A limited proxy is refused before any capability is signed.
    let (code, b) = curl_as(
        e,
        &p,
        "alice-limited.pem",
        &["-L", "-T", src, &format!("{u}2")],
    );
    assert_eq!(code, 403, "{b}");
}

#[test]
fn a_new_crl_counts_without_a_restart() {
    // The CA directory starts without its CRL (bob's certificate counts);
    // fetch-crl then writes it: within a refresh, bob is refused.
    let p = pki();
    let dir = p.join(format!("certs-refresh-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut crl = None;
    for f in std::fs::read_dir(p.join("certificates")).unwrap() {
        let f = f.unwrap().path();
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".r0") {
            crl = Some((f.clone(), name));
        } else {
            std::fs::copy(&f, dir.join(&name)).unwrap();
        }
    }
    let (crl, crl_name) = crl.expect("the PKI has a CRL");
    let d = dir.clone();
    let (e, p) = start(move |c| {
        c.x509.ca_dir = Some(d);
        c.x509.refresh_s = 1;
    });
    let u = format!("{}/", e.url);
    let (c, b) = curl_as(&e, &p, "bob-voms.pem", &["-I", &u]);
    assert_eq!(c, 200, "{b}");
    std::fs::copy(&crl, dir.join(crl_name)).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (c, b) = curl_as(&e, &p, "bob-voms.pem", &[&u]);
        if c == 401 {
            assert!(b.contains("revoked"), "{b}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the CRL was not read: {c} {b}"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    // Alice is untouched.
    assert_eq!(curl_as(&e, &p, "alice-plain.pem", &["-I", &u]).0, 200);
}

#[test]
fn vo_groups_with_gids_own_files_and_their_group_quota() {
    let (e, p) = start(|c| {
        c.x509.groups.insert("/cms/higgs".into(), 3001);
    });
    let core = e.core();
    let higgs = tessera_core::QuotaTarget::group(3001);
    crate::quota_dir(&e.rt, core, ("/vq", 0o777), higgs, 1 << 20);
    let small = e.file("small", vec![1u8; 100_000]);
    let big = e.file("big", vec![2u8; 2 << 20]);
    let u = |n: &str| format!("{}/vq/{n}", e.url);
    // The VOMS proxy's /cms/higgs has gid 3001: its files are that group's,
    // and the group's quota holds.
    let (c, b) = curl_as(
        &e,
        &p,
        "alice-voms.pem",
        &["-T", small.to_str().unwrap(), &u("s")],
    );
    assert_eq!(c, 201, "{b}");
    assert_eq!(owner(&e, "/vq/s"), (2, 3001));
    let (c, b) = curl_as(
        &e,
        &p,
        "alice-voms.pem",
        &["-T", big.to_str().unwrap(), &u("b")],
    );
    assert_eq!(c, 507, "{b}");
    // The plain proxy has no VO group: the group quota is not its.
    let (c, b) = curl_as(
        &e,
        &p,
        "alice-plain.pem",
        &["-T", big.to_str().unwrap(), &u("p")],
    );
    assert_eq!(c, 201, "{b}");
    assert_eq!(owner(&e, "/vq/p"), (1, 1));
}

/// `GET /.well-known/tessera/whoami`: the mapped account, its groups, the
/// DN and FQANs of a certificate, a token's issuer and scopes, or
/// anonymous.
#[test]
fn whoami_names_the_certificate_and_the_account() {
    let (e, p) = start(|c| {
        c.x509.groups.insert("/cms/higgs".into(), 3001);
    });
    let u = format!("{}/.well-known/tessera/whoami", e.url);
    let ask = |proxy: Option<&str>| {
        let (c, b) = match proxy {
            Some(x) => curl_as(&e, &p, x, &[&u]),
            None => {
                let (c, b) = e.curl(&[&u]);
                (c, String::from_utf8_lossy(&b).into_owned())
            }
        };
        assert_eq!(c, 200, "{proxy:?}: {b}");
        serde_json::from_str::<serde_json::Value>(&b).expect("JSON")
    };
    let w = ask(Some("alice-voms.pem"));
    assert_eq!(w["name"], "bin");
    assert_eq!(w["uid"], "2");
    assert_eq!(w["auth"], "x509");
    assert_eq!(w["dn"], "/DC=org/DC=tessera/OU=Users/CN=Alice Smith");
    assert_eq!(
        w["fqans"],
        "/cms/Role=production/Capability=NULL,/cms/higgs/Role=NULL/Capability=NULL"
    );
    assert_eq!(w["gid"], "3001", "the primary VO group's gid: {w}");
    assert!(w["groups"].as_str().unwrap().contains("/cms/higgs"), "{w}");
    let w = ask(Some("alice-plain.pem"));
    assert_eq!((&w["uid"], &w["auth"]), (&"1".into(), &"x509".into()));
    assert!(w.get("fqans").is_none(), "{w}");
    let w = ask(None);
    assert_eq!(w["auth"], "anonymous");
    assert!(w.get("dn").is_none(), "{w}");
    // A bad certificate is told why, as on every other path.
    let (c, b) = curl_as(&e, &p, "bob-voms.pem", &[&u]);
    assert!(c == 401 && b.contains("revoked"), "{c} {b}");
}

/// A private view (issue 36): a client certificate counts as a token
/// does; without either the view stays closed.
#[test]
fn certificates_open_private_views() {
    use crate::fed::{cas_pem, get, place};
    let issuer = Env::start();
    let a = crate::reference::Reference::start(&issuer);
    place(&a, "/priv/f", b"secret bytes");
    let p = pki();
    let q = p.clone();
    let site = format!("{}/priv", a.url);
    let e = Env::trusting(&issuer, move |c| {
        crate::take_pki(c, &q);
        c.federation = crate::private_view("/priv", site, "127.0.0.0/8");
    });
    let cas = cas_pem(&e, &issuer);
    let proxy = p.join("alice-voms.pem");
    let px = proxy.to_str().unwrap();
    for url in [
        format!("{}/priv/f", e.url),
        format!("{}/PerSite/a/f", e.url),
    ] {
        let (code, _, body) = get(&e, &cas, "127.0.0.1", &url, &[]);
        assert_eq!(code, 401, "{url}: {}", String::from_utf8_lossy(&body));
        let (code, to, _) = get(&e, &cas, "127.0.0.1", &url, &["--cert", px, "--key", px]);
        assert_eq!((code, to), (302, format!("{}/priv/f", a.url)), "{url}");
    }
}
