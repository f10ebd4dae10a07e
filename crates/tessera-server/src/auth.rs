//! Bearer tokens for the front-ends: the validator over the configured
//! issuers (and, in dev mode, the development issuer this server serves
//! itself), with its keys refreshed in the background.

use crate::config::Config;
use anyhow::Context;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use tessera_auth::dev::DevIssuer;
use tessera_auth::{IssuerConfig, Validator};
use tessera_types::NsPath;

/// What the HTTPS listener serves for the development issuer.
pub struct DevServe {
    pub issuer: String,
    pub jwks: String,
}

pub struct Tokens {
    pub validator: Arc<Validator>,
    pub dev: Option<DevServe>,
    pub refresh: tokio::task::JoinHandle<()>,
}

#[derive(serde::Deserialize)]
struct Mapped {
    uid: u32,
    gid: u32,
    name: Option<String>,
}

fn subjects(path: &std::path::Path) -> anyhow::Result<HashMap<String, (u32, u32, String)>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let m: HashMap<String, Mapped> =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    Ok(m.into_iter()
        .map(|(sub, v)| {
            let name = v.name.unwrap_or_else(|| sub.clone());
            (sub, (v.uid, v.gid, name))
        })
        .collect())
}

/// Who a development token acts as when its subject is no local account:
/// `[auth] dev_uid`/`dev_gid`, named as the local account with that uid.
pub fn dev_identity(cfg: &Config) -> (u32, u32, String) {
    let (uid, gid) = (cfg.auth.dev_uid, cfg.auth.dev_gid);
    let name = tessera_auth::users::user_by_uid(uid)
        .map(|u| u.name)
        .unwrap_or_else(|| format!("uid{uid}"));
    (uid, gid, name)
}

/// The validator, or `None` when no issuer is configured (tokens are
/// then ignored, as by a server without a token plugin).
pub fn setup(cfg: &Config, https: Option<SocketAddr>) -> anyhow::Result<Option<Tokens>> {
    let mut issuers = Vec::new();
    for i in &cfg.auth.issuers {
        issuers.push(IssuerConfig {
            issuer: i.issuer.clone(),
            audiences: i.audiences.clone(),
            base_path: NsPath::parse(&i.base_path)
                .map_err(|e| anyhow::anyhow!("auth.issuers {}: base_path: {e}", i.issuer))?,
            default_identity: (i.default_uid, i.default_gid, i.default_name.clone()),
            subjects: match &i.map_file {
                Some(f) => subjects(f)?,
                None => HashMap::new(),
            },
            groups: i.groups.clone().into_iter().collect(),
            may_create: i.may_create,
            local_users: i.local_users,
        });
    }
    let mut ca_files = cfg.auth.ca_files.clone();
    let mut dev = None;
    let mut dev_keys = None;
    if let (true, Some(addr)) = (cfg.auth.dev_issuer, https) {
        let dev_dir = cfg.data_dir.join("dev");
        let key = DevIssuer::load_or_create(&dev_dir).context("the development issuer")?;
        let iss = format!("https://localhost:{}", addr.port());
        key.write_info(&dev_dir, &iss, &iss)
            .context("recording the development issuer")?;
        issuers.push(IssuerConfig {
            issuer: iss.clone(),
            audiences: vec![iss.clone()],
            base_path: NsPath::root(),
            // A real identity, never the server's own: ACLs and mode bits
            // apply to development tokens as they will in production.
            default_identity: dev_identity(cfg),
            subjects: HashMap::new(),
            groups: HashMap::new(),
            may_create: true,
            local_users: true,
        });
        ca_files.push(dev_dir.join("ca.pem"));
        let jwks = key.jwks();
        dev = Some(DevServe {
            issuer: iss.clone(),
            jwks: jwks.to_string(),
        });
        dev_keys = Some((iss, jwks));
    }
    if issuers.is_empty() {
        return Ok(None);
    }
    let tls = crate::tls::client_config(&ca_files)?;
    let validator = Validator::with_leeway(
        issuers,
        tls,
        tessera_auth::MIN_REFETCH,
        cfg.auth.leeway_secs,
    );
    if let Some((iss, jwks)) = dev_keys {
        // Our own issuer's keys are at hand: no fetch before the first
        // token can be checked (the background refresh still fetches them
        // over HTTPS, as from any issuer).
        validator
            .load_jwks(&iss, jwks)
            .context("the development issuer's keys")?;
    }
    let every = std::time::Duration::from_secs(cfg.auth.refresh_secs.max(60));
    let refresh = validator.spawn_refresh(every);
    Ok(Some(Tokens {
        validator,
        dev,
        refresh,
    }))
}

/// Macaroons, signed with a key of the cluster's secret (so every node
/// sharing `[cluster] secret_file` takes them; a domain of its own, apart
/// from capabilities), else with `<data_dir>/macaroon.secret`, made on
/// first start (one node).
pub fn macaroons(cfg: &Config) -> anyhow::Result<Arc<tessera_auth::macaroon::Macaroons>> {
    let secret = match &cfg.cluster.secret_file {
        Some(f) => crate::dev::read_secret(f)?,
        None => {
            let f = cfg.data_dir.join("macaroon.secret");
            if !f.exists() {
                use std::io::Write;
                use std::os::unix::fs::OpenOptionsExt;
                let hex = tessera_auth::macaroon::new_secret()
                    .ok_or_else(|| anyhow::anyhow!("no randomness"))?;
                std::fs::create_dir_all(&cfg.data_dir)?;
                let mut out = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&f)
                    .with_context(|| format!("making {}", f.display()))?;
                out.write_all(hex.as_bytes())?;
                out.sync_all()?;
            }
            crate::dev::read_secret(&f)?
        }
    };
    Ok(Arc::new(tessera_auth::macaroon::Macaroons::of_cluster(
        secret.as_bytes(),
    )))
}
