//! One metadata service and two data gateways over HTTPS: GET and PUT on
//! the metadata service are answered with a 307 to a gateway carrying a
//! capability; curl -L, davix and gfal2 follow it and both gateways serve;
//! a gateway refuses a bad capability and sends every other request back.

use crate::{adler32, data, Env};
use std::sync::atomic::Ordering;
use tessera_server::config::{Config, Role};

const SECRET: &str = "a-cluster-secret-for-https-tests";

pub struct Cluster {
    pub mgm: Env,
    pub gateways: Vec<tessera_server::Running>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for g in self.gateways.drain(..) {
            let _ = self.mgm.rt.block_on(g.shutdown());
        }
    }
}

fn cluster() -> Cluster {
    cluster_with(|_| {})
}

/// A metadata service (with `change`) and two gateways.
pub fn cluster_with(change: impl FnOnce(&mut Config)) -> Cluster {
    let dir = tempfile::tempdir().expect("tmp");
    let secret = crate::common::cluster_secret(dir.path(), SECRET);
    let mgm = Env::start_with(|cfg| {
        cfg.role = Role::Mgm;
        cfg.cluster.secret_file = Some(secret.clone());
        change(cfg);
    });
    let server = mgm.server.as_ref().expect("mgm");
    let dev = mgm.dir.path().join("data").join("dev");
    let mut gateways = Vec::new();
    for site in ["site-a", "site-b"] {
        let mut cfg = crate::common::gateway_config(dir.path().join(site), &secret);
        cfg.listen.https = Some(([127, 0, 0, 1], 0).into());
        cfg.tls.cert = Some(dev.join("server.pem"));
        cfg.tls.key = Some(dev.join("server.key"));
        cfg.cluster.mgm = Some(server.admin_addr.to_string());
        cfg.cluster.mgm_xrootd = Some(server.xrootd_addr.expect("xrootd").to_string());
        cfg.cluster.mgm_https = Some(format!("localhost:{}", mgm.addr.port()));
        cfg.cluster.site = site.into();
        let g = mgm
            .rt
            .block_on(tessera_server::start(&cfg, String::new()))
            .expect("gateway");
        gateways.push(g);
    }
    std::mem::forget(dir);
    Cluster { mgm, gateways }
}

pub fn served(g: &tessera_server::Running) -> u64 {
    g.https_stats
        .as_ref()
        .unwrap()
        .served
        .load(Ordering::Relaxed)
}

#[test]
fn curl_follows_307s_to_both_gateways() {
    let c = cluster();
    let e = &c.mgm;
    // Without -L: the redirect itself, with a capability for a gateway.
    let f = e.file("f", data(1000, 1));
    let (code, _) = e.curl(&["-T", f.to_str().unwrap(), &format!("{}/so/peek", e.url)]);
    assert_eq!(code, 307);
    let hdrs = e.curl_run(&[
        "-i",
        "-T",
        f.to_str().unwrap(),
        &format!("{}/so/peek", e.url),
    ]);
    let text = String::from_utf8_lossy(&hdrs.stdout).to_lowercase();
    let ports: Vec<String> = c
        .gateways
        .iter()
        .map(|g| g.https_addr.unwrap().port().to_string())
        .collect();
    assert!(
        text.contains("location: https://127.0.0.1:")
            && text.contains("tessera.cap=")
            && ports
                .iter()
                .any(|p| text.contains(&format!(":{p}/so/peek?"))),
        "{text}"
    );
    // With -L: uploads and downloads go through the gateways.
    let mut bodies = Vec::new();
    for i in 0..6 {
        let body = data(300_000 + i * 50_001, i as u64 + 7);
        let up = e.local(&format!("up{i}"));
        std::fs::write(&up, &body).unwrap();
        let (code, _) = e.curl(&[
            "-L",
            "-T",
            up.to_str().unwrap(),
            &format!("{}/so/f%20{i}", e.url),
        ]);
        assert_eq!(code, 201, "put {i}");
        bodies.push(body);
    }
    for (i, body) in bodies.iter().enumerate() {
        let (code, got) = e.curl(&["-L", &format!("{}/so/f%20{i}", e.url)]);
        assert_eq!(code, 200, "get {i}");
        assert!(&got == body, "file {i} differs");
        // A range through the redirect too.
        let (code, got) = e.curl(&["-L", "-r", "100-199", &format!("{}/so/f%20{i}", e.url)]);
        assert_eq!(code, 206);
        assert!(got[..] == body[100..200]);
    }
    // The namespace sees them, with their checksums.
    let core = e.core();
    for (i, body) in bodies.iter().enumerate() {
        let st =
            e.rt.block_on(core.stat(&Env::root(), Env::path(&format!("/so/f {i}"))))
                .expect("stat");
        assert_eq!(st.size, body.len() as u64);
        assert_eq!(st.checksum.expect("checksum").hex(), adler32(body));
    }
    for (i, g) in c.gateways.iter().enumerate() {
        assert!(served(g) > 0, "gateway {i} served nothing");
    }
    let redirects = e
        .server
        .as_ref()
        .unwrap()
        .https_stats
        .as_ref()
        .unwrap()
        .redirects
        .load(Ordering::Relaxed);
    assert!(redirects >= 18, "{redirects} redirects");
}

#[test]
fn davix_and_gfal_follow_the_redirects() {
    let c = cluster();
    let e = &c.mgm;
    let body = data(5 << 20, 3);
    let up = e.file("up", &body);
    let url = format!("{}/tools/d", e.url);
    let capath = e.ca_dir.to_str().unwrap().to_string();
    e.ok(
        "davix-put",
        &["--capath", &capath, up.to_str().unwrap(), &url],
    );
    let back = e.local("back");
    e.ok(
        "davix-get",
        &["--capath", &capath, &url, back.to_str().unwrap()],
    );
    assert!(std::fs::read(&back).unwrap() == body, "davix bytes");
    let gurl = format!("davs://localhost:{}/tools/g", e.addr.port());
    e.ok(
        "gfal-copy",
        &["-f", &format!("file://{}", up.display()), &gurl],
    );
    let back2 = e.local("back2");
    e.ok(
        "gfal-copy",
        &["-f", &gurl, &format!("file://{}", back2.display())],
    );
    assert!(std::fs::read(&back2).unwrap() == body, "gfal bytes");
    let sum = e.ok("gfal-sum", &[&gurl, "ADLER32"]);
    assert!(sum.trim().ends_with(&adler32(&body)), "{sum}");
    assert!(c.gateways.iter().map(served).sum::<u64>() >= 4);
}

#[test]
fn gateways_check_capabilities_and_send_the_rest_back() {
    let c = cluster();
    let e = &c.mgm;
    let body = data(70_000, 9);
    let up = e.file("up", &body);
    let (code, _) = e.curl(&[
        "-L",
        "-T",
        up.to_str().unwrap(),
        &format!("{}/cap/f", e.url),
    ]);
    assert_eq!(code, 201);
    let gw = format!(
        "https://127.0.0.1:{}",
        c.gateways[0].https_addr.unwrap().port()
    );
    // A forged, a malformed and a capability for another file: 403.
    let (code, _) = e.curl(&[&format!("{gw}/cap/f?tessera.cap=7b7d.00")]);
    assert_eq!(code, 403);
    let (code, _) = e.curl(&[&format!("{gw}/cap/f?tessera.cap=zz")]);
    assert_eq!(code, 403);
    // The capability is checked before the path is read: a badly encoded
    // path with a forged one is 403 too, not a 400 telling paths apart.
    let (code, _) = e.curl(&[&format!("{gw}/cap/f%zz?tessera.cap=7b7d.00")]);
    assert_eq!(code, 403);
    let hdrs = e.curl_run(&["-i", &format!("{}/cap/f", e.url)]);
    let text = String::from_utf8_lossy(&hdrs.stdout).into_owned();
    let cap = text
        .split("tessera.cap=")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .expect("a capability in the Location")
        .to_string();
    let (code, _) = e.curl(&[&format!("{gw}/cap/other?tessera.cap={cap}")]);
    assert_eq!(code, 403);
    // A read capability does not write.
    let (code, _) = e.curl(&[
        "-T",
        up.to_str().unwrap(),
        &format!("{gw}/cap/f?tessera.cap={cap}"),
    ]);
    assert_eq!(code, 403);
    // Without a capability, and for anything but file data, the gateway
    // sends the client to the metadata service (which sends data back
    // with a capability).
    let (code, got) = e.curl(&["-L", &format!("{gw}/cap/f")]);
    assert_eq!(code, 200);
    assert!(got == body);
    let (code, _) = e.curl(&["-X", "PROPFIND", "-H", "Depth: 0", &format!("{gw}/cap/f")]);
    assert_eq!(code, 307);
    let (code, _) = e.curl(&[
        "-L",
        "-X",
        "PROPFIND",
        "-H",
        "Depth: 0",
        &format!("{gw}/cap/f"),
    ]);
    assert_eq!(code, 207);
}

#[test]
fn over_quota_through_a_gateway_is_507_and_leaves_nothing() {
    let c = cluster();
    let e = &c.mgm;
    let core = e.core();
    let project = tessera_core::QuotaTarget::project();
    crate::quota_dir(&e.rt, core, ("/q", 0o777), project, 100_000);
    let up = e.file("big", data(300_000, 4));
    let (code, _) = e.curl(&[
        "-L",
        "-T",
        up.to_str().unwrap(),
        &format!("{}/q/big", e.url),
    ]);
    assert_eq!(code, 507);
    let st = e.rt.block_on(core.stat(&Env::root(), Env::path("/q/big")));
    assert!(st.is_err(), "nothing visible: {st:?}");
}

/// A client certificate at the metadata service (issue 36): the 307
/// carries a capability for the account and VO group the proxy maps to;
/// the gateway writes as them, inside the group's ACL and quota.
#[test]
fn certificates_reach_the_gateways_as_their_account_and_vo_group() {
    let p = crate::pki();
    let q = p.clone();
    let c = cluster_with(move |cfg| {
        cfg.https.anonymous = tessera_server::config::AnonymousCfg::ReadOnly;
        crate::take_pki(cfg, &q);
        cfg.x509.groups.insert("/cms/higgs".into(), 3001);
    });
    let e = &c.mgm;
    let core = e.core();
    crate::vo_group_dir(&e.rt, core, "/higgs", ("/cms/higgs", 3001), 1 << 20);
    let proxy = p.join("alice-voms.pem");
    let px = proxy.to_str().unwrap();
    let small = e.local("small");
    let body = data(100_000, 9);
    std::fs::write(&small, &body).unwrap();
    let big = e.file("big", data(2 << 20, 10));
    let u = |n: &str| format!("{}/higgs/{n}", e.url);
    // An upload with the proxy, following the 307 to a gateway.
    let put = |from: &std::path::Path, to: &str| {
        e.curl(&[
            "--cert",
            px,
            "--key",
            px,
            "-L",
            "-T",
            from.to_str().unwrap(),
            &u(to),
        ])
        .0
    };
    let before: u64 = c.gateways.iter().map(served).sum();
    assert_eq!(put(&small, "s"), 201);
    let i =
        e.rt.block_on(core.stat(&Env::root(), Env::path("/higgs/s")))
            .unwrap();
    assert_eq!((i.uid, i.gid, i.size), (2, 3001, 100_000));
    let (code, got) = e.curl(&["--cert", px, "--key", px, "-L", &u("s")]);
    assert!(code == 200 && got == body, "{code}");
    assert!(c.gateways.iter().map(served).sum::<u64>() >= before + 2);
    assert_eq!(put(&big, "b"), 507);
    // The plain proxy (daemon, no VO group) is outside the ACL.
    let plain = p.join("alice-plain.pem");
    let pp = plain.to_str().unwrap();
    assert_eq!(e.curl(&["--cert", pp, "--key", pp, "-L", &u("s")]).0, 403);
}
