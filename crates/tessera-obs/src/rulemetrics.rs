//! Metrics of the operator's access rules (issue 39): the requests they
//! turned away, by what the rule does and the protocol. Part of
//! [`crate::Metrics`].

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RuleLabels {
    /// `ban`, `allow` (not in an allow list), `stall` or `redirect`.
    pub action: String,
    pub protocol: String,
}

pub struct RuleMetrics {
    /// Requests answered with a wait or a redirect by an access rule.
    pub refused: Family<RuleLabels, Counter>,
    /// Access rules in force (set when they change).
    pub rules: Gauge<u64, AtomicU64>,
}

impl RuleMetrics {
    pub fn register(r: &mut Registry) -> RuleMetrics {
        let m = RuleMetrics {
            refused: Family::default(),
            rules: Gauge::default(),
        };
        r.register(
            "access_refused",
            "Requests an access rule answered with a wait (ban, allow list, stall) or a redirect, by action and protocol",
            m.refused.clone(),
        );
        r.register(
            "access_rules",
            "Access rules in force (tessera access ls)",
            m.rules.clone(),
        );
        m
    }

    /// Count one request turned away by a rule of `action`.
    pub fn refused(&self, action: &str, protocol: &str) {
        self.refused
            .get_or_create(&RuleLabels {
                action: action.to_string(),
                protocol: protocol.to_string(),
            })
            .inc();
    }
}
