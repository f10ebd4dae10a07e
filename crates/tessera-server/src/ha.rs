//! One node of a highly available metadata service (issue 27,
//! docs/ha.md). A supervisor task goes round:
//!
//! 1. as a standby, send clients to the active node (`standby.rs`; the
//!    client listeners stay bound from phase to phase, so a client that
//!    connects between two phases waits in the backlog, never refused);
//! 2. meanwhile mount the namespace's CephFS afresh (`ceph-fuse`, its own
//!    client) and arm the leadership with that mount's address (recorded
//!    with the lease, so the next active node fences the mount too); wait
//!    until this node holds the lease (the leadership thread fenced the
//!    previous holder and set the next epoch before it says so);
//! 3. as the active node, open the namespace on the mount and serve every
//!    role (`start_gated`), each namespace change allowed only while the
//!    lease of this epoch is provable (the gate); when it is not (a late
//!    renewal, a lost lease, a fence), the node acknowledges nothing more,
//!    stops serving, drops the mount, and starts over as a standby.

use crate::config::Config;
use crate::standby::Standby;
use crate::Running;
use std::sync::Arc;
use std::time::Duration;
use tessera_backend::{FuseMount, FuseSpec, Leadership, RadosLease, Role};
use tessera_core::{ActiveNode, Advert};
use tokio::sync::watch;

/// The attribute of `/` that holds the epoch of the active node.
pub const EPOCH_ATTR: &[u8] = b"sys.tessera.ha.epoch";

/// How often the supervisor looks at the leadership.
const TICK: Duration = Duration::from_millis(50);

pub async fn start(cfg: &Config, secret: String) -> anyhow::Result<Running> {
    let ha = cfg.ha.clone();
    let advert = ha.advert(&cfg.listen).map_err(anyhow::Error::msg)?;
    let ha_dir = cfg.data_dir.join("ha");
    std::fs::create_dir_all(&ha_dir)?;
    let spec = FuseSpec {
        conf: ha.ceph_conf.clone(),
        id: ha.ceph_id.clone(),
        fs: ha.fs.clone(),
        mountpoint: ha.mountpoint.clone().unwrap_or_else(|| ha_dir.join("mnt")),
        asok: ha_dir.join("mount.asok"),
    };
    let duration = ha.lease;
    let conf = ha.ceph_conf.to_string_lossy().into_owned();
    let (pool, object, node) = (ha.pool.clone(), ha.object.clone(), ha.node.clone());
    let connect = move || RadosLease::connect(&conf, &pool, &object, &node, duration);
    let fence = ha.fence.max(Duration::from_secs(1));
    let said = advert.to_string();
    let leader =
        tokio::task::spawn_blocking(move || Leadership::start_with(connect, fence, said)).await??;
    // The client listeners stay bound from phase to phase.
    let bound = crate::start::Bound::new(cfg.listen.xrootd.into_iter().chain(cfg.listen.https))?;
    let (stop, stop_rx) = watch::channel(false);
    let node = Node {
        bound,
        cfg: cfg.clone(),
        secret,
        leader: Arc::new(leader),
        spec,
        advert,
    };
    let task = tokio::spawn(supervise(node, stop_rx));
    tracing::info!(node = %ha.node, "metadata node started (standby until it holds the lease)");
    Ok(Running {
        admin_addr: cfg.listen.admin,
        metrics_addr: cfg.listen.metrics,
        xrootd_addr: cfg.listen.xrootd,
        https_addr: cfg.listen.https,
        xrootd_stats: None,
        https_stats: None,
        buffers: cfg.buffers.budget(),
        stop,
        tasks: vec![task],
        core: None,
        registered: None,
    })
}

struct Node {
    bound: crate::start::Bound,
    cfg: Config,
    secret: String,
    leader: Arc<Leadership>,
    spec: FuseSpec,
    advert: Advert,
}

impl Node {
    /// The active node as this one sees it (never itself: a standby that
    /// finds its own words recorded waits for the next holder).
    fn active(&self) -> ActiveNode {
        let (l, me) = (Arc::clone(&self.leader), self.advert.clone());
        ActiveNode::new(move || {
            l.active()
                .map(|(e, s)| (e, Advert::parse(&s)))
                .filter(|(_, a)| *a != me)
        })
    }

    /// This node's role now.
    fn role(&self) -> Role {
        self.leader.role()
    }
}

/// Whether `stop` has been asked (or its sender is gone).
fn stopping(stop: &watch::Receiver<bool>) -> bool {
    *stop.borrow() || stop.has_changed().is_err()
}

async fn supervise(n: Node, mut stop: watch::Receiver<bool>) {
    while !stopping(&stop) {
        // Clients are sent on at once, while the mount is made.
        let listeners = standby_listeners(&n, &mut stop).await;
        let mount = fresh_mount(&n, &mut stop).await;
        let epoch = match &mount {
            Some(_) => until_active(&n, &mut stop).await,
            None => None,
        };
        if let Some(l) = listeners {
            l.stop().await;
        }
        if let (Some(m), Some(epoch)) = (&mount, epoch) {
            active(&n, m, epoch, &mut stop).await;
        }
        if let Some(m) = mount {
            drop_mount(m).await;
        }
    }
    // Give the lease up (a clean stop: the next node need not wait for it
    // to run out); the thread ends within a renewal period.
    let l = Arc::clone(&n.leader);
    drop(n);
    let _ = tokio::task::spawn_blocking(move || drop(l)).await;
}

/// Mount afresh and arm the leadership with the mount's address (retried
/// every second until it works or the node stops).
async fn fresh_mount(n: &Node, stop: &mut watch::Receiver<bool>) -> Option<FuseMount> {
    loop {
        let spec = n.spec.clone();
        let r = tokio::task::spawn_blocking(move || {
            let m = FuseMount::mount(&spec, Duration::from_secs(30))?;
            let a = m.address()?;
            Ok::<_, tessera_backend::BackendError>((m, a))
        })
        .await;
        match r {
            Ok(Ok((m, addr))) => {
                tracing::info!(mount = %addr, "namespace file system mounted");
                n.leader.arm(vec![addr]);
                return Some(m);
            }
            Ok(Err(e)) => tracing::warn!("mounting the namespace file system: {e}"),
            Err(e) => tracing::warn!("mounting the namespace file system: {e}"),
        }
        tokio::select! {
            _ = stop.changed() => return None,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

async fn drop_mount(m: FuseMount) {
    let _ = tokio::task::spawn_blocking(move || drop(m)).await;
}

/// The standby's listeners (retried until they start or the node stops).
async fn standby_listeners(n: &Node, stop: &mut watch::Receiver<bool>) -> Option<Standby> {
    loop {
        match Standby::start(&n.cfg, n.active(), &n.bound).await {
            Ok(s) => return Some(s),
            Err(e) => tracing::warn!("standby listeners: {e:#}"),
        }
        tokio::select! {
            _ = stop.changed() => return None,
            _ = tokio::time::sleep(TICK) => {}
        }
    }
}

/// Wait until this node is active: its epoch, or `None` when it stops.
async fn until_active(n: &Node, stop: &mut watch::Receiver<bool>) -> Option<u64> {
    loop {
        if let Role::Active { epoch } = n.role() {
            return Some(epoch);
        }
        tokio::select! {
            _ = stop.changed() => return None,
            _ = tokio::time::sleep(TICK) => {}
        }
    }
}

/// Serve every role as the active node of `epoch` until the lease is lost
/// (or the node stops).
async fn active(n: &Node, mount: &FuseMount, epoch: u64, stop: &mut watch::Receiver<bool>) {
    let mut cfg = n.cfg.clone();
    let dir = mount.path().join(&n.cfg.ha.dir);
    cfg.meta.dir = Some(dir.clone());
    let l = Arc::clone(&n.leader);
    let gate: tessera_meta::Gate = Arc::new(move || match l.role() {
        Role::Active { epoch: e } if e == epoch => Ok(()),
        _ => Err(format!(
            "this node's lease (epoch {epoch}) is lost or unproven"
        )),
    });
    let t0 = std::time::Instant::now();
    let started = async {
        tokio::fs::create_dir_all(&dir).await?;
        crate::start::start_gated(&cfg, n.secret.clone(), Some(gate), Some(&n.bound)).await
    };
    let running = match started.await {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(
                epoch,
                "the active node cannot serve ({e:#}): giving the lease up"
            );
            n.leader.resign();
            return;
        }
    };
    let took = t0.elapsed();
    if let Some(core) = running.core() {
        core.metrics().ha.epoch.set(epoch);
        core.metrics().ha.takeover_ms.set(took.as_millis() as u64);
        // The epoch in the namespace too (its first change of the epoch).
        let r = core
            .xattr_set(
                &tessera_types::Identity::root("ha"),
                tessera_types::NsPath::root(),
                EPOCH_ATTR.to_vec(),
                epoch.to_string().into_bytes(),
            )
            .await;
        if let Err(e) = r {
            tracing::warn!(epoch, "recording the epoch in the namespace: {e}");
        }
    }
    tracing::info!(epoch, namespace = %dir.display(), ?took, "active metadata node: serving");
    loop {
        if n.role() != (Role::Active { epoch }) {
            tracing::warn!(
                epoch,
                "lease lost: acknowledging nothing more, back to standby"
            );
            break;
        }
        tokio::select! {
            _ = stop.changed() => break,
            _ = tokio::time::sleep(TICK) => {}
        }
    }
    if n.role() != (Role::Active { epoch }) {
        // Its mount may be fenced: RocksDB closing a log it cannot sync
        // aborts the process (an assertion in Debian's librocksdb), so a
        // node that lost its lease never closes that store; it is left
        // open, unused, and the mount detached under it.
        if let Some(core) = running.core() {
            std::mem::forget(core.clone());
        }
    }
    if let Err(e) = running.shutdown().await {
        tracing::warn!("closing the namespace: {e:#}");
    }
}
