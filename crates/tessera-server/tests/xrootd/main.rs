//! The stock XRootD clients (Debian's `xrdcp`, `xrdfs`, python3-xrootd)
//! against `tesserad` started in-process on port 0. They need the
//! `xrootd-client` and `python3-xrootd` packages (`scripts/test` installs
//! them); without them these tests fail with a clear message.

mod access;
mod balance;
mod bigdir;
mod bounds;
mod clients;
mod dashboards;
mod devd;
mod drain;
mod errors;
mod failover;
mod fed;
mod gsi;
mod monitoring;
mod pgrw;
mod python;
mod recycle;
mod scaleout;
mod shaping;
mod srr;
mod tokens;
mod update;
mod uproot;

#[path = "../common/mod.rs"]
#[macro_use]
mod common;
pub use common::{
    adler32, assert_ran, data, evict_page_cache, fed_endpoint, fed_site, fed_view, first_fsid, pki,
    private_dir, private_view, quota_dir, reads_in_line, reads_in_line_after, run_ok,
    set_fs_status, take_pki, vo_group_dir, Daemon,
};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

server_env!(Env);

pub struct Env {
    pub dir: tempfile::TempDir,
    pub url: String,
    pub tls_url: String,
    pub ca_dir: PathBuf,
    pub server: Option<tessera_server::Running>,
    pub rt: tokio::runtime::Runtime,
}

impl Env {
    pub fn start() -> Env {
        Env::start_with(|_| {})
    }

    /// A dev-mode server with `change` applied to its configuration.
    pub fn start_with(change: impl FnOnce(&mut tessera_server::config::Config)) -> Env {
        for tool in ["xrdcp", "xrdfs"] {
            assert!(
                Command::new("sh")
                    .args(["-c", &format!("command -v {tool}")])
                    .output()
                    .map(|o| o.status.success())
                    .unwrap_or(false),
                "{tool} not found: apt-get install xrootd-client (scripts/test does)"
            );
        }
        let dir = tempfile::tempdir().expect("tmp");
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let (mut cfg, secret) = tessera_server::dev_config(&dir.path().join("data")).expect("dev");
        change(&mut cfg);
        let server = rt
            .block_on(tessera_server::start(&cfg, secret))
            .expect("start");
        let addr = server.xrootd_addr.expect("xrootd listener");
        Env {
            url: format!("root://127.0.0.1:{}", addr.port()),
            tls_url: format!("roots://localhost:{}", addr.port()),
            ca_dir: cfg.data_dir.join("dev").join("certificates"),
            server: Some(server),
            dir,
            rt,
        }
    }

    /// A client command with the environment every client here needs.
    pub fn cmd(&self, prog: &str) -> Command {
        let mut c = Command::new(prog);
        c.env("X509_CERT_DIR", &self.ca_dir)
            .env("XRD_REQUESTTIMEOUT", "60")
            .env("XRD_CONNECTIONRETRY", "1")
            .env_remove("BEARER_TOKEN")
            .env_remove("BEARER_TOKEN_FILE");
        c
    }

    pub fn run(&self, prog: &str, args: &[&str]) -> Output {
        self.cmd(prog).args(args).output().expect(prog)
    }

    /// Run; expect success; stdout.
    pub fn ok(&self, prog: &str, args: &[&str]) -> String {
        let o = self.run(prog, args);
        assert_ran(&o, &format!("{prog} {args:?}"));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Run; expect failure; stdout + stderr.
    pub fn fails(&self, prog: &str, args: &[&str]) -> String {
        let o = self.run(prog, args);
        assert!(!o.status.success(), "{prog} {args:?} should have failed");
        crate::common::all_output(&o)
    }

    pub fn local(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Flip a bit in the first block of stripe 0 of the only file in the
    /// dev filesystems; its path and former contents.
    pub fn corrupt_first_stripe(&self) -> (PathBuf, Vec<u8>) {
        fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    files_under(&p, out);
                } else if !e.file_name().to_string_lossy().starts_with('.') {
                    out.push(p);
                }
            }
        }
        let mut stripes = Vec::new();
        files_under(&self.dir.path().join("data").join("fs"), &mut stripes);
        assert_eq!(stripes.len(), 6, "one RAIN 4+2 file expected: {stripes:?}");
        let victim = stripes
            .into_iter()
            .find(|p| p.extension().is_some_and(|x| x == "0"))
            .expect("data stripe 0");
        let good = std::fs::read(&victim).expect("stripe");
        let mut raw = good.clone();
        // After the 4 KiB header.
        raw[4096 + 100] ^= 0x04;
        std::fs::write(&victim, &raw).expect("corrupt");
        (victim, good)
    }

    /// Make `dir` a RAIN 4+2 directory (EOS attribute names).
    pub fn rain_dir(&self, dir: &str) {
        let core = self.core();
        self.rt.block_on(async {
            core.mkdir(&Env::root(), Env::path(dir), 0o755, true)
                .await
                .expect("mkdir");
            core.xattr_set(
                &Env::root(),
                Env::path(dir),
                b"sys.forced.layout".to_vec(),
                b"raiddp".to_vec(),
            )
            .await
            .expect("layout");
        });
    }
}

pub fn write_file(p: &Path, b: &[u8]) {
    std::fs::write(p, b).expect("write local file");
}
