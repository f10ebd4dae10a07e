//! One metadata service and two data gateways in-process: xrdcp follows the
//! redirects both ways, both gateways serve, and a gateway refuses opens
//! without a valid capability.

use crate::{adler32, data, write_file, Env};
use std::sync::atomic::Ordering;
use tessera_server::config::{Config, Role, UnixCfg};

const SECRET: &str = "a-cluster-secret-for-tests-only";

struct Cluster {
    mgm: Env,
    gateways: Vec<tessera_server::Running>,
    /// Each gateway's data directory (its access log is in `logs/`).
    gateway_dirs: Vec<std::path::PathBuf>,
}

fn cluster() -> Cluster {
    cluster_with(|_| {})
}

fn cluster_with(mgm_change: impl FnOnce(&mut Config)) -> Cluster {
    let dir = tempfile::tempdir().expect("tmp");
    let secret = crate::common::cluster_secret(dir.path(), SECRET);
    let mgm = Env::start_with(|cfg| {
        cfg.role = Role::Mgm;
        cfg.cluster.secret_file = Some(secret.clone());
        mgm_change(cfg);
    });
    let server = mgm.server.as_ref().expect("mgm");
    let mut gateways = Vec::new();
    let mut gateway_dirs = Vec::new();
    for site in ["site-a", "site-b"] {
        gateway_dirs.push(dir.path().join(site));
        let mut cfg = crate::common::gateway_config(dir.path().join(site), &secret);
        // Site b's gateway names a node that is down first (a standby does
        // not listen there either, issue 35): it starts all the same.
        let first = if site == "site-b" { "127.0.0.1:1," } else { "" };
        cfg.cluster.mgm = Some(format!("{first}{}", server.admin_addr));
        cfg.cluster.mgm_xrootd = Some(format!("{first}{}", server.xrootd_addr.expect("xrootd")));
        cfg.cluster.site = site.into();
        cfg.xrootd.unix = UnixCfg::Trust;
        let g = mgm
            .rt
            .block_on(tessera_server::start(&cfg, String::new()))
            .expect("gateway");
        gateways.push(g);
    }
    // Keep the secret's directory for the cluster's lifetime.
    std::mem::forget(dir);
    Cluster {
        mgm,
        gateways,
        gateway_dirs,
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for g in self.gateways.drain(..) {
            let _ = self.mgm.rt.block_on(g.shutdown());
        }
    }
}

#[test]
fn xrdcp_follows_redirects_to_both_gateways() {
    let c = cluster();
    let e = &c.mgm;
    let mut bodies = Vec::new();
    for i in 0..8 {
        let body = data(200_000 + i * 77_777, i as u64 + 11);
        let f = e.local(&format!("f{i}"));
        write_file(&f, &body);
        e.ok(
            "xrdcp",
            &[
                "--nopbar",
                "--cksum",
                "adler32",
                f.to_str().unwrap(),
                &format!("{}//so/f{i}", e.url),
            ],
        );
        bodies.push(body);
    }
    for (i, body) in bodies.iter().enumerate() {
        let back = e.local(&format!("b{i}"));
        e.ok(
            "xrdcp",
            &[
                "--nopbar",
                "--cksum",
                "adler32",
                &format!("{}//so/f{i}", e.url),
                back.to_str().unwrap(),
            ],
        );
        assert!(&std::fs::read(&back).unwrap() == body, "file {i}");
        let q = e.ok(
            "xrdfs",
            &[&e.url, "query", "checksum", &format!("/so/f{i}")],
        );
        assert_eq!(q.trim(), format!("adler32 {}", adler32(body)));
    }
    let redirects = e
        .server
        .as_ref()
        .unwrap()
        .xrootd_stats
        .as_ref()
        .unwrap()
        .redirects
        .load(Ordering::Relaxed);
    assert!(
        redirects >= 16,
        "the metadata service redirected {redirects} opens"
    );
    for (i, g) in c.gateways.iter().enumerate() {
        assert!(opens_of(g) > 0, "gateway {i} served no open");
    }
    // The gateways log every close with its bytes and count them: all
    // that went up and came down, between the two of them.
    let total: u64 = bodies.iter().map(|b| b.len() as u64).sum();
    let logged = |op: &str| -> u64 {
        c.gateway_dirs
            .iter()
            .filter_map(|d| std::fs::read_to_string(d.join("logs/access.log")).ok())
            .flat_map(|t| t.lines().map(str::to_owned).collect::<Vec<_>>())
            .map(|l| serde_json::from_str::<serde_json::Value>(&l).expect("json"))
            .filter(|v| v["op"] == op && v["status"] == "ok")
            .map(|v| v["bytes"].as_u64().unwrap())
            .sum()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while (logged("close_write"), logged("close_read")) != (total, total)
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(logged("close_write"), total);
    assert_eq!(logged("close_read"), total);
    let mut written = 0;
    for g in &c.gateways {
        let m = e.ok(
            "curl",
            &["-sf", &format!("http://{}/metrics", g.metrics_addr)],
        );
        written += m
            .lines()
            .find_map(|l| l.strip_prefix("tessera_written_bytes_total{protocol=\"xroot\"} "))
            .map_or(0, |v| v.trim().parse::<u64>().unwrap());
        let ready = e.ok(
            "curl",
            &["-sf", &format!("http://{}/readyz", g.metrics_addr)],
        );
        assert_eq!(ready.trim(), "ready");
    }
    assert_eq!(written, total);
    // Metadata asked of a gateway goes back to the metadata service.
    let gw = format!("root://{}", c.gateways[0].xrootd_addr.unwrap());
    let ls = e.ok("xrdfs", &[&gw, "ls", "/so"]);
    assert_eq!(ls.lines().count(), 8, "{ls}");
}

#[test]
fn gateways_refuse_opens_without_a_valid_capability() {
    let c = cluster();
    let e = &c.mgm;
    let f = e.local("f");
    write_file(&f, b"some bytes");
    e.ok(
        "xrdcp",
        &[
            "--nopbar",
            f.to_str().unwrap(),
            &format!("{}//cap/f", e.url),
        ],
    );
    let gw = format!("root://{}", c.gateways[1].xrootd_addr.unwrap());
    let back = e.local("back");
    for url in [
        format!("{gw}//cap/f"),
        format!("{gw}//cap/f?tessera.cap=00.00"),
        format!("{gw}//cap/f?tessera.cap=7b7d.0123456789abcdef"),
    ] {
        let msg = e.fails("xrdcp", &["--nopbar", "-f", &url, back.to_str().unwrap()]);
        assert!(msg.contains("3010"), "{url}: {msg}");
    }
    let msg = e.fails(
        "xrdcp",
        &["--nopbar", f.to_str().unwrap(), &format!("{gw}//cap/new")],
    );
    assert!(msg.contains("3010"), "{msg}");
}

#[test]
fn clients_go_to_a_gateway_of_their_site() {
    let c = cluster_with(|cfg| {
        cfg.cluster
            .client_sites
            .insert("site-b".into(), vec!["127.0.0.0/8".into()]);
    });
    let e = &c.mgm;
    let f = e.local("f");
    write_file(&f, &data(50_000, 3));
    for i in 0..6 {
        e.ok(
            "xrdcp",
            &[
                "--nopbar",
                f.to_str().unwrap(),
                &format!("{}//site/f{i}", e.url),
            ],
        );
    }
    let opens: Vec<u64> = c.gateways.iter().map(opens_of).collect();
    assert_eq!(opens, [0, 6], "site-a, site-b");
}

#[test]
fn writes_of_a_silent_gateway_are_released() {
    use tessera_cluster::{CapKey, Capability, ClusterClient};
    let c = cluster_with(|cfg| cfg.cluster.write_lease_secs = 5);
    let e = &c.mgm;
    let core = e.core();
    let root = tessera_core::QuotaTarget::user(0);
    crate::quota_dir(&e.rt, core, ("/lease", 0o755), root, 1 << 20);
    // A gateway that reserves the whole quota and is never heard from.
    let cap = Capability::write(
        &Env::path("/lease/ghost"),
        &Env::root(),
        0o644,
        false,
        [127, 0, 0, 1].into(),
        60,
    );
    let admin = e.server.as_ref().unwrap().admin_addr.to_string();
    e.rt.block_on(async {
        let client = ClusterClient::new(&admin, SECRET).expect("client");
        let signed = CapKey::new(SECRET.as_bytes()).sign(&cap);
        client.begin_write(&signed, 1 << 20, "ghost:1").await
    })
    .expect("reserved");
    let f = e.local("f");
    write_file(&f, &data(100_000, 1));
    let url = format!("{}//lease/real", e.url);
    let msg = e.fails("xrdcp", &["--nopbar", f.to_str().unwrap(), &url]);
    assert!(
        msg.contains("3021"),
        "over quota while the ghost holds it: {msg}"
    );
    // After the lease the reservation is released and the upload fits.
    let t0 = std::time::Instant::now();
    loop {
        std::thread::sleep(std::time::Duration::from_millis(500));
        if e.run("xrdcp", &["--nopbar", f.to_str().unwrap(), &url])
            .status
            .success()
        {
            break;
        }
        assert!(
            t0.elapsed().as_secs() < 20,
            "the silent gateway's reservation was never released"
        );
    }
    assert!(
        t0.elapsed().as_secs() >= 3,
        "released before the lease ran out"
    );
}

#[test]
fn damage_a_gateway_reads_around_reaches_the_metadata_service() {
    let c = cluster_with(|cfg| cfg.fsck.repair_interval_secs = 0);
    let e = &c.mgm;
    e.rain_dir("/rain");
    let body = data(2 << 20, 5);
    let f = e.local("f");
    write_file(&f, &body);
    let url = format!("{}//rain/f", e.url);
    e.ok("xrdcp", &["--nopbar", f.to_str().unwrap(), &url]);
    e.corrupt_first_stripe();
    let back = e.local("back");
    e.ok("xrdcp", &["--nopbar", &url, back.to_str().unwrap()]);
    assert!(std::fs::read(&back).unwrap() == body, "bytes differ");
    // The gateway reports it (in the background) to the metadata service.
    let core = e.core();
    let t0 = std::time::Instant::now();
    loop {
        let r = core.fsck_scan(false).expect("scan");
        if let Some(d) = r.read_errors.first() {
            assert_eq!(d.stripe, 0, "{d:?}");
            assert!(d.what.contains("checksum"), "{d:?}");
            assert_eq!(r.issues.len(), 1, "checked block by block: {:?}", r.issues);
            break;
        }
        assert!(t0.elapsed().as_secs() < 20, "no damage reported");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let rep = core.repair_damaged().expect("repair");
    assert_eq!(rep.stripes_rebuilt, 1, "{rep:?}");
}

#[test]
fn gsi_logins_at_the_metadata_service_reach_the_gateways() {
    // The metadata service maps the proxy (gsi) and signs the capability
    // for that account; the gateway, which offers no gsi, takes the
    // client's unix login and serves the capability's identity.
    let p = crate::pki();
    let q = p.clone();
    let c = cluster_with(move |cfg| {
        crate::gsi::grid(cfg, &q);
        cfg.x509.groups.insert("/cms/higgs".into(), 3001);
    });
    let e = &c.mgm;
    crate::private_dir(&e.rt, e.core(), "/bin", 2);
    // A directory only the VO group's ACL opens, and the group's quota.
    let core = e.core();
    crate::vo_group_dir(&e.rt, core, "/higgs", ("/cms/higgs", 3001), 1 << 20);
    let src = e.local("gsi-src");
    let body = crate::data(2_000_001, 44);
    std::fs::write(&src, &body).unwrap();
    let url = format!("{}//bin/gw", e.url.replace("127.0.0.1", "localhost"));
    let xrdcp = |args: &[&str]| {
        e.cmd("xrdcp")
            .env("X509_USER_PROXY", p.join("alice-voms.pem"))
            .env("X509_CERT_DIR", p.join("certificates"))
            .env("XrdSecPROTOCOL", "gsi,unix")
            .args(args)
            .output()
            .unwrap()
    };
    let o = xrdcp(&["-f", src.to_str().unwrap(), &url]);
    assert!(
        o.status.success(),
        "up: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let i =
        e.rt.block_on(e.core().stat(&Env::root(), Env::path("/bin/gw")))
            .unwrap();
    assert_eq!((i.uid, i.size), (2, body.len() as u64));
    let back = e.local("gsi-back");
    let o = xrdcp(&["-f", &url, back.to_str().unwrap()]);
    assert!(
        o.status.success(),
        "down: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(std::fs::read(&back).unwrap() == body);
    let opens: u64 = c.gateways.iter().map(opens_of).sum();
    assert!(opens >= 2, "the gateways served {opens} opens");
    // Through the gateways too, the VO group opens the ACL, owns the file
    // and is held to its quota.
    let small = e.local("gsi-small");
    std::fs::write(&small, vec![7u8; 100_000]).unwrap();
    let higgs = |n: &str| format!("{}//higgs/{n}", e.url.replace("127.0.0.1", "localhost"));
    let o = xrdcp(&["-f", small.to_str().unwrap(), &higgs("s")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let i =
        e.rt.block_on(e.core().stat(&Env::root(), Env::path("/higgs/s")))
            .unwrap();
    assert_eq!((i.uid, i.gid, i.size), (2, 3001, 100_000));
    let o = xrdcp(&["-f", src.to_str().unwrap(), &higgs("big")]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("quota"), "{err}");
}

/// Opens a gateway served since start.
fn opens_of(g: &tessera_server::Running) -> u64 {
    g.xrootd_stats
        .as_ref()
        .unwrap()
        .opens
        .load(Ordering::Relaxed)
}
