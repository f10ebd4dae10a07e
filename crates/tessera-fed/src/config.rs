//! `[federation]` in the server's TOML: sites (client subnets), endpoints
//! (other sites' storage), views (paths that show endpoints as one tree).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FedConfig {
    /// How often every endpoint is probed.
    #[serde(with = "tessera_types::units::duration")]
    pub probe_interval: Duration,
    /// Failed probes in a row before an endpoint leaves every choice (it
    /// comes back at its first good one).
    pub probe_failures: u32,
    /// Deadline of one request to an endpoint (a probe, a stat).
    #[serde(with = "tessera_types::units::duration")]
    pub timeout: Duration,
    /// How long a lookup waits for more endpoints once one has the file
    /// (unless one at the client's own site has it: then not at all).
    #[serde(with = "tessera_types::units::duration")]
    pub settle: Duration,
    /// How long a file found (or found nowhere) is remembered.
    #[serde(with = "tessera_types::units::duration")]
    pub cache_ttl: Duration,
    #[serde(with = "tessera_types::units::duration")]
    pub negative_ttl: Duration,
    /// Files remembered at most (the oldest go first).
    pub cache_entries: usize,
    /// A MaxMind-format City database (GeoLite2-City.mmdb): a client in no
    /// site's subnets is at the site nearest to where it puts the client.
    pub geoip_db: Option<PathBuf>,
    /// Clients sent to an endpoint (each counting half after 10 s, a
    /// quarter after 20 s, …) plus lookups in flight there that make its
    /// load 1: an endpoint at load 1 looks twice as far away as its
    /// latency says, so clients spread over endpoints as near as each
    /// other (see `Federation::order`).
    pub load_capacity: u32,
    /// Validity of the presigned URLs clients are sent to (S3).
    #[serde(with = "tessera_types::units::duration")]
    pub grant: Duration,
    /// Under this path every https endpoint also has a view of its own
    /// (`/PerSite/<endpoint>/…`, no aggregation); empty: none.
    pub per_site: String,
    /// Where credential files named at run time (`tessera fed endpoint
    /// add|set --bearer-file …`) must be (tesserad makes it
    /// `<data_dir>/fed-credentials` when unset); files named in the
    /// configuration file may be anywhere. Every credential file must be
    /// a regular file (not a link) of the server's user, readable by it
    /// alone.
    pub credentials_dir: Option<PathBuf>,
    pub sites: Vec<SiteCfg>,
    pub endpoints: Vec<EndpointCfg>,
    pub views: Vec<ViewCfg>,
}

impl Default for FedConfig {
    fn default() -> FedConfig {
        FedConfig {
            probe_interval: Duration::from_secs(5),
            probe_failures: 2,
            timeout: Duration::from_secs(2),
            settle: Duration::from_millis(20),
            cache_ttl: Duration::from_secs(60),
            negative_ttl: Duration::from_secs(10),
            cache_entries: 100_000,
            geoip_db: None,
            load_capacity: 100,
            grant: Duration::from_secs(300),
            per_site: "/PerSite".into(),
            credentials_dir: None,
            sites: Vec::new(),
            endpoints: Vec::new(),
            views: Vec::new(),
        }
    }
}

/// A site: where clients from these subnets are (`127.0.0.2/32`, …), and
/// where it is on the globe (for clients placed by `geoip_db`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct SiteCfg {
    pub name: String,
    #[serde(default)]
    pub subnets: Vec<String>,
    #[serde(default)]
    pub latitude: Option<f64>,
    #[serde(default)]
    pub longitude: Option<f64>,
}

/// Another site's storage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointCfg {
    pub name: String,
    /// The site it is at (a `[[federation.sites]]` name).
    pub site: String,
    /// `https` (WebDAV/HTTP; `http` URLs too), `root` (XRootD) or `s3`.
    #[serde(default = "https")]
    pub kind: String,
    /// Its base URL: a file `p` of a view is `url` + `p`. An XRootD
    /// endpoint serves the view under the view's own path
    /// (`root://host:port//<view path>`): an XRootD redirect keeps it. An
    /// S3 one is path-style: `http(s)://host:port/<bucket>[/<key prefix>]`.
    pub url: String,
    /// S3: the region requests are signed for (`us-east-1` when empty).
    #[serde(default)]
    pub region: String,
    /// Credentials, read at start, used on the federation's own requests
    /// and never sent to clients: a bearer token (https endpoints), an S3
    /// access and secret key (S3 endpoints; clients get presigned URLs).
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    #[serde(default)]
    pub access_key_file: Option<PathBuf>,
    #[serde(default)]
    pub secret_key_file: Option<PathBuf>,
    /// Left out of every choice by an admin (`tessera fed endpoint set
    /// NAME --disabled`), probed still.
    #[serde(default)]
    pub disabled: bool,
    /// Limits: a deadline of its own for lookups and probes (else the
    /// federation's `timeout`), and at most this many lookups at once
    /// (0: no limit; the others wait, within their deadline).
    #[serde(
        default,
        with = "tessera_types::units::opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout: Option<Duration>,
    #[serde(default)]
    pub max_parallel: usize,
}

impl Default for EndpointCfg {
    fn default() -> EndpointCfg {
        EndpointCfg {
            name: String::new(),
            site: String::new(),
            kind: https(),
            url: String::new(),
            region: String::new(),
            token_file: None,
            access_key_file: None,
            secret_key_file: None,
            disabled: false,
            timeout: None,
            max_parallel: 0,
        }
    }
}

fn https() -> String {
    "https".into()
}

/// A path under which endpoints' trees are shown as one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViewCfg {
    pub path: String,
    pub endpoints: Vec<String>,
    /// Readable without a token (a token, when given, must still allow
    /// reading the path).
    #[serde(default = "yes")]
    pub public: bool,
    /// Where a write (HTTP PUT) into the view goes, by redirect: `""`
    /// nowhere (refused), `"closest"` the client's site's endpoint or the
    /// fastest healthy one, or an endpoint's name (https endpoints only).
    #[serde(default)]
    pub write: String,
}

fn yes() -> bool {
    true
}

/// Keys of `[federation]` (and of its endpoints) that named their unit,
/// with the readable key and the unit of the old number: read for one
/// release, in the server's configuration and in a saved federation.
pub const RENAMED: &[(&str, &str, &str)] = &[
    ("probe_interval_ms", "probe_interval", "ms"),
    ("timeout_ms", "timeout", "ms"),
    ("settle_ms", "settle", "ms"),
    ("cache_ttl_s", "cache_ttl", "s"),
    ("negative_ttl_s", "negative_ttl", "s"),
    ("grant_s", "grant", "s"),
];

/// Rewrite the old keys of a `[federation]` table (and of each
/// `[[federation.endpoints]]`) to the readable ones (the new key wins
/// when both are given); what was rewritten, one line each.
pub fn upgrade(fed: &mut toml::Table) -> Vec<String> {
    let mut said = rename_keys(fed, "federation", RENAMED);
    if let Some(toml::Value::Array(eps)) = fed.get_mut("endpoints") {
        for e in eps.iter_mut() {
            if let toml::Value::Table(t) = e {
                said.extend(rename_keys(t, "federation.endpoints", RENAMED));
            }
        }
    }
    said
}

/// Rewrite `renames` (old key, readable key, the old number's unit) in
/// table `t` (called `table` in the warnings); the new key wins when both
/// are given. What was rewritten, one line each.
pub fn rename_keys(
    t: &mut toml::Table,
    table: &str,
    renames: &[(&str, &str, &str)],
) -> Vec<String> {
    let mut said = Vec::new();
    for (old, new, unit) in renames {
        let Some(v) = t.remove(*old) else { continue };
        let text = match &v {
            toml::Value::Integer(n) => format!("{n}{unit}"),
            other => other.to_string(),
        };
        said.push(format!(
            "[{table}] {old} is deprecated and will go in the next release: write {new} = \"{text}\""
        ));
        if !t.contains_key(*new) {
            t.insert(new.to_string(), toml::Value::String(text));
        }
    }
    said
}
