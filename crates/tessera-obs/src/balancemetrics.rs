//! Metrics of the balancer (issue 39): what it moved, what failed, how
//! unevenly the filesystems are filled. Part of [`crate::Metrics`].

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

pub struct BalanceMetrics {
    pub moved_stripes: Counter,
    pub moved_bytes: Counter,
    /// Moves not made (the file changed or went meanwhile, a copy failed).
    pub failed: Counter,
    /// The largest difference of fill levels between the filesystems of
    /// a space at the last round (0 to 1).
    pub spread: Gauge<f64, AtomicU64>,
    /// 1 when the balancer is on.
    pub enabled: Gauge,
}

impl BalanceMetrics {
    pub fn register(r: &mut Registry) -> BalanceMetrics {
        let m = BalanceMetrics {
            moved_stripes: Counter::default(),
            moved_bytes: Counter::default(),
            failed: Counter::default(),
            spread: Gauge::default(),
            enabled: Gauge::default(),
        };
        r.register(
            "balance_moved_stripes",
            "Stripes the balancer moved to an emptier filesystem",
            m.moved_stripes.clone(),
        );
        r.register(
            "balance_moved_bytes",
            "Bytes of stripes the balancer moved",
            m.moved_bytes.clone(),
        );
        r.register(
            "balance_failed",
            "Balancer moves not made (the file changed or went meanwhile, a copy failed)",
            m.failed.clone(),
        );
        r.register(
            "balance_spread_ratio",
            "Largest difference of fill levels between the filesystems of a space (0 to 1) at the last balancer round",
            m.spread.clone(),
        );
        r.register(
            "balance_enabled",
            "1 when the balancer is on",
            m.enabled.clone(),
        );
        m
    }
}
