//! The shipped Grafana dashboard (`deploy/grafana/tessera.json`) and
//! Prometheus alerts (`deploy/prometheus/alerts.yml`) only use metrics a
//! running server exports: after some real traffic (xrdcp up and down, a
//! quota limit, a degraded read, fsck, a drain, an access rule, a recycle
//! bin), every `tessera_*` name in
//! their expressions has a series on `/metrics`.

use crate::{data, write_file, Env};
use std::collections::BTreeSet;

/// Every `tessera_…` metric name in `text`.
fn names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("tessera_") {
        let start = i + at;
        let ok_before =
            start == 0 || !(b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_');
        let mut end = start;
        while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_') {
            end += 1;
        }
        if ok_before {
            out.insert(text[start..end].to_string());
        }
        i = end;
    }
    out
}

fn scrape(addr: std::net::SocketAddr) -> String {
    let o = std::process::Command::new("curl")
        .args(["-sS", &format!("http://{addr}/metrics")])
        .output()
        .expect("curl");
    String::from_utf8(o.stdout).expect("utf8")
}

fn exported(metrics: &str, name: &str) -> bool {
    metrics.lines().any(|l| {
        l.strip_prefix(name)
            .is_some_and(|r| r.starts_with('{') || r.starts_with(' '))
    })
}

#[test]
fn dashboards_and_alerts_use_only_exported_metrics() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dash =
        std::fs::read_to_string(root.join("deploy/grafana/tessera.json")).expect("dashboard");
    let alerts =
        std::fs::read_to_string(root.join("deploy/prometheus/alerts.yml")).expect("alerts");
    let dash_json: serde_json::Value = serde_json::from_str(&dash).expect("dashboard is JSON");
    let mut exprs = String::new();
    for p in dash_json["panels"].as_array().expect("panels") {
        for t in p["targets"].as_array().expect("targets") {
            exprs.push_str(t["expr"].as_str().expect("expr"));
            exprs.push('\n');
        }
    }
    for l in alerts.lines() {
        if let Some(e) = l.trim().strip_prefix("expr:") {
            exprs.push_str(e);
            exprs.push('\n');
        }
    }
    let used = names(&exprs);
    assert!(used.len() > 20, "{used:?}");

    let e = Env::start_with(|c| c.data.probe_interval_s = 1);
    let core = e.core();
    // Traffic: up and down with xrdcp, a RAIN file read with a stripe
    // gone, a quota limit, fsck, and a drain that moves a stripe.
    e.rain_dir("/r");
    let src = e.local("up");
    write_file(&src, &data(3 << 20, 5));
    let url = format!("{}//r/f", e.url);
    e.ok("xrdcp", &["--nopbar", src.to_str().unwrap(), &url]);
    let (victim, _) = e.corrupt_first_stripe();
    std::fs::remove_file(&victim).expect("rm stripe");
    e.ok(
        "xrdcp",
        &["--nopbar", "-f", &url, e.local("down").to_str().unwrap()],
    );
    e.rt.block_on(core.quota_set(
        &Env::root(),
        Env::path("/r"),
        tessera_core::QuotaTarget::project(),
        Some(1 << 40),
        Some(1000),
    ))
    .expect("quota");
    let scan = core.fsck_scan(false).expect("scan");
    assert_eq!(scan.issues.len(), 1);
    // A plain file (one stripe) can move off its filesystem.
    let plain = format!("{}//plain", e.url);
    e.ok("xrdcp", &["--nopbar", src.to_str().unwrap(), &plain]);
    let f = e.rt.block_on(core.stat(&Env::root(), Env::path("/plain")));
    let f = f.expect("stat");
    let fsid = tessera_core::Placement::decode(&f.layout)
        .expect("placement")
        .fsids[0];
    let dr = core.drain(fsid).expect("drain");
    assert!(dr.stripes_moved >= 1, "{dr:?}");
    e.fails("xrdfs", &[&e.url, "stat", "/nonexistent"]);
    // An access rule turning a request away (the refusals' counter).
    let ban = tessera_core::rules::AccessRule {
        action: "ban".into(),
        subject: "user:dashboards".into(),
        ..Default::default()
    };
    e.rt.block_on(core.add_access_rule(ban)).expect("rule");
    let who = tessera_types::Identity::user(4242, 4242, "dashboards", "xroot");
    let peer = std::net::IpAddr::from([127, 0, 0, 1]);
    let stat = tessera_core::rules::Op::Stat;
    let a = core.admit(&who, peer, stat, None, "");
    assert!(
        matches!(a, tessera_core::rules::Admit::Wait { .. }),
        "{a:?}"
    );
    // A recycle bin holding a deleted file (its gauges set by a purge
    // round).
    let bin = tessera_core::BinSettings {
        dir: Env::path("/"),
        name: Some("dashboards".into()),
        lifetime_secs: 3600,
        max_bytes: 1 << 30,
        max_inodes: 0,
        enabled: true,
    };
    e.rt.block_on(core.recycle_config(&Env::root(), bin))
        .expect("bin");
    e.ok("xrdfs", &[&e.url, "rm", "/plain"]);
    core.recycle_purge_round(100).expect("purge round");
    let addr = e.server.as_ref().unwrap().metrics_addr;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let missing = loop {
        let m = scrape(addr);
        let missing: Vec<&String> = used.iter().filter(|n| !exported(&m, n)).collect();
        if missing.is_empty() || std::time::Instant::now() > deadline {
            break missing.into_iter().cloned().collect::<Vec<_>>();
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
    };
    assert!(missing.is_empty(), "used but not exported: {missing:?}");
}
