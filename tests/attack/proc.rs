//! A `tesserad` of its own, as a site runs it: the real binary in dev
//! mode, in a process started by the test (with `prlimit` when the test
//! sets a descriptor limit), with settings laid over the dev default
//! (`--dev-config`), stopped by its PID. Exhaustion tests need it: they
//! measure the server's memory and descriptors, not the test's.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub struct Proc {
    child: Child,
    pub dir: tempfile::TempDir,
    pub admin: SocketAddr,
    pub metrics: SocketAddr,
    pub xrootd: SocketAddr,
    /// `https://localhost:port`.
    pub https: String,
    pub ca: PathBuf,
    pub ca_dir: PathBuf,
}

impl Proc {
    /// Start `tesserad serve --dev` with `settings` (TOML) over the dev
    /// default, under a descriptor limit of `nofile` when given.
    pub fn start(nofile: Option<u64>, settings: &str) -> Proc {
        Proc::start_in(tempfile::tempdir().expect("tmp"), nofile, settings)
    }

    /// [`Proc::start`] over a namespace prepared first: a dev server is
    /// started once in a new directory (its namespace made) and stopped,
    /// then `prepare` gets the data directory, then the server starts
    /// again on it.
    pub fn start_prepared(settings: &str, prepare: impl FnOnce(&std::path::Path)) -> Proc {
        let mut first = Proc::start(None, settings);
        let _ = Command::new("kill")
            .args(["-TERM", &first.child.id().to_string()])
            .status();
        let _ = first.child.wait();
        let dir = std::mem::replace(&mut first.dir, tempfile::tempdir().expect("tmp"));
        prepare(&dir.path().join("data"));
        Proc::start_in(dir, None, settings)
    }

    fn start_in(dir: tempfile::TempDir, nofile: Option<u64>, settings: &str) -> Proc {
        let over = dir.path().join("dev.toml");
        std::fs::write(&over, settings).unwrap();
        let bin = env!("CARGO_BIN_EXE_tesserad");
        let mut cmd = match nofile {
            Some(n) => {
                let mut c = Command::new("prlimit");
                c.arg(format!("--nofile={n}:{n}")).arg("--").arg(bin);
                c
            }
            None => Command::new(bin),
        };
        let data = dir.path().join("data");
        cmd.args(["serve", "--dev", "--data-dir"])
            .arg(&data)
            .args([
                "--admin-addr",
                "127.0.0.1:0",
                "--metrics-addr",
                "127.0.0.1:0",
                "--xrootd-addr",
                "127.0.0.1:0",
                "--https-addr",
                "127.0.0.1:0",
                "--dev-config",
            ])
            .arg(&over)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("tesserad");
        let out = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if line.starts_with("tesserad ready") {
                    let _ = tx.send(line);
                }
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("tesserad ready within 60 s");
        let field = |k: &str| -> String {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{k}=")))
                .unwrap_or_else(|| panic!("{k} in {line}"))
                .to_string()
        };
        let https: SocketAddr = field("https").parse().unwrap();
        let dev = data.join("dev");
        Proc {
            admin: field("admin").parse().unwrap(),
            metrics: field("metrics").parse().unwrap(),
            xrootd: field("xrootd").parse().unwrap(),
            https: format!("https://localhost:{}", https.port()),
            ca: dev.join("ca.pem"),
            ca_dir: dev.join("certificates"),
            child,
            dir,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Resident memory of the server, bytes.
    pub fn rss(&self) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        s.lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .expect("VmRSS")
            * 1024
    }

    /// Descriptors the server has open.
    pub fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// A metric's value from `/metrics` (`None`: not answered or absent).
    pub fn metric(&self, name: &str) -> Option<f64> {
        let o = Command::new("curl")
            .args(["-sf", "--max-time", "10"])
            .arg(format!("http://{}/metrics", self.metrics))
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.trim().parse().ok())
    }

    /// The admin CLI against this server.
    pub fn cli(&self, args: &[&str]) -> Output {
        let bin = PathBuf::from(env!("CARGO_BIN_EXE_tesserad")).with_file_name("tessera");
        Command::new(bin)
            .env("TESSERA_ADMIN", self.admin.to_string())
            .env(
                "TESSERA_TOKEN_FILE",
                self.dir.path().join("data/dev/admin.token"),
            )
            .args(args)
            .output()
            .expect("tessera CLI")
    }

    /// A development token for `/data` (the dev identity's directory).
    pub fn token(&self, scope: &str) -> String {
        let dev = self.dir.path().join("data").join("dev");
        let k = tessera_auth::dev::DevIssuer::load_or_create(&dev).unwrap();
        let info = tessera_auth::dev::DevIssuer::read_info(&dev).unwrap();
        k.issue(&info, "alice", scope, 600).unwrap()
    }

    pub fn cmd(&self, prog: &str) -> Command {
        let mut c = Command::new(prog);
        c.env("X509_CERT_DIR", &self.ca_dir)
            .env("XRD_CONNECTIONWINDOW", "5")
            .env("XRD_CONNECTIONRETRY", "2")
            .env("XRD_REQUESTTIMEOUT", "60")
            .env("HOME", self.dir.path());
        c
    }

    /// `curl` fetching `url` without credentials at 1 KiB/s into nowhere
    /// (a client that holds its response open).
    pub fn slow_get(&self, url: &str) -> std::process::Child {
        self.cmd("curl")
            .args(["-sS", "--limit-rate", "1K", "--cacert"])
            .arg(&self.ca)
            .args(["-o", "/dev/null", url])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    /// Wait until `f` holds (checked every 100 ms) or `within` passes.
    pub fn wait_for(&self, within: Duration, mut f: impl FnMut() -> bool) -> bool {
        let t = Instant::now();
        while t.elapsed() < within {
            if f() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        f()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status();
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
