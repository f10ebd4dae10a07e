//! `[limits]`: what the process takes from clients, and its descriptors.
//! At start the soft `RLIMIT_NOFILE` is raised to the hard limit (as
//! xrootd does), and the client connection limits are derived from it so
//! that a reserve of descriptors always remains for the admin API, the
//! metrics endpoint, the namespace and the files being served.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Client connections (XRootD and HTTPS together) the process takes;
    /// default: half the descriptors left after a reserve of a tenth
    /// (32 to 1,024), at most 20,000. Over it a connection is refused
    /// (`kXR_Overloaded`, HTTP 503).
    pub max_connections: Option<usize>,
    /// Client connections from one address; default a quarter of
    /// `max_connections`.
    pub max_connections_per_address: Option<usize>,
}

impl Limits {
    /// The connection limits for a process with `nofile` descriptors.
    pub fn conns(&self, nofile: u64) -> tessera_core::ConnLimits {
        let (total, per) = tessera_core::default_limits(nofile);
        let total = self.max_connections.unwrap_or(total);
        let per = self
            .max_connections_per_address
            .unwrap_or(per.min(total.div_ceil(4)).max(1));
        tessera_core::ConnLimits::new(total, per)
    }
}

/// Raise the soft descriptor limit to the hard one; the soft limit now.
pub fn raise_nofile() -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let cur = getrlimit(Resource::Nofile);
    if let Some(hard) = cur.maximum {
        if cur.current.is_none_or(|c| c < hard) {
            let want = Rlimit {
                current: Some(hard),
                maximum: Some(hard),
            };
            if let Err(e) = setrlimit(Resource::Nofile, want) {
                tracing::warn!("raising the descriptor limit to {hard}: {e}");
            }
        }
    }
    getrlimit(Resource::Nofile).current.unwrap_or(1 << 20)
}
