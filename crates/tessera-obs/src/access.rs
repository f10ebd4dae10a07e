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
        let line = serde_json::json!({
            "ts": ts,
            "sec.prot": r.protocol,
            "op": r.op,
            "path": r.path,
            "ruid": r.ruid,
            "rgid": r.rgid,
            "sec.name": r.name,
            "status": r.status,
            "errno": r.errno,
            "duration_s": r.duration_s,
        });
        let mut w = out.lock().unwrap_or_else(|p| p.into_inner());
        // Losing an access line must never fail the request itself.
        let _ = writeln!(w, "{line}");
    }
}
