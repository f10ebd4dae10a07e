//! The access rules' cost per request (issue 39), in process: one
//! `Core::admit` (what both front-ends call before a namespace request)
//! for a client no rule names, with no rules and with 100 access rules
//! and 50 rate limits in force (the set `scripts/bench-rules` loads).
//! Nanoseconds per call, best of 5 runs of 200,000 calls. Then the cost
//! of `Core::pace`, what every file open adds for I/O shaping and the
//! per-application byte counters (no shaping rule names the client).

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Instant;
use tessera_core::rules::{AccessRule, Op};
use tessera_types::{Identity, NsPath};

fn rule(action: &str, subject: String) -> AccessRule {
    AccessRule {
        action: action.into(),
        subject,
        ..Default::default()
    }
}

fn per_call(core: &tessera_core::Core, who: &Identity, path: &NsPath) -> f64 {
    let peer = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..200_000 {
            let a = core.admit(who, peer, Op::Stat, Some(path), "python3");
            std::hint::black_box(a);
        }
        best = best.min(t.elapsed().as_nanos() as f64 / 200_000.0);
    }
    best
}

/// Nanoseconds per `Core::pace` of a read session (every open calls it).
fn per_pace(core: &tessera_core::Core, who: &Identity) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..200_000 {
            std::hint::black_box(core.pace(who, "curl", false));
        }
        best = best.min(t.elapsed().as_nanos() as f64 / 200_000.0);
    }
    best
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let meta = Arc::new(
        tessera_meta::MetaStore::open(dir.path(), tessera_meta::MetaOptions::default())
            .expect("store"),
    );
    let core = tessera_core::Core::new(
        meta,
        Arc::new(tessera_obs::Metrics::new("bench")),
        Arc::new(tessera_obs::AccessLog::disabled()),
    )
    .expect("core");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let mut who = Identity::user(1000, 1000, "alice", "xroot");
    who.group_names = vec!["users".into()];
    let path = NsPath::parse("/bench/get/set/f1").expect("path");
    let none = per_call(&core, &who, &path);
    rt.block_on(async {
        for i in 1..=25 {
            let mut rules = vec![
                rule("ban", format!("user:nobody{i}")),
                rule("ban", format!("host:10.{i}.0.0/16")),
                rule("ban", format!("issuer:https://iam{i}.example")),
                rule("stall", format!("user:stalled{i}")),
            ];
            rules[3].path = format!("/elsewhere{i}");
            for r in rules {
                core.add_access_rule(r).await.expect("rule");
            }
        }
        for i in 1..=50 {
            let mut r = rule("limit", format!("user:u{i}"));
            r.ops = "all".into();
            r.rate_milli = 100_000;
            r.burst = 200;
            core.add_access_rule(r).await.expect("limit");
        }
    });
    let with = per_call(&core, &who, &path);
    println!("| Core::admit per request, a client no rule names | no rules | 100 access rules + 50 limits |");
    println!("|---|---|---|");
    println!("| ns per call (best of 5 x 200,000) | {none:.0} | {with:.0} |");
    println!();
    println!("| Core::pace per open (shaping and byte counters) | ns per call |");
    println!("|---|---|");
    println!(
        "| 150 rules, none of them shaping (best of 5 x 200,000) | {:.0} |",
        per_pace(&core, &who)
    );
}
