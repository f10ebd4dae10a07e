//! The `[fsck]`, `[recycle]`, `[data]` and `[server]` sections: background
//! repair and purge, how the filesystems' health is watched, and how the
//! process stops.

use serde::{Deserialize, Serialize};

/// Background repair of what reads found damaged (degraded reads).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Fsck {
    /// How often damaged files are checked and rebuilt; 0 turns the
    /// background repair off (`tessera fsck repair` still does it).
    #[serde(rename = "repair_interval", with = "crate::units::secs")]
    pub repair_interval_secs: u64,
}

impl Default for Fsck {
    fn default() -> Self {
        Fsck {
            repair_interval_secs: 60,
        }
    }
}

/// The background purge of the recycle bins: every `purge_interval`,
/// entries past their bin's lifetime and, in a bin past its volume cap,
/// the oldest go, at most `purge_budget` inodes a round (a bin past its
/// cap wakes it at once).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Recycle {
    /// 0 turns the background purge off (`tessera recycle purge` still
    /// works).
    #[serde(rename = "purge_interval", with = "crate::units::secs")]
    pub purge_interval_secs: u64,
    pub purge_budget: u64,
}

impl Default for Recycle {
    fn default() -> Self {
        Recycle {
            purge_interval_secs: 60,
            purge_budget: 100_000,
        }
    }
}

/// The balancer's rounds (what it does and how fast is `tessera balance
/// start`'s, kept in the namespace).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Balance {
    /// How often the fill levels are looked at (a filesystem added wakes
    /// it at once); 0 turns the background balancer off.
    #[serde(rename = "interval", with = "crate::units::secs")]
    pub interval_secs: u64,
}

impl Default for Balance {
    fn default() -> Self {
        Balance { interval_secs: 60 }
    }
}

/// What the storage reads and writes at most, per second (`"10G"`; unset:
/// not said). I/O reservations (`tessera access reserve`) keep their share
/// of it: while a reserved client moves bytes, every other client of that
/// direction shares what is left.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Io {
    pub read_capacity: Option<String>,
    pub write_capacity: Option<String>,
}

impl Io {
    /// (read, write) in bytes per second (0: not said).
    pub fn capacities(&self) -> anyhow::Result<(u64, u64)> {
        let one = |v: &Option<String>, what: &str| -> anyhow::Result<u64> {
            match v {
                None => Ok(0),
                Some(s) => tessera_types::parse_size(s)
                    .map_err(|e| anyhow::anyhow!("[io] {what} {s:?}: {e}")),
            }
        };
        Ok((
            one(&self.read_capacity, "read_capacity")?,
            one(&self.write_capacity, "write_capacity")?,
        ))
    }
}

/// The filesystems' health: every `probe_interval` each one is probed (a
/// small stripe written and removed on a thread of its own); a probe that
/// takes longer than `io_timeout` makes its filesystem `unresponsive`,
/// one that fails `degraded`; either way new stripes avoid it until a
/// probe succeeds again. An I/O error on a write degrades at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Data {
    /// 0 turns the probes off: then a degraded filesystem stays so until
    /// the server restarts.
    #[serde(rename = "probe_interval", with = "crate::units::secs")]
    pub probe_interval_s: u64,
    #[serde(rename = "io_timeout", with = "crate::units::secs")]
    pub io_timeout_s: u64,
}

impl Default for Data {
    fn default() -> Self {
        Data {
            probe_interval_s: 5,
            io_timeout_s: 10,
        }
    }
}

/// How the process stops (SIGTERM, SIGINT).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Server {
    /// After the listeners stop accepting, transfers in flight (XRootD
    /// connections with open files, HTTPS requests) may go on this long;
    /// idle connections close at once. What is left after it is cut (an
    /// upload cut short leaves nothing).
    #[serde(rename = "drain", with = "crate::units::secs")]
    pub drain_s: u64,
}

impl Default for Server {
    fn default() -> Self {
        Server { drain_s: 30 }
    }
}
