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

/// Make `path` (mode 0700) as root and give it to `uid` (group `uid`).
pub fn private_dir(rt: &tokio::runtime::Runtime, core: &tessera_core::Core, path: &str, uid: u32) {
    let root = tessera_types::Identity::root("test");
    let p = tessera_types::NsPath::parse(path).expect("path");
    rt.block_on(async {
        core.mkdir(&root, p.clone(), 0o700, true)
            .await
            .expect("mkdir");
        let a = tessera_core::SetAttr {
            uid: Some(uid),
            gid: Some(uid),
            ..Default::default()
        };
        core.setattr(&root, p, a).await.expect("chown");
    });
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
    let root = tessera_types::Identity::root("test");
    let p = tessera_types::NsPath::parse(path).expect("path");
    rt.block_on(async {
        core.mkdir(&root, p.clone(), 0o700, false)
            .await
            .expect("mkdir");
        core.xattr_set(
            &root,
            p.clone(),
            b"sys.acl".to_vec(),
            format!("g:{group}:rwx").into_bytes(),
        )
        .await
        .expect("acl");
        core.quota_set(
            &root,
            p,
            tessera_core::QuotaTarget::group(gid),
            Some(bytes),
            None,
        )
        .await
        .expect("quota");
    });
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
        sites: vec![tessera_fed::SiteCfg {
            name: "site-a".into(),
            subnets: vec![subnet.into()],
            ..Default::default()
        }],
        endpoints: vec![tessera_fed::EndpointCfg {
            name: "a".into(),
            site: "site-a".into(),
            kind: "https".into(),
            url,
            ..Default::default()
        }],
        views: vec![tessera_fed::ViewCfg {
            path: path.into(),
            endpoints: vec!["a".into()],
            public: false,
            write: String::new(),
        }],
        ..Default::default()
    }
}
