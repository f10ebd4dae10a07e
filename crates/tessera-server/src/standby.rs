//! A standby metadata node's listeners (issue 27): XRootD and HTTPS with
//! no namespace behind them, sending every client to the active node
//! (`kXR_redirect`, 307), or asking it to come back in a second while no
//! active node is known; metrics (the HA gauges; `/readyz` says standby).
//! Stopped at once (no drain: nothing is served here) when the node
//! becomes active.

use crate::config::Config;
use crate::start::bind;
use std::sync::Arc;
use tessera_core::ActiveNode;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub(crate) struct Standby {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Standby {
    pub(crate) async fn start(
        cfg: &Config,
        active: ActiveNode,
        bound: &crate::start::Bound,
    ) -> anyhow::Result<Standby> {
        let tls = crate::tls::server_of(&cfg.tls)?;
        let (stop, rx) = watch::channel(false);
        let mut tasks = Vec::new();
        let buffers = cfg.buffers.budget();
        let role = Arc::new(tessera_route::Role::Standby(active.clone()));
        let conns = cfg.limits.conns(crate::limits::raise_nofile());
        if let Some(a) = cfg.listen.xrootd {
            let l = bind(Some(bound), a, "XRootD").await?;
            let x = crate::xrootd_config(
                cfg,
                Arc::clone(&role),
                Arc::default(),
                tls.clone(),
                buffers.clone(),
                conns.clone(),
            );
            let x = Arc::new(tessera_xrootd::XrootdConfig {
                drain: std::time::Duration::ZERO,
                ..x
            });
            tasks.push(tokio::spawn(tessera_xrootd::serve(l, None, x, rx.clone())));
        }
        // Metrics: the HA gauges (never ready: no namespace here).
        let l = bind(None, cfg.listen.metrics, "metrics").await?;
        tasks.push(tokio::spawn(crate::http::serve(
            l,
            crate::http::Source::Standby {
                metrics: Arc::new(tessera_obs::Metrics::new(crate::VERSION)),
                active: active.clone(),
            },
            crate::http::Load {
                buffers: buffers.clone(),
                conns: conns.clone(),
                tokens: None,
                federation: None,
            },
            rx.clone(),
        )));
        if let Some(a) = cfg.listen.https {
            let l = bind(Some(bound), a, "HTTPS").await?;
            let h = Arc::new(tessera_https::HttpsConfig {
                tls,
                role,
                buffers,
                conns,
                drain: std::time::Duration::ZERO,
                ..tessera_https::HttpsConfig::default()
            });
            tasks.push(tokio::spawn(tessera_https::serve(l, None, h, rx)));
        }
        Ok(Standby { stop, tasks })
    }

    /// Close the listeners and every connection.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
    }
}
