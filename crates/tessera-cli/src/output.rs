//! Output forms: human tables (default), `-m` monitoring lines (one record
//! per line, space-separated `key=value`, raw numbers, values with spaces
//! quoted: an API, keys are never renamed), and `--json` (an envelope with
//! `retc`, `errormsg` and `result`).

use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Human,
    Monitoring,
    Json,
}

/// One record: ordered keys with typed values.
#[derive(Debug, Clone, Default)]
pub struct Rec(pub Vec<(String, Value)>);

impl Rec {
    pub fn new() -> Rec {
        Rec(Vec::new())
    }
    pub fn s(mut self, k: &str, v: impl Into<String>) -> Rec {
        self.0.push((k.to_string(), Value::String(v.into())));
        self
    }
    pub fn n(mut self, k: &str, v: impl Into<i128>) -> Rec {
        let v: i128 = v.into();
        let val = if v >= 0 {
            json!(v as u64)
        } else {
            json!(v as i64)
        };
        self.0.push((k.to_string(), val));
        self
    }
    pub fn b(mut self, k: &str, v: bool) -> Rec {
        self.0.push((k.to_string(), Value::Bool(v)));
        self
    }
    /// Optional number: absent keys are printed as `none` in `-m` and
    /// `null` in JSON.
    pub fn o(mut self, k: &str, v: Option<u64>) -> Rec {
        self.0
            .push((k.to_string(), v.map_or(Value::Null, |x| json!(x))));
        self
    }

    pub fn monitoring(&self) -> String {
        self.0
            .iter()
            .map(|(k, v)| format!("{k}={}", mvalue(v)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    pub fn json(&self) -> Value {
        Value::Object(self.0.iter().cloned().collect())
    }
}

fn mvalue(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        Value::Null => "none".to_string(),
        other => other.to_string(),
    }
}

/// Quote a value that contains spaces, quotes or `=`; escape quotes.
pub fn quote(s: &str) -> String {
    if s.is_empty() || s.contains([' ', '"', '=', '\t', '\n']) {
        format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        s.to_string()
    }
}

/// Print one line on stdout. A reader that went away (`tessera ls | head`)
/// ends the command quietly, as coreutils do (status 141, 128 + SIGPIPE).
pub fn line(s: impl std::fmt::Display) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{s}").and_then(|_| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        eprintln!("error: stdout: {e}");
        std::process::exit(5);
    }
}

/// Print `text` as it is (lines already ended), flushed once: a page of
/// a listing. A reader gone ends the command as [`line`] does.
pub fn lines(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        eprintln!("error: stdout: {e}");
        std::process::exit(5);
    }
}

/// Print records in the machine forms; `human` is used for the default form.
pub fn emit(fmt: Format, recs: &[Rec], human: impl FnOnce() -> String) {
    match fmt {
        Format::Human => {
            let h = human();
            if !h.is_empty() {
                line(h.trim_end_matches('\n'));
            }
        }
        Format::Monitoring => {
            for r in recs {
                line(r.monitoring());
            }
        }
        Format::Json => {
            let result: Vec<Value> = recs.iter().map(Rec::json).collect();
            line(json!({"retc": 0, "errormsg": "", "result": result}));
        }
    }
}

/// Align columns of a table (first row is the header).
pub fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut w = vec![0usize; cols];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i + 1 == r.len() {
                    c.clone()
                } else {
                    format!("{c:<width$}", width = w[i])
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// `drwxr-xr-x` from a type and mode.
pub fn mode_string(dir: bool, mode: u32) -> String {
    let mut s = String::with_capacity(10);
    s.push(if dir { 'd' } else { '-' });
    for shift in [6, 3, 0] {
        let b = (mode >> shift) & 7;
        s.push(if b & 4 != 0 { 'r' } else { '-' });
        s.push(if b & 2 != 0 { 'w' } else { '-' });
        s.push(if b & 1 != 0 { 'x' } else { '-' });
    }
    s
}

/// `2026-11-29 20:10:15` (UTC) from nanoseconds since the epoch.
pub fn time_string(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = tessera_types::civil::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        let r = Rec::new()
            .s("path", "/a b")
            .n("size", 5u64)
            .o("max", None)
            .b("q", true);
        assert_eq!(r.monitoring(), "path=\"/a b\" size=5 max=none q=true");
        assert_eq!(r.json()["size"], json!(5));
        assert_eq!(mode_string(true, 0o755), "drwxr-xr-x");
        assert_eq!(time_string(0), "1970-01-01 00:00:00");
        assert_eq!(
            time_string(1_795_979_443_000_000_000),
            "2026-11-29 19:10:43"
        );
    }
}
