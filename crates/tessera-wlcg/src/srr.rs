//! The Storage Resource Report (SRR, JSON schema v4.2): the service, its
//! endpoints (the advertised `root://` and `https://` URLs) and one share
//! per accounted quota node (used and total bytes from the node's project
//! quota, its inode count, its VOs). Free space is deliberately absent,
//! as the schema wants. Made by [`Reporter::refresh`] (the server calls it
//! on an interval), kept for the HTTPS path and `tessera srr`, and
//! written as a file into the namespace for readers that use the storage
//! protocol (LHCb/DIRAC).

use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};
use tessera_core::{Core, CoreError, QuotaKind};
use tessera_types::{Identity, NsPath};

/// One endpoint as configured (the URL clients use, not a bind address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub name: String,
    pub url: String,
    /// `xroot`, `https`, … (free text in the schema; dCache's words).
    pub interface: String,
}

/// What the operator said about a share.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareCfg {
    /// The share's name (default: the node's last path component).
    pub name: Option<String>,
    /// Its VOs (default: the name of the node directory's group).
    pub vos: Vec<String>,
}

/// How the report is made.
#[derive(Clone)]
pub struct Settings {
    /// `storageservice.name` (the site's storage name in CRIC).
    pub name: String,
    pub id: Option<String>,
    /// `production`, `pre-production`, `testing` or `development`.
    pub quality: Option<String>,
    pub endpoints: Vec<Endpoint>,
    /// Quota nodes reported whatever their limits, by path; every node
    /// with a project byte limit is reported too.
    pub shares: BTreeMap<String, ShareCfg>,
    /// Where the report is written in the namespace (none: not written).
    pub file: Option<NsPath>,
    /// Whether the HTTPS path answers requests without a credential.
    pub public: bool,
    /// A group's name by gid (NSS), for a share's default VO.
    pub group_name: Arc<dyn Fn(u32) -> Option<String> + Send + Sync>,
}

/// A report made at `made` (Unix seconds).
#[derive(Debug)]
pub struct Report {
    pub json: String,
    pub made: u64,
}

/// Makes and keeps the report.
pub struct Reporter {
    core: Core,
    settings: Settings,
    current: RwLock<Option<Arc<Report>>>,
    /// One refresh at a time (requests waiting for the first report share
    /// it); when the last one failed, and why.
    making: tokio::sync::Mutex<Option<(std::time::Instant, String)>>,
}

/// After a failed refresh, requests get the failure, not a new attempt,
/// for this long (the interval makes the next one).
const FAILED_FOR: std::time::Duration = std::time::Duration::from_secs(60);

#[derive(Serialize)]
struct Document<'a> {
    storageservice: Service<'a>,
}

#[derive(Serialize)]
struct Service<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    implementation: &'static str,
    implementationversion: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    qualitylevel: Option<&'a str>,
    latestupdate: u64,
    storagecapacity: Capacity,
    storageendpoints: Vec<EndpointDoc<'a>>,
    storageshares: Vec<ShareDoc>,
}

#[derive(Serialize)]
struct Capacity {
    online: Sizes,
}

#[derive(Serialize)]
struct Sizes {
    totalsize: u64,
    usedsize: u64,
}

#[derive(Serialize)]
struct EndpointDoc<'a> {
    name: &'a str,
    endpointurl: &'a str,
    interfacetype: &'a str,
    assignedshares: [&'static str; 1],
}

/// One share as the report says it (public for tests and the CLI's
/// table).
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct ShareDoc {
    pub name: String,
    pub path: Vec<String>,
    pub timestamp: u64,
    pub totalsize: u64,
    pub usedsize: u64,
    pub numberoffiles: u64,
    pub vos: Vec<String>,
    pub assignedendpoints: Vec<String>,
}

impl Reporter {
    pub fn new(core: Core, settings: Settings) -> Reporter {
        Reporter {
            core,
            settings,
            current: RwLock::new(None),
            making: tokio::sync::Mutex::new(None),
        }
    }

    pub fn public(&self) -> bool {
        self.settings.public
    }

    /// The last report made, if any.
    pub fn current(&self) -> Option<Arc<Report>> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The last report, or the first one (made once, whoever asks: the
    /// others wait for it; a failure is answered for a minute without
    /// trying again).
    pub async fn get(&self) -> Result<Arc<Report>, CoreError> {
        if let Some(r) = self.current() {
            return Ok(r);
        }
        let mut making = self.making.lock().await;
        if let Some(r) = self.current() {
            return Ok(r);
        }
        if let Some((at, why)) = making.as_ref() {
            if at.elapsed() < FAILED_FOR {
                return Err(CoreError::Remote {
                    kind: tessera_types::ErrorKind::Unavailable,
                    msg: format!("no storage resource report yet: {why}"),
                });
            }
        }
        self.make(&mut making).await
    }

    /// Make the report anew, keep it and write it into the namespace (a
    /// failed write is logged: the report is still served).
    pub async fn refresh(&self) -> Result<Arc<Report>, CoreError> {
        let mut making = self.making.lock().await;
        self.make(&mut making).await
    }

    async fn make(
        &self,
        failed: &mut Option<(std::time::Instant, String)>,
    ) -> Result<Arc<Report>, CoreError> {
        let r = self.build().await;
        *failed = r
            .as_ref()
            .err()
            .map(|e| (std::time::Instant::now(), e.to_string()));
        r
    }

    async fn build(&self) -> Result<Arc<Report>, CoreError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let shares = self.shares(now).await?;
        let s = &self.settings;
        let online = Sizes {
            totalsize: shares.iter().map(|x| x.totalsize).sum(),
            usedsize: shares.iter().map(|x| x.usedsize).sum(),
        };
        let doc = Document {
            storageservice: Service {
                name: &s.name,
                id: s.id.as_deref(),
                implementation: "Tessera",
                implementationversion: env!("CARGO_PKG_VERSION"),
                qualitylevel: s.quality.as_deref(),
                latestupdate: now,
                storagecapacity: Capacity { online },
                storageendpoints: s
                    .endpoints
                    .iter()
                    .map(|e| EndpointDoc {
                        name: &e.name,
                        endpointurl: &e.url,
                        interfacetype: &e.interface,
                        assignedshares: ["all"],
                    })
                    .collect(),
                storageshares: shares,
            },
        };
        let mut json = serde_json::to_string_pretty(&doc)
            .map_err(|e| CoreError::Invalid(format!("SRR: {e}")))?;
        json.push('\n');
        let report = Arc::new(Report { json, made: now });
        if let Some(f) = &s.file {
            if let Err(e) = self.write(f, report.json.as_bytes()).await {
                tracing::warn!(file = %f.display(), error = %e, "SRR not written into the namespace");
            }
        }
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(&report));
        Ok(report)
    }

    /// The shares: every quota node with a project byte limit, and the
    /// configured ones.
    async fn shares(&self, now: u64) -> Result<Vec<ShareDoc>, CoreError> {
        let root = Identity::root("srr");
        let nodes = self.core.quota_ls(&root, NsPath::root()).await?;
        let mut out = Vec::new();
        for n in nodes {
            let path = n.path.display();
            let cfg = self.settings.shares.get(&path);
            let project = n
                .entries
                .iter()
                .find(|e| e.target.kind == QuotaKind::Project);
            let limit = project.and_then(|p| p.max_bytes);
            if cfg.is_none() && limit.is_none() {
                continue;
            }
            let vos = match cfg.map(|c| c.vos.clone()).filter(|v| !v.is_empty()) {
                Some(v) => v,
                None => {
                    // NSS may ask a directory service: off the runtime.
                    let gid = self.core.stat(&root, n.path.clone()).await?.gid;
                    let name = Arc::clone(&self.settings.group_name);
                    tessera_core::blocking(move || name(gid))
                        .await?
                        .into_iter()
                        .collect()
                }
            };
            let name = cfg.and_then(|c| c.name.clone()).unwrap_or_else(|| {
                n.path
                    .name()
                    .map(|b| String::from_utf8_lossy(b).into_owned())
                    .unwrap_or_else(|| "root".into())
            });
            out.push(ShareDoc {
                name,
                path: vec![path],
                timestamp: now,
                totalsize: limit.unwrap_or(0),
                usedsize: project.map_or(0, |p| p.used_bytes),
                numberoffiles: project.map_or(0, |p| p.used_inodes),
                vos,
                assignedendpoints: vec!["all".into()],
            });
        }
        Ok(out)
    }

    /// Write `json` as the file `f` (parents made), as root, replacing
    /// the last one.
    async fn write(&self, f: &NsPath, json: &[u8]) -> Result<(), CoreError> {
        let root = Identity::root("srr");
        self.core.make_parents(&root, f).await?;
        let (core, p, bytes) = (self.core.clone(), f.clone(), json.to_vec());
        tessera_core::blocking(move || {
            let mut ws = core.open_write(&root, &p, 0o644, true, bytes.len() as u64)?;
            ws.write(&bytes)?;
            ws.close().map(drop)
        })
        .await?
    }
}
