//! `tesserad`: wires the store, the core service and the listeners
//! together. This is the only composition root; tests start it in-process
//! with [`start`] on port 0.

pub mod alloc;
mod auth;
pub mod config;
mod config_conn;
mod config_data;
mod config_ha;
pub mod config_wlcg;
pub mod config_x509;
pub mod dev;
mod gateway;
mod ha;
mod http;
pub mod limits;
pub mod overlay;
mod repair;
mod standby;
mod start;
mod tls;
mod units;

use config::Config;
use std::net::SocketAddr;
use std::sync::Arc;
use tessera_core::Core;
use tessera_obs::AccessLog;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use start::start;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A started server.
pub struct Running {
    pub admin_addr: SocketAddr,
    pub metrics_addr: SocketAddr,
    /// The XRootD listener, when configured.
    pub xrootd_addr: Option<SocketAddr>,
    /// The HTTPS/WebDAV listener, when configured.
    pub https_addr: Option<SocketAddr>,
    /// The XRootD gateway's counters, when it runs.
    pub xrootd_stats: Option<Arc<tessera_xrootd::Stats>>,
    /// The HTTPS gateway's counters, when it runs.
    pub https_stats: Option<Arc<tessera_https::Stats>>,
    /// The memory budget every endpoint of this process shares.
    pub buffers: tessera_core::Budget,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    /// None on a data gateway (it has no namespace).
    core: Option<Core>,
    /// A data gateway: its metadata service and the address it registered
    /// with, to deregister before draining.
    registered: Option<(
        tessera_cluster::ClusterClient,
        String,
        tokio::task::AbortHandle,
    )>,
}

impl Running {
    /// The core service (tests set attributes and quotas through it);
    /// a data gateway has none.
    pub fn core(&self) -> Option<&Core> {
        self.core.as_ref()
    }

    /// Stop accepting, let in-flight requests finish, flush the namespace.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        // A gateway first leaves its metadata service (no more redirects
        // to it), then drains.
        if let Some((client, xrootd, registration)) = &self.registered {
            // No more heartbeats (they would register it again); the
            // stream closing is a departure too.
            registration.abort();
            let bye = client.deregister(xrootd);
            match tokio::time::timeout(std::time::Duration::from_secs(2), bye).await {
                Ok(Ok(())) => {
                    tracing::info!("deregistered from the metadata service");
                    // Clients it redirected here just before may still
                    // arrive: serve them as usual for a moment.
                    tokio::time::sleep(DEREGISTER_GRACE).await;
                }
                Ok(Err(e)) => tracing::warn!("deregistering: {e}"),
                Err(_) => tracing::warn!("deregistering: no answer within 2 s"),
            }
        }
        let _ = self.stop.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
        if let Some(c) = &self.core {
            c.flush()?;
        }
        Ok(())
    }
}

/// How long a stopping gateway goes on as usual after deregistering, for
/// the clients its metadata service sent to it just before.
pub const DEREGISTER_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The dev-mode configuration for `data_dir` (prepared on disk: folders,
/// CA, admin token) with every listener on loopback port 0, and the admin
/// secret. Tests use it to start a server in-process.
pub fn dev_config(data_dir: &std::path::Path) -> anyhow::Result<(Config, String)> {
    std::fs::create_dir_all(data_dir)?;
    let dir = data_dir.canonicalize()?;
    let layout = dev::DevLayout::new(&dir);
    layout.prepare()?;
    let mut cfg = Config {
        data_dir: dir,
        ..Config::default()
    };
    cfg.listen.admin = SocketAddr::from(([127, 0, 0, 1], 0));
    cfg.listen.metrics = SocketAddr::from(([127, 0, 0, 1], 0));
    cfg.listen.xrootd = Some(SocketAddr::from(([127, 0, 0, 1], 0)));
    cfg.listen.https = Some(SocketAddr::from(([127, 0, 0, 1], 0)));
    cfg.https.anonymous = config::AnonymousCfg::ReadOnly;
    cfg.auth.dev_issuer = true;
    cfg.https.tpc_ca_files = vec![layout.ca_pem.clone()];
    cfg.admin.token_file = Some(layout.token_file.clone());
    cfg.tls.cert = Some(layout.cert_pem.clone());
    cfg.tls.key = Some(layout.key_pem.clone());
    cfg.xrootd.unix = config::UnixCfg::Owner;
    cfg.dev_filesystems = true;
    let secret = dev::read_secret(&layout.token_file)?;
    Ok((cfg, secret))
}

/// Dev mode: register the six local folders `DATA_DIR/fs/fsN` as
/// filesystems in six failure domains of space `default` (once).
async fn register_dev_filesystems(core: &Core, data_dir: &std::path::Path) -> anyhow::Result<()> {
    let have = core.fs_list();
    let root = tessera_types::Identity::root("dev");
    for i in 1..=dev::DEV_FILESYSTEMS {
        let label = format!("dev{i}");
        if have.iter().any(|f| f.rec.label == label) {
            continue;
        }
        let path = data_dir.join("fs").join(format!("fs{i}"));
        core.fs_add(
            &root,
            tessera_core::FsRecord {
                id: 0,
                label,
                locator: format!("folder:{}", path.display()),
                domain: format!("dev-domain-{i}"),
                space: tessera_core::DEFAULT_SPACE.to_string(),
                status: tessera_core::FsConfigStatus::Rw,
                uuid: String::new(),
            },
            true,
        )
        .await?;
    }
    Ok(())
}

/// Dev mode: `/data`, owned by the identity development tokens act as
/// (`[auth] dev_uid`), so that a token can write there at once while mode
/// bits and ACLs apply to it as in production (made once).
async fn make_dev_data_dir(core: &Core, cfg: &Config) -> anyhow::Result<()> {
    let root = tessera_types::Identity::root("dev");
    let data = tessera_types::NsPath::parse("/data")?;
    if core.stat(&root, data.clone()).await.is_ok() {
        return Ok(());
    }
    core.mkdir(&root, data.clone(), 0o755, false).await?;
    let set = tessera_core::SetAttr {
        uid: Some(cfg.auth.dev_uid),
        gid: Some(cfg.auth.dev_gid),
        ..Default::default()
    };
    core.setattr(&root, data, set).await?;
    Ok(())
}

/// The access log `[log] access` names (default `<data_dir>/logs/access.log`;
/// `-` standard output, empty none).
pub(crate) fn access_log(cfg: &Config) -> anyhow::Result<AccessLog> {
    Ok(match cfg.log.access.as_deref() {
        Some("") => AccessLog::disabled(),
        Some("-") => AccessLog::to_writer(Box::new(std::io::stdout())),
        Some(p) => AccessLog::to_file(std::path::Path::new(p))?,
        None => {
            let dir = cfg.data_dir.join("logs");
            std::fs::create_dir_all(&dir)?;
            AccessLog::to_file(&dir.join("access.log"))?
        }
    })
}

pub(crate) fn audit_log(cfg: &Config) -> anyhow::Result<tessera_obs::AuditLog> {
    use tessera_obs::AuditLog;
    Ok(match cfg.log.audit.as_deref() {
        Some("") => AuditLog::disabled(),
        Some("-") => AuditLog::to_writer(Box::new(std::io::stdout())),
        Some(p) => AuditLog::to_file(std::path::Path::new(p))?,
        None => {
            let dir = cfg.data_dir.join("logs");
            std::fs::create_dir_all(&dir)?;
            AuditLog::to_file(&dir.join("audit.log"))?
        }
    })
}

/// The XRootD endpoint's settings from `[xrootd]`, for `role`.
pub(crate) fn xrootd_config(
    cfg: &Config,
    role: Arc<tessera_route::Role>,
    stats: Arc<tessera_xrootd::Stats>,
    tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
    buffers: tessera_core::Budget,
    conns: tessera_core::ConnLimits,
) -> tessera_xrootd::XrootdConfig {
    let [body_timeout, idle_timeout, idle_open_timeout] = cfg.xrootd.timeouts();
    tessera_xrootd::XrootdConfig {
        role,
        stats,
        tls,
        unix: match cfg.xrootd.unix {
            config::UnixCfg::Trust => tessera_xrootd::UnixPolicy::Trust,
            config::UnixCfg::Anonymous => tessera_xrootd::UnixPolicy::Anonymous,
            config::UnixCfg::ReadOnly => tessera_xrootd::UnixPolicy::ReadOnly,
            config::UnixCfg::Owner => tessera_xrootd::UnixPolicy::Owner(owner_identity().uid),
        },
        site: cfg.xrootd.site.clone(),
        request_stall: cfg.xrootd.request_stall_or_default(),
        max_in_flight: cfg.xrootd.max_in_flight(),
        buffers,
        body_timeout,
        idle_timeout,
        idle_open_timeout,
        conns,
        drain: std::time::Duration::from_secs(cfg.server.drain_s),
        ..tessera_xrootd::XrootdConfig::default()
    }
}

/// A task that aborts `task` (a loop that never ends by itself) when the
/// server stops.
pub(crate) fn abort_on_stop(
    task: JoinHandle<()>,
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let _ = stop.changed().await;
        task.abort();
    })
}

/// The identity of the user running this server (dev mode's "owner").
pub(crate) fn owner_identity() -> tessera_types::Identity {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata("/proc/self") {
        Ok(m) if m.uid() == 0 => tessera_types::Identity::root("https"),
        Ok(m) => tessera_types::Identity::user(m.uid(), m.gid(), "owner", "https"),
        Err(_) => tessera_types::Identity::user(65534, 65534, "nobody", "https"),
    }
}
