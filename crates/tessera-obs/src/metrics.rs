//! `Metrics`: the Prometheus registry of the requests, the namespace, the
//! memory budget, connections and quotas (every family in docs/metrics.md).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, RwLock};

/// `observe`'s counter and histogram by label-string addresses and lengths.
type Handles = HashMap<[usize; 6], (Counter, Histogram), BuildHasherDefault<AddrHasher>>;

/// Hashes `observe`'s key (addresses and lengths, not attacker-chosen) by
/// multiply-and-rotate: a handful of instructions instead of SipHash.
#[derive(Default)]
struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(29);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    pub protocol: String,
    pub op: String,
    pub code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OpLabels {
    pub protocol: String,
    pub op: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProtocolLabels {
    pub protocol: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QuotaLabels {
    pub node: String,
}

/// What part of the process's memory a `memory` gauge is.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PartLabels {
    pub part: String,
}

/// Every metric Tessera exports; see `docs/metrics.md`.
pub struct Metrics {
    registry: Mutex<Registry>,
    /// `observe`'s handles by the addresses of its static label strings.
    handles: RwLock<Handles>,
    pub requests: Family<ResultLabels, Counter>,
    pub duration: Family<OpLabels, Histogram>,
    /// File bytes sent to clients by closed read sessions.
    pub read_bytes: Family<ProtocolLabels, Counter>,
    /// File bytes of closed write sessions (committed or not).
    pub written_bytes: Family<ProtocolLabels, Counter>,
    /// Reads served from memory on the request's own thread.
    pub reads_in_line: Family<ProtocolLabels, Counter>,
    pub namespace_inodes: Gauge<u64, AtomicU64>,
    pub namespace_bytes: Gauge<u64, AtomicU64>,
    pub quota_nodes: Gauge<u64, AtomicU64>,
    pub open_writes: Gauge<u64, AtomicU64>,
    /// The memory budget for request data (set per scrape).
    pub buffers_in_use: Gauge<u64, AtomicU64>,
    pub buffers_limit: Gauge<u64, AtomicU64>,
    /// Client connections (set per scrape).
    pub connections_open: Gauge<u64, AtomicU64>,
    pub connections_limit: Gauge<u64, AtomicU64>,
    pub connections_refused: Gauge<u64, AtomicU64>,
    /// Bearer tokens (set per scrape).
    pub token_key_fetches: Gauge<u64, AtomicU64>,
    pub token_signature_checks: Gauge<u64, AtomicU64>,
    pub quota_used_bytes: Family<QuotaLabels, Gauge<u64, AtomicU64>>,
    pub quota_used_inodes: Family<QuotaLabels, Gauge<u64, AtomicU64>>,
    pub quota_limit_bytes: Family<QuotaLabels, Gauge<u64, AtomicU64>>,
    pub quota_limit_inodes: Family<QuotaLabels, Gauge<u64, AtomicU64>>,
    /// Each quota node's fullness: the larger of bytes and inodes, used
    /// over the limit (only nodes with a limit).
    pub quota_used_ratio: Family<QuotaLabels, Gauge<f64, AtomicU64>>,
    /// Bytes the process's caches and buffers hold, by part (each with
    /// its bound: docs/metrics.md).
    pub memory: Family<PartLabels, Gauge<u64, AtomicU64>>,
    /// The data layer's health.
    pub data: crate::DataMetrics,
    /// Federated views.
    pub fed: crate::FedMetrics,
    /// Metadata high availability.
    pub ha: crate::HaMetrics,
    /// The operator's access rules.
    pub rules: crate::RuleMetrics,
    /// The recycle bins.
    pub recycle: crate::RecycleMetrics,
    /// The balancer.
    pub balance: crate::BalanceMetrics,
}

impl Metrics {
    // long-fn: one registration per metric family, in the order docs/metrics.md lists them: split, the list would be scattered.
    pub fn new(version: &str) -> Metrics {
        let mut r = Registry::with_prefix("tessera");
        let requests = Family::<ResultLabels, Counter>::default();
        r.register(
            "requests",
            "Requests by protocol, operation and result code",
            requests.clone(),
        );
        let duration = Family::<OpLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.000_01, 4.0, 12))
        });
        r.register_with_unit(
            "request_duration",
            "Request latency by protocol and operation",
            prometheus_client::registry::Unit::Seconds,
            duration.clone(),
        );
        let read_bytes = Family::<ProtocolLabels, Counter>::default();
        r.register_with_unit(
            "read",
            "File bytes read, counted when a read session closes",
            prometheus_client::registry::Unit::Bytes,
            read_bytes.clone(),
        );
        let reads_in_line = Family::<ProtocolLabels, Counter>::default();
        r.register(
            "reads_in_line",
            "Reads of file data served from memory (page cache, kept blocks) on the request's own thread, without a trip to the blocking pool; counted when a read session closes",
            reads_in_line.clone(),
        );
        let written_bytes = Family::<ProtocolLabels, Counter>::default();
        r.register_with_unit(
            "written",
            "File bytes written, counted when a write session closes",
            prometheus_client::registry::Unit::Bytes,
            written_bytes.clone(),
        );
        let namespace_inodes = Gauge::<u64, AtomicU64>::default();
        r.register(
            "namespace_inodes",
            "Files and directories in the namespace",
            namespace_inodes.clone(),
        );
        let namespace_bytes = Gauge::<u64, AtomicU64>::default();
        r.register_with_unit(
            "namespace_logical",
            "Logical bytes of all files",
            prometheus_client::registry::Unit::Bytes,
            namespace_bytes.clone(),
        );
        let quota_nodes = Gauge::<u64, AtomicU64>::default();
        r.register(
            "quota_nodes",
            "Directories that are quota nodes",
            quota_nodes.clone(),
        );
        let open_writes = Gauge::<u64, AtomicU64>::default();
        r.register(
            "open_writes",
            "Writes holding a quota reservation",
            open_writes.clone(),
        );
        let buffers_in_use = Gauge::<u64, AtomicU64>::default();
        r.register_with_unit(
            "buffers_in_use",
            "Request data held in memory now (XRootD payloads and replies, HTTP GET parts, buffers of files being written)",
            prometheus_client::registry::Unit::Bytes,
            buffers_in_use.clone(),
        );
        let buffers_limit = Gauge::<u64, AtomicU64>::default();
        r.register_with_unit(
            "buffers_limit",
            "The memory budget for request data ([buffers] max_mib)",
            prometheus_client::registry::Unit::Bytes,
            buffers_limit.clone(),
        );
        let connections_open = Gauge::<u64, AtomicU64>::default();
        r.register(
            "connections_open",
            "Client connections (XRootD and HTTPS) held now",
            connections_open.clone(),
        );
        let connections_limit = Gauge::<u64, AtomicU64>::default();
        r.register(
            "connections_limit",
            "Client connections the process takes ([limits] max_connections)",
            connections_limit.clone(),
        );
        let connections_refused = Gauge::<u64, AtomicU64>::default();
        r.register(
            "connections_refused",
            "Client connections refused over the limits since start",
            connections_refused.clone(),
        );
        let token_key_fetches = Gauge::<u64, AtomicU64>::default();
        r.register(
            "token_key_fetches",
            "Issuer key fetches (discovery and JWKS) since start",
            token_key_fetches.clone(),
        );
        let token_signature_checks = Gauge::<u64, AtomicU64>::default();
        r.register(
            "token_signature_checks",
            "Token signatures checked since start (a cached token costs none)",
            token_signature_checks.clone(),
        );
        let g = Family::<QuotaLabels, Gauge<u64, AtomicU64>>::default;
        let (qub, qui, qlb, qli) = (g(), g(), g(), g());
        let bytes = prometheus_client::registry::Unit::Bytes;
        r.register_with_unit(
            "quota_used",
            "Project usage of a quota node",
            bytes.clone(),
            qub.clone(),
        );
        r.register(
            "quota_used_inodes",
            "Project inode usage of a quota node",
            qui.clone(),
        );
        r.register_with_unit(
            "quota_limit",
            "Project byte limit of a quota node",
            bytes,
            qlb.clone(),
        );
        r.register(
            "quota_limit_inodes",
            "Project inode limit of a quota node",
            qli.clone(),
        );
        let quota_used_ratio = Family::<QuotaLabels, Gauge<f64, AtomicU64>>::default();
        r.register(
            "quota_used_ratio",
            "Project usage of a quota node over its limit (the larger of bytes and inodes; 1 is full)",
            quota_used_ratio.clone(),
        );
        let memory = Family::<PartLabels, Gauge<u64, AtomicU64>>::default();
        r.register_with_unit(
            "memory",
            "Memory the caches and buffers hold, by part (RocksDB memtables, block cache and table readers; idle read buffers; blocks kept for short reads)",
            prometheus_client::registry::Unit::Bytes,
            memory.clone(),
        );
        let data = crate::DataMetrics::register(&mut r);
        let fed = crate::FedMetrics::register(&mut r);
        let ha = crate::HaMetrics::register(&mut r);
        let rules = crate::RuleMetrics::register(&mut r);
        let recycle = crate::RecycleMetrics::register(&mut r);
        let balance = crate::BalanceMetrics::register(&mut r);
        let build = Family::<Vec<(String, String)>, Gauge>::default();
        build
            .get_or_create(&vec![("version".to_string(), version.to_string())])
            .set(1);
        r.register("build_info", "Build information", build);
        Metrics {
            registry: Mutex::new(r),
            handles: RwLock::default(),
            requests,
            duration,
            read_bytes,
            written_bytes,
            reads_in_line,
            namespace_inodes,
            namespace_bytes,
            quota_nodes,
            open_writes,
            buffers_in_use,
            buffers_limit,
            connections_open,
            connections_limit,
            connections_refused,
            token_key_fetches,
            token_signature_checks,
            quota_used_bytes: qub,
            quota_used_inodes: qui,
            quota_limit_bytes: qlb,
            quota_limit_inodes: qli,
            quota_used_ratio,
            memory,
            data,
            fed,
            ha,
            rules,
            recycle,
            balance,
        }
    }

    /// Count one finished request. The labels are static strings, so the
    /// counter and histogram of each combination are looked up once and
    /// then found by the strings' addresses (no label strings built, no
    /// hashing of their text, per request).
    pub fn observe(
        &self,
        protocol: &'static str,
        op: &'static str,
        code: &'static str,
        seconds: f64,
    ) {
        let key = [
            protocol.as_ptr() as usize,
            protocol.len(),
            op.as_ptr() as usize,
            op.len(),
            code.as_ptr() as usize,
            code.len(),
        ];
        let hit = self
            .handles
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        let (count, hist) = hit.unwrap_or_else(|| {
            let h = (
                self.requests
                    .get_or_create(&ResultLabels {
                        protocol: protocol.to_string(),
                        op: op.to_string(),
                        code: code.to_string(),
                    })
                    .clone(),
                self.duration
                    .get_or_create(&OpLabels {
                        protocol: protocol.to_string(),
                        op: op.to_string(),
                    })
                    .clone(),
            );
            self.handles
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .insert(key, h.clone());
            h
        });
        count.inc();
        hist.observe(seconds);
    }

    /// Count the bytes of a closed read (`written` false) or write session.
    pub fn transferred(&self, protocol: &str, written: bool, bytes: u64) {
        let f = if written {
            &self.written_bytes
        } else {
            &self.read_bytes
        };
        f.get_or_create(&ProtocolLabels {
            protocol: protocol.to_string(),
        })
        .inc_by(bytes);
    }

    /// `n` reads served in line (see `reads_in_line`).
    pub fn read_in_line(&self, protocol: &str, n: u64) {
        if n > 0 {
            self.reads_in_line
                .get_or_create(&ProtocolLabels {
                    protocol: protocol.to_string(),
                })
                .inc_by(n);
        }
    }

    /// OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let r = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        if prometheus_client::encoding::text::encode(&mut out, &r).is_err() {
            out.clear();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count_line<'a>(text: &'a str, labels: &str) -> &'a str {
        text.lines()
            .find(|l| l.starts_with("tessera_requests_total{") && l.contains(labels))
            .unwrap_or("")
    }

    #[test]
    fn observe_counts_by_labels() {
        let m = Metrics::new("test");
        // The same label text at two addresses counts as one series.
        let ok_here: &'static str = "ok";
        let ok_there: &'static str = &"not ok"[4..];
        m.observe("xroot", "stat", ok_here, 0.001);
        m.observe("xroot", "stat", ok_there, 0.002);
        m.observe("xroot", "stat", "not_found", 0.001);
        m.observe("https", "stat", "ok", 0.001);
        let text = m.encode();
        assert!(count_line(&text, "protocol=\"xroot\",op=\"stat\",code=\"ok\"").ends_with(" 2"));
        assert!(
            count_line(&text, "protocol=\"xroot\",op=\"stat\",code=\"not_found\"").ends_with(" 1")
        );
        assert!(count_line(&text, "protocol=\"https\",op=\"stat\",code=\"ok\"").ends_with(" 1"));
        assert!(text
            .contains("tessera_request_duration_seconds_count{protocol=\"xroot\",op=\"stat\"} 3"));
        m.transferred("xroot", true, 100);
        m.transferred("xroot", true, 20);
        m.transferred("xroot", false, 7);
        let text = m.encode();
        assert!(text.contains("tessera_written_bytes_total{protocol=\"xroot\"} 120"));
        assert!(text.contains("tessera_read_bytes_total{protocol=\"xroot\"} 7"));
    }
}
