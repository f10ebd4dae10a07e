//! Metrics of metadata high availability (issue 27): served by the active
//! node (a standby has no metrics listener). Part of [`crate::Metrics`].

use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

type GaugeU = Gauge<u64, AtomicU64>;

pub struct HaMetrics {
    /// The epoch this node is active for (0: no `[ha]`).
    pub epoch: GaugeU,
    /// Milliseconds from this node taking the lease to serving (RocksDB
    /// opened: the replay of the previous node's log).
    pub takeover_ms: GaugeU,
}

impl HaMetrics {
    pub fn register(r: &mut Registry) -> HaMetrics {
        let m = HaMetrics {
            epoch: GaugeU::default(),
            takeover_ms: GaugeU::default(),
        };
        r.register(
            "ha_epoch",
            "The metadata epoch this node is active for: each takeover adds one (0 without [ha])",
            m.epoch.clone(),
        );
        r.register(
            "ha_takeover_ms",
            "Milliseconds from taking the metadata lease to serving (namespace opened)",
            m.takeover_ms.clone(),
        );
        m
    }
}
