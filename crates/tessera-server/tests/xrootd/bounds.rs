//! What one connection may hold on the server: requests in flight, and
//! replies a client does not take. Driven by a raw client (the stock ones
//! always read their replies).

use crate::errors::handshake_then;
use crate::{data, write_file, Env};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// A raw XRootD connection, logged in, with `path` open for reading.
struct Raw {
    s: TcpStream,
    fh: [u8; 4],
}

impl Raw {
    fn open(e: &Env, path: &str) -> Raw {
        let addr = e.url.trim_start_matches("root://").to_string();
        let s = TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut r = Raw { s, fh: [0; 4] };
        let mut proto = [0u8; 24];
        proto[2..4].copy_from_slice(&3006u16.to_be_bytes());
        proto[4..8].copy_from_slice(&0x500i32.to_be_bytes());
        r.s.write_all(&handshake_then(&proto)).unwrap();
        let mut first = [0u8; 16];
        r.s.read_exact(&mut first).unwrap();
        assert_eq!(r.reply().1, 0, "kXR_protocol");
        let mut login = [0u8; 24];
        login[2..4].copy_from_slice(&3007u16.to_be_bytes());
        login[8..12].copy_from_slice(b"test");
        r.s.write_all(&login).unwrap();
        assert_eq!(r.reply().1, 0, "kXR_login");
        let mut open = vec![0u8; 24];
        open[2..4].copy_from_slice(&3010u16.to_be_bytes());
        open[6..8].copy_from_slice(&0x0010u16.to_be_bytes()); // kXR_open_read
        open[20..24].copy_from_slice(&(path.len() as i32).to_be_bytes());
        open.extend_from_slice(path.as_bytes());
        r.s.write_all(&open).unwrap();
        let (_, st, b) = r.reply();
        assert_eq!(st, 0, "{}", String::from_utf8_lossy(&b));
        r.fh = b[..4].try_into().unwrap();
        r
    }

    /// One response: stream id, status, body.
    fn reply(&mut self) -> (u16, u16, Vec<u8>) {
        let mut h = [0u8; 8];
        self.s.read_exact(&mut h).unwrap();
        let mut b = vec![0u8; u32::from_be_bytes(h[4..8].try_into().unwrap()) as usize];
        self.s.read_exact(&mut b).unwrap();
        (
            u16::from_be_bytes([h[0], h[1]]),
            u16::from_be_bytes([h[2], h[3]]),
            b,
        )
    }

    /// Send `n` reads of 8 MiB (stream ids 1..=n; odd ones at 8 MiB,
    /// even ones at 0) in one go, taking no reply.
    fn pipeline_reads(&mut self, n: u16) {
        let mut reqs = Vec::new();
        for i in 1..=n {
            let mut r = [0u8; 24];
            r[0..2].copy_from_slice(&i.to_be_bytes());
            r[2..4].copy_from_slice(&3013u16.to_be_bytes());
            r[4..8].copy_from_slice(&self.fh);
            r[8..16].copy_from_slice(&(u64::from(i % 2) << 23).to_be_bytes());
            r[16..20].copy_from_slice(&(8i32 << 20).to_be_bytes());
            reqs.extend_from_slice(&r);
        }
        self.s.write_all(&reqs).unwrap();
    }
}

/// A 16 MiB file at /p/big; its bytes.
fn big_file(e: &Env) -> Vec<u8> {
    let body = data(16 << 20, 21);
    let f = e.dir.path().join("big");
    write_file(&f, &body);
    e.ok(
        "xrdcp",
        &[
            "--nopbar",
            f.to_str().unwrap(),
            &format!("{}//p/big", e.url),
        ],
    );
    body
}

fn in_flight(e: &Env) -> u64 {
    let s = e.server.as_ref().unwrap().xrootd_stats.as_ref().unwrap();
    s.in_flight.load(Ordering::Relaxed)
}

/// A client that pipelines reads and never takes the replies holds at
/// most `max_in_flight` requests on the server (the connection is not
/// read beyond that), other connections go on, and once the client reads,
/// every request is answered in full.
#[test]
fn pipelined_reads_are_bounded_per_connection() {
    let e = Env::start_with(|c| c.xrootd.max_in_flight = Some(8));
    let body = big_file(&e);
    let mut raw = Raw::open(&e, "/p/big");
    // 200 reads of 8 MiB (1.6 GB asked for), not one reply taken.
    const N: u16 = 200;
    raw.pipeline_reads(N);
    std::thread::sleep(Duration::from_secs(2));
    let held = in_flight(&e);
    assert!((1..=8).contains(&held), "{held} requests in flight");
    // Other connections are served meanwhile.
    e.ok("xrdfs", &[&e.url, "stat", "/p/big"]);
    // Now take the replies: every read answered in full, right bytes.
    let mut got: std::collections::HashMap<u16, Vec<u8>> = Default::default();
    let mut done = 0;
    while done < N {
        let (sid, st, b) = raw.reply();
        assert!(st == 0 || st == 4000, "stream {sid}: status {st}");
        got.entry(sid).or_default().extend_from_slice(&b);
        if st == 0 {
            done += 1;
        }
    }
    for i in 1..=N {
        let off = usize::from(i % 2) << 23;
        assert!(got[&i] == body[off..off + (8 << 20)], "read {i}");
    }
    drop(raw);
    for _ in 0..100 {
        if in_flight(&e) == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(in_flight(&e), 0);
}

/// A client that stops taking replies is given up after `request_stall_s`
/// without progress: its connection closes and what its requests held is
/// freed; other connections are served throughout.
#[test]
fn a_client_that_stops_reading_is_given_up() {
    let e = Env::start_with(|c| c.xrootd.request_stall_s = Some(2));
    big_file(&e);
    let mut raw = Raw::open(&e, "/p/big");
    raw.pipeline_reads(20);
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        in_flight(&e) > 0,
        "reads held while the client does not read"
    );
    // Given up within a few seconds of no progress.
    let t = std::time::Instant::now();
    while in_flight(&e) > 0 && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(in_flight(&e), 0, "requests still held");
    e.ok("xrdfs", &[&e.url, "stat", "/p/big"]);
    // The connection is closed: reading it to the end ends (EOF or reset).
    let mut sink = Vec::new();
    let r = raw.s.read_to_end(&mut sink);
    assert!(
        r.is_ok()
            || r.as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
        "{r:?}"
    );
    assert!(sink.len() < 20 * (8 << 20), "not every reply was sent");
}
