//! Grid certificates to identities: a client's chain (HTTPS client
//! certificate, XRootD `gsi`) verified by tessera-x509 against the trust
//! store, its VOMS attributes read, and the DN and FQANs mapped to a local
//! account — the VOMS role map first (the first FQAN a line matches), then
//! the grid-mapfile — in the account's groups plus the FQANs' VO groups
//! (`g:/cms/higgs` ACL entries, group names). A limited proxy gets a
//! read-only grant, so every write is refused by the same scope check as
//! tokens. Verified chains are remembered by their SHA-256 until the
//! earliest of their end, their AC's end and five minutes, so a handshake
//! costs one hash after the first.

use crate::users;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use tessera_types::{Access, Identity, NsPath, ScopeGrant, TokenGrant, X509Subject};
use tessera_x509::chain::{self, CrlPolicy};
use tessera_x509::mapping::{GridMap, VomsMap};
use tessera_x509::{voms, Trust};

/// What to do with a VOMS attribute certificate that does not verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BadVoms {
    /// Its FQANs are ignored (logged); the DN still counts.
    #[default]
    Ignore,
    /// The request is refused.
    Refuse,
}

/// What to do with a valid certificate no mapping names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unmapped {
    #[default]
    Refuse,
    /// As a request without credentials.
    Anonymous,
}

/// `[x509]`, as the server read it.
#[derive(Debug, Clone, Default)]
pub struct X509Config {
    pub ca_dir: PathBuf,
    pub vomsdir: Option<PathBuf>,
    pub grid_mapfile: Option<PathBuf>,
    pub voms_mapfile: Option<PathBuf>,
    pub crl: CrlPolicy,
    pub bad_voms: BadVoms,
    pub unmapped: Unmapped,
    /// VO groups (`/cms`, `/cms/higgs`) with gids: the first FQAN whose
    /// group has one gives the identity its primary gid (so its files,
    /// and their group quota, are the VO group's); the others are
    /// supplementary.
    pub groups: std::collections::BTreeMap<String, u32>,
}

/// Why a certificate gives no identity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum X509Refusal {
    /// The chain (or its AC) did not verify: HTTP 401.
    #[error("{0}")]
    Invalid(String),
    /// A valid certificate this site does not map: HTTP 403.
    #[error("{0}")]
    Unmapped(String),
}

/// How long a verified chain is remembered at most.
const CACHE_FOR: i64 = 300;
const CACHE_MAX: usize = 10_000;

type Cached = (i64, Result<Option<Identity>, X509Refusal>);

struct Maps {
    grid: GridMap,
    voms: VomsMap,
}

/// The site's certificate authentication.
pub struct X509Auth {
    cfg: X509Config,
    trust: Trust,
    maps: RwLock<Maps>,
    cache: Mutex<HashMap<[u8; 32], Cached>>,
}

fn read_map<T>(
    p: Option<&Path>,
    parse: fn(&str) -> Result<T, String>,
) -> Result<Option<T>, String> {
    let Some(p) = p else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
    parse(&text)
        .map(Some)
        .map_err(|e| format!("{}: {e}", p.display()))
}

impl X509Auth {
    /// Read the CA directory, the vomsdir and the mapping files (what
    /// `tesserad check-config` checks too).
    pub fn open(cfg: X509Config) -> Result<X509Auth, String> {
        let trust = Trust::open(&cfg.ca_dir, cfg.vomsdir.as_deref()).map_err(|e| e.to_string())?;
        let maps = Self::read_maps(&cfg)?;
        Ok(X509Auth {
            cfg,
            trust,
            maps: RwLock::new(maps),
            cache: Mutex::new(HashMap::new()),
        })
    }

    fn read_maps(cfg: &X509Config) -> Result<Maps, String> {
        Ok(Maps {
            grid: read_map(cfg.grid_mapfile.as_deref(), GridMap::parse)?.unwrap_or_default(),
            voms: read_map(cfg.voms_mapfile.as_deref(), VomsMap::parse)?.unwrap_or_default(),
        })
    }

    /// CAs, CRLs, grid-mapfile lines and role-map lines now in use.
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let (cas, crls) = self.trust.current().counts();
        let m = self.maps.read().unwrap_or_else(|p| p.into_inner());
        (cas, crls, m.grid.len(), m.voms.len())
    }

    /// Re-read the trust store if its files changed, and the mapping
    /// files; forget remembered chains when anything changed. Blocking.
    pub fn refresh(&self) {
        if let Err(e) = self.trust.refresh() {
            tracing::warn!("trust store not re-read, the previous one stays: {e}");
        }
        match Self::read_maps(&self.cfg) {
            Ok(m) => *self.maps.write().unwrap_or_else(|p| p.into_inner()) = m,
            Err(e) => tracing::warn!("mapping files not re-read, the previous ones stay: {e}"),
        }
        // Mapping files are re-read every time: a changed line must count.
        self.cache.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// The identity of a client's chain (DER, as sent), over `protocol`;
    /// `Ok(None)`: as a request without credentials (an unmapped
    /// certificate where the site says so).
    pub fn identify(
        &self,
        certs: &[Vec<u8>],
        protocol: &'static str,
    ) -> Result<Option<Identity>, X509Refusal> {
        let now = tessera_x509::now();
        let mut h = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
        for c in certs {
            h.update(&(c.len() as u64).to_be_bytes());
            h.update(c);
        }
        let key: [u8; 32] = h.finish().as_ref().try_into().unwrap_or([0; 32]);
        if let Some((until, r)) = self
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            if *until > now {
                return r.clone().map(|id| id.map(|i| with_protocol(i, protocol)));
            }
        }
        let (r, until) = self.decide(certs, now, protocol);
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= CACHE_MAX {
            cache.retain(|_, (u, _)| *u > now);
            if cache.len() >= CACHE_MAX {
                cache.clear();
            }
        }
        cache.insert(key, (until, r.clone()));
        r
    }

    fn decide(
        &self,
        certs: &[Vec<u8>],
        now: i64,
        protocol: &'static str,
    ) -> (Result<Option<Identity>, X509Refusal>, i64) {
        let store = self.trust.current();
        let v = match chain::verify(&store, certs, now, self.cfg.crl) {
            Ok(v) => v,
            Err(e) => {
                tracing::info!(error = %e, "certificate refused");
                return (Err(X509Refusal::Invalid(e.to_string())), now + 60);
            }
        };
        let mut until = v.not_after.min(now + CACHE_FOR);
        let fqans = match voms::attributes(&store, &v, now, self.cfg.crl) {
            Ok(Some(a)) => {
                until = until.min(a.not_after);
                a.fqans
            }
            Ok(None) => Vec::new(),
            Err(e) => {
                if self.cfg.bad_voms == BadVoms::Refuse {
                    tracing::info!(dn = %v.dn, error = %e, "VOMS attributes refused");
                    return (Err(X509Refusal::Invalid(e.to_string())), until);
                }
                tracing::warn!(dn = %v.dn, error = %e, "VOMS attributes ignored");
                Vec::new()
            }
        };
        (self.map(&v, fqans, protocol), until)
    }

    fn map(
        &self,
        v: &chain::Verified,
        fqans: Vec<String>,
        protocol: &'static str,
    ) -> Result<Option<Identity>, X509Refusal> {
        let name = {
            let m = self.maps.read().unwrap_or_else(|p| p.into_inner());
            m.voms
                .user(&v.dn, &fqans)
                .or_else(|| m.grid.user(&v.dn))
                .map(str::to_string)
        };
        let Some(name) = name else {
            if self.cfg.unmapped == Unmapped::Anonymous {
                return Ok(None);
            }
            return Err(X509Refusal::Unmapped(format!(
                "certificate {} is not mapped to a user here (grid-mapfile, VOMS role map)",
                v.dn
            )));
        };
        let user = users::user_by_name(&name).ok_or_else(|| {
            X509Refusal::Unmapped(format!(
                "{} maps to {name}, which is no local account",
                v.dn
            ))
        })?;
        if user.uid == 0 {
            return Err(X509Refusal::Unmapped(format!(
                "{} maps to root: certificates never act as root",
                v.dn
            )));
        }
        let mut id = users::local_identity(&user, None, protocol);
        let mut vo_gids = Vec::new();
        for f in &fqans {
            let g = voms::fqan_group(f);
            if let Some(&gid) = self.cfg.groups.get(&g) {
                if !vo_gids.contains(&gid) {
                    vo_gids.push(gid);
                }
            }
            if !g.is_empty() && !id.group_names.contains(&g) {
                id.group_names.push(g);
            }
        }
        if let Some(&primary) = vo_gids.first() {
            let old = std::mem::replace(&mut id.gid, primary);
            id.groups.push(old);
            id.groups.extend(vo_gids[1..].iter().copied());
            id.groups.retain(|&g| g != primary);
            id.groups.sort_unstable();
            id.groups.dedup();
        }
        if v.limited {
            id.token = Some(Arc::new(TokenGrant {
                issuer: tessera_types::LIMITED_PROXY.into(),
                subject: v.dn.clone(),
                scopes: vec![ScopeGrant {
                    access: Access::Read,
                    path: NsPath::root(),
                    dir_only: false,
                }],
                expires: u64::try_from(v.not_after).unwrap_or(0),
            }));
        }
        id.x509 = Some(Arc::new(X509Subject {
            dn: v.dn.clone(),
            fqans,
            limited: v.limited,
        }));
        tracing::debug!(dn = %v.dn, user = %name, "certificate mapped");
        Ok(Some(id))
    }
}

fn with_protocol(mut id: Identity, protocol: &'static str) -> Identity {
    id.protocol = protocol;
    id
}
