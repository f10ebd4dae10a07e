//! What one connection may hold on the server: requests in flight, and
//! replies a client does not take. Driven by a raw client (the stock ones
//! always read their replies).

use crate::errors::handshake_then;
use crate::{data, write_file, Daemon, Env};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tessera_xrdproto::{err, req, status};

/// A raw XRootD connection, logged in, with `path` open for reading.
pub struct Raw {
    pub s: TcpStream,
    pub fh: [u8; 4],
}

impl Raw {
    pub fn open(e: &Env, path: &str) -> Raw {
        Raw::open_with(e, path, 0x0010, 0) // kXR_open_read
    }

    /// A new file open for writing (kXR_new | kXR_open_updt | kXR_mkpath).
    pub fn create(e: &Env, path: &str) -> Raw {
        Raw::open_with(e, path, 0x0008 | 0x0020 | 0x0100, 0o644)
    }

    fn open_with(e: &Env, path: &str, options: u16, mode: u16) -> Raw {
        match Raw::try_open(e, path, options, mode) {
            Ok(r) => r,
            Err((st, b)) => panic!("open: {st} {}", String::from_utf8_lossy(&b)),
        }
    }

    /// Open `path` with exactly `options` (what the stock clients add,
    /// such as `kXR_async`, is not added); a refusal's status and body.
    pub fn try_open(e: &Env, path: &str, options: u16, mode: u16) -> Result<Raw, (u16, Vec<u8>)> {
        let addr = e.url.trim_start_matches("root://").to_string();
        let s = TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut r = Raw { s, fh: [0; 4] };
        let mut proto = [0u8; 24];
        proto[2..4].copy_from_slice(&req::PROTOCOL.to_be_bytes());
        proto[4..8].copy_from_slice(&0x500i32.to_be_bytes());
        r.s.write_all(&handshake_then(&proto)).unwrap();
        let mut first = [0u8; 16];
        r.s.read_exact(&mut first).unwrap();
        assert_eq!(r.reply().1, 0, "kXR_protocol");
        let mut login = [0u8; 24];
        login[2..4].copy_from_slice(&req::LOGIN.to_be_bytes());
        login[8..12].copy_from_slice(b"test");
        r.s.write_all(&login).unwrap();
        assert_eq!(r.reply().1, 0, "kXR_login");
        // unix credentials of the server's own user (the dev mode trusts
        // only it).
        let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
        let cred = format!("unix\0{user}\0");
        let mut auth = vec![0u8; 24];
        auth[2..4].copy_from_slice(&req::AUTH.to_be_bytes());
        auth[16..20].copy_from_slice(b"unix");
        auth[20..24].copy_from_slice(&(cred.len() as i32).to_be_bytes());
        auth.extend_from_slice(cred.as_bytes());
        r.s.write_all(&auth).unwrap();
        assert_eq!(r.reply().1, 0, "kXR_auth");
        let mut open = vec![0u8; 24];
        open[2..4].copy_from_slice(&req::OPEN.to_be_bytes());
        open[4..6].copy_from_slice(&mode.to_be_bytes());
        open[6..8].copy_from_slice(&options.to_be_bytes());
        open[20..24].copy_from_slice(&(path.len() as i32).to_be_bytes());
        open.extend_from_slice(path.as_bytes());
        r.s.write_all(&open).unwrap();
        let (_, st, b) = r.reply();
        if st != 0 {
            return Err((st, b));
        }
        r.fh = b[..4].try_into().unwrap();
        Ok(r)
    }

    /// One response: stream id, status, body.
    pub fn reply(&mut self) -> (u16, u16, Vec<u8>) {
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

    /// One request on the open file (stream id 1): its reply's status and
    /// body (a long read's `kXR_oksofar` parts joined).
    pub fn call(&mut self, code: u16, offset: u64, len: i32, payload: &[u8]) -> (u16, Vec<u8>) {
        let mut r = vec![0u8; 24];
        r[0..2].copy_from_slice(&1u16.to_be_bytes());
        r[2..4].copy_from_slice(&code.to_be_bytes());
        r[4..8].copy_from_slice(&self.fh);
        r[8..16].copy_from_slice(&offset.to_be_bytes());
        if code == req::READ {
            r[16..20].copy_from_slice(&len.to_be_bytes());
        }
        r[20..24].copy_from_slice(&(payload.len() as i32).to_be_bytes());
        r.extend_from_slice(payload);
        self.s.write_all(&r).unwrap();
        let mut body = Vec::new();
        loop {
            let (_, st, b) = self.reply();
            body.extend_from_slice(&b);
            if st != status::OKSOFAR {
                return (st, body);
            }
        }
    }

    /// Send `n` reads of 8 MiB (stream ids 1..=n; odd ones at 8 MiB,
    /// even ones at 0) in one go, taking no reply.
    fn pipeline_reads(&mut self, n: u16) {
        let mut reqs = Vec::new();
        for i in 1..=n {
            let mut r = [0u8; 24];
            r[0..2].copy_from_slice(&i.to_be_bytes());
            r[2..4].copy_from_slice(&req::READ.to_be_bytes());
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
        assert!(
            st == 0 || st == status::OKSOFAR,
            "stream {sid}: status {st}"
        );
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

/// A client that stops taking replies is given up after `request_stall`
/// without progress: its connection closes and what its requests held is
/// freed; other connections are served throughout.
#[test]
fn a_client_that_stops_reading_is_given_up() {
    let e = Env::start_with(|c| c.xrootd.request_stall = Some(std::time::Duration::from_secs(2)));
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

/// The `kXR_error` number of an error reply's body.
pub fn errnum(body: &[u8]) -> i32 {
    i32::from_be_bytes(body[..4].try_into().unwrap())
}

fn budget_in_use(e: &Env) -> u64 {
    e.server.as_ref().unwrap().buffers.in_use()
}

/// One memory budget for all connections: while one client holds it all
/// (reads it does not take), a read on another connection is refused
/// with kXR_NoMemory after the budget's wait, and a write on a third is
/// refused too and fails its file (nothing of it becomes visible). Once
/// the first client reads its replies, the budget is free again and
/// reads are served.
#[test]
fn one_memory_budget_across_connections() {
    let e = Env::start_with(|c| {
        c.buffers.max_mib = Some(16);
        c.buffers.wait_ms = Some(300);
    });
    let body = big_file(&e);
    let mut hog = Raw::open(&e, "/p/big");
    hog.pipeline_reads(8);
    let t = std::time::Instant::now();
    while budget_in_use(&e) < 16 << 20 && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(budget_in_use(&e), 16 << 20, "the hog holds the budget");
    let m = e.ok(
        "curl",
        &[
            "-sf",
            &format!("http://{}/metrics", e.server.as_ref().unwrap().metrics_addr),
        ],
    );
    for line in [
        "tessera_buffers_in_use_bytes 16777216",
        "tessera_buffers_limit_bytes 16777216",
    ] {
        assert!(m.lines().any(|l| l == line), "{line} in\n{m}");
    }

    let mut reader = Raw::open(&e, "/p/big");
    let (st, b) = reader.call(req::READ, 0, 1 << 20, &[]);
    assert_eq!(
        (st, errnum(&b)),
        (status::ERROR, err::NO_MEMORY),
        "{}",
        String::from_utf8_lossy(&b)
    );

    let mut writer = Raw::create(&e, "/p/refused");
    let (st, b) = writer.call(req::WRITE, 0, 0, &vec![7u8; 1 << 20]);
    assert_eq!(
        (st, errnum(&b)),
        (status::ERROR, err::NO_MEMORY),
        "{}",
        String::from_utf8_lossy(&b)
    );

    // The hog takes its replies: every byte it asked for, or kXR_NoMemory
    // for reads that waited too long; then the budget is all free.
    let mut got: std::collections::HashMap<u16, Vec<u8>> = Default::default();
    let mut done = 0;
    while done < 8 {
        let (sid, st, b) = hog.reply();
        if st == status::ERROR {
            assert_eq!(errnum(&b), err::NO_MEMORY);
            got.remove(&sid);
            done += 1;
            continue;
        }
        assert!(
            st == 0 || st == status::OKSOFAR,
            "stream {sid}: status {st}"
        );
        got.entry(sid).or_default().extend_from_slice(&b);
        if st == 0 {
            let off = usize::from(sid % 2) << 23;
            assert!(got[&sid] == body[off..off + (8 << 20)], "read {sid}");
            done += 1;
        }
    }
    assert!(!got.is_empty(), "some reads were served");
    drop(hog);
    let t = std::time::Instant::now();
    while budget_in_use(&e) > 0 && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(budget_in_use(&e), 0);

    // Reads go on; the refused file stays failed and never appears.
    let (st, b) = reader.call(req::READ, 1 << 20, 1 << 20, &[]);
    assert_eq!(st, 0);
    assert!(b == body[1 << 20..2 << 20]);
    let (st, b) = writer.call(req::WRITE, 1 << 20, 0, &vec![7u8; 1 << 20]);
    assert_eq!(st, status::ERROR, "a failed file takes no more writes");
    assert_eq!(errnum(&b), err::NO_MEMORY);
    let (st, _) = writer.call(req::CLOSE, 0, 0, &[]);
    assert_eq!(st, status::ERROR, "close of a failed file fails");
    let out = std::process::Command::new("xrdfs")
        .args([&e.url, "stat", "/p/refused"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "a refused write left a file behind");
}

/// A readv of many short elements holds about what it sends, not the whole
/// verified block behind each element: 1,024 one-byte elements (each in a
/// 1 MiB block) once made the server hold 1 GiB. Measured on the real
/// binary, whose peak memory is its own.
#[test]
fn a_readv_of_short_elements_holds_what_it_sends() {
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::dev(&dir.path().join("data"), &[]);
    let xrootd = d.field("xrootd=");
    let url = format!("root://{xrootd}");
    let body = data(64 << 20, 5);
    let f = dir.path().join("f");
    write_file(&f, &body);
    let peak = |pid: u32| -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        s.lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    };
    let up = std::process::Command::new("xrdcp")
        .args(["-s", f.to_str().unwrap(), &format!("{url}//rv/f")])
        .status()
        .unwrap();
    assert!(up.success());
    let before = peak(d.child.id());
    let script = r#"
import sys
from XRootD import client
want = open(sys.argv[2], 'rb').read()
f = client.File()
st, _ = f.open(sys.argv[1] + "//rv/f"); assert st.ok, st
chunks = [((i * 65536 + 7) % len(want), 1) for i in range(1024)]
st, vr = f.vector_read(chunks); assert st.ok, st
for (o, n), c in zip(chunks, vr.chunks):
    assert c.buffer == want[o:o + n], o
"#;
    let out = std::process::Command::new("/usr/bin/python3")
        .args(["-c", script, &url, f.to_str().unwrap()])
        .output()
        .unwrap();
    let after = peak(d.child.id());
    drop(d);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Before: ~1 GiB more. Now the pool's few blocks.
    assert!(
        after < before + (256 << 10),
        "peak {before} kB -> {after} kB across the readv"
    );
}

/// Files being written hold their group buffers under the same budget: a
/// client that opens file after file and leaves each with a partial group
/// (here 256 KiB of a RAIN 4+2 group of 4 MiB data and 2 MiB parity) gets
/// `kXR_NoMemory` once the budget is spent, instead of the server growing
/// with every file. The refused file is aborted and never appears; closing
/// a file gives its memory back, and the next file is taken.
#[test]
fn files_being_written_hold_their_buffers_under_the_budget() {
    let e = Env::start_with(|c| {
        c.buffers.max_mib = Some(24);
        c.buffers.wait_ms = Some(300);
    });
    e.rain_dir("/w");
    let chunk = data(256 << 10, 5);
    let mut open: Vec<(String, Raw)> = Vec::new();
    let refused = loop {
        assert!(open.len() < 16, "24 MiB never ran out");
        let path = format!("/w/f{}", open.len());
        let mut w = Raw::create(&e, &path);
        let (st, b) = w.call(req::WRITE, 0, 0, &chunk);
        if st != 0 {
            assert_eq!(
                (st, errnum(&b)),
                (status::ERROR, err::NO_MEMORY),
                "{}",
                String::from_utf8_lossy(&b)
            );
            break (path, w);
        }
        open.push((path, w));
    };
    // Each file past its first 64 KiB holds its writer's whole ceiling
    // (6 MiB and a few bytes): three fit in 24 MiB, the fourth does not.
    assert_eq!(open.len(), 3, "files taken before the budget ran out");
    let used = budget_in_use(&e);
    assert!(
        used > 18 << 20 && used <= 24 << 20,
        "budget in use: {used} bytes"
    );
    let (path, mut w) = refused;
    let (st, b) = w.call(req::CLOSE, 0, 0, &[]);
    assert_eq!(
        (st, errnum(&b)),
        (status::ERROR, err::NO_MEMORY),
        "close of the refused file"
    );
    let stat = |p: &str| {
        std::process::Command::new("xrdfs")
            .args([&e.url, "stat", p])
            .output()
            .unwrap()
    };
    assert!(!stat(&path).status.success(), "{path} appeared");

    // A closed file gives its memory back (and is whole); the next file
    // is then taken.
    let (done, mut first) = open.remove(0);
    assert_eq!(first.call(req::CLOSE, 0, 0, &[]).0, 0, "close {done}");
    let out = stat(&done);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("Size:   {}", 256 << 10)),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let mut next = Raw::create(&e, "/w/next");
    assert_eq!(
        next.call(req::WRITE, 0, 0, &chunk).0,
        0,
        "a write after a close"
    );
    assert_eq!(next.call(req::CLOSE, 0, 0, &[]).0, 0);
    for (p, mut w) in open {
        assert_eq!(w.call(req::CLOSE, 0, 0, &[]).0, 0, "close {p}");
    }
    let t = std::time::Instant::now();
    while budget_in_use(&e) > 0 && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(budget_in_use(&e), 0, "every file gave its memory back");
}

/// A truncate by path rewrites the file on the server (copy buffer and
/// group): it takes its memory from the budget too, so with none free it
/// is refused with `kXR_NoMemory` and the file is left as it was.
#[test]
fn a_truncate_by_path_holds_its_memory_under_the_budget() {
    let e = Env::start_with(|c| {
        c.buffers.max_mib = Some(32);
        c.buffers.wait_ms = Some(300);
    });
    let f = e.dir.path().join("t");
    write_file(&f, &data(100_000, 6));
    e.ok(
        "xrdcp",
        &["--nopbar", f.to_str().unwrap(), &format!("{}//p/t", e.url)],
    );
    let buffers = e.server.as_ref().unwrap().buffers.clone();
    let all =
        e.rt.block_on(buffers.lease(32 << 20))
            .expect("the whole budget");
    let out = e.run("xrdfs", &[&e.url, "truncate", "/p/t", "1000"]);
    assert!(!out.status.success(), "truncate without memory succeeded");
    let msg =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(msg.contains("3008"), "{msg}");
    let st = e.ok("xrdfs", &[&e.url, "stat", "/p/t"]);
    assert!(st.contains("Size:   100000"), "{st}");
    drop(all);
    e.ok("xrdfs", &[&e.url, "truncate", "/p/t", "1000"]);
    let st = e.ok("xrdfs", &[&e.url, "stat", "/p/t"]);
    assert!(st.contains("Size:   1000"), "{st}");
    assert_eq!(budget_in_use(&e), 0);
}
