//! Issue 35, item 11: anonymous connections cannot hold every slot.
//! Sessions without credentials that do something take one of the
//! anonymous places (fewer than all: `[limits] max_anonymous_connections`)
//! and are refused (`kXR_Overloaded`, 503) past them, from any number of
//! addresses, while token clients still get in; and pings are no work: an
//! anonymous session that only pings is closed at its idle limit.

use crate::proc::Proc;
use crate::raw::Raw;
use std::net::{IpAddr, Ipv4Addr};
use std::process::Child;
use std::time::{Duration, Instant};

use tessera_xrdproto::req::{PING as KXR_PING, STAT as KXR_STAT};

/// Dev mode, but no one is the owner: this test runs as the server's
/// user, whose loopback clients the dev mode would trust.
fn settings() -> &'static str {
    "[limits]\nmax_connections = 60\nmax_connections_per_address = 30\nmax_anonymous_connections = 10\n\
     [xrootd]\nidle_timeout = \"3s\"\nunix = \"read-only\"\n[https]\nanonymous = \"read-only\"\n"
}

#[test]
fn anonymous_sessions_take_only_their_places() {
    let p = Proc::start(None, settings());
    let from = |last: u8| Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, last)));
    // 30 anonymous sessions from five addresses, each doing a stat.
    let (mut working, mut refused) = (Vec::new(), 0);
    for i in 0..30u8 {
        let mut r = Raw::login(p.xrootd, from(2 + i % 5), "eve");
        let rep = r.call(KXR_STAT, [0u8; 16], b"/data");
        if rep.status == crate::raw::OK {
            working.push(r);
        } else {
            let e = rep.text();
            assert!(
                e.contains("3024") && e.contains("without credentials"),
                "{e}"
            );
            assert!(
                r.closed_within(Duration::from_secs(5)),
                "closed after the refusal"
            );
            refused += 1;
        }
    }
    assert_eq!((working.len(), refused), (10, 20));
    // Token holders are not anonymous: xrdcp with a token works.
    let tok = p.token("storage.modify:/data storage.read:/data");
    let f = p.dir.path().join("up");
    std::fs::write(&f, b"with a token").unwrap();
    let url = format!("root://{}//data/tok?authz=Bearer%20{tok}", p.xrootd);
    let o = p
        .cmd("xrdcp")
        .args(["--nopbar", "-f"])
        .arg(&f)
        .arg(&url)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // HTTPS without credentials is anonymous too: no place left.
    let o = p
        .cmd("curl")
        .args(["-sS", "--cacert"])
        .arg(&p.ca)
        .args(["-o", "/dev/null", "-w", "%{http_code}"])
        .arg(format!("{}/data/", p.https))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "503");
    // Pings keep nothing open: the pingers are closed at the idle limit.
    let t = Instant::now();
    let mut all_closed = false;
    while t.elapsed() < Duration::from_secs(10) {
        for r in &mut working {
            r.send(KXR_PING, [0u8; 16], 0, &[]);
        }
        std::thread::sleep(Duration::from_millis(300));
        if p.metric("tessera_connections_open") == Some(0.0) {
            all_closed = true;
            break;
        }
    }
    assert!(
        all_closed,
        "pinging sessions still open after {:?}",
        t.elapsed()
    );
    // The places came back.
    let mut r = Raw::login(p.xrootd, from(9), "eve");
    assert_eq!(r.call(KXR_STAT, [0u8; 16], b"/data").status, crate::raw::OK);
}

#[test]
fn anonymous_https_connections_take_only_their_places() {
    let p = Proc::start(None, settings());
    let tok = p.token("storage.modify:/data storage.read:/data");
    let f = p.dir.path().join("big");
    std::fs::write(&f, vec![1u8; 8 << 20]).unwrap();
    let curl = |args: &[&str]| {
        let o = p
            .cmd("curl")
            .args(["-sS", "--cacert"])
            .arg(&p.ca)
            .args(["-o", "/dev/null", "-w", "%{http_code}"])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let auth = format!("Authorization: Bearer {tok}");
    let url = format!("{}/data/big", p.https);
    assert_eq!(curl(&["-H", &auth, "-T", f.to_str().unwrap(), &url]), "201");
    let mut held: Vec<Child> = (0..10).map(|_| p.slow_get(&url)).collect();
    assert!(p.wait_for(Duration::from_secs(10), || {
        p.metric("tessera_connections_open") == Some(10.0)
    }));
    assert_eq!(curl(&[&url]), "503", "an eleventh anonymous client");
    assert_eq!(curl(&["-H", &auth, &url]), "200", "a token holder gets in");
    for c in &mut held {
        let _ = c.kill();
        let _ = c.wait();
    }
}
