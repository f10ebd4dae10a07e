//! Observability: the Prometheus metrics registry and the structured
//! access log. One instance of each is created by the server and passed
//! down explicitly (no global state).

mod access;
mod metrics;

pub use access::{AccessLog, AccessRecord};
pub use metrics::{FsLabels, Metrics, OpLabels, ProtocolLabels, QuotaLabels, ResultLabels};
