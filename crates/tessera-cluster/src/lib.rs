//! Scale-out: the metadata service (`--role mgm`) answers metadata itself
//! and redirects data requests to stateless data gateways (`--role
//! gateway`) with a short-lived capability signed with the cluster secret.
//! Gateways register by heartbeat, read the filesystem list, and reserve
//! and commit their writes through the internal API (`Cluster`).

pub mod cap;
pub mod client;
pub mod registry;
pub mod service;
pub mod sites;

pub use cap::{Access, CapError, CapKey, Capability, FileFacts};
pub use client::{start_gateway_loops, ClusterClient};
pub use registry::Registry;
pub use service::ClusterService;
pub use sites::SiteMap;
