//! The `[xrootd]` and `[buffers]` sections: how XRootD clients are taken
//! and held, and the memory request data may use.

use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum UnixCfg {
    /// Every `unix` login is `nobody` (the default).
    #[default]
    Anonymous,
    /// Trust the user name a `unix` login sends (closed sites).
    Trust,
    /// Trust only the server's own user (dev mode); everyone else may
    /// read and list, and needs a token to write.
    Owner,
    /// Everyone may read and list; writes need a token.
    #[serde(rename = "read-only")]
    ReadOnly,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Xrootd {
    /// How the `unix` security protocol maps to identities.
    pub unix: UnixCfg,
    /// Answered to `xrdfs query config sitename`.
    pub site: String,
    /// How long a request that has begun to arrive, or a reply being sent
    /// (1 MiB at a time), may stall before the connection is closed (its
    /// open writes are aborted). Default "60s".
    #[serde(
        with = "crate::units::opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub request_stall: Option<Duration>,
    /// Requests served at once per connection; beyond it the connection is
    /// not read until one finishes. Default 64.
    pub max_in_flight: Option<usize>,
    /// How long a write's payload may bring no bytes once it has begun
    /// before the connection is given up, its files failed and what it
    /// held given back (as HTTPS's 408). Default "60s".
    #[serde(
        with = "crate::units::opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub body_timeout: Option<Duration>,
    /// How long a logged-in connection with no file open may wait between
    /// requests before it is closed (`xrd.timeout idle`). Default "10m".
    #[serde(
        with = "crate::units::opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub idle_timeout: Option<Duration>,
    /// The same with files open. Default "1h".
    #[serde(
        with = "crate::units::opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub idle_open_timeout: Option<Duration>,
}

impl Default for Xrootd {
    fn default() -> Self {
        Xrootd {
            unix: UnixCfg::Anonymous,
            site: "tessera".into(),
            request_stall: None,
            max_in_flight: None,
            body_timeout: None,
            idle_timeout: None,
            idle_open_timeout: None,
        }
    }
}

impl Xrootd {
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight
            .unwrap_or(tessera_xrootd::DEFAULT_MAX_IN_FLIGHT)
            .max(1)
    }

    pub fn request_stall_or_default(&self) -> Duration {
        self.request_stall
            .unwrap_or(tessera_xrootd::DEFAULT_REQUEST_STALL)
    }

    /// (body timeout, idle timeout, idle timeout with files open), each at
    /// least a second.
    pub fn timeouts(&self) -> [Duration; 3] {
        let at_least_1s =
            |v: Option<Duration>, d: Duration| v.map_or(d, |v| v.max(Duration::from_secs(1)));
        [
            at_least_1s(self.body_timeout, tessera_xrootd::DEFAULT_BODY_TIMEOUT),
            at_least_1s(self.idle_timeout, tessera_xrootd::DEFAULT_IDLE_TIMEOUT),
            at_least_1s(
                self.idle_open_timeout,
                tessera_xrootd::DEFAULT_IDLE_OPEN_TIMEOUT,
            ),
        ]
    }
}

/// The memory all connections together may hold in request data (XRootD
/// write payloads and read replies, HTTP GET parts, the group buffers of
/// files being written).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Buffers {
    /// MiB; default 2048.
    #[serde(
        rename = "max",
        with = "crate::units::opt_mib",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub max_mib: Option<u64>,
    /// Milliseconds a request waits for its bytes before it is refused
    /// (`kXR_NoMemory`, HTTP 503); default 5000.
    #[serde(
        rename = "wait",
        with = "crate::units::opt_millis",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub wait_ms: Option<u64>,
    /// MiB one connection's request payloads may hold; default an eighth
    /// of the budget, at least 320 (never more than the budget).
    #[serde(
        rename = "per_connection",
        with = "crate::units::opt_mib",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub per_connection_mib: Option<u64>,
    /// MiB the writes of one identity (a token subject, a uid) may hold
    /// across all its connections; default half the budget, at least 320.
    #[serde(
        rename = "per_identity",
        with = "crate::units::opt_mib",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub per_identity_mib: Option<u64>,
}

impl Buffers {
    /// A new budget with these settings (one per process: every endpoint
    /// shares it).
    pub fn budget(&self) -> tessera_core::Budget {
        let size = self
            .max_mib
            .map_or(tessera_core::DEFAULT_BUDGET_BYTES, |m| m.max(1) << 20);
        let b = tessera_core::Budget::new(
            size,
            self.wait_ms.map_or(
                tessera_core::DEFAULT_BUDGET_WAIT,
                std::time::Duration::from_millis,
            ),
        );
        let least = tessera_core::MIN_SHARE;
        let conn = self
            .per_connection_mib
            .map_or((size / 8).max(least), |m| m << 20);
        let who = self
            .per_identity_mib
            .map_or((size / 2).max(least), |m| m << 20);
        b.with_shares(conn, who)
    }
}
