//! The access log: one JSON line per operation, written by a thread of its
//! own so that a slow disk never holds a request.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;
use tessera_types::json::string as json_str;

/// One line of the access log: one operation, as JSON. Field names follow
/// EOS report records where they exist (`path`, `ruid`, `rgid`, `sec.prot`,
/// `sec.name`); units are in the names.
#[derive(Debug, Clone)]
pub struct AccessRecord<'a> {
    pub protocol: &'a str,
    pub op: &'a str,
    pub path: &'a str,
    pub ruid: u32,
    pub rgid: u32,
    pub name: &'a str,
    /// The grid certificate's DN and primary FQAN (empty: none; the keys
    /// are then left out).
    pub dn: &'a str,
    pub fqan: &'a str,
    /// `ok` or the error kind.
    pub status: &'a str,
    pub errno: i32,
    pub duration_s: f64,
    /// Bytes a closed read or write session moved (0 for other operations).
    pub bytes: u64,
}

/// Where access lines go: a file (written by a thread of its own), a
/// writer (stdout), or nowhere.
pub struct AccessLog {
    out: Out,
}

enum Out {
    None,
    Writer(Mutex<Box<dyn Write + Send>>),
    /// Lines appended to a shared buffer that a thread of its own writes
    /// out every `TICK` (or sooner when it grows past `SOON`) in one system
    /// call: a request pays for formatting its line and a short lock, not
    /// for a write(2) or a thread wake-up. Dropping the log writes what is
    /// left.
    Thread {
        shared: Arc<Shared>,
        thread: Option<std::thread::JoinHandle<()>>,
    },
}

struct Shared {
    buf: Mutex<Pending>,
    /// Signalled when the buffer passes `SOON`, or at shutdown.
    wake: Condvar,
    /// Signalled when the writer has taken the buffer.
    room: Condvar,
}

#[derive(Default)]
struct Pending {
    lines: String,
    closing: bool,
    /// Flushes asked for, and the last one whose lines are written.
    flush_asked: u64,
    flush_done: u64,
}

/// How long a line waits at most before it is written.
const TICK: Duration = Duration::from_millis(50);
/// Buffered bytes that wake the writer early.
const SOON: usize = 256 * 1024;
/// Buffered bytes at which a request waits for the writer (bounded memory
/// if the disk stalls).
const CAP: usize = 16 << 20;

impl AccessLog {
    pub fn disabled() -> AccessLog {
        AccessLog { out: Out::None }
    }

    pub fn to_writer(w: Box<dyn Write + Send>) -> AccessLog {
        AccessLog {
            out: Out::Writer(Mutex::new(w)),
        }
    }

    pub fn to_file(path: &std::path::Path) -> std::io::Result<AccessLog> {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        let shared = Arc::new(Shared {
            buf: Mutex::new(Pending::default()),
            wake: Condvar::new(),
            room: Condvar::new(),
        });
        let sh = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("access-log".into())
            .spawn(move || {
                let mut out = String::new();
                loop {
                    let (closing, asked) = {
                        let mut p = sh.lock();
                        if p.lines.len() < SOON && !p.closing && p.flush_asked == p.flush_done {
                            p = sh
                                .wake
                                .wait_timeout(p, TICK)
                                .unwrap_or_else(|e| e.into_inner())
                                .0;
                        }
                        std::mem::swap(&mut out, &mut p.lines);
                        sh.room.notify_all();
                        (p.closing, p.flush_asked)
                    };
                    if !out.is_empty() {
                        // Losing access lines must never stop the server.
                        let _ = f.write_all(out.as_bytes());
                        out.clear();
                    }
                    let mut p = sh.lock();
                    if asked > p.flush_done {
                        p.flush_done = asked;
                        sh.room.notify_all();
                    }
                    if closing && p.lines.is_empty() {
                        return;
                    }
                }
            })?;
        Ok(AccessLog {
            out: Out::Thread {
                shared,
                thread: Some(thread),
            },
        })
    }

    /// Write out every line recorded so far (a file log writes in
    /// batches; a clean shutdown calls this).
    pub fn flush(&self) {
        match &self.out {
            Out::None => {}
            Out::Writer(w) => {
                let _ = w.lock().unwrap_or_else(|p| p.into_inner()).flush();
            }
            Out::Thread { shared, .. } => {
                let mut p = shared.lock();
                p.flush_asked += 1;
                let want = p.flush_asked;
                shared.wake.notify_one();
                while p.flush_done < want && !p.closing {
                    p = shared.room.wait(p).unwrap_or_else(|e| e.into_inner());
                }
            }
        }
    }

    pub fn record(&self, r: &AccessRecord<'_>) {
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        match &self.out {
            Out::None => {}
            Out::Writer(w) => {
                let line = r.to_json(ts);
                let mut w = w.lock().unwrap_or_else(|p| p.into_inner());
                // Losing an access line must never fail the request itself.
                let _ = w.write_all(line.as_bytes());
            }
            Out::Thread { shared, .. } => {
                let line = r.to_json(ts);
                let mut p = shared.lock();
                while p.lines.len() >= CAP && !p.closing {
                    p = shared.room.wait(p).unwrap_or_else(|e| e.into_inner());
                }
                p.lines.push_str(&line);
                if p.lines.len() >= SOON && p.lines.len() - line.len() < SOON {
                    shared.wake.notify_one();
                }
            }
        }
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        if let Out::Thread { shared, thread } = &mut self.out {
            shared.lock().closing = true;
            shared.wake.notify_one();
            if let Some(t) = thread.take() {
                let _ = t.join();
            }
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.buf.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl AccessRecord<'_> {
    /// The JSON line (keys in a fixed, sorted order), built directly
    /// (numbers through `itoa`, times with microsecond precision): this runs
    /// once per request.
    pub fn to_json(&self, ts: f64) -> String {
        let mut s = String::with_capacity(192 + self.path.len());
        let mut b = itoa::Buffer::new();
        s.push_str("{\"bytes\":");
        s.push_str(b.format(self.bytes));
        s.push_str(",\"duration_s\":");
        micros(&mut s, self.duration_s);
        s.push_str(",\"errno\":");
        s.push_str(b.format(self.errno));
        s.push_str(",\"op\":");
        json_str(&mut s, self.op);
        s.push_str(",\"path\":");
        json_str(&mut s, self.path);
        s.push_str(",\"rgid\":");
        s.push_str(b.format(self.rgid));
        s.push_str(",\"ruid\":");
        s.push_str(b.format(self.ruid));
        if !self.dn.is_empty() {
            s.push_str(",\"sec.dn\":");
            json_str(&mut s, self.dn);
        }
        if !self.fqan.is_empty() {
            s.push_str(",\"sec.fqan\":");
            json_str(&mut s, self.fqan);
        }
        s.push_str(",\"sec.name\":");
        json_str(&mut s, self.name);
        s.push_str(",\"sec.prot\":");
        json_str(&mut s, self.protocol);
        s.push_str(",\"status\":");
        json_str(&mut s, self.status);
        s.push_str(",\"ts\":");
        micros(&mut s, ts);
        s.push_str("}\n");
        s
    }
}

/// Append seconds `x` (not negative) as a JSON number with six decimals.
fn micros(s: &mut String, x: f64) {
    let us = if x.is_finite() && x > 0.0 {
        (x * 1e6).round() as u64
    } else {
        0
    };
    let mut b = itoa::Buffer::new();
    s.push_str(b.format(us / 1_000_000));
    s.push('.');
    let frac = b.format(us % 1_000_000);
    for _ in frac.len()..6 {
        s.push('0');
    }
    s.push_str(frac);
}

#[cfg(test)]
mod json_tests {
    use super::*;

    #[test]
    fn lines_are_valid_json_with_every_field() {
        let r = AccessRecord {
            protocol: "xroot",
            op: "stat",
            path: "/a \"quoted\"\\path\n\u{1}ü",
            ruid: 1000,
            rgid: 1001,
            name: "alice",
            dn: "/DC=org/CN=Alice",
            fqan: "/cms/Role=production",
            status: "ok",
            errno: 0,
            duration_s: 0.000012,
            bytes: 4096,
        };
        let line = r.to_json(1795995402.25);
        assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
        let v: serde_json::Value = serde_json::from_str(&line).expect("valid JSON");
        assert_eq!(v["path"], "/a \"quoted\"\\path\n\u{1}ü");
        assert_eq!(v["sec.prot"], "xroot");
        assert_eq!(v["ruid"], 1000);
        assert_eq!(v["sec.dn"], "/DC=org/CN=Alice");
        assert_eq!(v["sec.fqan"], "/cms/Role=production");
        assert_eq!(v["rgid"], 1001);
        assert_eq!(v["errno"], 0);
        assert_eq!(v["duration_s"], 0.000012);
        assert_eq!(v["ts"], 1795995402.25);
        assert_eq!(v["op"], "stat");
        assert_eq!(v["bytes"], 4096);
    }

    #[test]
    fn times_have_microsecond_precision() {
        let mut s = String::new();
        for (x, want) in [
            (0.0, "0.000000"),
            (1.5, "1.500000"),
            (0.0000004, "0.000000"),
            (0.0000006, "0.000001"),
            (12.3456789, "12.345679"),
            (-1.0, "0.000000"),
            (f64::NAN, "0.000000"),
        ] {
            s.clear();
            micros(&mut s, x);
            assert_eq!(s, want, "{x}");
        }
    }

    /// A successful stat of `path` by uid 0.
    fn stat_of(path: &str) -> AccessRecord<'_> {
        AccessRecord {
            protocol: "t",
            op: "stat",
            path,
            ruid: 0,
            rgid: 0,
            name: "n",
            dn: "",
            fqan: "",
            status: "ok",
            errno: 0,
            duration_s: 0.0,
            bytes: 0,
        }
    }

    #[test]
    fn flush_writes_every_line_recorded_so_far() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("access.log");
        let log = AccessLog::to_file(&p).unwrap();
        for i in 0..3 {
            let path = format!("/f{i}");
            log.record(&stat_of(&path));
            log.flush();
            let text = std::fs::read_to_string(&p).unwrap();
            assert_eq!(text.lines().count(), i + 1, "after flush {i}");
        }
    }

    #[test]
    fn file_lines_are_all_written_in_order_by_drop() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("access.log");
        let log = std::sync::Arc::new(AccessLog::to_file(&p).unwrap());
        let hs: Vec<_> = (0..4)
            .map(|t| {
                let log = std::sync::Arc::clone(&log);
                std::thread::spawn(move || {
                    for i in 0..500 {
                        let path = format!("/t{t}/{i}");
                        log.record(&stat_of(&path));
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        drop(std::sync::Arc::try_unwrap(log).ok().expect("last owner"));
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.lines().count(), 2000);
        for t in 0..4 {
            let mine: Vec<usize> = text
                .lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                .filter_map(|v| {
                    let p = v["path"].as_str().unwrap().to_string();
                    p.strip_prefix(&format!("/t{t}/"))
                        .map(|i| i.parse().unwrap())
                })
                .collect();
            assert_eq!(mine, (0..500).collect::<Vec<_>>(), "thread {t} in order");
        }
    }
}
