use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

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
pub struct QuotaLabels {
    pub node: String,
}

/// Every metric Tessera exports; see `docs/metrics.md`.
pub struct Metrics {
    registry: Mutex<Registry>,
    pub requests: Family<ResultLabels, Counter>,
    pub duration: Family<OpLabels, Histogram>,
    pub namespace_inodes: Gauge<u64, AtomicU64>,
    pub namespace_bytes: Gauge<u64, AtomicU64>,
    pub quota_nodes: Gauge<u64, AtomicU64>,
    pub open_writes: Gauge<u64, AtomicU64>,
    pub quota_used_bytes: Family<QuotaLabels, Gauge<u64, AtomicU64>>,
    pub quota_used_inodes: Family<QuotaLabels, Gauge<u64, AtomicU64>>,
    pub quota_limit_bytes: Family<QuotaLabels, Gauge<u64, AtomicU64>>,
    pub quota_limit_inodes: Family<QuotaLabels, Gauge<u64, AtomicU64>>,
}

impl Metrics {
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
        let build = Family::<Vec<(String, String)>, Gauge>::default();
        build
            .get_or_create(&vec![("version".to_string(), version.to_string())])
            .set(1);
        r.register("build_info", "Build information", build);
        Metrics {
            registry: Mutex::new(r),
            requests,
            duration,
            namespace_inodes,
            namespace_bytes,
            quota_nodes,
            open_writes,
            quota_used_bytes: qub,
            quota_used_inodes: qui,
            quota_limit_bytes: qlb,
            quota_limit_inodes: qli,
        }
    }

    /// Count one finished request.
    pub fn observe(&self, protocol: &str, op: &str, code: &str, seconds: f64) {
        self.requests
            .get_or_create(&ResultLabels {
                protocol: protocol.to_string(),
                op: op.to_string(),
                code: code.to_string(),
            })
            .inc();
        self.duration
            .get_or_create(&OpLabels {
                protocol: protocol.to_string(),
                op: op.to_string(),
            })
            .observe(seconds);
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
