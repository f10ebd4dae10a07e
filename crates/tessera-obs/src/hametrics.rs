//! Metrics of metadata high availability (issue 27), on the active node
//! and on a standby (whose metrics listener serves only these and the
//! process-wide ones). Part of [`crate::Metrics`].

use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

type GaugeU = Gauge<u64, AtomicU64>;

pub struct HaMetrics {
    /// 1 on the active node (and on a node without `[ha]`), 0 on a standby.
    pub active: GaugeU,
    /// The epoch of the active node: this one's, or on a standby the one
    /// it sees recorded with the lease (0: no `[ha]`, or none yet).
    pub epoch: GaugeU,
    /// Milliseconds from this node taking the lease to serving (RocksDB
    /// opened: the replay of the previous node's log).
    pub takeover_ms: GaugeU,
}

impl HaMetrics {
    pub fn register(r: &mut Registry) -> HaMetrics {
        let m = HaMetrics {
            active: GaugeU::default(),
            epoch: GaugeU::default(),
            takeover_ms: GaugeU::default(),
        };
        m.active.set(1);
        r.register(
            "ha_active",
            "1 on the active metadata node (or one without [ha]), 0 on a standby",
            m.active.clone(),
        );
        r.register(
            "ha_epoch",
            "The metadata epoch of the active node (a standby: as recorded with the lease): each takeover adds one (0 without [ha])",
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
