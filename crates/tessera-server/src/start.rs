//! Starting the roles of one process: the namespace and core service,
//! the admin gRPC API (with the cluster service on a metadata service),
//! background repair and probes, metrics, and the HTTPS and XRootD
//! listeners, all stopped by one watch channel. A data gateway starts in
//! `gateway.rs`.

use crate::config::{self, Config, DurabilityCfg};
use crate::{abort_on_stop, auth, http, limits, repair, tls, Running, VERSION};
use anyhow::Context;
use std::net::SocketAddr;
use std::sync::Arc;
use tessera_core::Core;
use tessera_meta::{Durability, MetaOptions, MetaStore};
use tessera_obs::Metrics;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The monitoring stream, when `[monitoring]` names collectors, and the
/// fireflies, when `[scitags]` sends them somewhere.
type Wlcg = (
    Option<Arc<tessera_wlcg::monitor::Monitor>>,
    Option<Arc<tessera_wlcg::scitags::Fireflies>>,
);

/// The Storage Resource Report, when `[srr]` is on.
type Srr = Option<Arc<tessera_wlcg::srr::Reporter>>;

/// The cluster gRPC service a metadata service runs.
type ClusterServer =
    tessera_proto::internal::v1::cluster_server::ClusterServer<tessera_cluster::ClusterService>;

/// Open the namespace and start every listener of the configured roles
/// (with `[ha]`, as one node of a metadata service: `ha.rs`).
pub async fn start(cfg: &Config, admin_secret: String) -> anyhow::Result<Running> {
    if cfg.role == config::Role::Gateway {
        return crate::gateway::start(cfg).await;
    }
    if cfg.ha.enabled {
        return crate::ha::start(cfg, admin_secret).await;
    }
    start_gated(cfg, admin_secret, None, None).await
}

/// The same, every namespace change asked of `gate` first, and the client
/// listeners taken from `bound` where it has them (the active node of a
/// metadata service).
// long-fn: every listener and task of a server, in the order they depend on each other.
pub(crate) async fn start_gated(
    cfg: &Config,
    admin_secret: String,
    gate: Option<tessera_meta::Gate>,
    bound: Option<&Bound>,
) -> anyhow::Result<Running> {
    let core = open_core(cfg, gate).await?;
    let tls = tls::server_of(&cfg.tls)?;
    let x509 = cfg.x509.open().map_err(anyhow::Error::msg)?.map(Arc::new);
    let https_tls = tls::https_server_of(&cfg.tls, x509.is_some())?;
    let (stop, stop_rx) = watch::channel(false);
    let admin = bind(bound, cfg.listen.admin, "admin").await?;
    let admin_addr = admin.local_addr()?;
    let metrics_l = bind(bound, cfg.listen.metrics, "metrics").await?;
    let metrics_addr = metrics_l.local_addr()?;
    let https_l = match cfg.listen.https {
        Some(a) => Some(bind(bound, a, "HTTPS").await?),
        None => None,
    };
    let https_addr = match &https_l {
        Some(l) => Some(l.local_addr()?),
        None => None,
    };
    let xrootd_l = match cfg.listen.xrootd {
        Some(a) => Some(bind(bound, a, "XRootD").await?),
        None => None,
    };
    let srr = srr(cfg, &core, &xrootd_l, https_addr, &stop_rx)?;
    let xport = match &xrootd_l {
        Some(l) => l.local_addr()?.port(),
        None => 0,
    };
    let monitor = cfg.monitoring.monitor(xport)?;
    let fireflies = cfg.scitags.fireflies()?;
    if let Some(m) = &monitor {
        let drain = std::time::Duration::from_secs(cfg.server.drain_s);
        tokio::spawn(Arc::clone(m).run(stop_rx.clone(), drain));
    }
    // Bearer tokens (the dev issuer's URL names the HTTPS port).
    let tokens = auth::setup(cfg, https_addr)?;
    let validator = tokens.as_ref().map(|t| Arc::clone(&t.validator));
    let roles = Roles::of(cfg, &core)?;
    // Whom this server trusts as a client (TPC peers, federation
    // endpoints): read once.
    let client_tls = tls::client_config(&cfg.https.tpc_ca_files)?;
    let federation = federation(cfg, Some(Arc::clone(&client_tls)), &stop_rx)?;
    let mut tasks = vec![admin_api(
        cfg,
        &core,
        admin,
        admin_secret,
        &validator,
        (roles.cluster, federation.clone(), srr.clone()),
        stop_rx.clone(),
    )?];
    // One memory budget, and one count of client connections, for every
    // endpoint of this process.
    let buffers = cfg.buffers.budget();
    let conns = cfg.limits.conns(limits::raise_nofile());
    background(cfg, &core, roles.sweeper, &stop_rx, &mut tasks);
    tasks.push(tokio::spawn(http::serve(
        metrics_l,
        http::Source::Core(core.clone()),
        http::Load {
            buffers: buffers.clone(),
            conns: conns.clone(),
            tokens: validator.clone(),
            federation: federation.clone(),
        },
        stop_rx.clone(),
    )));
    let mut dev_issuer = None;
    if let Some(t) = tokens {
        tasks.push(abort_on_stop(t.refresh, stop_rx.clone()));
        dev_issuer = t.dev.map(|d| (d.issuer, d.jwks));
    }
    if let Some(x) = &x509 {
        let (cas, crls, grid, roles) = x.counts();
        tracing::info!(cas, crls, grid, roles, "grid certificates taken over HTTPS");
        tasks.push(abort_on_stop(
            x509_refresh(Arc::clone(x), cfg.x509.refresh_s),
            stop_rx.clone(),
        ));
    }
    let gsi = match (&x509, cfg.x509.gsi(&cfg.tls).map_err(anyhow::Error::msg)?) {
        (Some(x), Some(server)) => Some(Arc::new(tessera_xrootd::gsi::Gsi {
            server,
            x509: Arc::clone(x),
        })),
        _ => None,
    };
    let shared = Shared {
        tls,
        https_tls,
        x509,
        macaroons: auth::macaroons(cfg)?,
        gsi,
        validator,
        buffers: buffers.clone(),
        conns,
        federation,
        client_tls,
    };
    let mut https_stats = None;
    if let Some(l) = https_l {
        let mut h = https_config(cfg, &shared, Arc::clone(&roles.role), dev_issuer)?;
        h.federation = shared.federation.clone();
        h.srr = srr;
        h.monitor = monitor.clone();
        h.fireflies = fireflies.clone();
        let hcfg = Arc::new(h);
        https_stats = Some(Arc::clone(&hcfg.stats));
        let serve = tessera_https::serve(l, Some(core.clone()), hcfg, stop_rx.clone());
        tasks.push(tokio::spawn(serve));
    }
    let (mut xrootd_addr, mut xrootd_stats) = (None, None);
    if let Some(l) = xrootd_l {
        let role = Arc::clone(&roles.role);
        let wlcg = (monitor, fireflies);
        let (addr, stats, task) = xrootd(cfg, l, &core, &shared, (role, wlcg), stop_rx)?;
        (xrootd_addr, xrootd_stats) = (Some(addr), Some(stats));
        tasks.push(task);
    }
    tracing::info!(%admin_addr, %metrics_addr, "tesserad started");
    Ok(Running {
        admin_addr,
        metrics_addr,
        xrootd_addr,
        https_addr,
        xrootd_stats,
        https_stats,
        buffers,
        stop,
        tasks,
        core: Some(core),
        registered: None,
    })
}

/// The XRootD listener `l`: its address, counters and task.
fn xrootd(
    cfg: &Config,
    l: TcpListener,
    core: &Core,
    shared: &Shared,
    (role, (monitor, fireflies)): (Arc<tessera_route::Role>, Wlcg),
    stop: watch::Receiver<bool>,
) -> anyhow::Result<(SocketAddr, Arc<tessera_xrootd::Stats>, JoinHandle<()>)> {
    let addr = l.local_addr()?;
    let stats = Arc::new(tessera_xrootd::Stats::default());
    let base = crate::xrootd_config(
        cfg,
        role,
        Arc::clone(&stats),
        shared.tls.clone(),
        shared.buffers.clone(),
        shared.conns.clone(),
    );
    let xcfg = Arc::new(tessera_xrootd::XrootdConfig {
        tokens: shared.validator.clone(),
        macaroons: Some(Arc::clone(&shared.macaroons)),
        gsi: shared.gsi.clone(),
        federation: shared.federation.clone(),
        monitor,
        fireflies,
        ..base
    });
    let task = tokio::spawn(tessera_xrootd::serve(l, Some(core.clone()), xcfg, stop));
    Ok((addr, stats, task))
}

/// What the listeners share.
struct Shared {
    tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
    /// HTTPS asks for client certificates when `[x509]` is on.
    https_tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
    x509: Option<Arc<tessera_auth::x509::X509Auth>>,
    /// Macaroons issued over HTTPS, taken by both protocols.
    macaroons: Arc<tessera_auth::macaroon::Macaroons>,
    /// XRootD's gsi, when `[x509]` offers it.
    gsi: Option<Arc<tessera_xrootd::gsi::Gsi>>,
    validator: Option<Arc<tessera_auth::Validator>>,
    buffers: tessera_core::Budget,
    conns: tessera_core::ConnLimits,
    federation: Option<Arc<tessera_fed::Federation>>,
    client_tls: Arc<tokio_rustls::rustls::ClientConfig>,
}

/// Listening sockets a process keeps across phases (a metadata node going
/// from standby to active and back): connections that arrive between two
/// phases wait in the backlog for the next one instead of being refused
/// (XrdCl waits out its connection window after a refusal).
pub(crate) struct Bound(Vec<std::net::TcpListener>);

impl Bound {
    pub(crate) fn new(addrs: impl IntoIterator<Item = SocketAddr>) -> anyhow::Result<Bound> {
        let mut v = Vec::new();
        for a in addrs {
            let l = std::net::TcpListener::bind(a).with_context(|| format!("binding {a}"))?;
            l.set_nonblocking(true)?;
            v.push(l);
        }
        Ok(Bound(v))
    }
}

/// `addr` bound (a copy of the socket `bound` keeps for it, if any), or
/// why not.
pub(crate) async fn bind(
    bound: Option<&Bound>,
    addr: SocketAddr,
    what: &str,
) -> anyhow::Result<TcpListener> {
    if let Some(l) = bound.and_then(|b| b.0.iter().find(|l| l.local_addr().ok() == Some(addr))) {
        return Ok(TcpListener::from_std(l.try_clone()?)?);
    }
    TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {what} listener {addr}"))
}

/// The namespace opened and the core service over it (with the dev
/// filesystems in dev mode).
async fn open_core(cfg: &Config, gate: Option<tessera_meta::Gate>) -> anyhow::Result<Core> {
    let meta_dir = cfg.meta_dir();
    std::fs::create_dir_all(&meta_dir)
        .with_context(|| format!("creating {}", meta_dir.display()))?;
    let opts = MetaOptions {
        durability: match cfg.meta.durability {
            DurabilityCfg::Sync => Durability::Sync,
            DurabilityCfg::Buffered => Durability::Buffered,
        },
        block_cache_bytes: tessera_types::parse_size(&cfg.meta.block_cache)? as usize,
        // A metadata node of an HA service keeps RocksDB on CephFS:
        // buffered log appends let one sync cover concurrent commits
        // there (bench-namespace --ha: 16 writers 263/s -> 1,191/s).
        buffer_wal: gate.is_some(),
        gate,
        ..MetaOptions::default()
    };
    let meta = Arc::new(
        MetaStore::open(&meta_dir, opts)
            .with_context(|| format!("opening namespace in {}", meta_dir.display()))?,
    );
    let metrics = Arc::new(Metrics::new(VERSION));
    let core = Core::new(meta, metrics, Arc::new(crate::access_log(cfg)?))?;
    let (read_cap, write_cap) = cfg.io.capacities()?;
    core.set_io_capacity(read_cap, write_cap);
    core.set_io_timeout(std::time::Duration::from_secs(cfg.data.io_timeout_s.max(1)));
    if cfg.dev_filesystems {
        crate::register_dev_filesystems(&core, &cfg.data_dir).await?;
        crate::make_dev_data_dir(&core, cfg).await?;
    }
    Ok(core)
}

/// Whether this process is a metadata service (a cluster secret: gateways
/// register with it and opens are redirected to them) or serves alone.
struct Roles {
    cluster: Option<ClusterServer>,
    sweeper: Option<JoinHandle<()>>,
    /// What both front-ends ask where a request is served.
    role: Arc<tessera_route::Role>,
}

impl Roles {
    fn of(cfg: &Config, core: &Core) -> anyhow::Result<Roles> {
        let Some(f) = &cfg.cluster.secret_file else {
            return Ok(Roles {
                cluster: None,
                sweeper: None,
                role: Arc::default(),
            });
        };
        let secret = crate::dev::read_secret(f)?;
        let registry = Arc::new(tessera_cluster::Registry::default());
        let svc = tessera_cluster::ClusterService::new(
            core.clone(),
            secret.as_bytes(),
            Arc::clone(&registry),
        );
        let lease = std::time::Duration::from_secs(cfg.cluster.write_lease_secs.max(1));
        let sweeper = Some(svc.spawn_lease_sweeper(lease));
        let key = tessera_cluster::CapKey::new(secret.as_bytes());
        let sites = tessera_cluster::SiteMap::new(&cfg.cluster.client_sites)
            .map_err(|e| anyhow::anyhow!("cluster.client_sites: {e}"))?;
        Ok(Roles {
            cluster: Some(svc.server()),
            sweeper,
            role: Arc::new(tessera_route::Role::Mgm(tessera_route::Mgm {
                registry,
                key,
                cap_ttl: cfg.cluster.cap_ttl_secs,
                sites,
            })),
        })
    }
}

/// The admin gRPC API (and the cluster service) on `l`. It takes users'
/// bearer tokens for the calls about themselves (quota ls/show).
fn admin_api(
    cfg: &Config,
    core: &Core,
    l: TcpListener,
    secret: String,
    validator: &Option<Arc<tessera_auth::Validator>>,
    (cluster, fed, srr): (
        Option<ClusterServer>,
        Option<Arc<tessera_fed::Federation>>,
        Srr,
    ),
    mut stop: watch::Receiver<bool>,
) -> anyhow::Result<JoinHandle<()>> {
    let auth = Arc::new(
        tessera_admin::AdminAuth::new(secret)
            .with_tokens(validator.clone())
            .with_audit(Arc::new(crate::audit_log(cfg)?)),
    );
    let report = srr.map(|r| tessera_admin::report(r, Arc::clone(&auth)));
    let svc = tessera_admin::services(core.clone(), auth, fed);
    Ok(tokio::spawn(async move {
        let incoming = tonic::transport::server::TcpIncoming::from(l).with_nodelay(Some(true));
        let res = tonic::transport::Server::builder()
            .add_service(svc.namespace)
            .add_service(svc.quota)
            .add_service(svc.fs)
            .add_service(svc.fsck)
            .add_service(svc.access)
            .add_service(svc.recycle)
            .add_service(svc.versions)
            .add_service(svc.balance)
            .add_optional_service(svc.federation)
            .add_optional_service(report)
            .add_optional_service(cluster)
            .serve_with_incoming_shutdown(incoming, async move {
                let _ = stop.changed().await;
            })
            .await;
        if let Err(e) = res {
            tracing::error!("admin API stopped: {e}");
        }
    }))
}

/// Background repair, the recycle bins' purge, filesystem probes and the
/// write-lease sweeper.
fn background(
    cfg: &Config,
    core: &Core,
    sweeper: Option<JoinHandle<()>>,
    stop: &watch::Receiver<bool>,
    tasks: &mut Vec<JoinHandle<()>>,
) {
    if cfg.fsck.repair_interval_secs > 0 {
        tasks.push(tokio::spawn(repair::run(
            core.clone(),
            std::time::Duration::from_secs(cfg.fsck.repair_interval_secs),
            stop.clone(),
        )));
    }
    if cfg.recycle.purge_interval_secs > 0 {
        tasks.push(tokio::spawn(repair::purge(
            core.clone(),
            std::time::Duration::from_secs(cfg.recycle.purge_interval_secs),
            cfg.recycle.purge_budget as usize,
            stop.clone(),
        )));
    }
    if cfg.balance.interval_secs > 0 {
        tasks.push(tokio::spawn(repair::balance(
            core.clone(),
            std::time::Duration::from_secs(cfg.balance.interval_secs),
            stop.clone(),
        )));
    }
    if cfg.data.probe_interval_s > 0 {
        let c = core.clone();
        tasks.push(tokio::spawn(repair::probes(
            move |d| c.probe_filesystems(d),
            std::time::Duration::from_secs(cfg.data.probe_interval_s),
            std::time::Duration::from_secs(cfg.data.io_timeout_s.max(1)),
            stop.clone(),
        )));
    }
    if let Some(s) = sweeper {
        tasks.push(abort_on_stop(s, stop.clone()));
    }
    tasks.push(tokio::spawn(crate::alloc::trim_loop(
        core.metrics_handle(),
        stop.clone(),
    )));
}

/// The federated views, their endpoints probed until `stop`; TLS
/// endpoints trusted as TPC peers are. Both listeners and the admin API
/// share them. They are `[federation]`'s, or, once an admin changed them
/// at run time (`tessera fed endpoint`), the data directory's
/// `federation.toml`; with neither, an empty federation endpoints can be
/// added to. Data gateways of a scale-out have none.
fn federation(
    cfg: &Config,
    tls: Option<Arc<tokio_rustls::rustls::ClientConfig>>,
    stop: &tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<Option<Arc<tessera_fed::Federation>>> {
    if cfg.role == crate::config::Role::Gateway {
        return Ok(None);
    }
    let state = cfg.data_dir.join("federation.toml");
    let fcfg = match tessera_fed::saved::load(&state).map_err(|e| anyhow::anyhow!(e))? {
        Some(saved) => {
            tracing::info!(
                "federation from {} (changed at run time), not [federation]",
                state.display()
            );
            saved
        }
        None => cfg.federation.clone(),
    };
    let mut fcfg = fcfg;
    if fcfg.credentials_dir.is_none() {
        fcfg.credentials_dir = Some(cfg.data_dir.join("fed-credentials"));
    }
    // WebDAV endpoints' listings are read with the HTTPS front-end's XML
    // reader (the one its own request bodies go through).
    let fed = tessera_fed::Federation::new(fcfg, tls)
        .map_err(|e| anyhow::anyhow!("[federation]: {e}"))?
        .with_dav(tessera_https::davlisting::parse_multistatus)
        .with_state_file(state);
    let fed = Arc::new(fed);
    fed.spawn_probes(stop.clone());
    Ok(Some(fed))
}

/// The HTTPS gateway's configuration.
fn https_config(
    cfg: &Config,
    shared: &Shared,
    role: Arc<tessera_route::Role>,
    dev_issuer: Option<(String, String)>,
) -> anyhow::Result<tessera_https::HttpsConfig> {
    Ok(tessera_https::HttpsConfig {
        tls: shared.https_tls.clone(),
        x509: shared.x509.clone(),
        macaroons: Some(Arc::clone(&shared.macaroons)),
        anonymous: match cfg.https.anonymous {
            config::AnonymousCfg::Nobody => tessera_https::HttpsConfig::default().anonymous,
            config::AnonymousCfg::Owner | config::AnonymousCfg::ReadOnly => {
                tessera_types::Identity::read_only_anonymous("https")
            }
        },
        owner: (cfg.https.anonymous == config::AnonymousCfg::Owner).then(crate::owner_identity),
        basic: match &cfg.https.basic_passwd {
            Some(f) => Some(Arc::new(
                tessera_auth::passwd::Passwd::open(f)
                    .map_err(|e| anyhow::anyhow!("https.basic_passwd: {e}"))?,
            )),
            None => None,
        },
        tpc_tls: Some(Arc::clone(&shared.client_tls)),
        tpc_policy: tessera_core::RemotePolicy::new(&cfg.https.tpc_allow, &cfg.https.tpc_deny)
            .map_err(|e| anyhow::anyhow!("https.tpc_allow/tpc_deny: {e}"))?,
        role,
        http2: cfg.https.http2,
        body_timeout: cfg.https.body_timeout_or_default(),
        send_timeout: cfg.https.send_timeout_or_default(),
        tokens: shared.validator.clone(),
        dev_issuer,
        buffers: shared.buffers.clone(),
        conns: shared.conns.clone(),
        drain: std::time::Duration::from_secs(cfg.server.drain_s),
        ..tessera_https::HttpsConfig::default()
    })
}

/// Re-read the trust store and the mapping files every `every_s` seconds
/// (fetch-crl rewrites CRLs every few hours; no restart needed).
fn x509_refresh(x: Arc<tessera_auth::x509::X509Auth>, every_s: u64) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let every = std::time::Duration::from_secs(every_s.max(1));
        loop {
            tokio::time::sleep(every).await;
            let x = Arc::clone(&x);
            let _ = tokio::task::spawn_blocking(move || x.refresh()).await;
        }
    })
}

/// The Storage Resource Report over `core`, naming the listeners' ports,
/// made anew every `[srr] interval` until `stop` (the first one now).
fn srr(
    cfg: &Config,
    core: &Core,
    xrootd: &Option<TcpListener>,
    https: Option<SocketAddr>,
    stop: &watch::Receiver<bool>,
) -> anyhow::Result<Srr> {
    if !cfg.srr.enabled {
        return Ok(None);
    }
    let xaddr = match xrootd {
        Some(l) => Some(l.local_addr()?),
        None => None,
    };
    let settings = cfg.srr.settings(xaddr, https, cfg.tls.cert.is_some())?;
    let r = Arc::new(tessera_wlcg::srr::Reporter::new(core.clone(), settings));
    let every = std::time::Duration::from_secs(cfg.srr.interval_secs.max(1));
    let (each, mut stop) = (Arc::clone(&r), stop.clone());
    tokio::spawn(async move {
        loop {
            if let Err(e) = each.refresh().await {
                tracing::warn!(error = %e, "storage resource report not made");
            }
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = stop.changed() => return,
            }
        }
    });
    Ok(Some(r))
}
