//! The real `tessera` binary against a server started in-process on port 0.

use std::process::{Command, Output};

struct Env {
    _dir: tempfile::TempDir,
    admin: String,
    token: std::path::PathBuf,
    server: Option<tessera_server::Running>,
    rt: tokio::runtime::Runtime,
    /// What it was started with (for a restart).
    cfg: tessera_server::config::Config,
    secret: String,
}

impl Env {
    fn start() -> Env {
        Env::start_with(|_| {})
    }

    /// A dev server with `change` applied to its configuration.
    fn start_with(change: impl FnOnce(&mut tessera_server::config::Config)) -> Env {
        let dir = tempfile::tempdir().expect("tmp");
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let (mut cfg, secret) = tessera_server::dev_config(dir.path()).expect("dev config");
        change(&mut cfg);
        let server = rt
            .block_on(tessera_server::start(&cfg, secret.clone()))
            .expect("start");
        Env {
            admin: server.admin_addr.to_string(),
            token: cfg.admin.token_file.clone().expect("token"),
            server: Some(server),
            _dir: dir,
            rt,
            cfg,
            secret,
        }
    }

    /// Stop the server and start it again on the same data.
    fn restart(&mut self) {
        if let Some(s) = self.server.take() {
            self.rt.block_on(s.shutdown()).expect("shutdown");
        }
        let server = self
            .rt
            .block_on(tessera_server::start(&self.cfg, self.secret.clone()))
            .expect("restart");
        self.admin = server.admin_addr.to_string();
        self.server = Some(server);
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["--admin", &self.admin, "--token-file"])
            .arg(&self.token)
            .args(args)
            .env_remove("TESSERA_ADMIN")
            .env_remove("TESSERA_TOKEN_FILE")
            .output()
            .expect("run tessera")
    }

    /// Run, expect success, return stdout.
    fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "tessera {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&o.stderr),
            String::from_utf8_lossy(&o.stdout)
        );
        String::from_utf8(o.stdout).expect("utf8")
    }

    /// Run, expect failure with this exit status (an errno).
    fn fails(&self, args: &[&str], errno: i32) -> String {
        let o = self.run(args);
        assert_eq!(
            o.status.code(),
            Some(errno),
            "tessera {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stderr).expect("utf8")
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            let _ = self.rt.block_on(s.shutdown());
        }
    }
}

/// The words of `line` as arguments (for arguments with no spaces in them).
fn argv(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Parse one `-m` line into key/value pairs (handles quoted values).
fn kv(line: &str) -> std::collections::HashMap<String, String> {
    let mut out = std::collections::HashMap::new();
    let mut rest = line.trim();
    while !rest.is_empty() {
        let (k, after) = rest.split_once('=').expect("key=value");
        let (v, next) = if let Some(q) = after.strip_prefix('"') {
            let end = q.find('"').expect("closing quote");
            (q[..end].to_string(), &q[end + 1..])
        } else {
            match after.split_once(' ') {
                Some((v, n)) => (v.to_string(), n),
                None => (after.to_string(), ""),
            }
        };
        out.insert(k.to_string(), v);
        rest = next.trim_start();
    }
    out
}

mod fed;
mod fsadmin;
mod namespace;
mod quota;
