use std::io::Write;
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Mutex;

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
    /// `ok` or the error kind.
    pub status: &'a str,
    pub errno: i32,
    pub duration_s: f64,
}

/// Where access lines go: a file (written by a thread of its own), a
/// writer (stdout), or nowhere.
pub struct AccessLog {
    out: Out,
}

enum Out {
    None,
    Writer(Mutex<Box<dyn Write + Send>>),
    /// Lines queued for the writer thread, which writes whatever has
    /// queued up in one system call: a request pays for formatting its
    /// line, not for a write(2). Dropping the log drains the queue.
    Thread {
        tx: Option<SyncSender<String>>,
        thread: Option<std::thread::JoinHandle<()>>,
    },
}

/// Lines queued at most before a request waits for the writer.
const QUEUE: usize = 16 * 1024;

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
        let (tx, rx) = sync_channel::<String>(QUEUE);
        let thread = std::thread::Builder::new()
            .name("access-log".into())
            .spawn(move || {
                let mut batch = String::new();
                while let Ok(line) = rx.recv() {
                    batch.push_str(&line);
                    while batch.len() < 1 << 20 {
                        match rx.try_recv() {
                            Ok(l) => batch.push_str(&l),
                            Err(_) => break,
                        }
                    }
                    // Losing access lines must never stop the server.
                    let _ = f.write_all(batch.as_bytes());
                    batch.clear();
                }
            })?;
        Ok(AccessLog {
            out: Out::Thread {
                tx: Some(tx),
                thread: Some(thread),
            },
        })
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
            Out::Thread { tx: Some(tx), .. } => {
                let _ = tx.send(r.to_json(ts));
            }
            Out::Thread { tx: None, .. } => {}
        }
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        if let Out::Thread { tx, thread } = &mut self.out {
            drop(tx.take());
            if let Some(t) = thread.take() {
                let _ = t.join();
            }
        }
    }
}

impl AccessRecord<'_> {
    /// The JSON line (keys in a fixed, sorted order), built directly: this
    /// runs once per request.
    pub fn to_json(&self, ts: f64) -> String {
        use std::fmt::Write as _;
        let mut s = String::with_capacity(192 + self.path.len());
        let _ = write!(
            s,
            "{{\"duration_s\":{},\"errno\":{},\"op\":",
            self.duration_s, self.errno
        );
        json_str(&mut s, self.op);
        s.push_str(",\"path\":");
        json_str(&mut s, self.path);
        let _ = write!(
            s,
            ",\"rgid\":{},\"ruid\":{},\"sec.name\":",
            self.rgid, self.ruid
        );
        json_str(&mut s, self.name);
        s.push_str(",\"sec.prot\":");
        json_str(&mut s, self.protocol);
        s.push_str(",\"status\":");
        json_str(&mut s, self.status);
        let _ = writeln!(s, ",\"ts\":{ts}}}");
        s
    }
}

/// Append `v` as a JSON string literal.
fn json_str(s: &mut String, v: &str) {
    use std::fmt::Write as _;
    s.push('"');
    for c in v.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
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
            status: "ok",
            errno: 0,
            duration_s: 0.000012,
        };
        let line = r.to_json(1795995402.25);
        assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
        let v: serde_json::Value = serde_json::from_str(&line).expect("valid JSON");
        assert_eq!(v["path"], "/a \"quoted\"\\path\n\u{1}ü");
        assert_eq!(v["sec.prot"], "xroot");
        assert_eq!(v["ruid"], 1000);
        assert_eq!(v["rgid"], 1001);
        assert_eq!(v["errno"], 0);
        assert_eq!(v["duration_s"], 0.000012);
        assert_eq!(v["ts"], 1795995402.25);
        assert_eq!(v["op"], "stat");
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
                        log.record(&AccessRecord {
                            protocol: "t",
                            op: "stat",
                            path: &path,
                            ruid: 0,
                            rgid: 0,
                            name: "n",
                            status: "ok",
                            errno: 0,
                            duration_s: 0.0,
                        });
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
