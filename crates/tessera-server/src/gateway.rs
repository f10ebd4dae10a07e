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
    let (deregister_client, advertise_for_deregister) = (client.clone(), advertise.clone());
    // Its own counters and access log: the closes of the files it serves.
    let metrics = Arc::new(tessera_obs::Metrics::new(crate::VERSION));
    let access = Arc::new(crate::access_log(cfg)?);
    // Damaged stripes that reads run into go to the metadata service,
    // which keeps them for fsck and repairs them in the background.
    let mut data = tessera_core::DataPath::from_records(Vec::new())
        .reporting_to(client.ledger(tokio::runtime::Handle::current()))
        .observed_by(Arc::clone(&metrics), access);
    if cfg.meta.durability == crate::config::DurabilityCfg::Buffered {
        data = data.buffered();
    }
    data.set_io_timeout(std::time::Duration::from_secs(cfg.data.io_timeout_s.max(1)));
    let stats = Arc::new(tessera_xrootd::Stats::default());
    let buffers = cfg.buffers.budget();
    let conns = cfg.limits.conns(crate::limits::raise_nofile());
    let tls = match (&cfg.tls.cert, &cfg.tls.key) {
        (Some(c), Some(k)) => Some(tls::server_config(c, k)?),
        _ => None,
    };
    // HTTPS: file data with capabilities; the rest goes to the metadata
    // service's HTTPS endpoint.
    let https = match cfg.listen.https {
        Some(a) => {
            let tls = tls
                .clone()
                .context("an HTTPS listener needs tls.cert and tls.key")?;
            let mgm_https = c
                .mgm_https
                .clone()
                .context("cluster.mgm_https (the metadata service's HTTPS endpoint)")?;
            let l = TcpListener::bind(a)
                .await
                .with_context(|| format!("binding HTTPS listener {a}"))?;
            let local = l.local_addr()?;
            let adv = c
                .advertise_https
                .clone()
                .unwrap_or_else(|| local.to_string());
            let hcfg = Arc::new(tessera_https::HttpsConfig {
                tls: Some(tls),
                mode: tessera_https::Mode::Gateway {
                    data: data.clone(),
                    client: client.clone(),
                    key: tessera_cluster::CapKey::new(secret.as_bytes()),
                    mgm: mgm_https,
                    advertise: advertise.clone(),
                },
                http2: cfg.https.http2,
                body_timeout: cfg.https.body_timeout(),
                buffers: buffers.clone(),
                conns: conns.clone(),
                drain: std::time::Duration::from_secs(cfg.server.drain_s),
                ..tessera_https::HttpsConfig::default()
            });
            Some((l, local, adv, hcfg))
        }
        None => None,
    };
    let data_for_health = data.clone();
    let data_for_probes = data.clone();
    let loops = tessera_cluster::start_gateway_loops(
        client.clone(),
        data.clone(),
        advertise.clone(),
        https
            .as_ref()
            .map(|(_, _, adv, _)| adv.clone())
            .unwrap_or_default(),
        c.site.clone(),
        Arc::clone(&stats.open_files),
    )
    .await
    .with_context(|| format!("registering with the metadata service at {mgm}"))?;
    let mode = tessera_xrootd::Mode::Gateway {
        data,
        client,
        key: tessera_cluster::CapKey::new(secret.as_bytes()),
        mgm: mgm_xrootd,
        advertise: advertise.clone(),
    };
    let xcfg = Arc::new(tessera_xrootd::XrootdConfig {
        site: c.site.clone(),
        ..crate::xrootd_config(
            cfg,
            mode,
            Arc::clone(&stats),
            tls,
            buffers.clone(),
            conns.clone(),
        )
    });
    let metrics_l = TcpListener::bind(cfg.listen.metrics)
        .await
        .with_context(|| format!("binding metrics listener {}", cfg.listen.metrics))?;
    let metrics_addr = metrics_l.local_addr()?;
    let (stop, stop_rx) = watch::channel(false);
    let serve = tokio::spawn(tessera_xrootd::serve(l, None, xcfg, stop_rx.clone()));
    let http = tokio::spawn(crate::http::serve(
        metrics_l,
        crate::http::Source::Gateway {
            metrics,
            data: data_for_health,
        },
        crate::http::Load {
            buffers: buffers.clone(),
            conns: conns.clone(),
            tokens: None,
        },
        stop_rx.clone(),
    ));
    let mut tasks = vec![serve, http];
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
        let d = data_for_probes;
        tasks.push(tokio::spawn(crate::repair::probes(
            move |t| d.probe_filesystems(t),
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
        registered: Some((deregister_client, advertise_for_deregister, registration)),
    })
}
