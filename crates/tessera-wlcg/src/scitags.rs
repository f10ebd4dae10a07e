//! SciTags flow marking: a transfer that carries a scitag (`SciTag`
//! header, `TransferHeaderSciTag` on a third-party copy, the `scitag.flow`
//! CGI) is announced when its flow starts and when it ends, as XRootD,
//! dCache and StoRM do: a firefly (syslog-framed JSON, one UDP datagram,
//! `<134>1 - <host> tessera - firefly-json - {…}`, the scitags.org
//! firefly schema v1) to each configured destination, and/or a line
//! `start|end tcp <src> <sport> <dst> <dport> <exp> <act>` to the flowd
//! pipe (StoRM's way). The flow's source is where the data comes from.

use serde::Serialize;
use std::io::Write;
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A valid scitag: `experiment << 6 | activity`, 65 to 65535 (XRootD's
/// and StoRM's range: experiment 1 to 1023, activity 0 to 63).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tag {
    pub experiment: u16,
    pub activity: u8,
}

/// The tag a header or CGI value gives (surrounding blanks allowed);
/// `None` for anything else (not a number, out of range): such a flow is
/// not marked, as dCache does (XRootD would mark it 0/0, which no
/// experiment reads).
pub fn parse(v: &str) -> Option<Tag> {
    let n: u32 = v.trim().parse().ok()?;
    (65..=65535).contains(&n).then_some(Tag {
        experiment: (n >> 6) as u16,
        activity: (n & 63) as u8,
    })
}

/// Where fireflies go.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// UDP destinations (collectors; flowd listens on 10514).
    pub destinations: Vec<SocketAddr>,
    /// flowd's named pipe (`/var/run/flowd`), if lines go there.
    pub flowd: Option<PathBuf>,
    /// This host's name in the syslog header.
    pub host: String,
}

pub struct Fireflies {
    sock: Option<UdpSocket>,
    s: Settings,
}

impl Fireflies {
    /// Fireflies to `s`'s destinations and pipe (neither: `None`, no flow
    /// is ever made).
    pub fn new(s: Settings) -> std::io::Result<Option<Arc<Fireflies>>> {
        if s.destinations.is_empty() && s.flowd.is_none() {
            return Ok(None);
        }
        if let Some(p) = &s.flowd {
            use std::os::unix::fs::FileTypeExt;
            let t = std::fs::metadata(p)?.file_type();
            if !t.is_fifo() {
                return Err(std::io::Error::other(format!(
                    "{} is not a named pipe (flowd makes it)",
                    p.display()
                )));
            }
        }
        let (sock, dests) = match s.destinations.is_empty() {
            true => (None, Vec::new()),
            false => {
                let (u, d) = crate::udp::socket(&s.destinations)?;
                (Some(u), d)
            }
        };
        let s = Settings {
            destinations: dests,
            ..s
        };
        Ok(Some(Arc::new(Fireflies { sock, s })))
    }

    /// A flow starting now from `src` to `dst` (its firefly sent); the
    /// end is sent when the returned [`Flow`] is dropped.
    pub fn start(self: &Arc<Self>, tag: Tag, app: &str, src: SocketAddr, dst: SocketAddr) -> Flow {
        let f = Flow {
            ff: Arc::clone(self),
            tag,
            app: app.to_string(),
            src: unmapped(src),
            dst: unmapped(dst),
            start: SystemTime::now(),
            sent: AtomicU64::new(0),
            received: AtomicU64::new(0),
        };
        f.announce("start");
        f
    }

    fn send(&self, datagram: &[u8]) {
        if let Some(sock) = &self.sock {
            for d in &self.s.destinations {
                let _ = sock.send_to(datagram, d);
            }
        }
    }

    /// A line to flowd's pipe (checked to be one at start), never
    /// waiting: a pipe nobody reads, or a full one, is skipped.
    fn pipe(&self, line: &str) {
        let Some(p) = &self.s.flowd else { return };
        use std::os::unix::fs::OpenOptionsExt;
        let opened = std::fs::OpenOptions::new()
            .append(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(p);
        match opened {
            Ok(mut f) => {
                let _ = f.write_all(line.as_bytes());
            }
            Err(e) => tracing::debug!(pipe = %p.display(), error = %e, "flowd line not written"),
        }
    }
}

/// An address as fireflies name it (an IPv4-mapped IPv6 one as IPv4).
fn unmapped(a: SocketAddr) -> SocketAddr {
    match a {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(v4.into(), v6.port()),
            None => a,
        },
        a => a,
    }
}

/// One marked flow: its data bytes counted, its end announced when it is
/// dropped.
pub struct Flow {
    ff: Arc<Fireflies>,
    tag: Tag,
    app: String,
    src: SocketAddr,
    dst: SocketAddr,
    start: SystemTime,
    sent: AtomicU64,
    received: AtomicU64,
}

#[derive(Serialize)]
struct Firefly<'a> {
    version: u32,
    #[serde(rename = "flow-lifecycle")]
    lifecycle: Lifecycle,
    usage: Usage,
    context: Context<'a>,
    #[serde(rename = "flow-id")]
    flow_id: FlowId,
}

#[derive(Serialize)]
struct Lifecycle {
    state: &'static str,
    #[serde(rename = "current-time")]
    current: String,
    #[serde(rename = "start-time")]
    start: String,
    #[serde(rename = "end-time", skip_serializing_if = "Option::is_none")]
    end: Option<String>,
}

#[derive(Serialize)]
struct Usage {
    received: u64,
    sent: u64,
}

#[derive(Serialize)]
struct Context<'a> {
    #[serde(rename = "experiment-id")]
    experiment: u16,
    #[serde(rename = "activity-id")]
    activity: u8,
    application: &'a str,
}

#[derive(Serialize)]
struct FlowId {
    afi: &'static str,
    #[serde(rename = "src-ip")]
    src_ip: String,
    #[serde(rename = "dst-ip")]
    dst_ip: String,
    protocol: &'static str,
    #[serde(rename = "src-port")]
    src_port: u16,
    #[serde(rename = "dst-port")]
    dst_port: u16,
}

/// `2025-01-15T10:20:30.123456+00:00` (UTC, microseconds, as XRootD).
fn stamp(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (y, m, day) = tessera_types::civil::civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:06}+00:00",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_micros()
    )
}

impl Flow {
    /// Data bytes the source sent.
    pub fn sent(&self, n: u64) {
        self.sent.fetch_add(n, Ordering::Relaxed);
    }

    /// Bytes the source received (requests, acknowledgements).
    pub fn received(&self, n: u64) {
        self.received.fetch_add(n, Ordering::Relaxed);
    }

    fn announce(&self, state: &'static str) {
        let now = SystemTime::now();
        let doc = Firefly {
            version: 1,
            lifecycle: Lifecycle {
                state,
                current: stamp(now),
                start: stamp(self.start),
                end: (state == "end").then(|| stamp(now)),
            },
            usage: Usage {
                received: self.received.load(Ordering::Relaxed),
                sent: self.sent.load(Ordering::Relaxed),
            },
            context: Context {
                experiment: self.tag.experiment,
                activity: self.tag.activity,
                application: &self.app,
            },
            flow_id: FlowId {
                afi: if self.src.is_ipv4() { "ipv4" } else { "ipv6" },
                src_ip: self.src.ip().to_string(),
                dst_ip: self.dst.ip().to_string(),
                protocol: "tcp",
                src_port: self.src.port(),
                dst_port: self.dst.port(),
            },
        };
        if let Ok(json) = serde_json::to_string(&doc) {
            let host = if self.ff.s.host.is_empty() {
                "-"
            } else {
                &self.ff.s.host
            };
            let datagram = format!("<134>1 - {host} tessera - firefly-json - {json}");
            self.ff.send(datagram.as_bytes());
        }
        self.ff.pipe(&format!(
            "{state} tcp {} {} {} {} {} {}\n",
            self.src.ip(),
            self.src.port(),
            self.dst.ip(),
            self.dst.port(),
            self.tag.experiment,
            self.tag.activity
        ));
    }
}

impl Drop for Flow {
    fn drop(&mut self) {
        self.announce("end");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags() {
        assert_eq!(
            parse(" 206 "),
            Some(Tag {
                experiment: 3,
                activity: 14
            })
        );
        assert_eq!(
            parse("65"),
            Some(Tag {
                experiment: 1,
                activity: 1
            })
        );
        for bad in ["64", "65536", "-206", "12x", "", "0x80"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    /// A named pipe at `p` and a reader of its first two lines.
    fn fifo_reader(p: &std::path::Path) -> std::thread::JoinHandle<String> {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            p,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // Read-write: the open never waits for a writer.
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(p)
            .unwrap();
        std::thread::spawn(move || {
            use std::io::BufRead;
            let mut r = std::io::BufReader::new(f);
            let mut s = String::new();
            for _ in 0..2 {
                r.read_line(&mut s).unwrap();
            }
            s
        })
    }

    #[test]
    fn a_flow_is_announced_at_start_and_end() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let pipe = dir.path().join("flowd");
        let reader = fifo_reader(&pipe);
        let ff = Fireflies::new(Settings {
            destinations: vec![rx.local_addr().unwrap()],
            flowd: Some(pipe.clone()),
            host: "se.example.org".into(),
        })
        .unwrap()
        .unwrap();
        let (src, dst) = (
            "192.0.2.10:1094".parse().unwrap(),
            "[::ffff:198.51.100.20]:53012".parse().unwrap(),
        );
        let f = ff.start(parse("144").unwrap(), "http-get", src, dst);
        f.sent(1000);
        drop(f);
        let mut buf = [0u8; 2048];
        let (n, _) = rx.recv_from(&mut buf).unwrap();
        let start = String::from_utf8_lossy(&buf[..n]).into_owned();
        let (n, _) = rx.recv_from(&mut buf).unwrap();
        let end = String::from_utf8_lossy(&buf[..n]).into_owned();
        let head = "<134>1 - se.example.org tessera - firefly-json - ";
        assert!(start.starts_with(head), "{start}");
        let j: serde_json::Value = serde_json::from_str(&end[head.len()..]).unwrap();
        assert_eq!(j["flow-lifecycle"]["state"], "end");
        assert_eq!(j["usage"]["sent"], 1000);
        assert_eq!(j["context"]["experiment-id"], 2);
        assert_eq!(j["context"]["activity-id"], 16);
        assert_eq!(j["flow-id"]["dst-ip"], "198.51.100.20");
        assert!(j["flow-lifecycle"]["end-time"]
            .as_str()
            .unwrap()
            .ends_with("+00:00"));
        let lines = reader.join().unwrap();
        assert_eq!(
            lines,
            "start tcp 192.0.2.10 1094 198.51.100.20 53012 2 16\nend tcp 192.0.2.10 1094 198.51.100.20 53012 2 16\n"
        );
    }
}
