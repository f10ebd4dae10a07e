//! The XRootD monitoring stream sent (`xrdmon`'s packets over UDP to the
//! configured collectors, from one socket: collectors key a server by its
//! source address and start time). A session's user is announced (`u`)
//! when it first opens a file; each open sends its path (`d`, whose id is
//! the file's, as XRootD does with `files`: collectors take a write's
//! user and path from it) and puts an open record in the `f` buffer; the
//! close adds the bytes moved, the session's end a disconnect record. The
//! buffer goes out every `fstat` interval (or when full); the server's
//! identification (`=`) at start and every `ident` interval. Sends never
//! wait: a datagram the socket cannot take now is dropped, as UDP would.

use crate::xrdmon::{self, Ops, Record};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What is sent where.
#[derive(Debug, Clone)]
pub struct Settings {
    pub destinations: Vec<SocketAddr>,
    /// How often the `f` buffer is sent.
    pub fstat: Duration,
    /// How often the server identifies itself (and once at start).
    pub ident: Duration,
    /// `&site=` of the identification.
    pub site: String,
    /// The XRootD port, `&port=`.
    pub port: u16,
    /// This host's name (`@host` of the server's own id).
    pub host: String,
}

/// Bytes an `f` packet carries at most (XRootD's default `fbsz`).
const FBSZ: usize = 65_472;

struct FBuf {
    records: Vec<u8>,
    n: u16,
    t_beg: u32,
}

pub struct Monitor {
    sock: UdpSocket,
    s: Settings,
    stod: u32,
    sid: u64,
    next_id: AtomicU32,
    seq: AtomicU8,
    fseq: AtomicU8,
    fbuf: Mutex<FBuf>,
    me: String,
}

fn now() -> u32 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as u32)
}

impl Monitor {
    /// A monitor sending to `s.destinations` (none: `None`, nothing is
    /// ever made or sent).
    pub fn new(s: Settings) -> std::io::Result<Option<Arc<Monitor>>> {
        if s.destinations.is_empty() {
            return Ok(None);
        }
        let (sock, dests) = crate::udp::socket(&s.destinations)?;
        let s = Settings {
            destinations: dests,
            ..s
        };
        let stod = now();
        // A stable 48-bit id of this server (site, host, port), the `sid`
        // of every user id and of the `f` stream's time records.
        let mut sid: u64 = 0xcbf2_9ce4_8422_2325;
        for b in format!("{}/{}:{}", s.site, s.host, s.port).bytes() {
            sid = (sid ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        sid &= (1 << 48) - 1;
        let me = xrdmon::userid("", "tesserad", std::process::id(), sid, &s.host);
        Ok(Some(Arc::new(Monitor {
            sock,
            s,
            stod,
            sid,
            next_id: AtomicU32::new(1),
            seq: AtomicU8::new(0),
            fseq: AtomicU8::new(0),
            fbuf: Mutex::new(FBuf {
                records: Vec::new(),
                n: 0,
                t_beg: 0,
            }),
            me,
        })))
    }

    fn send(&self, p: &[u8]) {
        for d in &self.s.destinations {
            let _ = self.sock.send_to(p, d);
        }
    }

    fn id(&self) -> u32 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    fn map(&self, code: u8, dictid: u32, info: &[u8]) {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        self.send(&xrdmon::map(code, seq, self.stod, dictid, info));
    }

    /// The server's identification (`=`).
    pub fn ident(&self) {
        let info = format!(
            "={}\n&site={}&port={}&inst=tessera&pgm=tesserad&ver=v{}",
            self.me,
            self.s.site,
            self.s.port,
            env!("CARGO_PKG_VERSION")
        );
        self.map(b'=', 0, info.as_bytes());
    }

    /// A user session (`u`): `prot` (`xroot`, `https`), the client's
    /// login name and process id, its host, and what it says of itself
    /// (`&p=…&n=…` then `&x=<app>`…). Its end (dropped) is recorded.
    pub fn login(self: &Arc<Self>, prot: &str, client: Client) -> Arc<MonUser> {
        let id = self.id();
        let userid = xrdmon::userid(prot, &client.user, client.pid, self.sid, &client.host);
        self.map(b'u', id, format!("{userid}\n{}", client.info).as_bytes());
        Arc::new(MonUser {
            id,
            userid,
            mon: Arc::clone(self),
        })
    }

    fn record(&self, r: Record) {
        let mut b = tessera_core::lock(&self.fbuf);
        let before = b.records.len();
        r.encode(&mut b.records);
        if b.n == 0 {
            b.t_beg = now();
        }
        b.n += 1;
        if b.records.len() + 32 > FBSZ || b.n == u16::MAX {
            let extra = b.records.split_off(before);
            b.n -= 1;
            self.flush_locked(&mut b);
            b.records = extra;
            b.n = 1;
            b.t_beg = now();
        }
    }

    fn flush_locked(&self, b: &mut FBuf) {
        if b.n == 0 {
            return;
        }
        let seq = self.fseq.fetch_add(1, Ordering::Relaxed);
        let p = xrdmon::fstream(seq, self.stod, (b.t_beg, now()), self.sid, b.n, &b.records);
        b.records.clear();
        b.n = 0;
        self.send(&p);
    }

    /// Send the `f` records made since the last flush.
    pub fn flush(&self) {
        let mut b = tessera_core::lock(&self.fbuf);
        self.flush_locked(&mut b);
    }

    /// Identification now and every `ident`, the `f` buffer every
    /// `fstat`, until `stop` turns true and then for `drain` more (the
    /// transfers a shutdown lets finish are recorded too), then a last
    /// flush.
    pub async fn run(
        self: Arc<Self>,
        mut stop: tokio::sync::watch::Receiver<bool>,
        drain: Duration,
    ) {
        self.ident();
        let mut fstat = tokio::time::interval(self.s.fstat.max(Duration::from_millis(100)));
        let mut ident = tokio::time::interval(self.s.ident.max(Duration::from_secs(1)));
        ident.tick().await;
        loop {
            tokio::select! {
                _ = fstat.tick() => self.flush(),
                _ = ident.tick() => self.ident(),
                _ = stop.changed() => break,
            }
        }
        let end = tokio::time::Instant::now() + drain;
        while tokio::time::Instant::now() < end {
            tokio::select! {
                _ = fstat.tick() => self.flush(),
                _ = tokio::time::sleep_until(end) => {}
            }
        }
        self.flush();
    }
}

/// What a client says of itself at login.
pub struct Client {
    pub user: String,
    pub pid: u32,
    pub host: String,
    /// `&p=<auth>&n=<name>&h=<host>&o=<vo>&r=<role>&g=<groups>&m=<dn>&x=<app>&I=<4|6>`.
    pub info: String,
}

/// The monitored users of one connection, one per identity (and
/// application) it acts as: transfers are recorded under the user whose
/// credentials they carry. At most [`USERS_PER_CONNECTION`] are kept; a
/// connection switching among more announces each transfer's user anew.
#[derive(Default)]
pub struct Users(std::sync::Mutex<std::collections::HashMap<String, Arc<MonUser>>>);

/// See [`Users`].
pub const USERS_PER_CONNECTION: usize = 16;

/// What a front-end knows of the client of a transfer.
pub struct Peer<'a> {
    /// `xroot` or `https`.
    pub prot: &'static str,
    /// The name it logged in with (XRootD's login; HTTPS: the identity's).
    pub login: &'a str,
    /// Its process id (XRootD's login; HTTPS: the connection's port).
    pub pid: u32,
    pub addr: std::net::SocketAddr,
    /// Its application (`xrd.appname`, the User-Agent's product).
    pub app: &'a str,
}

impl Users {
    /// A transfer of `path` by `who` from `peer`, under the user that
    /// identity (and application) is on this connection (announced when
    /// first seen).
    pub fn open(
        &self,
        mon: &Arc<Monitor>,
        who: &tessera_types::Identity,
        peer: Peer<'_>,
        (path, size, write): (&str, u64, bool),
    ) -> MonFile {
        let key = format!("{}\n{}", who.limit_key(), peer.app);
        let user = self.get(mon, &key, peer.prot, || {
            let host = host_of(peer.addr.ip());
            Client {
                user: peer.login.to_string(),
                pid: peer.pid,
                info: client_info(who, &host, peer.app, peer.addr.is_ipv6()),
                host,
            }
        });
        user.open(path, size, write)
    }

    /// The user `key` names, announced (`u`) when first seen.
    pub fn get(
        &self,
        mon: &Arc<Monitor>,
        key: &str,
        prot: &str,
        client: impl FnOnce() -> Client,
    ) -> Arc<MonUser> {
        let mut m = tessera_core::lock(&self.0);
        if let Some(u) = m.get(key) {
            return Arc::clone(u);
        }
        let u = mon.login(prot, client());
        if m.len() < USERS_PER_CONNECTION {
            m.insert(key.to_string(), Arc::clone(&u));
        }
        u
    }
}

/// A monitored session: its files' opens, and its end when the last
/// holder lets it go (its connection and every file it opened: the end
/// is recorded after their closes).
pub struct MonUser {
    id: u32,
    userid: String,
    mon: Arc<Monitor>,
}

impl MonUser {
    /// A file opened: its path (`d`) and open record; the returned
    /// [`MonFile`] counts its I/O and records the close when dropped.
    pub fn open(self: &Arc<Self>, path: &str, size: u64, write: bool) -> MonFile {
        let file = self.mon.id();
        self.mon
            .map(b'd', file, format!("{}\n{path}", self.userid).as_bytes());
        self.mon.record(Record::Open {
            file,
            size,
            write,
            user: self.id,
            lfn: Some(path.as_bytes().to_vec()),
        });
        MonFile {
            _user: Arc::clone(self),
            file,
            mon: Arc::clone(&self.mon),
            read: Counter::default(),
            readv: Counter::default(),
            write: Counter::default(),
            rsegs: AtomicU64::new(0),
            forced: AtomicBool::new(false),
        }
    }
}

impl Drop for MonUser {
    fn drop(&mut self) {
        self.mon.record(Record::Disc { user: self.id });
    }
}

/// Bytes and operations of one kind, with the smallest and largest.
struct Counter {
    bytes: AtomicU64,
    ops: AtomicU32,
    min: AtomicI64,
    max: AtomicI64,
}

impl Default for Counter {
    fn default() -> Counter {
        Counter {
            bytes: AtomicU64::new(0),
            ops: AtomicU32::new(0),
            min: AtomicI64::new(i64::from(i32::MAX)),
            max: AtomicI64::new(0),
        }
    }
}

impl Counter {
    fn add(&self, n: u64) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
        self.ops.fetch_add(1, Ordering::Relaxed);
        let n = n.min(i32::MAX as u64) as i64;
        self.min.fetch_min(n, Ordering::Relaxed);
        self.max.fetch_max(n, Ordering::Relaxed);
    }

    fn ops(&self) -> i32 {
        self.ops.load(Ordering::Relaxed).min(i32::MAX as u32) as i32
    }

    /// (min, max) as XRootD writes them: both 0 without operations.
    fn range(&self) -> (i32, i32) {
        if self.ops() == 0 {
            return (0, 0);
        }
        (
            self.min.load(Ordering::Relaxed) as i32,
            self.max.load(Ordering::Relaxed) as i32,
        )
    }
}

/// One open file's I/O, recorded at its close (drop).
pub struct MonFile {
    /// Its user, whose end is recorded after this close.
    _user: Arc<MonUser>,
    file: u32,
    mon: Arc<Monitor>,
    read: Counter,
    readv: Counter,
    write: Counter,
    rsegs: AtomicU64,
    forced: AtomicBool,
}

impl MonFile {
    pub fn read(&self, n: u64) {
        self.read.add(n);
    }

    /// A vector read of `segs` segments, `n` bytes in all.
    pub fn readv(&self, n: u64, segs: u64) {
        self.readv.add(n);
        self.rsegs.fetch_add(segs, Ordering::Relaxed);
    }

    pub fn wrote(&self, n: u64) {
        self.write.add(n);
    }

    /// The client went away with the file open.
    pub fn forced(&self) {
        self.forced.store(true, Ordering::Relaxed);
    }
}

impl Drop for MonFile {
    fn drop(&mut self) {
        let (rd_min, rd_max) = self.read.range();
        let (rv_min, rv_max) = self.readv.range();
        let (wr_min, wr_max) = self.write.range();
        let rsegs = self.rsegs.load(Ordering::Relaxed) as i64;
        let per = |v: i32| {
            let n = i64::from(v.max(1));
            (rsegs / n).min(i64::from(i16::MAX)) as i16
        };
        let ops = Ops {
            read: self.read.ops(),
            readv: self.readv.ops(),
            write: self.write.ops(),
            rs_min: if self.readv.ops() > 0 {
                per(self.readv.ops())
            } else {
                0
            },
            rs_max: if self.readv.ops() > 0 {
                per(self.readv.ops())
            } else {
                0
            },
            rsegs,
            rd_min,
            rd_max,
            rv_min,
            rv_max,
            wr_min,
            wr_max,
        };
        self.mon.record(Record::Close {
            file: self.file,
            read: self.read.bytes.load(Ordering::Relaxed),
            readv: self.readv.bytes.load(Ordering::Relaxed),
            write: self.write.bytes.load(Ordering::Relaxed),
            ops: Some(ops),
            forced: self.forced.load(Ordering::Relaxed),
        });
    }
}

/// What a `u` record says of an authenticated client, as XRootD's
/// `MonAuth` writes it: `&p=<security protocol>&n=<name>&h=<host>&o=<VO>
/// &r=<role>&g=<groups>&m=<DN>`, then the login's `&x=<application>&y=
/// &I=<4|6>`. Values lose `&` and control characters (they would split or
/// cut the record) and are cut at 1,024 characters.
pub fn client_info(who: &tessera_types::Identity, host: &str, app: &str, ipv6: bool) -> String {
    // `&` and control characters would split or cut the record; each
    // value is kept under 1 KiB (a token's groups can be many).
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| if c == '&' || c.is_control() { '_' } else { c })
            .take(1024)
            .collect()
    };
    let p = if who.x509.is_some() {
        "gsi"
    } else if who.token.is_some() {
        "ztn"
    } else {
        "unix"
    };
    let fqan = who.x509.as_ref().and_then(|x| x.fqans.first().cloned());
    let vo = fqan
        .as_deref()
        .and_then(|f| f.trim_start_matches('/').split('/').next())
        .unwrap_or("")
        .to_string();
    let role = fqan
        .as_deref()
        .and_then(|f| f.split("/Role=").nth(1))
        .map(|r| r.split('/').next().unwrap_or("").to_string())
        .filter(|r| r != "NULL")
        .unwrap_or_default();
    let dn = who.x509.as_ref().map(|x| x.dn.clone()).unwrap_or_default();
    format!(
        "&p={p}&n={}&h={}&o={}&r={}&g={}&m={}&x={}&y=&I={}",
        clean(&who.name),
        clean(host),
        clean(&vo),
        clean(&role),
        clean(&who.group_names.join(" ")),
        clean(&dn),
        clean(app),
        if ipv6 { 6 } else { 4 }
    )
}

/// A client address as XRootD writes it in a user id: IPv4 plain, IPv6
/// in brackets.
pub fn host_of(ip: std::net::IpAddr) -> String {
    match ip {
        std::net::IpAddr::V4(a) => a.to_string(),
        std::net::IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => format!("[{a}]"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(dests: Vec<SocketAddr>) -> Settings {
        Settings {
            destinations: dests,
            fstat: Duration::from_secs(60),
            ident: Duration::from_secs(60),
            site: "S".into(),
            port: 1094,
            host: "h".into(),
        }
    }

    #[test]
    fn off_without_collectors() {
        assert!(Monitor::new(settings(Vec::new())).unwrap().is_none());
    }

    /// A session's file: `u`, `d` at once; open, close and disconnect in
    /// one `f` packet at the flush, in that order, with the bytes.
    #[test]
    fn records_reach_a_socket() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mon = Monitor::new(settings(vec![rx.local_addr().unwrap()]))
            .unwrap()
            .unwrap();
        let client = Client {
            user: "alice".into(),
            pid: 7,
            host: "10.0.0.1".into(),
            info: "&p=unix&n=alice".into(),
        };
        let user = mon.login("xroot", client);
        let f = user.open("/a/b", 10, false);
        f.read(4);
        f.read(6);
        drop(f);
        drop(user);
        mon.flush();
        let mut buf = [0u8; 2048];
        let mut codes = Vec::new();
        let mut fpkt = Vec::new();
        for _ in 0..3 {
            let (n, _) = rx.recv_from(&mut buf).unwrap();
            codes.push(buf[0]);
            assert_eq!(u16::from_be_bytes([buf[2], buf[3]]) as usize, n);
            if buf[0] == b'f' {
                fpkt = buf[..n].to_vec();
            }
        }
        assert_eq!(codes, b"udf");
        // TOD: three records; then open (type 1), close (0) with read 10,
        // disconnect (4).
        assert_eq!(u16::from_be_bytes([fpkt[14], fpkt[15]]), 3);
        let open = &fpkt[32..];
        assert_eq!(open[0], 1);
        let osize = u16::from_be_bytes([open[2], open[3]]) as usize;
        let close = &open[osize..];
        assert_eq!(close[0], 0);
        assert_eq!(u64::from_be_bytes(close[8..16].try_into().unwrap()), 10);
        let csize = u16::from_be_bytes([close[2], close[3]]) as usize;
        assert_eq!(close[csize], 4);
    }
}
