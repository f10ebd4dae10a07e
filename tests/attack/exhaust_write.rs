//! Issue 35, item 8: write memory inside the budget. Writes held out of
//! order and rewrites of streamed bytes keep their whole length leased,
//! small payloads (which arrive unleased) included, under the writer's
//! connection and identity shares; so do update sessions' patches. What
//! the server holds shows in the budget, and stays within the shares.

use crate::proc::Proc;
use crate::raw::{handle, Raw, ERROR, OK};
use std::time::Duration;

const MIB: u64 = 1 << 20;
const PER_CONNECTION: u64 = 64 * MIB;
const PER_IDENTITY: u64 = 96 * MIB;

fn in_use(p: &Proc) -> u64 {
    p.metric("tessera_buffers_in_use_bytes").unwrap_or(0.0) as u64
}

fn start() -> Proc {
    Proc::start(
        None,
        "[buffers]\nmax = \"512MiB\"\nper_connection = \"64MiB\"\nper_identity = \"96MiB\"\nwait = \"1s\"\n",
    )
}

/// A connection with a file of its own open for writing as `who`'s token.
fn open_new(p: &Proc, tok: &str, name: &str) -> (Raw, [u8; 4]) {
    let mut r = Raw::login(p.xrootd, None, "writer");
    let path = format!("/data/{name}?authz=Bearer%20{tok}");
    let rep = r.open(&path, crate::raw::OPEN_NEW | 0x0100, 0o644);
    assert_eq!(rep.status, OK, "open {name}: {}", rep.text());
    (r, handle(&rep))
}

/// Send `n` writes of `len` bytes at `offset(i)`; how many were taken
/// before the first refusal (and that refusal's text).
fn writes(
    r: &mut Raw,
    fh: [u8; 4],
    n: u64,
    len: usize,
    offset: impl Fn(u64) -> u64,
) -> (u64, String) {
    let body = vec![5u8; len];
    for i in 0..n {
        let rep = r.write(fh, offset(i), &body);
        if rep.status == ERROR {
            return (i, rep.text());
        }
    }
    (n, String::new())
}

#[test]
fn held_writes_and_rewrites_are_leased_within_the_shares() {
    let p = start();
    let tok = p.token("storage.modify:/data storage.read:/data");
    // 40 MiB of 32 KiB writes held out of order (a gap at 0 never filled):
    // every byte of them in the budget.
    let (mut a, fa) = open_new(&p, &tok, "held");
    let (taken, why) = writes(&mut a, fa, 1280, 32 << 10, |i| MIB + i * (32 << 10));
    assert_eq!(taken, 1280, "{why}");
    let held = in_use(&p);
    assert!(held >= 40 * MIB, "held writes not in the budget: {held}");
    // Streamed, then rewritten with small writes (the same region three
    // times: the patches' bytes, not the writes', are held).
    let (mut b, fb) = open_new(&p, &tok, "rewritten");
    let (n, why) = writes(&mut b, fb, 16, MIB as usize, |i| i * MIB);
    assert_eq!(n, 16, "{why}");
    for _ in 0..3 {
        let (n, why) = writes(&mut b, fb, 512, 32 << 10, |i| i * (32 << 10));
        assert_eq!(n, 512, "{why}");
    }
    let both = in_use(&p);
    assert!(
        both >= held + 15 * MIB && both <= held + 16 * MIB + 8 * MIB,
        "rewrites: {} MiB in use with {} MiB held",
        both / MIB,
        held / MIB
    );
    // More than the connection's share: refused (the file fails and
    // gives its bytes back), not grown past it.
    let (taken, why) = writes(&mut a, fa, 2048, 32 << 10, |i| 64 * MIB + i * (32 << 10));
    assert!(taken < 2048 && why.contains("memory"), "{taken}: {why}");
    assert!(
        40 * MIB + taken * (32 << 10) <= PER_CONNECTION + MIB,
        "a connection held {} MiB",
        (40 * MIB + taken * (32 << 10)) / MIB
    );
    assert!(in_use(&p) <= PER_IDENTITY + 8 * MIB, "{}", in_use(&p));
    drop((a, b));
    assert!(
        p.wait_for(Duration::from_secs(10), || in_use(&p) < 2 * MIB),
        "given back: {}",
        in_use(&p)
    );
}

#[test]
fn updates_hold_no_more_than_the_identitys_share() {
    let p = start();
    let tok = p.token("storage.modify:/data storage.read:/data");
    // A file to update.
    let (mut w, fh) = open_new(&p, &tok, "u");
    assert_eq!(writes(&mut w, fh, 4, MIB as usize, |i| i * MIB).0, 4);
    assert_eq!(w.close(fh).status, OK);
    // Four updates of it, each patching far past its end with 1 MiB
    // writes, by one user on four connections.
    let mut refused = 0;
    let mut conns = Vec::new();
    for _ in 0..4 {
        let mut r = Raw::login(p.xrootd, None, "writer");
        let rep = r.open(&format!("/data/u?authz=Bearer%20{tok}"), 0x0020, 0);
        assert_eq!(rep.status, OK, "update: {}", rep.text());
        let h = handle(&rep);
        let (n, why) = writes(&mut r, h, 48, MIB as usize, |i| 8 * MIB + i * MIB);
        if n < 48 {
            assert!(why.contains("memory"), "{why}");
            refused += 1;
        }
        assert!(
            in_use(&p) <= PER_IDENTITY + 8 * MIB,
            "one user's updates hold {} MiB",
            in_use(&p) / MIB
        );
        conns.push(r);
    }
    assert!(refused >= 2, "updates past the share were refused");
}
