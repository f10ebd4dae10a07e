//! Issue 35, item 7: anonymous readers cannot hold the memory budget.
//! Read replies (XRootD `kXR_read` pipelined with the replies left unread,
//! HTTPS GETs whose client takes almost nothing) lease their bytes under
//! the connection's share and the identity's (every anonymous client
//! together is one identity), so they hold at most that while writers with
//! tokens go on; and a client that stops taking a response loses it (and
//! its memory) after the send timeout.

use crate::proc::Proc;
use crate::raw::Raw;
use std::process::Child;
use std::time::Duration;

const MIB: u64 = 1 << 20;
const PER_IDENTITY: u64 = 128 * MIB;

fn in_use(p: &Proc) -> u64 {
    p.metric("tessera_buffers_in_use_bytes").unwrap_or(0.0) as u64
}

/// A 64 MiB file anyone may read, written with a token.
fn big_file(p: &Proc) {
    let tok = p.token("storage.modify:/data storage.read:/data");
    let f = p.dir.path().join("big");
    std::fs::write(&f, vec![7u8; 64 * MIB as usize]).unwrap();
    let o = p
        .cmd("curl")
        .args(["-sS", "--cacert"])
        .arg(&p.ca)
        .args(["-o", "/dev/null", "-w", "%{http_code}", "-H"])
        .arg(format!("Authorization: Bearer {tok}"))
        .arg("-T")
        .arg(&f)
        .arg(format!("{}/data/big", p.https))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "201");
}

fn settings() -> &'static str {
    "[buffers]\nmax = \"512MiB\"\nper_connection = \"48MiB\"\nper_identity = \"128MiB\"\nwait = \"1s\"\n\
     [xrootd]\nrequest_stall = \"25s\"\n[https]\nsend_timeout = \"3s\"\n"
}

#[test]
fn pipelined_reads_left_unread_hold_only_their_shares() {
    let p = Proc::start(None, settings());
    big_file(&p);
    // Six anonymous connections, each with 64 reads of 8 MiB in flight
    // whose replies it never reads.
    let mut readers = Vec::new();
    for _ in 0..6 {
        let mut r = Raw::login(p.xrootd, None, "eve");
        let fh = crate::raw::handle(&r.open("/data/big", 0x0010, 0));
        for i in 0..64u64 {
            let mut params = [0u8; 16];
            params[0..4].copy_from_slice(&fh);
            params[4..12].copy_from_slice(&((i % 8) * 8 * MIB).to_be_bytes());
            params[12..16].copy_from_slice(&(8 * MIB as u32).to_be_bytes());
            r.send(tessera_xrdproto::req::READ, params, 0, &[]);
        }
        readers.push(r);
    }
    // They fill their shares, no more.
    let mut most = 0;
    for _ in 0..20 {
        most = most.max(in_use(&p));
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(most > 16 * MIB, "the attack took some memory ({most})");
    assert!(
        most <= PER_IDENTITY + 8 * MIB,
        "anonymous readers held {} MiB, more than their identity's share",
        most / MIB
    );
    // While they hold it (the stall limit is 25 s), a client that logs in
    // anonymously and opens with a token (xrdcp's `authz=`) reads under
    // the token's share, not the anonymous one.
    crate::exhaust::normal_clients_work(&p, "xroot-readers");
    assert!(in_use(&p) > 16 * MIB, "the readers still held their share");
    // Given up after the stall limit: everything back.
    assert!(
        p.wait_for(Duration::from_secs(40), || in_use(&p) < 2 * MIB),
        "still held: {}",
        in_use(&p)
    );
    drop(readers);
}

#[test]
fn stalled_https_responses_hold_only_their_shares_and_are_given_up() {
    let p = Proc::start(None, settings());
    big_file(&p);
    let url = format!("{}/data/big", p.https);
    let mut slow: Vec<Child> = (0..24).map(|_| p.slow_get(&url)).collect();
    let mut most = 0;
    for _ in 0..15 {
        most = most.max(in_use(&p));
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(most > 16 * MIB, "the attack took some memory ({most})");
    assert!(
        most <= PER_IDENTITY + 8 * MIB,
        "anonymous GETs held {} MiB",
        most / MIB
    );
    crate::exhaust::normal_clients_work(&p, "https-readers");
    // The clients are still there, taking 1 KiB/s: their responses are
    // given up after the send timeout, and their memory with them.
    assert!(
        p.wait_for(Duration::from_secs(20), || in_use(&p) < 2 * MIB),
        "still held: {}",
        in_use(&p)
    );
    // The server closed their connections (the clients, reading what
    // their socket buffers still hold at 1 KiB/s, have not noticed yet).
    let open = |p: &Proc| p.metric("tessera_connections_open").unwrap_or(99.0);
    assert!(
        p.wait_for(Duration::from_secs(10), || open(&p) < 2.0),
        "connections still open: {}",
        open(&p)
    );
    for c in &mut slow {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// Issue 40: listings of a large directory that their clients read at
/// 1 KiB/s (PROPFIND and the browser page, anonymous) hold at most a
/// page or two each, under the identity's share; others work meanwhile;
/// after the send timeout they are given up, their memory with them.
#[test]
fn slow_listings_hold_only_their_shares_and_are_given_up() {
    let p = Proc::start_prepared(settings(), |data| {
        let opts = tessera_meta::MetaOptions {
            durability: tessera_meta::Durability::Buffered,
            ..Default::default()
        };
        let m = tessera_meta::MetaStore::open(&data.join("meta"), opts).unwrap();
        let big = tessera_types::NsPath::parse("/data/big").unwrap();
        m.mkdir(&big, &tessera_types::Identity::root("t"), 0o755, true)
            .unwrap();
        let names = (0..200_000).map(|i| format!("entry-{i:07}.root").into_bytes());
        m.create_many(&big, (1000, 1000, 0o644), names, 50_000)
            .unwrap();
    });
    let url = format!("{}/data/big/", p.https);
    let slow = |html: bool| {
        let mut c = p.cmd("curl");
        c.args(["-sS", "--limit-rate", "1K", "--cacert"]).arg(&p.ca);
        if html {
            c.args(["-H", "Accept: text/html"]);
        } else {
            c.args(["-X", "PROPFIND", "-H", "Depth: 1"]);
        }
        c.args(["-o", "/dev/null", &url])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut clients: Vec<Child> = (0..32).map(|i| slow(i % 4 == 0)).collect();
    let mut most = 0;
    for _ in 0..15 {
        most = most.max(in_use(&p));
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("slow listings held at most {} KiB", most >> 10);
    assert!(most > MIB, "the listings took some memory ({most})");
    assert!(
        most <= PER_IDENTITY + 8 * MIB,
        "slow listings held {} MiB",
        most / MIB
    );
    crate::exhaust::normal_clients_work(&p, "slow-listings");
    assert!(
        p.wait_for(Duration::from_secs(20), || in_use(&p) < 2 * MIB),
        "still held: {}",
        in_use(&p)
    );
    for c in &mut clients {
        let _ = c.kill();
        let _ = c.wait();
    }
}
