//! The two topologies every attack runs against: one dev-mode server
//! (every role in one process) and a metadata service with two data
//! gateways (XRootD and HTTPS on each), all in this process on loopback
//! port 0, with the development issuer minting the tokens. Both share the
//! fixture the cases expect (`/atk`, owned by the identity development
//! tokens act as).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tessera_auth::dev::DevIssuer;
use tessera_server::config::{Config, Role, UnixCfg};
use tessera_types::{Identity, NsPath};

/// Who development tokens act as (`[auth] dev_uid`, its default).
pub const DEV_UID: u32 = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `--role all`: the dev default.
    Single,
    /// `--role mgm` and two `--role gateway`.
    Cluster,
}

pub struct Topo {
    pub dir: tempfile::TempDir,
    /// `root://127.0.0.1:port` of the server clients are given.
    pub xrd: String,
    /// `roots://localhost:port` of the same.
    pub xrds: String,
    /// `https://localhost:port` of the same.
    pub https: String,
    pub ca: PathBuf,
    pub ca_dir: PathBuf,
    pub server: Option<tessera_server::Running>,
    pub gateways: Vec<tessera_server::Running>,
    pub rt: tokio::runtime::Runtime,
}

impl Topo {
    pub fn start(shape: Shape) -> Topo {
        Topo::start_with(shape, |_| {})
    }

    /// `change` applies to the server clients reach (the metadata service
    /// in a cluster) and, in a cluster, to the gateways too.
    pub fn start_with(shape: Shape, change: impl Fn(&mut Config)) -> Topo {
        let dir = tempfile::tempdir().expect("tmp");
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let (mut cfg, secret) =
            tessera_server::dev_config(&dir.path().join("data")).expect("dev config");
        // Attackers log in with unix credentials that prove nothing.
        cfg.xrootd.unix = UnixCfg::ReadOnly;
        let cluster_secret = dir.path().join("cluster.secret");
        if shape == Shape::Cluster {
            std::fs::write(&cluster_secret, "an-attack-suite-cluster-secret").unwrap();
            std::fs::set_permissions(&cluster_secret, std::fs::Permissions::from_mode(0o600))
                .unwrap();
            cfg.role = Role::Mgm;
            cfg.cluster.secret_file = Some(cluster_secret.clone());
        }
        change(&mut cfg);
        let server = rt
            .block_on(tessera_server::start(&cfg, secret))
            .expect("start");
        let dev = cfg.data_dir.join("dev");
        let xport = server.xrootd_addr.expect("xrootd").port();
        let hport = server.https_addr.expect("https").port();
        let mut gateways = Vec::new();
        if shape == Shape::Cluster {
            for site in ["site-a", "site-b"] {
                let mut g = Config {
                    role: Role::Gateway,
                    data_dir: dir.path().join(site),
                    ..Config::default()
                };
                g.listen.xrootd = Some(([127, 0, 0, 1], 0).into());
                g.listen.https = Some(([127, 0, 0, 1], 0).into());
                g.listen.metrics = ([127, 0, 0, 1], 0).into();
                g.tls.cert = Some(dev.join("server.pem"));
                g.tls.key = Some(dev.join("server.key"));
                g.cluster.secret_file = Some(cluster_secret.clone());
                g.cluster.mgm = Some(server.admin_addr.to_string());
                g.cluster.mgm_xrootd = Some(format!("127.0.0.1:{xport}"));
                g.cluster.mgm_https = Some(format!("localhost:{hport}"));
                g.cluster.site = site.into();
                g.cluster.cap_ttl_secs = cfg.cluster.cap_ttl_secs;
                g.xrootd = cfg.xrootd.clone();
                g.https.body_timeout = cfg.https.body_timeout;
                g.buffers = cfg.buffers.clone();
                let g = rt
                    .block_on(tessera_server::start(&g, String::new()))
                    .expect("gateway");
                gateways.push(g);
            }
        }
        let t = Topo {
            xrd: format!("root://127.0.0.1:{xport}"),
            xrds: format!("roots://localhost:{xport}"),
            https: format!("https://localhost:{hport}"),
            ca: dev.join("ca.pem"),
            ca_dir: dev.join("certificates"),
            server: Some(server),
            gateways,
            dir,
            rt,
        };
        t.fixture();
        t
    }

    pub fn core(&self) -> &tessera_core::Core {
        self.server.as_ref().unwrap().core().expect("core")
    }

    pub fn path(p: &str) -> NsPath {
        NsPath::parse(p).expect("path")
    }

    pub fn root() -> Identity {
        Identity::root("test")
    }

    /// `/atk` (the dev identity's, 0755) with `/atk/existing`, and
    /// `/atk/acl` whose ACL refuses group `/cms` updates, with
    /// `/atk/acl/existing`; both files hold `ORIGINAL`.
    fn fixture(&self) {
        let core = self.core();
        let dev = Identity::user(DEV_UID, DEV_UID, "dev", "test");
        self.rt.block_on(async {
            for d in ["/atk", "/atk/acl"] {
                core.mkdir(&Topo::root(), Topo::path(d), 0o755, false)
                    .await
                    .expect("mkdir");
                let own = tessera_core::SetAttr {
                    uid: Some(DEV_UID),
                    gid: Some(DEV_UID),
                    ..Default::default()
                };
                core.setattr(&Topo::root(), Topo::path(d), own)
                    .await
                    .expect("chown");
            }
            core.xattr_set(
                &Topo::root(),
                Topo::path("/atk/acl"),
                b"sys.acl".to_vec(),
                b"g:/cms:!u".to_vec(),
            )
            .await
            .expect("acl");
        });
        for f in ["/atk/existing", "/atk/acl/existing"] {
            self.put_as(&dev, f, ORIGINAL);
        }
    }

    /// Write `body` to `path` through the core as `who`.
    pub fn put_as(&self, who: &Identity, path: &str, body: &[u8]) {
        let mut w = self
            .core()
            .open_write(who, &Topo::path(path), 0o644, true, 0)
            .expect("open for writing");
        w.write(body).expect("write");
        w.close().expect("close");
    }

    /// The content of `path`, read as root through the core; `None` when
    /// there is no such file.
    pub fn content(&self, path: &str) -> Option<Vec<u8>> {
        let r = self
            .core()
            .open_read(&Topo::root(), &Topo::path(path))
            .ok()?;
        let mut out = vec![0u8; r.size() as usize];
        let n = r.read_at(0, &mut out).expect("read");
        out.truncate(n);
        Some(out)
    }

    /// A token from the development issuer for `sub`, with `scope` and
    /// `wlcg.groups`, valid for `secs` (negative: expired).
    pub fn token(&self, scope: &str, groups: &[&str], secs: i64) -> String {
        self.token_for("mallory", scope, groups, secs)
    }

    /// [`Topo::token`] with subject `sub` (a local account's name makes
    /// the token act as that account: `nobody` is not the owner of
    /// `/atk`).
    pub fn token_for(&self, sub: &str, scope: &str, groups: &[&str], secs: i64) -> String {
        let dev = self.dir.path().join("data").join("dev");
        let k = DevIssuer::load_or_create(&dev).unwrap();
        let info = DevIssuer::read_info(&dev).unwrap();
        let now = now() as i64;
        k.sign(&serde_json::json!({
            "wlcg.ver": "1.0", "iss": info.issuer, "sub": sub, "aud": info.audience,
            "scope": scope, "wlcg.groups": groups,
            "iat": now, "nbf": now.min(now + secs), "exp": now + secs,
        }))
        .unwrap()
    }

    pub fn local(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A client command with what every client here needs.
    pub fn cmd(&self, prog: &str) -> Command {
        let mut c = Command::new(prog);
        c.env("X509_CERT_DIR", &self.ca_dir)
            .env("XRD_CONNECTIONWINDOW", "5")
            .env("XRD_REQUESTTIMEOUT", "30")
            .env("XRD_STREAMTIMEOUT", "30")
            .env("HOME", self.dir.path())
            .env_remove("BEARER_TOKEN")
            .env_remove("XDG_RUNTIME_DIR");
        c
    }

    pub fn run(&self, c: &mut Command) -> Output {
        c.output().unwrap_or_else(|e| panic!("{c:?}: {e}"))
    }

    /// curl with the dev CA: (status, body); `-L` follows redirects.
    pub fn curl(&self, args: &[&str]) -> (u16, Vec<u8>) {
        let out = self.local("curl.out");
        let _ = std::fs::remove_file(&out);
        let o = self.run(
            self.cmd("curl")
                .args(["-sS", "--max-time", "60", "--cacert"])
                .arg(&self.ca)
                .arg("-o")
                .arg(&out)
                .args(["-w", "%{http_code}"])
                .args(args),
        );
        let code = String::from_utf8_lossy(&o.stdout)
            .trim()
            .parse()
            .unwrap_or(0);
        (code, std::fs::read(&out).unwrap_or_default())
    }

    /// A Python program run with Debian's interpreter (python3-xrootd).
    pub fn python(&self, script: &str, args: &[&str]) -> Output {
        self.run(
            self.cmd("/usr/bin/python3")
                .arg("-c")
                .arg(script)
                .args(args),
        )
    }
}

/// What every fixture file holds.
pub const ORIGINAL: &[u8] = b"ORIGINAL CONTENT that attacks must leave as it is\n";

pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A local file of `len` bytes to upload.
pub fn upload_file(dir: &Path, name: &str, len: usize) -> PathBuf {
    let p = dir.join(name);
    let body: Vec<u8> = (0..len).map(|i| (i * 7 + 13) as u8).collect();
    std::fs::write(&p, body).unwrap();
    p
}

impl Drop for Topo {
    fn drop(&mut self) {
        for g in self.gateways.drain(..) {
            let _ = self.rt.block_on(g.shutdown());
        }
        if let Some(s) = self.server.take() {
            let _ = self.rt.block_on(s.shutdown());
        }
    }
}

pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
