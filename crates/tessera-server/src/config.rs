//! `tesserad` configuration (TOML). Unknown keys are an error. See
//! `deploy/tesserad.toml` for the commented template.

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid configuration {path}: {source}")]
    Parse {
        path: PathBuf,
        source: toml::de::Error,
    },
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Every role in one process (the dev default).
    #[default]
    All,
    /// Metadata service only.
    Mgm,
    /// Stateless data gateway only.
    Gateway,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum DurabilityCfg {
    /// fsync the write-ahead log before acknowledging (group commit).
    #[default]
    Sync,
    /// Acknowledge once the log is written to the OS (survives kill -9, not power loss).
    Buffered,
}

pub use crate::config_conn::{Buffers, UnixCfg, Xrootd};
pub use crate::config_data::{Balance, Data, Fsck, Io, Recycle, Server};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub role: Role,
    /// Base directory: `meta/` (RocksDB), `logs/`, `dev/` live below it.
    pub data_dir: PathBuf,
    pub listen: Listen,
    pub meta: Meta,
    pub admin: Admin,
    pub log: Log,
    pub tls: Tls,
    pub xrootd: Xrootd,
    pub https: Https,
    pub buffers: Buffers,
    pub cluster: Cluster,
    pub fsck: Fsck,
    pub recycle: Recycle,
    pub balance: Balance,
    pub io: Io,
    pub data: Data,
    pub server: Server,
    pub auth: Auth,
    pub limits: crate::limits::Limits,
    /// Other sites' storage under views (`tessera-fed`).
    pub federation: tessera_fed::FedConfig,
    /// Metadata high availability on Ceph.
    pub ha: crate::config_ha::Ha,
    /// Grid certificates (X.509 proxies, VOMS).
    pub x509: crate::config_x509::X509,
    /// The Storage Resource Report (WLCG).
    pub srr: crate::config_wlcg::Srr,
    /// The XRootD monitoring stream (WLCG).
    pub monitoring: crate::config_wlcg::Monitoring,
    /// SciTags flow marking (WLCG).
    pub scitags: crate::config_wlcg::Scitags,
    /// Register `<data_dir>/fs/fs1..6` as filesystems (dev mode).
    #[serde(skip)]
    pub dev_filesystems: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Listen {
    /// gRPC admin API.
    pub admin: SocketAddr,
    /// Prometheus `/metrics`, `/healthz`, `/readyz`.
    pub metrics: SocketAddr,
    /// XRootD `root://` and `roots://` (TLS when `[tls]` is set).
    pub xrootd: Option<SocketAddr>,
    /// HTTPS/WebDAV (plain http:// without `[tls]`).
    pub https: Option<SocketAddr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AnonymousCfg {
    /// Requests without credentials run as nobody (the default).
    #[default]
    Nobody,
    /// Requests without credentials from a loopback peer the kernel says
    /// runs as the server's own user run as that user; everyone else's are
    /// read-only (as XRootD's `unix = "owner"`).
    Owner,
    /// Requests without credentials may read and list (as nobody), and
    /// nothing else (the dev mode's choice): writes need a token.
    #[serde(rename = "read-only")]
    ReadOnly,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Https {
    /// Who a request without credentials is (tokens arrive with the
    /// authorization layer).
    pub anonymous: AnonymousCfg,
    /// CA certificates (PEM files) trusted for third-party copies, beyond
    /// the system bundle (`/etc/ssl/certs/ca-certificates.crt`).
    pub tpc_ca_files: Vec<PathBuf>,
    /// Offer HTTP/2 (ALPN `h2`) to clients that ask for it. Off by
    /// default: Debian's xrootd (XrdHttpTPC, libcurl 7.88) pushing a
    /// third-party copy over HTTP/2 sends an empty body.
    pub http2: bool,
    /// How long a request body may bring no data before the upload is
    /// abandoned (408, nothing left behind). Default "60s".
    #[serde(
        with = "crate::units::opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub body_timeout: Option<Duration>,
    /// The time in which a client receiving a response must take at least
    /// 1 MiB of it while it waits to be sent, else its connection (and the
    /// response's memory) is given up. Default "60s".
    #[serde(
        with = "crate::units::opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub send_timeout: Option<Duration>,
    /// Remote endpoints a third-party copy may reach: networks (CIDR or
    /// an address) and host names (`*.example.org` for a domain). With
    /// entries, nothing else is reached; without, anything but loopback
    /// and link-local addresses (those only for root).
    pub tpc_allow: Vec<String>,
    /// Remote endpoints third-party copies never reach (checked first).
    pub tpc_deny: Vec<String>,
    /// HTTP Basic credentials for desktop WebDAV clients (cadaver,
    /// davfs2): a password file, one `name:$pbkdf2-sha256$…` line per
    /// local account (`tessera passwd NAME` makes one); over TLS only,
    /// never as root.
    pub basic_passwd: Option<PathBuf>,
}

impl Https {
    /// `send_timeout`, or its default.
    pub fn send_timeout_or_default(&self) -> Duration {
        self.send_timeout
            .unwrap_or(tessera_https::DEFAULT_BODY_TIMEOUT)
    }

    /// `body_timeout`, or its default.
    pub fn body_timeout_or_default(&self) -> Duration {
        self.body_timeout
            .unwrap_or(tessera_https::DEFAULT_BODY_TIMEOUT)
    }
}

/// Scale-out: a metadata service (`mgm`, or `all` with a secret) and its
/// data gateways share `secret_file`; a gateway names the metadata
/// service's admin/internal port (`mgm`) and XRootD endpoint
/// (`mgm_xrootd`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Cluster {
    /// File holding the cluster secret (signs capabilities, authenticates
    /// gateways); not group/world readable.
    pub secret_file: Option<PathBuf>,
    /// Gateway: the metadata service's admin port, `host:port`; with a
    /// highly available metadata service every node's, comma-separated
    /// (the gateway registers with the active one).
    pub mgm: Option<String>,
    /// Gateway: the metadata service's XRootD endpoint, `host:port`
    /// (every node's, comma-separated: clients are sent to one that takes
    /// connections).
    pub mgm_xrootd: Option<String>,
    /// Gateway: `host:port` clients use to reach this gateway's XRootD
    /// listener (default: the listen address).
    pub advertise: Option<String>,
    /// Gateway with an HTTPS listener: the metadata service's HTTPS
    /// endpoint, `host:port` (requests other than file data go there;
    /// every node's, comma-separated, as `mgm_xrootd`).
    pub mgm_https: Option<String>,
    /// Gateway: `host:port` clients use to reach its HTTPS listener
    /// (default: the listen address); must match its certificate.
    pub advertise_https: Option<String>,
    /// Gateway: the site it serves (redirects prefer the client's site).
    pub site: String,
    /// Lifetime of a capability, seconds.
    #[serde(rename = "cap_ttl", with = "crate::units::secs")]
    pub cap_ttl_secs: u64,
    /// Metadata service: a write carried by a gateway that has sent no
    /// heartbeat for this long is aborted (its quota reservation released).
    #[serde(rename = "write_lease", with = "crate::units::secs")]
    pub write_lease_secs: u64,
    /// Metadata service: client networks per site, e.g.
    /// `{ "site-a" = ["10.1.0.0/16"] }`; a client is sent to a gateway of
    /// its site when one is alive.
    pub client_sites: std::collections::BTreeMap<String, Vec<String>>,
}

/// Bearer tokens: the issuers trusted, and how their keys are fetched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Auth {
    /// CA certificates (PEM) trusted when fetching issuers' keys, beyond
    /// the system bundle.
    pub ca_files: Vec<PathBuf>,
    /// How often every issuer's keys are fetched again, seconds.
    #[serde(rename = "refresh", with = "crate::units::secs")]
    pub refresh_secs: u64,
    pub issuers: Vec<IssuerCfg>,
    /// Dev mode: serve the development issuer (its key in `dev/`) on the
    /// HTTPS listener and trust it.
    #[serde(skip)]
    pub dev_issuer: bool,
    /// Dev mode: who a development token acts as when its subject is not
    /// a local account (or is root: tokens never act as root). Dev mode
    /// makes `/data` for this identity.
    pub dev_uid: u32,
    pub dev_gid: u32,
    /// Clock skew allowed on a token's times (`exp`, `nbf`, `iat`),
    /// seconds; a session that logged in with a token ends this long after
    /// its `exp`. Default 60.
    #[serde(rename = "leeway", with = "crate::units::secs")]
    pub leeway_secs: u64,
}

impl Default for Auth {
    fn default() -> Self {
        Auth {
            ca_files: Vec::new(),
            refresh_secs: 3600,
            issuers: Vec::new(),
            dev_issuer: false,
            dev_uid: 1000,
            dev_gid: 1000,
            leeway_secs: tessera_auth::LEEWAY_SECS,
        }
    }
}

/// One trusted token issuer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IssuerCfg {
    /// Exactly the tokens' `iss` (an https URL).
    pub issuer: String,
    /// Accepted `aud` values (the WLCG "any" audience is always accepted).
    pub audiences: Vec<String>,
    /// The namespace path the issuer's scope paths are relative to.
    #[serde(default = "root_path")]
    pub base_path: String,
    /// Who the issuer's tokens act as, unless `map_file` maps the subject.
    #[serde(default = "nobody_id")]
    pub default_uid: u32,
    #[serde(default = "nobody_id")]
    pub default_gid: u32,
    #[serde(default = "nobody_name")]
    pub default_name: String,
    /// JSON `{ "<sub>": { "uid": N, "gid": N, "name": "..." }, ... }`.
    pub map_file: Option<PathBuf>,
    /// `{ "/cms" = 3000, ... }`: a token's `wlcg.groups` entry → a gid
    /// the bearer is in; the first one the token carries is the primary
    /// gid when `map_file` does not map the subject.
    #[serde(default)]
    pub groups: std::collections::BTreeMap<String, u32>,
    /// Whether its create/modify scopes are honoured (false: read only).
    #[serde(default = "yes")]
    pub may_create: bool,
    /// A subject `map_file` does not map that names a local account (NSS:
    /// passwd, LDAP, SSSD) acts as that account; root never.
    #[serde(default)]
    pub local_users: bool,
}

fn root_path() -> String {
    "/".into()
}
fn nobody_id() -> u32 {
    65534
}
fn nobody_name() -> String {
    "nobody".into()
}
fn yes() -> bool {
    true
}

impl Default for Cluster {
    fn default() -> Self {
        Cluster {
            secret_file: None,
            mgm: None,
            mgm_xrootd: None,
            advertise: None,
            mgm_https: None,
            advertise_https: None,
            site: String::new(),
            cap_ttl_secs: tessera_cluster::cap::DEFAULT_TTL_SECS,
            write_lease_secs: 60,
            client_sites: Default::default(),
        }
    }
}

/// The server certificate (PEM chain) and key for `roots://` and HTTPS.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Tls {
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Meta {
    /// RocksDB directory; default `<data_dir>/meta`.
    pub dir: Option<PathBuf>,
    pub durability: DurabilityCfg,
    /// Block cache, e.g. "256Mi".
    pub block_cache: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Admin {
    /// File holding the admin bearer secret (must not be world-readable).
    pub token_file: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Log {
    /// Access log: a file path, "-" for stdout, or "" for none.
    /// Default `<data_dir>/logs/access.log`.
    pub access: Option<String>,
    /// Audit log (every admin action, who and how it ended): a file path,
    /// "-" for stdout, or "" for none. Default `<data_dir>/logs/audit.log`.
    pub audit: Option<String>,
    /// Diagnostic log filter (RUST_LOG syntax).
    pub level: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            role: Role::All,
            data_dir: PathBuf::from("/var/lib/tessera"),
            listen: Listen::default(),
            meta: Meta::default(),
            admin: Admin::default(),
            log: Log::default(),
            tls: Tls::default(),
            xrootd: Xrootd::default(),
            https: Https::default(),
            buffers: Buffers::default(),
            cluster: Cluster::default(),
            fsck: Fsck::default(),
            recycle: Recycle::default(),
            balance: Balance::default(),
            io: Io::default(),
            data: Data::default(),
            server: Server::default(),
            auth: Auth::default(),
            limits: Default::default(),
            federation: Default::default(),
            ha: Default::default(),
            x509: crate::config_x509::X509::default(),
            srr: crate::config_wlcg::Srr::default(),
            monitoring: crate::config_wlcg::Monitoring::default(),
            scitags: crate::config_wlcg::Scitags::default(),
            dev_filesystems: false,
        }
    }
}

impl Default for Listen {
    fn default() -> Self {
        Listen {
            admin: SocketAddr::from(([127, 0, 0, 1], 7094)),
            metrics: SocketAddr::from(([127, 0, 0, 1], 7095)),
            xrootd: None,
            https: None,
        }
    }
}

impl Default for Meta {
    fn default() -> Self {
        Meta {
            dir: None,
            durability: DurabilityCfg::Sync,
            block_cache: "2Gi".into(),
        }
    }
}

impl Default for Log {
    fn default() -> Self {
        Log {
            access: None,
            audit: None,
            level: "info".into(),
        }
    }
}

impl Config {
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let parse = |source| ConfigError::Parse {
            path: path.to_path_buf(),
            source,
        };
        let mut table: toml::Table = toml::from_str(&text).map_err(parse)?;
        for w in crate::units::upgrade(&mut table) {
            eprintln!("tesserad: {}: {w}", path.display());
            tracing::warn!(file = %path.display(), "{w}");
        }
        let cfg: Config = table.try_into().map_err(parse)?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// This configuration with every default spelled out (what
    /// `tesserad print-config` shows).
    pub fn effective(&self) -> Config {
        let mut c = self.clone();
        let x = &mut c.xrootd;
        x.request_stall = x
            .request_stall
            .or(Some(tessera_xrootd::DEFAULT_REQUEST_STALL));
        x.max_in_flight = x
            .max_in_flight
            .or(Some(tessera_xrootd::DEFAULT_MAX_IN_FLIGHT));
        x.body_timeout = x
            .body_timeout
            .or(Some(tessera_xrootd::DEFAULT_BODY_TIMEOUT));
        x.idle_timeout = x
            .idle_timeout
            .or(Some(tessera_xrootd::DEFAULT_IDLE_TIMEOUT));
        let open = tessera_xrootd::DEFAULT_IDLE_OPEN_TIMEOUT;
        x.idle_open_timeout = x.idle_open_timeout.or(Some(open));
        let h = &mut c.https;
        h.body_timeout = h.body_timeout.or(Some(tessera_https::DEFAULT_BODY_TIMEOUT));
        let budget = self.buffers.budget();
        let b = &mut c.buffers;
        b.max_mib = b.max_mib.or(Some(budget.total() >> 20));
        b.wait_ms = b.wait_ms.or(Some(budget.wait().as_millis() as u64));
        b.per_connection_mib = b.per_connection_mib.or(Some(budget.per_connection() >> 20));
        b.per_identity_mib = b.per_identity_mib.or(Some(budget.per_identity() >> 20));
        c
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        tessera_types::parse_size(&self.meta.block_cache)
            .map_err(|e| ConfigError::Invalid(format!("meta.block_cache: {e}")))?;
        tessera_core::RemotePolicy::new(&self.https.tpc_allow, &self.https.tpc_deny)
            .map_err(|e| ConfigError::Invalid(format!("https.tpc_allow/tpc_deny: {e}")))?;
        if self.auth.dev_uid == 0 {
            return Err(ConfigError::Invalid(
                "auth.dev_uid must not be 0: development tokens never act as root".into(),
            ));
        }
        if self.role == Role::Gateway {
            let c = &self.cluster;
            if c.secret_file.is_none() || c.mgm.is_none() || c.mgm_xrootd.is_none() {
                return Err(ConfigError::Invalid(
                    "a gateway needs cluster.secret_file, cluster.mgm and cluster.mgm_xrootd"
                        .into(),
                ));
            }
            if self.listen.xrootd.is_none() {
                return Err(ConfigError::Invalid("a gateway needs listen.xrootd".into()));
            }
            return Ok(());
        }
        self.ha.check(&self.listen).map_err(ConfigError::Invalid)?;
        if self.cluster.write_lease_secs < 5 {
            // Gateways send a heartbeat every 2 s.
            return Err(ConfigError::Invalid(
                "cluster.write_lease_secs must be at least 5".into(),
            ));
        }
        if let Err(e) = tessera_cluster::SiteMap::new(&self.cluster.client_sites) {
            return Err(ConfigError::Invalid(format!("cluster.client_sites: {e}")));
        }
        if self.role == Role::Mgm && self.cluster.secret_file.is_none() {
            return Err(ConfigError::Invalid(
                "role = \"mgm\" needs cluster.secret_file (shared with its gateways)".into(),
            ));
        }
        if self.tls.cert.is_some() != self.tls.key.is_some() {
            return Err(ConfigError::Invalid(
                "tls.cert and tls.key go together".into(),
            ));
        }
        if self.admin.token_file.is_none() {
            return Err(ConfigError::Invalid(
                "admin.token_file is required outside dev mode".into(),
            ));
        }
        if let Some(f) = &self.https.basic_passwd {
            if self.tls.cert.is_none() {
                return Err(ConfigError::Invalid(
                    "https.basic_passwd needs [tls]: passwords go over TLS only".into(),
                ));
            }
            tessera_auth::passwd::Passwd::open(f)
                .map_err(|e| ConfigError::Invalid(format!("https.basic_passwd: {e}")))?;
        }
        if self.x509.ca_dir.is_some() && self.tls.cert.is_none() {
            return Err(ConfigError::Invalid(
                "[x509] needs [tls]: certificates are asked for in the TLS handshake".into(),
            ));
        }
        self.x509.open().map_err(ConfigError::Invalid)?;
        self.x509.gsi(&self.tls).map_err(ConfigError::Invalid)?;
        // What serve would refuse (sites, credential files, views).
        tessera_fed::Federation::new(self.federation.clone(), None)
            .map_err(|e| ConfigError::Invalid(format!("[federation]: {e}")))?;
        Ok(())
    }

    pub fn meta_dir(&self) -> PathBuf {
        self.meta
            .dir
            .clone()
            .unwrap_or_else(|| self.data_dir.join("meta"))
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
