//! `--role gateway`: a stateless data gateway. No namespace: it learns the
//! filesystems from the metadata service, serves opens that carry a
//! capability the metadata service signed, reserves and commits writes
//! through the internal API, and redirects everything else back.

use crate::config::Config;
use crate::{dev, tls, Running};
use anyhow::Context;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;

pub async fn start(cfg: &Config) -> anyhow::Result<Running> {
    let p = prepare(cfg).await?;
    serve(cfg, p).await
}

/// A gateway set up and registered, not yet serving.
struct Prepared {
    l: TcpListener,
    addr: SocketAddr,
    advertise: String,
    mgm: String,
    xcfg: Arc<tessera_xrootd::XrootdConfig>,
    metrics: Arc<tessera_obs::Metrics>,
    data: tessera_core::DataPath,
    https: Option<HttpsListener>,
    loops: tokio::task::JoinHandle<()>,
    stats: Arc<tessera_xrootd::Stats>,
    buffers: tessera_core::Budget,
    conns: tessera_core::ConnLimits,
    client: tessera_cluster::ClusterClient,
}

/// A gateway's HTTPS listener: the listener, its address, the address it
/// advertises, its configuration.
type HttpsListener = (
    TcpListener,
    SocketAddr,
    String,
    Arc<tessera_https::HttpsConfig>,
);

async fn prepare(cfg: &Config) -> anyhow::Result<Prepared> {
    let c = &cfg.cluster;
    let secret = dev::read_secret(c.secret_file.as_ref().context("cluster.secret_file")?)?;
    let mgm = c.mgm.clone().context("cluster.mgm")?;
    let mgm_xrootd = c.mgm_xrootd.clone().context("cluster.mgm_xrootd")?;
    let listen = cfg.listen.xrootd.context("listen.xrootd")?;
    let l = TcpListener::bind(listen)
        .await
        .with_context(|| format!("binding XRootD listener {listen}"))?;
    let addr = l.local_addr()?;
    let advertise = c.advertise.clone().unwrap_or_else(|| addr.to_string());
    let client = tessera_cluster::ClusterClient::new(&mgm, &secret)?;
    // Its own counters and access log: the closes of the files it serves.
    let metrics = Arc::new(tessera_obs::Metrics::new(crate::VERSION));
    let data = data_path(cfg, &client, &metrics)?;
    let stats = Arc::new(tessera_xrootd::Stats::default());
    let buffers = cfg.buffers.budget();
    let conns = cfg.limits.conns(crate::limits::raise_nofile());
    let tls = tls::server_of(&cfg.tls)?;
    let key = tessera_cluster::CapKey::new(secret.as_bytes());
    let mgm_https = match cfg.listen.https {
        Some(_) => {
            Some(live_node(c.mgm_https.as_deref().context(
                "cluster.mgm_https (the metadata service's HTTPS endpoint)",
            )?))
        }
        None => None,
    };
    let role = Arc::new(tessera_route::Role::Gateway(tessera_route::Gateway {
        data: data.clone(),
        client: client.clone(),
        key,
        mgm_xrootd: live_node(&mgm_xrootd),
        mgm_https,
        advertise: advertise.clone(),
    }));
    let https = match cfg.listen.https {
        Some(a) => {
            Some(https_listener(cfg, a, tls.clone(), Arc::clone(&role), &buffers, &conns).await?)
        }
        None => None,
    };
    let data_kept = data.clone();
    let client_kept = client.clone();
    let https_adv = https.as_ref().map(|h| h.2.clone()).unwrap_or_default();
    let open_files = Arc::clone(&stats.open_files);
    let loops = tessera_cluster::start_gateway_loops(
        client.clone(),
        data.clone(),
        advertise.clone(),
        https_adv,
        c.site.clone(),
        open_files,
    )
    .await
    .with_context(|| format!("registering with the metadata service at {mgm}"))?;
    let base = crate::xrootd_config(
        cfg,
        role,
        Arc::clone(&stats),
        tls,
        buffers.clone(),
        conns.clone(),
    );
    let xcfg = Arc::new(tessera_xrootd::XrootdConfig {
        site: c.site.clone(),
        ..base
    });
    Ok(Prepared {
        l,
        addr,
        advertise,
        mgm,
        xcfg,
        metrics,
        data: data_kept,
        https,
        loops,
        stats,
        buffers,
        conns,
        client: client_kept,
    })
}

/// Where clients are sent back to the metadata service: the first of the
/// addresses `list` names (comma-separated) that takes connections,
/// looked at every second when there are several (the nodes of a highly
/// available metadata service; a standby sends clients on to the active
/// one, a dead node would fail them).
fn live_node(list: &str) -> tessera_core::MgmAddr {
    let nodes: Vec<String> = list
        .split(',')
        .map(|a| a.trim().to_string())
        .filter(|a| !a.is_empty())
        .collect();
    let addr = tessera_core::MgmAddr::new(nodes.first().cloned().unwrap_or_default());
    if nodes.len() > 1 {
        let a = addr.clone();
        tokio::spawn(async move {
            // Until the gateway's listeners are gone.
            while a.in_use() {
                for n in &nodes {
                    let up = tokio::time::timeout(
                        std::time::Duration::from_millis(500),
                        tokio::net::TcpStream::connect(n.as_str()),
                    )
                    .await;
                    if matches!(up, Ok(Ok(_))) {
                        a.set(n);
                        break;
                    }
                }
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        });
    }
    addr
}

/// Serve what `prepare` set up until the server stops.
async fn serve(cfg: &Config, p: Prepared) -> anyhow::Result<Running> {
    let Prepared {
        l,
        addr,
        advertise,
        mgm,
        xcfg,
        metrics,
        data,
        https,
        loops,
        stats,
        buffers,
        conns,
        client,
    } = p;
    let (data_for_health, data_for_probes) = (data.clone(), data);
    let metrics_l = TcpListener::bind(cfg.listen.metrics)
        .await
        .with_context(|| format!("binding metrics listener {}", cfg.listen.metrics))?;
    let metrics_addr = metrics_l.local_addr()?;
    let (stop, stop_rx) = watch::channel(false);
    let mut tasks = vec![
        tokio::spawn(tessera_xrootd::serve(l, None, xcfg, stop_rx.clone())),
        tokio::spawn(crate::alloc::trim_loop(
            Arc::clone(&metrics),
            stop_rx.clone(),
        )),
    ];
    let source = crate::http::Source::Gateway {
        metrics,
        data: data_for_health,
    };
    let load = crate::http::Load {
        buffers: buffers.clone(),
        conns: conns.clone(),
        tokens: None,
        federation: None,
    };
    tasks.push(tokio::spawn(crate::http::serve(
        metrics_l,
        source,
        load,
        stop_rx.clone(),
    )));
    let (mut https_addr, mut https_stats) = (None, None);
    if let Some((l, local, _, hcfg)) = https {
        https_addr = Some(local);
        https_stats = Some(Arc::clone(&hcfg.stats));
        tasks.push(tokio::spawn(tessera_https::serve(
            l,
            None,
            hcfg,
            stop_rx.clone(),
        )));
    }
    if cfg.data.probe_interval_s > 0 {
        tasks.push(tokio::spawn(crate::repair::probes(
            move |t| data_for_probes.probe_filesystems(t),
            std::time::Duration::from_secs(cfg.data.probe_interval_s),
            std::time::Duration::from_secs(cfg.data.io_timeout_s.max(1)),
            stop_rx.clone(),
        )));
    }
    let registration = loops.abort_handle();
    let keepalive = crate::abort_on_stop(loops, stop_rx);
    tracing::info!(xrootd = %addr, %advertise, %mgm, "data gateway started");
    let none = SocketAddr::from(([0, 0, 0, 0], 0));
    Ok(Running {
        admin_addr: none,
        metrics_addr,
        xrootd_addr: Some(addr),
        https_addr,
        xrootd_stats: Some(stats),
        https_stats,
        buffers,
        stop,
        tasks: {
            tasks.push(keepalive);
            tasks
        },
        core: None,
        registered: Some((client, advertise, registration)),
    })
}

/// The data path of a gateway: damaged stripes that reads run into go to
/// the metadata service, which keeps them for fsck and repairs them in
/// the background.
fn data_path(
    cfg: &Config,
    client: &tessera_cluster::ClusterClient,
    metrics: &Arc<tessera_obs::Metrics>,
) -> anyhow::Result<tessera_core::DataPath> {
    let access = Arc::new(crate::access_log(cfg)?);
    let mut data = tessera_core::DataPath::from_records(Vec::new())
        .reporting_to(client.ledger(tokio::runtime::Handle::current()))
        .observed_by(Arc::clone(metrics), access);
    if cfg.meta.durability == crate::config::DurabilityCfg::Buffered {
        data = data.buffered();
    }
    data.set_io_timeout(std::time::Duration::from_secs(cfg.data.io_timeout_s.max(1)));
    Ok(data)
}

/// A gateway's HTTPS listener (file data with capabilities; the rest goes
/// to the metadata service's HTTPS endpoint): the listener, its address,
/// the address it advertises, its configuration.
async fn https_listener(
    cfg: &Config,
    a: SocketAddr,
    tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
    role: Arc<tessera_route::Role>,
    buffers: &tessera_core::Budget,
    conns: &tessera_core::ConnLimits,
) -> anyhow::Result<(
    TcpListener,
    SocketAddr,
    String,
    Arc<tessera_https::HttpsConfig>,
)> {
    let tls = tls.context("an HTTPS listener needs tls.cert and tls.key")?;
    let l = TcpListener::bind(a)
        .await
        .with_context(|| format!("binding HTTPS listener {a}"))?;
    let local = l.local_addr()?;
    let adv = cfg
        .cluster
        .advertise_https
        .clone()
        .unwrap_or_else(|| local.to_string());
    let hcfg = Arc::new(tessera_https::HttpsConfig {
        tls: Some(tls),
        role,
        http2: cfg.https.http2,
        body_timeout: cfg.https.body_timeout_or_default(),
        send_timeout: cfg.https.send_timeout_or_default(),
        buffers: buffers.clone(),
        conns: conns.clone(),
        drain: std::time::Duration::from_secs(cfg.server.drain_s),
        ..tessera_https::HttpsConfig::default()
    });
    Ok((l, local, adv, hcfg))
}
