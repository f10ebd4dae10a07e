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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct IoLabels {
    /// `read` or `write`.
    pub direction: String,
    /// The client's application (XRootD's `xrd.appname`, the
    /// User-Agent's product; `-` when none, `other` past 32 names).
    pub app: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct IoOwnerLabels {
    /// `read` or `write`.
    pub direction: String,
    /// `uid` or `gid`.
    pub kind: String,
    /// The number (`other` past 64 of a kind).
    pub id: String,
}

/// One series of `tessera_io_bytes_total`, kept by a session.
#[derive(Clone, Debug)]
pub struct IoCounter(Counter);

impl IoCounter {
    pub fn add(&self, n: u64) {
        self.0.inc_by(n);
    }
}

pub struct RuleMetrics {
    /// Bytes of file data read and written, by application (`rate()` of
    /// it: the moving average I/O shaping rules act on).
    pub io_bytes: Family<IoLabels, Counter>,
    /// The same bytes by uid and by gid of the client.
    pub io_owner_bytes: Family<IoOwnerLabels, Counter>,
    /// Requests answered with a wait or a redirect by an access rule.
    pub refused: Family<RuleLabels, Counter>,
    /// Access rules in force (set when they change).
    pub rules: Gauge<u64, AtomicU64>,
}

impl RuleMetrics {
    pub fn register(r: &mut Registry) -> RuleMetrics {
        let m = RuleMetrics {
            io_bytes: Family::default(),
            io_owner_bytes: Family::default(),
            refused: Family::default(),
            rules: Gauge::default(),
        };
        r.register(
            "access_refused",
            "Requests an access rule answered with a wait (ban, allow list, stall) or a redirect, by action and protocol",
            m.refused.clone(),
        );
        r.register(
            "io_bytes",
            "Bytes of file data read and written, by direction and application (I/O shaping rules act on its rate)",
            m.io_bytes.clone(),
        );
        r.register(
            "io_owner_bytes",
            "Bytes of file data read and written, by direction and the client's uid or gid (64 of each, the rest as other)",
            m.io_owner_bytes.clone(),
        );
        r.register(
            "access_rules",
            "Access rules in force (tessera access ls)",
            m.rules.clone(),
        );
        m
    }

    /// The counter of `direction` bytes of application `app`.
    pub fn io_counter(&self, direction: &str, app: &str) -> IoCounter {
        IoCounter(
            self.io_bytes
                .get_or_create(&IoLabels {
                    direction: direction.to_string(),
                    app: app.to_string(),
                })
                .clone(),
        )
    }

    /// The counter of `direction` bytes of uid or gid (`kind`) `id`.
    pub fn io_owner_counter(&self, direction: &str, kind: &str, id: &str) -> IoCounter {
        IoCounter(
            self.io_owner_bytes
                .get_or_create(&IoOwnerLabels {
                    direction: direction.to_string(),
                    kind: kind.to_string(),
                    id: id.to_string(),
                })
                .clone(),
        )
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
