//! The audit log: one JSON line per administrative action (filesystems,
//! drain, fsck repair, quotas, attributes and ACLs, namespace changes made
//! through the admin API), with who asked, what, and how it ended. Written
//! and flushed line by line (actions are rare; each must survive a crash).

use std::io::Write;
use std::sync::Mutex;

pub struct AuditLog {
    out: Option<Mutex<Box<dyn Write + Send>>>,
}

/// One administrative action.
pub struct AuditRecord<'a> {
    /// Who: the identity's name, uid, gid and the protocol it came by.
    pub who: &'a str,
    pub uid: u32,
    pub gid: u32,
    pub protocol: &'a str,
    /// What: `fs add`, `quota set`, `attr set`, ...
    pub action: &'a str,
    /// On what: a path, a filesystem id.
    pub target: &'a str,
    /// The request's arguments, as text.
    pub args: &'a str,
    /// `Ok(())`, or the error the caller got.
    pub result: Result<(), String>,
}

impl AuditLog {
    pub fn disabled() -> AuditLog {
        AuditLog { out: None }
    }

    pub fn to_writer(w: Box<dyn Write + Send>) -> AuditLog {
        AuditLog {
            out: Some(Mutex::new(w)),
        }
    }

    /// Append to `path` (created if missing).
    pub fn to_file(path: &std::path::Path) -> std::io::Result<AuditLog> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(AuditLog::to_writer(Box::new(f)))
    }

    pub fn record(&self, r: &AuditRecord<'_>) {
        let Some(out) = &self.out else { return };
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        let (result, error) = match &r.result {
            Ok(()) => ("ok", ""),
            Err(e) => ("error", e.as_str()),
        };
        let line = serde_json::json!({
            "ts": ts,
            "who": r.who,
            "uid": r.uid,
            "gid": r.gid,
            "protocol": r.protocol,
            "action": r.action,
            "target": r.target,
            "args": r.args,
            "result": result,
            "error": error,
        });
        let mut w = out.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = writeln!(w, "{line}").and_then(|_| w.flush()) {
            tracing::error!("audit log: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn one_json_line_per_action() {
        let s = Shared::default();
        let log = AuditLog::to_writer(Box::new(s.clone()));
        let rec = |result| AuditRecord {
            who: "root",
            uid: 0,
            gid: 0,
            protocol: "grpc",
            action: "fs rm",
            target: "3",
            args: "",
            result,
        };
        log.record(&rec(Ok(())));
        log.record(&rec(Err("still holds \"stripes\"".into())));
        let text = String::from_utf8(s.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["result"], "ok");
        assert_eq!(lines[1]["error"], "still holds \"stripes\"");
        assert_eq!(lines[1]["action"], "fs rm");
    }
}
