//! `[srr]`: the Storage Resource Report a WLCG site registers in CRIC
//! (`tessera-wlcg`'s `srr`): what it names, where it is served and
//! written, how often it is made.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Srr {
    /// Serve and write the report (on by default; it says only what the
    /// quota nodes and listeners are).
    pub enabled: bool,
    /// `storageservice.name`, as registered in CRIC (default: the host
    /// name).
    pub name: Option<String>,
    /// `storageservice.id` (CRIC's identifier), if any.
    pub id: Option<String>,
    /// `production`, `pre-production`, `testing` or `development`.
    pub quality: Option<String>,
    /// Whether `GET /.well-known/tessera/srr` answers requests without a
    /// credential (else any authenticated client: a token, a certificate,
    /// a macaroon). Off by default (the report names quota nodes and
    /// their usage); Rucio and CRIC read it without one: say `true` for
    /// them, as dCache's `frontend.srr.public`.
    pub public: bool,
    /// How often the report is made anew (Rucio wants one at most 2 h
    /// old).
    #[serde(rename = "interval", with = "crate::units::secs")]
    pub interval_secs: u64,
    /// Namespace path the report is also written to (for DIRAC/LHCb,
    /// which read it with the storage protocol), e.g.
    /// `/lhcb/spaceReport.json`; unset: not written.
    pub file: Option<String>,
    /// Host name in the endpoint URLs (default: the machine's).
    pub host: Option<String>,
    /// The endpoints, when the listeners' own do not say it (behind a
    /// load balancer, other ports): `{ name, url, interface }`.
    pub endpoints: Vec<SrrEndpoint>,
    /// Shares by quota node path: `{ "/atlas" = { name = "ATLASDATADISK",
    /// vos = ["atlas"] } }`. Every quota node with a project byte limit
    /// is a share anyway (VO: its directory's group).
    pub shares: BTreeMap<String, SrrShare>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SrrEndpoint {
    pub name: String,
    pub url: String,
    pub interface: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SrrShare {
    pub name: Option<String>,
    pub vos: Vec<String>,
}

impl Default for Srr {
    fn default() -> Self {
        Srr {
            enabled: true,
            name: None,
            id: None,
            quality: None,
            public: false,
            interval_secs: 600,
            file: None,
            host: None,
            endpoints: Vec::new(),
            shares: BTreeMap::new(),
        }
    }
}

impl Srr {
    /// The settings of the report for a server whose listeners are at
    /// `xrootd` and `https` (their bound ports).
    pub fn settings(
        &self,
        xrootd: Option<std::net::SocketAddr>,
        https: Option<std::net::SocketAddr>,
        tls: bool,
    ) -> anyhow::Result<tessera_wlcg::srr::Settings> {
        let host = match &self.host {
            Some(h) => h.clone(),
            None => hostname().unwrap_or_else(|| "localhost".into()),
        };
        let name = self.name.clone().unwrap_or_else(|| host.clone());
        if let Some(q) = &self.quality {
            let known = ["production", "pre-production", "testing", "development"];
            anyhow::ensure!(
                known.contains(&q.as_str()),
                "[srr] quality {q:?}: one of {known:?}"
            );
        }
        let mut endpoints: Vec<_> = self
            .endpoints
            .iter()
            .map(|e| tessera_wlcg::srr::Endpoint {
                name: e.name.clone(),
                url: e.url.clone(),
                interface: e.interface.clone(),
            })
            .collect();
        if endpoints.is_empty() {
            // XRootD clients ask for TLS on a root:// URL when the server
            // offers it: one URL either way.
            let h = if tls { "https" } else { "http" };
            for (a, scheme, iface) in [(xrootd, "root", "xroot"), (https, h, h)] {
                if let Some(a) = a {
                    endpoints.push(tessera_wlcg::srr::Endpoint {
                        name: format!("{name}_{iface}"),
                        url: format!("{scheme}://{host}:{}/", a.port()),
                        interface: iface.into(),
                    });
                }
            }
        }
        let file = match &self.file {
            Some(f) => Some(
                tessera_types::NsPath::parse(f)
                    .map_err(|e| anyhow::anyhow!("[srr] file {f:?}: {e}"))?,
            ),
            None => None,
        };
        Ok(tessera_wlcg::srr::Settings {
            name,
            id: self.id.clone(),
            quality: self.quality.clone(),
            endpoints,
            shares: self
                .shares
                .iter()
                .map(|(p, s)| {
                    let cfg = tessera_wlcg::srr::ShareCfg {
                        name: s.name.clone(),
                        vos: s.vos.clone(),
                    };
                    (p.clone(), cfg)
                })
                .collect(),
            file,
            public: self.public,
            group_name: std::sync::Arc::new(tessera_auth::users::group_name),
        })
    }
}

/// `[monitoring]`: the XRootD monitoring stream (WLCG's data-access
/// monitoring, read by the OSG shoveler and collectors) for both
/// protocols. Off (nothing made, nothing sent) without destinations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Monitoring {
    /// Collectors, `host:port` (UDP), e.g. `["collector.example.org:9930"]`.
    pub destinations: Vec<String>,
    /// How often file records (opens, closes) are sent.
    #[serde(rename = "fstat", with = "crate::units::secs")]
    pub fstat_secs: u64,
    /// How often the server identifies itself (and once at start).
    #[serde(rename = "ident", with = "crate::units::secs")]
    pub ident_secs: u64,
    /// The site name in the identification (`&site=`).
    pub site: String,
}

impl Default for Monitoring {
    fn default() -> Self {
        Monitoring {
            destinations: Vec::new(),
            fstat_secs: 60,
            ident_secs: 300,
            site: String::new(),
        }
    }
}

impl Monitoring {
    /// The monitor, when there are collectors (names resolved now).
    pub fn monitor(
        &self,
        xrootd_port: u16,
    ) -> anyhow::Result<Option<std::sync::Arc<tessera_wlcg::monitor::Monitor>>> {
        let dests = resolve("monitoring", &self.destinations, None)?;
        let host = hostname().unwrap_or_else(|| "localhost".into());
        let s = tessera_wlcg::monitor::Settings {
            destinations: dests,
            fstat: std::time::Duration::from_secs(self.fstat_secs.max(1)),
            ident: std::time::Duration::from_secs(self.ident_secs.max(1)),
            site: self.site.clone(),
            port: xrootd_port,
            host,
        };
        Ok(tessera_wlcg::monitor::Monitor::new(s)?)
    }
}

/// `[scitags]`: flow marking. A transfer carrying a scitag (the `SciTag`
/// header, `TransferHeaderSciTag` on a third-party copy, `scitag.flow` in
/// an XRootD or HTTP URL) is announced at its start and end: fireflies
/// (UDP, flowd's port 10514 unless said) and/or lines to flowd's pipe.
/// Neither: off.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Scitags {
    /// Firefly destinations, `host[:port]`.
    pub destinations: Vec<String>,
    /// flowd's named pipe (`/var/run/flowd`), if lines go there.
    pub flowd: Option<std::path::PathBuf>,
}

impl Scitags {
    /// The firefly sender, when they go somewhere (names resolved now).
    pub fn fireflies(
        &self,
    ) -> anyhow::Result<Option<std::sync::Arc<tessera_wlcg::scitags::Fireflies>>> {
        let dests = resolve("scitags", &self.destinations, Some(10514))?;
        let host = hostname().unwrap_or_default();
        let s = tessera_wlcg::scitags::Settings {
            destinations: dests,
            flowd: self.flowd.clone(),
            host,
        };
        Ok(tessera_wlcg::scitags::Fireflies::new(s)?)
    }
}

/// This machine's host name, as the kernel has it.
fn hostname() -> Option<String> {
    let h = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    Some(h.trim().to_string()).filter(|h| !h.is_empty())
}

/// `host:port` destinations (`host`, an address, `[v6]:port`; the port
/// `default` when none is said) resolved now, for the table `what`.
fn resolve(
    what: &str,
    dests: &[String],
    default: Option<u16>,
) -> anyhow::Result<Vec<std::net::SocketAddr>> {
    use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
    let mut out = Vec::new();
    for d in dests {
        let bad = |why: String| anyhow::anyhow!("[{what}] destination {d:?}: {why}");
        let addr = if let Ok(a) = d.parse::<SocketAddr>() {
            a
        } else if let (Ok(ip), Some(port)) = (d.parse::<IpAddr>(), default) {
            SocketAddr::new(ip, port)
        } else {
            let named = match (d.rsplit_once(':'), default) {
                (Some((_, p)), _) if p.parse::<u16>().is_ok() => d.clone(),
                (_, Some(port)) => format!("{d}:{port}"),
                (_, None) => return Err(bad("host:port, the port said".into())),
            };
            named
                .to_socket_addrs()
                .map_err(|e| bad(e.to_string()))?
                .next()
                .ok_or_else(|| bad("no address".into()))?
        };
        out.push(addr);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn destinations() {
        let r = |d: &str, p| super::resolve("t", &[d.to_string()], p).map(|v| v[0].to_string());
        assert_eq!(r("127.0.0.1:9930", None).unwrap(), "127.0.0.1:9930");
        assert_eq!(r("127.0.0.1", Some(10514)).unwrap(), "127.0.0.1:10514");
        assert_eq!(r("::1", Some(10514)).unwrap(), "[::1]:10514");
        assert_eq!(r("[::1]:7", None).unwrap(), "[::1]:7");
        assert_eq!(
            r("localhost:9", None).unwrap().rsplit(':').next(),
            Some("9")
        );
        assert!(r("127.0.0.1", None).is_err(), "monitoring needs the port");
    }
}
