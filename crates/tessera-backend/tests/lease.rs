//! The RADOS lease (issue 27, first part) on the loopback Ceph cluster of
//! deploy/ceph/up.sh (scripts/test runs it with `--ignored`, CEPH_CONF
//! from the cluster's env file): two nodes, each its own Ceph client; one
//! holder at a time; renewal keeps it past its duration; a holder that
//! stops renewing loses it once the duration has run out and not before;
//! the next holder learns the previous one's address and fences it, after
//! which the OSDs refuse the old holder's operations (EBLOCKLISTED).

use std::time::{Duration, Instant};
use tessera_backend::{CephCluster, RadosLease, Taken};

/// The cluster's configuration (from its env file) and an admin client,
/// with the pool the leases live in.
fn cluster() -> (String, CephCluster) {
    let conf = std::env::var("CEPH_CONF").expect("CEPH_CONF: source $TC_DIR/env");
    let admin = CephCluster::connect(&conf).unwrap();
    admin
        .mon_command(
            r#"{"prefix": "osd pool create", "pool": "tessera-ha", "pg_num": 8, "pgp_num": 8}"#,
        )
        .unwrap();
    (conf, admin)
}

fn sleep(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}

#[test]
#[ignore = "needs the loopback Ceph cluster of deploy/ceph/up.sh"]
fn one_holder_renewal_expiry_and_fencing() {
    let (conf, admin) = cluster();
    let oid = format!("lease-{}", std::process::id());
    let d = Duration::from_secs(2);
    let a = RadosLease::connect(&conf, "tessera-ha", &oid, "node-a", d).unwrap();
    let b = RadosLease::connect(&conf, "tessera-ha", &oid, "node-b", d).unwrap();
    assert_eq!(a.acquire().unwrap(), Taken::Yes { previous: None });
    assert_eq!(b.acquire().unwrap(), Taken::Busy);
    // Renewed every 0.5 s for 3 s, past one duration: still a's.
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(3) {
        a.renew().unwrap();
        assert_eq!(b.acquire().unwrap(), Taken::Busy);
        sleep(500);
    }
    // a stops renewing (as if paused): b takes the lease once it has run
    // out, not before, and learns a's address.
    a.renew().unwrap();
    let stopped = Instant::now();
    let previous = loop {
        match b.acquire().unwrap() {
            Taken::Yes { previous } => break previous,
            Taken::Busy => {
                assert!(stopped.elapsed() < Duration::from_secs(6), "never taken");
                sleep(100);
            }
        }
    };
    let took = stopped.elapsed();
    assert!(
        took >= Duration::from_millis(1900),
        "taken after {took:?} of a 2 s lease"
    );
    let a_addr = a.address().unwrap();
    assert_eq!(previous.as_deref(), Some(a_addr.as_str()));
    // b fences a before acting: a's operations are refused from then on
    // (once the new OSD map reaches the OSD; b keeps renewing meanwhile).
    b.blocklist(&a_addr, Duration::from_secs(600)).unwrap();
    let start = Instant::now();
    let fenced = loop {
        b.renew().unwrap();
        match a.holder() {
            Err(e) => break e.to_string(),
            Ok(_) => {
                assert!(start.elapsed() < Duration::from_secs(10), "a still served");
                sleep(100);
            }
        }
    };
    assert!(fenced.contains("os error 108"), "{fenced}");
    assert!(a.renew().is_err());
    b.renew().unwrap();
    assert_eq!(
        b.holder().unwrap().as_deref(),
        Some(b.address().unwrap().as_str())
    );
    b.release().unwrap();
    admin
        .mon_command(&format!(
            r#"{{"prefix": "osd blocklist", "blocklistop": "rm", "addr": "{a_addr}"}}"#
        ))
        .unwrap();
}

/// Two nodes' leadership threads on one lease: one active at a time; when
/// the active one's renewals come late (a slow Ceph, by the test hook), it
/// stops being active before the other takes over, and the other takes
/// over with the next epoch.
#[test]
#[ignore = "needs the loopback Ceph cluster of deploy/ceph/up.sh"]
fn a_late_active_steps_down_before_the_standby_takes_over() {
    use tessera_backend::{Leadership, Role};
    let (conf, _admin) = cluster();
    let oid = format!("leader-{}", std::process::id());
    let d = Duration::from_secs(2);
    // Fenced clients stay refused this long (the cluster forgets them).
    let fence = Duration::from_secs(60);
    let node = |name: &'static str| {
        let (conf, oid) = (conf.clone(), oid.clone());
        move || RadosLease::connect(&conf, "tessera-ha", &oid, name, d)
    };
    let la = Leadership::start(node("node-a"), fence).unwrap();
    let t = Instant::now();
    let ea = loop {
        if let Role::Active { epoch } = la.role() {
            break epoch;
        }
        assert!(t.elapsed() < Duration::from_secs(5), "a never active");
        sleep(20);
    };
    let lb = Leadership::start(node("node-b"), fence).unwrap();
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(3) {
        assert_eq!(la.role(), Role::Active { epoch: ea });
        assert_eq!(lb.role(), Role::Standby);
        sleep(20);
    }
    la.delay_renewals(Duration::from_secs(3));
    let t = Instant::now();
    let (mut a_stopped, mut b_started) = (None, None);
    while b_started.is_none() {
        let (ra, rb) = (la.role(), lb.role());
        assert!(
            !(matches!(ra, Role::Active { .. }) && matches!(rb, Role::Active { .. })),
            "both active at {:?}",
            t.elapsed()
        );
        if ra == Role::Standby && a_stopped.is_none() {
            a_stopped = Some(t.elapsed());
        }
        if let Role::Active { epoch } = rb {
            assert_eq!(epoch, ea + 1);
            b_started = Some(t.elapsed());
        }
        assert!(t.elapsed() < Duration::from_secs(10), "b never active");
        sleep(5);
    }
    let (stopped, started) = (a_stopped.unwrap(), b_started.unwrap());
    assert!(
        stopped < started,
        "a stopped at {stopped:?}, b started at {started:?}"
    );
    // a, fenced, goes on with a fresh client: when b stops, a takes the
    // lease back with the epoch after b's.
    la.delay_renewals(Duration::ZERO);
    lb.stop();
    let t = Instant::now();
    loop {
        if let Role::Active { epoch } = la.role() {
            assert_eq!(epoch, ea + 2);
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(12),
            "a never active again"
        );
        sleep(20);
    }
    la.stop();
}
