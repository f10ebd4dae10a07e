//! Helpers shared by the client test binaries (`xrootd/`, `https/`).

/// Deterministic test bytes.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    v
}

/// adler32 as the clients print it (8 lowercase hex digits).
pub fn adler32(b: &[u8]) -> String {
    let (mut a, mut s) = (1u32, 0u32);
    for chunk in b.chunks(5552) {
        for &x in chunk {
            a += x as u32;
            s += a;
        }
        a %= 65521;
        s %= 65521;
    }
    format!("{:08x}", (s << 16) | a)
}

/// The filesystem holding the first stripe of the file at `path`.
pub fn first_fsid(rt: &tokio::runtime::Runtime, core: &tessera_core::Core, path: &str) -> u32 {
    let root = tessera_types::Identity::root("test");
    let p = tessera_types::NsPath::parse(path).expect("path");
    let i = rt.block_on(core.stat(&root, p)).expect("stat");
    tessera_core::Placement::decode(&i.layout)
        .expect("placement")
        .fsids[0]
}

/// Set filesystem `id` to `status`, as an admin would.
pub fn set_fs_status(
    rt: &tokio::runtime::Runtime,
    core: &tessera_core::Core,
    id: u32,
    status: tessera_core::FsConfigStatus,
) {
    let c = tessera_core::FsChange {
        label: None,
        domain: None,
        space: None,
        status: Some(status),
    };
    let root = tessera_types::Identity::root("test");
    rt.block_on(core.fs_set(&root, id, c)).expect("fs set");
}

/// Reads served from memory on the request's thread so far, for clients
/// of `protocol` (counted as their read sessions close).
#[allow(dead_code)]
pub fn reads_in_line(core: &tessera_core::Core, protocol: &str) -> u64 {
    core.metrics()
        .reads_in_line
        .get_or_create(&tessera_obs::ProtocolLabels {
            protocol: protocol.into(),
        })
        .get()
}

/// Wait (up to 5 s) until `reads_in_line` reaches `n`, then a little more
/// for anything late, and return what it is.
#[allow(dead_code)]
pub fn reads_in_line_after(core: &tessera_core::Core, protocol: &str, n: u64) -> u64 {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while reads_in_line(core, protocol) < n && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    reads_in_line(core, protocol)
}

/// Drop every file under `dir` from the kernel's page cache (the stripes
/// are synced: clean pages go), as if memory had been needed elsewhere.
/// A page can stay a moment on a busy machine (under writeback, or read
/// by someone): the kernel is asked again until `fincore` (mincore: it
/// looks without reading, where a probing read would start read-ahead and
/// bring pages back) finds no page of any stripe in memory (the files
/// under `fs/`; the namespace's own files are in use), for up to 5 s.
#[allow(dead_code)]
pub fn evict_page_cache(dir: &std::path::Path) {
    let script = [
        "import os, sys, time",
        "def files():",
        "    for d, _, fs in os.walk(sys.argv[1]):",
        "        for f in fs:",
        "            p = os.path.join(d, f)",
        "            if os.path.isfile(p) and not os.path.islink(p):",
        "                yield p",
        "import subprocess",
        "def cached(p):",
        "    out = subprocess.run(['fincore', '--bytes', '--noheadings', '--output', 'RES', p],",
        "                         capture_output=True, text=True).stdout.strip()",
        "    return out not in ('', '0')",
        "end = time.time() + 5",
        "while True:",
        // Dirty pages (a file just written without fsync) cannot be
        // dropped: write them back first.
        "    os.sync()",
        "    for p in files():",
        "        fd = os.open(p, os.O_RDONLY)",
        "        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)",
        "        os.close(fd)",
        "    stripes = [p for p in files() if '/fs/' in p]",
        "    if not any(cached(p) for p in stripes):",
        "        break",
        "    if time.time() > end:",
        "        sys.exit('stripes still in the page cache after 5 s')",
        "    time.sleep(0.05)",
    ]
    .join("\n");
    let ok = std::process::Command::new("/usr/bin/python3")
        .args(["-c", &script])
        .arg(dir)
        .status()
        .expect("python3")
        .success();
    assert!(ok, "fadvise over {}", dir.display());
}

/// A real `tesserad` process a test started: killed (by its own PID) when
/// dropped. Its first stdout line is the ready line (`tesserad ready
/// admin=… xrootd=… https=…`); the rest of stdout is drained so that the
/// server never blocks on a full pipe.
#[allow(dead_code)]
pub struct Daemon {
    pub child: std::process::Child,
    ready: String,
}

#[allow(dead_code)]
impl Daemon {
    /// Every listener of a dev-mode server on a port of its own.
    pub const ANY_PORTS: [&'static str; 8] = [
        "--admin-addr",
        "127.0.0.1:0",
        "--metrics-addr",
        "127.0.0.1:0",
        "--xrootd-addr",
        "127.0.0.1:0",
        "--https-addr",
        "127.0.0.1:0",
    ];

    /// `tesserad` with `args`, once it says it is ready.
    pub fn spawn<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Daemon {
        use std::io::BufRead;
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tesserad"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn tesserad");
        let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
        let ready = lines.next().expect("ready line").expect("utf8");
        assert!(ready.starts_with("tesserad ready"), "{ready}");
        std::thread::spawn(move || for _ in lines {});
        Daemon { child, ready }
    }

    /// `tesserad serve --dev --data-dir <dir>` with `extra` arguments and
    /// every listener on a port of its own.
    pub fn dev(dir: &std::path::Path, extra: &[&std::ffi::OsStr]) -> Daemon {
        let mut args: Vec<&std::ffi::OsStr> = ["serve", "--dev", "--data-dir"]
            .iter()
            .map(std::ffi::OsStr::new)
            .collect();
        args.push(dir.as_os_str());
        args.extend_from_slice(extra);
        args.extend(Daemon::ANY_PORTS.iter().map(std::ffi::OsStr::new));
        Daemon::spawn(&args)
    }

    /// The value of `key` (`"xrootd="`, …) in the ready line.
    pub fn field(&self, key: &str) -> String {
        self.ready
            .split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .unwrap_or_else(|| panic!("{key} in {}", self.ready))
            .to_string()
    }

    /// Send `sig` (`"-TERM"`, `"-KILL"`) to the process.
    pub fn signal(&self, sig: &str) {
        let ok = std::process::Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(ok.success(), "kill {sig}");
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `N` distinct free TCP ports on 127.0.0.1 for a server a test starts
/// itself (Debian's xrootd), below the kernel's ephemeral range: a port
/// taken from that range (`bind` to port 0, then released) can be handed
/// to an outgoing connection or another port-0 listener before the
/// server binds it ("address already in use" in a clean-clone run).
#[allow(dead_code)]
pub fn spare_ports<const N: usize>() -> [u16; N] {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let low: u32 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768);
    let (base, span) = (10_000u32, low.saturating_sub(10_000).max(1000));
    let seed = std::process::id().wrapping_mul(2_654_435_761);
    let mut out = [0u16; N];
    let mut held = Vec::new();
    for slot in out.iter_mut() {
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let port = (base + (seed.wrapping_add(n.wrapping_mul(7919))) % span) as u16;
            if let Ok(l) = std::net::TcpListener::bind(("127.0.0.1", port)) {
                held.push(l);
                *slot = port;
                break;
            }
        }
    }
    out
}

/// A binary of another package of the workspace (`tessera`, the benches'
/// `delay-proxy`), next to the test binaries' directory: `scripts/test`
/// builds every binary (`cargo build --workspace --bins`) before the tests.
#[allow(dead_code)]
pub fn workspace_bin(name: &str) -> std::path::PathBuf {
    let bin = std::env::current_exe()
        .expect("the test binary")
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>")
        .join(name);
    assert!(
        bin.exists(),
        "{} not built: cargo build --workspace --bins (scripts/test does)",
        bin.display()
    );
    bin
}

/// The grid PKI `tests/pki/make.sh` makes (openssl, voms-proxy-fake):
/// CA directory, vomsdir, mapping files, proxies. Made once per test
/// process.
pub fn pki() -> std::path::PathBuf {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("tessera-pki-{}", std::process::id()));
        let script =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/pki/make.sh");
        let st = std::process::Command::new("bash")
            .arg(script)
            .arg(&dir)
            .status()
            .expect("bash");
        assert!(
            st.success(),
            "tests/pki/make.sh (openssl, voms-proxy-fake) failed"
        );
        dir
    })
    .clone()
}

/// Make `path` as root with `mode` (its parents too when `parents`).
#[allow(dead_code)]
pub fn root_mkdir(
    rt: &tokio::runtime::Runtime,
    core: &tessera_core::Core,
    path: &str,
    mode: u32,
    parents: bool,
) {
    let root = tessera_types::Identity::root("test");
    let p = tessera_types::NsPath::parse(path).expect("path");
    rt.block_on(core.mkdir(&root, p, mode, parents))
        .expect("mkdir");
}

/// Set, as root, a quota of `bytes` for `target` on `path`.
#[allow(dead_code)]
pub fn set_quota(
    rt: &tokio::runtime::Runtime,
    core: &tessera_core::Core,
    path: &str,
    target: tessera_core::QuotaTarget,
    bytes: u64,
) {
    let root = tessera_types::Identity::root("test");
    let p = tessera_types::NsPath::parse(path).expect("path");
    rt.block_on(core.quota_set(&root, p, target, Some(bytes), None))
        .expect("quota");
}

/// A directory `path` (mode `mode`, made as root) under a quota of
/// `bytes` for `target`.
#[allow(dead_code)]
pub fn quota_dir(
    rt: &tokio::runtime::Runtime,
    core: &tessera_core::Core,
    (path, mode): (&str, u32),
    target: tessera_core::QuotaTarget,
    bytes: u64,
) {
    root_mkdir(rt, core, path, mode, false);
    set_quota(rt, core, path, target, bytes);
}

/// Make `path` (mode 0700) as root and give it to `uid` (group `uid`).
pub fn private_dir(rt: &tokio::runtime::Runtime, core: &tessera_core::Core, path: &str, uid: u32) {
    root_mkdir(rt, core, path, 0o700, true);
    let a = tessera_core::SetAttr {
        uid: Some(uid),
        gid: Some(uid),
        ..Default::default()
    };
    let root = tessera_types::Identity::root("test");
    let p = tessera_types::NsPath::parse(path).expect("path");
    rt.block_on(core.setattr(&root, p, a)).expect("chown");
}

/// A root-owned 0700 directory at `path` that only VO group `group`'s ACL
/// entry (`g:<group>:rwx`) opens, under a quota of `bytes` for gid `gid`.
pub fn vo_group_dir(
    rt: &tokio::runtime::Runtime,
    core: &tessera_core::Core,
    path: &str,
    (group, gid): (&str, u32),
    bytes: u64,
) {
    root_mkdir(rt, core, path, 0o700, false);
    let root = tessera_types::Identity::root("test");
    let p = tessera_types::NsPath::parse(path).expect("path");
    let acl = format!("g:{group}:rwx").into_bytes();
    rt.block_on(core.xattr_set(&root, p, b"sys.acl".to_vec(), acl))
        .expect("acl");
    set_quota(rt, core, path, tessera_core::QuotaTarget::group(gid), bytes);
}

/// `c` taking the certificates of the test PKI `p` (tests/pki/make.sh):
/// its CA directory, vomsdir, grid-mapfile and VOMS role map.
pub fn take_pki(c: &mut tessera_server::config::Config, p: &std::path::Path) {
    c.x509.ca_dir = Some(p.join("certificates"));
    c.x509.vomsdir = Some(p.join("vomsdir"));
    c.x509.grid_mapfile = Some(p.join("grid-mapfile"));
    c.x509.voms_mapfile = Some(p.join("vorolemap"));
}

/// A federation of one https endpoint `a` (at `url`, site `site-a` with
/// clients from `subnet`) under one private view at `path`.
pub fn private_view(path: &str, url: String, subnet: &str) -> tessera_fed::FedConfig {
    tessera_fed::FedConfig {
        sites: vec![fed_site("site-a", &[subnet])],
        endpoints: vec![fed_endpoint("a", "site-a", "https", url)],
        views: vec![fed_view(path, &["a"], false, "")],
        ..Default::default()
    }
}

/// All a finished command wrote: stdout, then stderr, as one text.
#[allow(dead_code)]
pub fn all_output(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// stdout, then stderr, of a finished command (a line between them): for
/// a failure message.
#[allow(dead_code)]
pub fn out_err(o: &std::process::Output) -> String {
    let out = String::from_utf8_lossy(&o.stdout);
    format!("{out}\n{}", String::from_utf8_lossy(&o.stderr))
}

/// Assert that `o` (of the command `what` names, with any context worth
/// showing) succeeded; the failure says its exit status, stdout and stderr.
#[allow(dead_code)]
#[track_caller]
pub fn assert_ran(o: &std::process::Output, what: &str) {
    assert!(
        o.status.success(),
        "{what} failed ({:?}):\n{}",
        o.status.code(),
        out_err(o)
    );
}

/// Run `c` to its end and [`assert_ran`] it; its output.
#[allow(dead_code)]
#[track_caller]
pub fn run_ok(c: &mut std::process::Command, what: &str) -> std::process::Output {
    let o = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_ran(&o, what);
    o
}

/// Give `p` (and everything under it) to the `xrootd` user, as Debian's
/// xrootd server runs.
#[allow(dead_code)]
pub fn chown_xrootd(p: &std::path::Path) {
    let ok = std::process::Command::new("chown")
        .args(["-R", "xrootd:xrootd"])
        .arg(p)
        .status()
        .expect("chown");
    assert!(ok.success(), "chown -R xrootd:xrootd {}", p.display());
}

/// Put `body` at `rel` under the `data/` directory a reference xrootd
/// (its directory `dir`) exports, owned by its user.
#[allow(dead_code)]
pub fn place_under(dir: &std::path::Path, rel: &str, body: &[u8]) {
    let p = dir.join("data").join(rel.trim_start_matches('/'));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, body).unwrap();
    chown_xrootd(&dir.join("data"));
}

/// Debian's `xrootd` as the `xrootd` user (setpriv executes it: the PID is
/// the server's), with `dir`'s `xrd.cfg`, instance name `name`, its log in
/// `dir`'s `xrootd.log` and `HOME` in `dir/home`.
#[allow(dead_code)]
pub fn spawn_xrootd(dir: &std::path::Path, name: &str) -> std::process::Child {
    std::process::Command::new("setpriv")
        .args(["--reuid", "xrootd", "--regid", "xrootd", "--init-groups"])
        .args(["--", "env", "-i", "PATH=/usr/bin:/bin"])
        .arg(format!("HOME={}/home", dir.display()))
        .args(["xrootd", "-I", "v4", "-c"])
        .arg(dir.join("xrd.cfg"))
        .args(["-n", name, "-l"])
        .arg(dir.join("xrootd.log"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("xrootd")
}

/// A federation site `name` whose clients come from `subnets`.
#[allow(dead_code)]
pub fn fed_site(name: &str, subnets: &[&str]) -> tessera_fed::SiteCfg {
    tessera_fed::SiteCfg {
        name: name.into(),
        subnets: subnets.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

/// A federation endpoint `name` at `site`, of `kind` (`https`, `root`,
/// `s3`), at `url`.
#[allow(dead_code)]
pub fn fed_endpoint(name: &str, site: &str, kind: &str, url: String) -> tessera_fed::EndpointCfg {
    tessera_fed::EndpointCfg {
        name: name.into(),
        site: site.into(),
        kind: kind.into(),
        url,
        ..Default::default()
    }
}

/// A federated view at `path` over `endpoints`, `public` or not, writes
/// going where `write` says (`""`: refused).
#[allow(dead_code)]
pub fn fed_view(path: &str, endpoints: &[&str], public: bool, write: &str) -> tessera_fed::ViewCfg {
    tessera_fed::ViewCfg {
        path: path.into(),
        endpoints: endpoints.iter().map(|s| s.to_string()).collect(),
        public,
        write: write.into(),
    }
}

/// What a test binary's `Env` (a dev-mode server in `self.server`, run on
/// `self.rt`) has whatever its protocol: `core()`, `root()` (the test's
/// root identity), `path()` (a namespace path), and a drop that shuts the
/// server down.
#[allow(unused_macros)]
macro_rules! server_env {
    ($env:ident) => {
        impl $env {
            pub fn core(&self) -> &tessera_core::Core {
                self.server.as_ref().expect("running").core().expect("core")
            }

            pub fn root() -> tessera_types::Identity {
                tessera_types::Identity::root("test")
            }

            pub fn path(p: &str) -> tessera_types::NsPath {
                tessera_types::NsPath::parse(p).expect("path")
            }
        }

        impl Drop for $env {
            fn drop(&mut self) {
                if let Some(s) = self.server.take() {
                    let _ = self.rt.block_on(s.shutdown());
                }
            }
        }
    };
}

/// A private (0600, as tesserad wants) cluster secret file holding
/// `secret` in `dir`.
#[allow(dead_code)]
pub fn cluster_secret(dir: &std::path::Path, secret: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let file = dir.join("cluster.secret");
    std::fs::write(&file, secret).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    file
}

/// A data gateway's configuration: its data in `data_dir`, xrootd and
/// metrics on ports of their own, the cluster secret in `secret`.
#[allow(dead_code)]
pub fn gateway_config(
    data_dir: std::path::PathBuf,
    secret: &std::path::Path,
) -> tessera_server::config::Config {
    let mut cfg = tessera_server::config::Config {
        role: tessera_server::config::Role::Gateway,
        data_dir,
        ..Default::default()
    };
    cfg.listen.xrootd = Some(([127, 0, 0, 1], 0).into());
    cfg.listen.metrics = ([127, 0, 0, 1], 0).into();
    cfg.cluster.secret_file = Some(secret.to_path_buf());
    cfg
}
