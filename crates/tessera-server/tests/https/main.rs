//! The HTTPS/WebDAV gateway with the real clients: Debian's curl, davix
//! and gfal2 (with its http plugin), against `tesserad` in-process on port
//! 0 (dev mode: TLS with the dev CA; requests without credentials run as
//! the server's owner until tokens arrive).

mod acl;
mod browser;
mod clients;
mod conditional;
mod desktop;
mod digests;
mod errors;
mod fed;
mod fed_geo;
mod fed_latency;
mod fed_s3;
mod fed_site;
mod http2;
mod litmus;
mod macaroons;
mod reference;
mod reference_grid;
mod scaleout;
mod scitags;
mod tokens;
mod tpc;
mod webdav;
mod x509;

#[path = "../common/mod.rs"]
#[macro_use]
mod common;
pub use common::{
    adler32, assert_ran, data, evict_page_cache, fed_endpoint, fed_site, fed_view, first_fsid, pki,
    private_dir, private_view, quota_dir, reads_in_line, reads_in_line_after, run_ok,
    set_fs_status, take_pki, vo_group_dir,
};

use std::path::PathBuf;
use std::process::{Command, Output};

server_env!(Env);

pub struct Env {
    pub dir: tempfile::TempDir,
    pub url: String,
    pub ca: PathBuf,
    pub ca_dir: PathBuf,
    pub addr: std::net::SocketAddr,
    pub server: Option<tessera_server::Running>,
    pub rt: tokio::runtime::Runtime,
    /// A bearer token this server takes as root (see [`Env::trusting`]):
    /// `copy` sends it with every COPY to this server, since a
    /// third-party copy needs credentials.
    pub token: Option<String>,
}

impl Env {
    pub fn start() -> Env {
        Env::start_with(|_| {})
    }

    /// A dev-mode server with `change` applied to its configuration.
    pub fn start_with(change: impl FnOnce(&mut tessera_server::config::Config)) -> Env {
        let dir = tempfile::tempdir().expect("tmp");
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let (mut cfg, secret) = tessera_server::dev_config(&dir.path().join("data")).expect("dev");
        // These tests write without tokens, as the server's owner (the dev
        // default is read-only for anonymous clients; tokens.rs tests it).
        cfg.https.anonymous = tessera_server::config::AnonymousCfg::Owner;
        change(&mut cfg);
        let server = rt
            .block_on(tessera_server::start(&cfg, secret))
            .expect("start");
        let addr = server.https_addr.expect("https listener");
        let dev = cfg.data_dir.join("dev");
        Env {
            url: format!("https://localhost:{}", addr.port()),
            ca: dev.join("ca.pem"),
            ca_dir: dev.join("certificates"),
            addr,
            server: Some(server),
            dir,
            rt,
            token: None,
        }
    }

    /// A dev-mode server (with `change`) that trusts `issuer`'s dev issuer
    /// as root (a site's explicit mapping), allows third-party copies to
    /// loopback (test configurations must), and holds a token of that
    /// issuer to send with COPY.
    pub fn trusting(issuer: &Env, change: impl FnOnce(&mut tessera_server::config::Config)) -> Env {
        let dev = issuer.dir.path().join("data").join("dev");
        let info = tessera_auth::dev::DevIssuer::read_info(&dev).unwrap();
        let ca = issuer.ca.clone();
        let mut e = Env::start_with(move |c| {
            c.auth.ca_files.push(ca.clone());
            c.https.tpc_ca_files.push(ca);
            c.https.tpc_allow = vec!["127.0.0.0/8".into(), "::1".into()];
            c.auth.issuers.push(root_issuer(info.issuer));
            change(c);
        });
        e.token = Some(crate::tokens::token(
            issuer,
            "storage.read:/ storage.modify:/",
        ));
        e
    }

    pub fn local(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A local file `name` holding `bytes`: its path.
    pub fn file(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let p = self.local(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    pub fn cmd(&self, prog: &str) -> Command {
        let mut c = Command::new(prog);
        c.env("X509_CERT_DIR", &self.ca_dir)
            .env("GFAL_PYTHONBIN", "/usr/bin/python3")
            .env("HOME", self.dir.path());
        c
    }

    pub fn run(&self, prog: &str, args: &[&str]) -> Output {
        self.cmd(prog)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{prog}: {e} (scripts/test installs it)"))
    }

    pub fn ok(&self, prog: &str, args: &[&str]) -> String {
        let o = self.run(prog, args);
        assert_ran(&o, &format!("{prog} {args:?}"));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// `curl -X COPY <url>` with each of `headers` (`Name: value`): the
    /// status code and the body (markers and the final line) as text.
    pub fn copy(&self, url: &str, headers: &[&str]) -> (u16, String) {
        let mut args = vec!["-X", "COPY"];
        let auth = self
            .token
            .as_ref()
            .map(|t| format!("Authorization: Bearer {t}"));
        let has_auth = headers
            .iter()
            .any(|h| h.to_ascii_lowercase().starts_with("authorization:"));
        if let (Some(a), false, true) = (&auth, has_auth, url.starts_with(&self.url)) {
            args.extend(["-H", a.as_str()]);
        }
        for h in headers {
            args.extend(["-H", h]);
        }
        args.push(url);
        let (code, out) = self.curl(&args);
        (code, String::from_utf8_lossy(&out).into_owned())
    }

    /// curl (quiet, errors shown) with the dev CA and `args`: its output,
    /// unchecked.
    pub fn curl_run(&self, args: &[&str]) -> Output {
        let mut a = vec!["-sS", "--cacert", self.ca.to_str().unwrap()];
        a.extend_from_slice(args);
        self.run("curl", &a)
    }

    /// The same, asserted to succeed (as [`Env::ok`]): its stdout.
    pub fn curl_ok(&self, args: &[&str]) -> String {
        let o = self.curl_run(args);
        assert_ran(&o, &format!("curl {args:?}"));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// curl with the dev CA; returns (status code, body).
    pub fn curl(&self, args: &[&str]) -> (u16, Vec<u8>) {
        let out = self.local("curl.out");
        let mut a = vec![
            "-sS",
            "--cacert",
            self.ca.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "-w",
            "%{http_code}",
        ];
        a.extend_from_slice(args);
        let o = self.run("curl", &a);
        let code: u16 = String::from_utf8_lossy(&o.stdout)
            .trim()
            .parse()
            .unwrap_or(0);
        (code, std::fs::read(&out).unwrap_or_default())
    }
}

/// A trusted issuer (`iss`, also its audience) whose tokens act as root:
/// a site's explicit choice, which these tests make.
pub fn root_issuer(iss: String) -> tessera_server::config::IssuerCfg {
    tessera_server::config::IssuerCfg {
        issuer: iss.clone(),
        audiences: vec![iss],
        base_path: "/".into(),
        default_uid: 0,
        default_gid: 0,
        default_name: "root".into(),
        map_file: None,
        groups: Default::default(),
        may_create: true,
        local_users: false,
    }
}
