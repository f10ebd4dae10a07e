//! Background upkeep: the repair (every interval, the files that reads
//! found damaged, kept in the namespace store, are checked block by block
//! and their broken stripes rebuilt: `Core::repair_damaged`), the purge of
//! the recycle bins, the balancer and the filesystems' health probes.

use std::time::Duration;
use tessera_core::Core;
use tokio::sync::watch;

pub async fn run(core: Core, every: Duration, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let c = core.clone();
        match tokio::task::spawn_blocking(move || c.repair_damaged()).await {
            Ok(Ok(r)) => {
                if r.files_repaired > 0 || !r.failed.is_empty() {
                    tracing::info!(
                        files = r.files_repaired,
                        stripes = r.stripes_rebuilt,
                        failed = r.failed.len(),
                        "background repair of damaged files"
                    );
                }
                for (fid, e) in r.failed {
                    tracing::warn!(fid, "background repair failed: {e}");
                }
            }
            Ok(Err(e)) => tracing::warn!("background repair: {e}"),
            Err(e) => tracing::warn!("background repair stopped: {e}"),
        }
    }
}

/// Purge the recycle bins every `every` (or when a bin passes its volume
/// cap), at most `budget` inodes a round.
pub async fn purge(core: Core, every: Duration, budget: usize, mut stop: watch::Receiver<bool>) {
    let kick = core.recycle_kick();
    let mut again = false;
    loop {
        // A round that left work goes on after a breath, not a whole interval.
        let wait = if again {
            Duration::from_millis(100)
        } else {
            every
        };
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep(wait) => {}
            _ = kick.notified() => {}
        }
        again = false;
        let c = core.clone();
        match tokio::task::spawn_blocking(move || c.recycle_purge_round(budget)).await {
            Ok(Ok(p)) if p.entries > 0 || p.left > 0 => {
                again = p.left > 0;
                tracing::info!(
                    entries = p.entries,
                    bytes = p.bytes,
                    inodes = p.inodes,
                    left = p.left,
                    "recycle bins purged"
                )
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) if e.kind() == tessera_types::ErrorKind::Unavailable => {}
            Ok(Err(e)) => tracing::warn!("recycle purge: {e}"),
            Err(e) => tracing::warn!("recycle purge stopped: {e}"),
        }
    }
}

/// A balancer round every `every`, at once when woken (a filesystem
/// added, `tessera balance start`), and again soon after a round that
/// moved something.
pub async fn balance(core: Core, every: Duration, mut stop: watch::Receiver<bool>) {
    let mut again = false;
    loop {
        let wait = if again {
            Duration::from_millis(200)
        } else {
            every
        };
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep(wait) => {}
            _ = core.balance_woken() => {}
        }
        let c = core.clone();
        again = match tokio::task::spawn_blocking(move || c.balance_round()).await {
            Ok(Ok(r)) => {
                if r.moved > 0 || r.failed > 0 {
                    tracing::info!(
                        moved = r.moved,
                        bytes = r.bytes,
                        failed = r.failed,
                        "balancer round"
                    );
                }
                r.moved > 0
            }
            Ok(Err(e)) if e.kind() == tessera_types::ErrorKind::Unavailable => false,
            Ok(Err(e)) => {
                tracing::warn!("balancer: {e}");
                false
            }
            Err(e) => {
                tracing::warn!("balancer stopped: {e}");
                return;
            }
        };
    }
}

/// Probe the filesystems every `every` (`probe`: the core's or a gateway's
/// data path), each probe bounded by `deadline`.
pub async fn probes(
    probe: impl Fn(Duration) + Clone + Send + Sync + 'static,
    every: Duration,
    deadline: Duration,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let p = probe.clone();
        if let Err(e) = tokio::task::spawn_blocking(move || p(deadline)).await {
            tracing::warn!("filesystem probes stopped: {e}");
            return;
        }
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep(every) => {}
        }
    }
}
