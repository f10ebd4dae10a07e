use std::io::Write;
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

/// Where access lines go: a file, stdout, or nowhere.
pub struct AccessLog {
    out: Option<Mutex<Box<dyn Write + Send>>>,
}

impl AccessLog {
    pub fn disabled() -> AccessLog {
        AccessLog { out: None }
    }

    pub fn to_writer(w: Box<dyn Write + Send>) -> AccessLog {
        AccessLog {
            out: Some(Mutex::new(w)),
        }
    }

    pub fn to_file(path: &std::path::Path) -> std::io::Result<AccessLog> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Self::to_writer(Box::new(std::io::LineWriter::new(f))))
    }

    pub fn record(&self, r: &AccessRecord<'_>) {
        let Some(out) = &self.out else { return };
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        let line = r.to_json(ts);
        let mut w = out.lock().unwrap_or_else(|p| p.into_inner());
        // Losing an access line must never fail the request itself.
        let _ = w.write_all(line.as_bytes());
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
}
