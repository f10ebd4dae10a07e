//! Observability: the Prometheus metrics registry, the structured access
//! log and the audit log. One instance of each is created by the server and
//! passed down explicitly (no global state).

mod access;
mod audit;
mod metrics;

pub use access::{AccessLog, AccessRecord};
pub use audit::{AuditLog, AuditRecord};
pub use metrics::{FsLabels, Metrics, OpLabels, ProtocolLabels, QuotaLabels, ResultLabels};
