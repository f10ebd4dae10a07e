//! `[ha]`: metadata high availability on Ceph (issue 27, docs/ha.md).
//! Two or more `tesserad --role mgm` (or `all`) with the same `[ha]` form
//! one metadata service: the node holding a RADOS lease is active (its
//! namespace is RocksDB on a CephFS mount of its own), the others redirect
//! clients to it and take over when its lease runs out.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Ha {
    /// Off: one node alone, the namespace on local disk (the default).
    pub enabled: bool,
    /// This node's name (unique among the metadata nodes; the lease's
    /// cookie and the log's).
    pub node: String,
    /// The cluster's ceph.conf (monitors, keyring) and the Ceph user.
    pub ceph_conf: PathBuf,
    pub ceph_id: String,
    /// The RADOS pool and object that carry the lease.
    pub pool: String,
    pub object: String,
    /// How long a lease lasts (renewed every third of it).
    #[serde(with = "crate::units::duration")]
    pub lease: std::time::Duration,
    /// How long a fenced node stays blocklisted (it mounts afresh, with a
    /// new address, long before).
    #[serde(with = "crate::units::duration")]
    pub fence: std::time::Duration,
    /// The CephFS file system holding the namespace, the directory in it,
    /// and where this node mounts it (`ceph-fuse`, started by tesserad;
    /// default `<data_dir>/ha/mnt`).
    pub fs: String,
    pub dir: String,
    pub mountpoint: Option<PathBuf>,
    /// Where clients reach this node (`host:port`), recorded with the
    /// lease while it is active: standbys send clients there. Default:
    /// the listen addresses.
    pub advertise_xrootd: Option<String>,
    pub advertise_https: Option<String>,
    pub advertise_admin: Option<String>,
    /// Every metadata node's admin address (for `tessera --admin a,b` and
    /// gateways: docs/ha.md).
    pub nodes: Vec<String>,
}

impl Default for Ha {
    fn default() -> Ha {
        Ha {
            enabled: false,
            node: String::new(),
            ceph_conf: PathBuf::from("/etc/ceph/ceph.conf"),
            ceph_id: "admin".into(),
            pool: "tessera-ha".into(),
            object: "tessera.mds.lease".into(),
            lease: std::time::Duration::from_secs(5),
            fence: std::time::Duration::from_secs(3600),
            fs: String::new(),
            dir: "tessera-namespace".into(),
            mountpoint: None,
            advertise_xrootd: None,
            advertise_https: None,
            advertise_admin: None,
            nodes: Vec::new(),
        }
    }
}

impl Ha {
    /// Refuse what cannot work (nothing to check when HA is off).
    pub fn check(&self, listen: &crate::config::Listen) -> Result<(), String> {
        if !self.enabled {
            return Ok(());
        }
        if self.node.is_empty() || self.node.contains(char::is_whitespace) {
            return Err("ha.node: a name without spaces".into());
        }
        if self.fs.is_empty() {
            return Err("ha.fs: the CephFS file system holding the namespace".into());
        }
        if self.lease < std::time::Duration::from_secs(1) {
            return Err("ha.lease: at least 1s".into());
        }
        if listen.admin.port() == 0 || listen.xrootd.is_some_and(|a| a.port() == 0) {
            return Err("[ha] needs fixed listen ports (other nodes send clients there)".into());
        }
        self.advert(listen).map(|_| ())
    }

    /// What this node records about itself when active.
    pub fn advert(&self, l: &crate::config::Listen) -> Result<tessera_core::Advert, String> {
        let or = |given: &Option<String>, a: Option<std::net::SocketAddr>, what: &str| match (
            given, a,
        ) {
            (Some(g), _) => Ok(Some(g.clone())),
            (None, Some(a)) if a.ip().is_unspecified() => Err(format!(
                "ha.advertise_{what}: listen.{what} is {a}: say where clients reach it"
            )),
            (None, a) => Ok(a.map(|a| a.to_string())),
        };
        Ok(tessera_core::Advert {
            xrootd: or(&self.advertise_xrootd, l.xrootd, "xrootd")?,
            https: or(&self.advertise_https, l.https, "https")?,
            admin: or(&self.advertise_admin, Some(l.admin), "admin")?,
        })
    }
}
