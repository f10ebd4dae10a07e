//! `[x509]`: grid certificates (HTTPS client certificates, proxies with
//! VOMS attributes). Off unless `ca_dir` is set.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use tessera_auth::x509::{BadVoms, Unmapped, X509Config};
use tessera_x509::chain::CrlPolicy;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CrlCfg {
    /// Revoked certificates and expired CRLs are refused; a CA without a
    /// CRL is taken.
    #[default]
    Enforce,
    /// An expired CRL is still used, with a warning.
    Warn,
    /// A CA without a CRL is refused too.
    Require,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum BadVomsCfg {
    /// FQANs of an attribute certificate that does not verify are
    /// ignored (and logged); the DN still maps.
    #[default]
    Ignore,
    Refuse,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum UnmappedCfg {
    /// A valid certificate no mapping names is refused (403).
    #[default]
    Refuse,
    /// ...or served as a request without credentials.
    Anonymous,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct X509 {
    /// The IGTF CA directory (`/etc/grid-security/certificates`).
    pub ca_dir: Option<PathBuf>,
    /// `<vomsdir>/<vo>/<host>.lsc` (`/etc/grid-security/vomsdir`).
    pub vomsdir: Option<PathBuf>,
    /// `"DN" user` lines.
    pub grid_mapfile: Option<PathBuf>,
    /// `"DN pattern" "FQAN pattern" user` lines (dCache's vorolemap).
    pub voms_mapfile: Option<PathBuf>,
    pub crl: CrlCfg,
    pub bad_voms: BadVomsCfg,
    pub unmapped: UnmappedCfg,
    /// Offer XRootD's `gsi` (X.509 proxies over root:// and roots://),
    /// with `[tls]`'s certificate and key as the host credentials (an RSA
    /// key, as gsi signs with RSA): `true` (refuse to start without
    /// them), `false`, or unset: offered when the key is RSA, with a
    /// warning when it is not.
    pub xrootd_gsi: Option<bool>,
    /// VO groups with gids (`{ "/cms" = 3000 }`): the first of a proxy's
    /// FQANs whose group is here gives its primary gid (group quotas).
    pub groups: std::collections::BTreeMap<String, u32>,
    /// How often the directories and mapping files are re-read.
    #[serde(rename = "refresh", with = "crate::units::secs")]
    pub refresh_s: u64,
}

impl Default for X509 {
    fn default() -> X509 {
        X509 {
            ca_dir: None,
            vomsdir: None,
            grid_mapfile: None,
            voms_mapfile: None,
            crl: CrlCfg::default(),
            bad_voms: BadVomsCfg::default(),
            unmapped: UnmappedCfg::default(),
            xrootd_gsi: None,
            groups: std::collections::BTreeMap::new(),
            refresh_s: 300,
        }
    }
}

impl X509 {
    /// What tessera-auth takes, when certificates are on.
    pub fn auth_config(&self) -> Option<X509Config> {
        Some(X509Config {
            ca_dir: self.ca_dir.clone()?,
            vomsdir: self.vomsdir.clone(),
            grid_mapfile: self.grid_mapfile.clone(),
            voms_mapfile: self.voms_mapfile.clone(),
            crl: match self.crl {
                CrlCfg::Enforce => CrlPolicy::Enforce,
                CrlCfg::Warn => CrlPolicy::Warn,
                CrlCfg::Require => CrlPolicy::Require,
            },
            bad_voms: match self.bad_voms {
                BadVomsCfg::Ignore => BadVoms::Ignore,
                BadVomsCfg::Refuse => BadVoms::Refuse,
            },
            unmapped: match self.unmapped {
                UnmappedCfg::Refuse => Unmapped::Refuse,
                UnmappedCfg::Anonymous => Unmapped::Anonymous,
            },
            groups: self.groups.clone(),
        })
    }

    /// The gsi host credentials (`[tls]`'s), when gsi is offered.
    pub fn gsi(&self, tls: &crate::config::Tls) -> Result<Option<tessera_gsi::GsiServer>, String> {
        let (Some(_), Some(cert), Some(key)) = (&self.ca_dir, &tls.cert, &tls.key) else {
            return match self.xrootd_gsi {
                Some(true) => Err("[x509] xrootd_gsi needs ca_dir and [tls] cert and key".into()),
                _ => Ok(None),
            };
        };
        if self.xrootd_gsi == Some(false) {
            return Ok(None);
        }
        let read =
            |p: &std::path::Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
        match tessera_gsi::GsiServer::new(&read(cert)?, &read(key)?) {
            Ok(g) => Ok(Some(g)),
            Err(e) if self.xrootd_gsi.is_none() => {
                tracing::warn!("XRootD gsi not offered: {e} (certificates over HTTPS only)");
                Ok(None)
            }
            Err(e) => Err(format!(
                "[x509] gsi: {e} (xrootd_gsi = false serves certificates over HTTPS only)"
            )),
        }
    }

    /// Read everything now (what serve does): the error says what is wrong.
    pub fn open(&self) -> Result<Option<tessera_auth::x509::X509Auth>, String> {
        match self.auth_config() {
            Some(c) => tessera_auth::x509::X509Auth::open(c)
                .map(Some)
                .map_err(|e| format!("[x509]: {e}")),
            None if self.vomsdir.is_some()
                || self.grid_mapfile.is_some()
                || self.voms_mapfile.is_some() =>
            {
                Err("[x509]: ca_dir is needed to take certificates".into())
            }
            None => Ok(None),
        }
    }
}
