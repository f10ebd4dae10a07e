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
    /// Client connections from one client network (an IPv4 address, an
    /// IPv6 /64: see the prefixes); default a quarter of
    /// `max_connections`.
    pub max_connections_per_address: Option<usize>,
    /// Connections without credentials (XRootD sessions that did not
    /// authenticate, HTTPS requests without a token); default half of
    /// `max_connections`. Over it such a connection is closed
    /// (`kXR_Overloaded`, 503), so anonymous clients never keep
    /// authenticated ones out.
    pub max_anonymous_connections: Option<usize>,
    /// Prefix lengths by which client addresses are counted as one
    /// network (defaults 32 and 64).
    pub ipv4_prefix: Option<u8>,
    pub ipv6_prefix: Option<u8>,
}

impl Limits {
    /// The connection limits for a process with `nofile` descriptors.
    pub fn conns(&self, nofile: u64) -> tessera_core::ConnLimits {
        let (total, per) = tessera_core::default_limits(nofile);
        let total = self.max_connections.unwrap_or(total);
        let per = self
            .max_connections_per_address
            .unwrap_or(per.min(total.div_ceil(4)).max(1));
        let anonymous = self.max_anonymous_connections.unwrap_or(total.div_ceil(2));
        let prefixes = (
            self.ipv4_prefix.unwrap_or(32),
            self.ipv6_prefix.unwrap_or(64),
        );
        tessera_core::ConnLimits::with(total, per, anonymous, prefixes)
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
