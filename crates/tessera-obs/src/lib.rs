//! Observability: the Prometheus metrics registry, the structured access
//! log and the audit log. One instance of each is created by the server and
//! passed down explicitly (no global state).

mod access;
mod audit;
mod balancemetrics;
mod datametrics;
mod fedmetrics;
mod hametrics;
mod metrics;
mod recyclemetrics;
mod rulemetrics;

pub use access::{AccessLog, AccessRecord};
pub use audit::{AuditLog, AuditRecord};
pub use balancemetrics::BalanceMetrics;
pub use datametrics::{DataMetrics, FsLabels};
pub use fedmetrics::{EndpointLabels, FedMetrics};
pub use hametrics::HaMetrics;
pub use metrics::{Metrics, OpLabels, PartLabels, ProtocolLabels, QuotaLabels, ResultLabels};
pub use recyclemetrics::{BinLabels, RecycleMetrics};
pub use rulemetrics::{IoCounter, IoLabels, IoOwnerLabels, RuleLabels, RuleMetrics};
