//! Token validation: configured issuers, their keys (discovered over
//! HTTPS, cached, refreshed in the background, refetched on an unknown
//! `kid` at most once per `MIN_REFETCH`), RS256 and ES256 only, the
//! claims, and a cache of validated tokens until they expire.

use crate::claims::{self, Claims};
use crate::fetch;
use crate::jws::{self, Key};
use crate::AuthError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tessera_types::{Identity, NsPath, TokenGrant};
use tokio_rustls::rustls::ClientConfig;

/// The WLCG "any" audience (and SciTokens' `ANY`), accepted everywhere.
pub const ANY_AUDIENCE: [&str; 2] = ["https://wlcg.cern.ch/jwt/v1/any", "ANY"];
/// Clock skew allowed on `exp`, `nbf` and `iat`.
pub const LEEWAY_SECS: u64 = 60;
/// An unknown `kid` refetches an issuer's keys at most this often.
pub const MIN_REFETCH: Duration = Duration::from_secs(10);
/// Validated tokens kept (by their text) until they expire.
const CACHE_MAX: usize = 10_000;

/// One issuer we trust.
#[derive(Debug, Clone)]
pub struct IssuerConfig {
    /// Exactly the token's `iss`.
    pub issuer: String,
    /// Accepted `aud` values (besides the WLCG "any" audience).
    pub audiences: Vec<String>,
    /// Scope paths are relative to this namespace path.
    pub base_path: NsPath,
    /// Who a token of this issuer acts as, unless `subjects` maps its `sub`.
    pub default_identity: (u32, u32, String),
    /// `sub` → (uid, gid, name).
    pub subjects: HashMap<String, (u32, u32, String)>,
    /// A `wlcg.groups` name → a gid the bearer is in (the first of the
    /// token's groups found here is its primary gid when `subjects` does
    /// not map the subject).
    pub groups: HashMap<String, u32>,
    /// Whether its create/modify/write scopes are honoured.
    pub may_create: bool,
    /// A subject that `subjects` does not map and that names a local
    /// (NSS) account other than root acts as that account (the
    /// development issuer); tokens never act as root this way.
    pub local_users: bool,
}

struct Issuer {
    cfg: IssuerConfig,
    keys: RwLock<HashMap<String, Arc<Key>>>,
    fetched: Mutex<Option<Instant>>,
    /// Held while the keys are fetched: a token with an unknown `kid`
    /// waits for a fetch in flight (at start-up, the first one) instead
    /// of being refused while it runs.
    fetching: tokio::sync::Mutex<()>,
}

/// A token that validated: what it allows and who it acts as.
#[derive(Debug, Clone)]
pub struct Validated {
    pub grant: Arc<TokenGrant>,
    pub uid: u32,
    pub gid: u32,
    pub name: String,
    /// Supplementary gids, from the issuer's `groups` table.
    pub groups: Vec<u32>,
    /// The token's `wlcg.groups`.
    pub group_names: Vec<String>,
}

impl Validated {
    /// The identity requests with this token run as.
    pub fn identity(&self, protocol: &'static str) -> Identity {
        let mut id = Identity::user(self.uid, self.gid, self.name.clone(), protocol);
        id.groups.clone_from(&self.groups);
        id.group_names.clone_from(&self.group_names);
        id.token = Some(Arc::clone(&self.grant));
        id
    }
}

pub struct Validator {
    issuers: Vec<Issuer>,
    tls: Arc<ClientConfig>,
    cache: Mutex<HashMap<String, Arc<Validated>>>,
    min_refetch: Duration,
    /// Clock skew allowed on `exp`/`nbf`/`iat`, seconds.
    leeway: u64,
    /// Key fetches (discovery and JWKS) and signature checks since start:
    /// what token traffic costs (a replayed token costs a cache lookup).
    pub fetches: std::sync::atomic::AtomicU64,
    pub signature_checks: std::sync::atomic::AtomicU64,
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Validator {
    /// Keys are fetched with `tls` (its CAs verify the issuers).
    pub fn new(issuers: Vec<IssuerConfig>, tls: Arc<ClientConfig>) -> Arc<Validator> {
        Validator::with_min_refetch(issuers, tls, MIN_REFETCH)
    }

    /// As [`Validator::new`], refetching on an unknown `kid` at most every
    /// `min_refetch` (tests shorten it).
    pub fn with_min_refetch(
        issuers: Vec<IssuerConfig>,
        tls: Arc<ClientConfig>,
        min_refetch: Duration,
    ) -> Arc<Validator> {
        Arc::new(Validator {
            issuers: issuers
                .into_iter()
                .map(|cfg| Issuer {
                    cfg,
                    keys: RwLock::new(HashMap::new()),
                    fetched: Mutex::new(None),
                    fetching: tokio::sync::Mutex::new(()),
                })
                .collect(),
            tls,
            cache: Mutex::new(HashMap::new()),
            min_refetch,
            leeway: LEEWAY_SECS,
            fetches: Default::default(),
            signature_checks: Default::default(),
        })
    }

    /// As [`Validator::with_min_refetch`], with `leeway` seconds of clock
    /// skew allowed instead of [`LEEWAY_SECS`] (`[auth] leeway_secs`).
    pub fn with_leeway(
        issuers: Vec<IssuerConfig>,
        tls: Arc<ClientConfig>,
        min_refetch: Duration,
        leeway: u64,
    ) -> Arc<Validator> {
        let mut v = Arc::try_unwrap(Validator::with_min_refetch(issuers, tls, min_refetch))
            .unwrap_or_else(|_| unreachable!("just made"));
        v.leeway = leeway;
        Arc::new(v)
    }

    /// Whether a grant that expires at `expires` is still good now (the
    /// same rule validation applies, skew included): what a session that
    /// logged in with a token checks on every request.
    pub fn still_valid(&self, expires: u64) -> bool {
        expires.saturating_add(self.leeway) > now()
    }

    pub fn is_empty(&self) -> bool {
        self.issuers.is_empty()
    }

    /// Fetch every issuer's keys now (start-up, and the background
    /// refresh); failures are logged and the old keys kept.
    pub async fn refresh_all(&self) {
        for i in &self.issuers {
            if let Err(e) = self.fetch_keys(i).await {
                tracing::warn!(issuer = %i.cfg.issuer, "issuer keys not refreshed: {e}");
            }
        }
    }

    /// Refresh every issuer's keys every `every` until the task is dropped.
    pub fn spawn_refresh(self: &Arc<Self>, every: Duration) -> tokio::task::JoinHandle<()> {
        let v = Arc::clone(self);
        tokio::spawn(async move {
            let mut t = tokio::time::interval(every);
            loop {
                t.tick().await;
                v.refresh_all().await;
            }
        })
    }

    async fn fetch_keys(&self, i: &Issuer) -> Result<(), AuthError> {
        let _one_at_a_time = i.fetching.lock().await;
        self.fetch_keys_locked(i).await
    }

    async fn fetch_keys_locked(&self, i: &Issuer) -> Result<(), AuthError> {
        self.fetches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        *i.fetched.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        let meta = fetch::get_json(&fetch::discovery_url(&i.cfg.issuer), &self.tls).await?;
        let jwks_uri = meta
            .get("jwks_uri")
            .and_then(|v| v.as_str())
            .ok_or_else(|| AuthError::Fetch("discovery document without jwks_uri".into()))?;
        let set = fetch::get_json(jwks_uri, &self.tls).await?;
        let keys = jws::parse_jwks(&i.cfg.issuer, &set)?;
        tracing::debug!(issuer = %i.cfg.issuer, keys = keys.len(), "issuer keys loaded");
        *i.keys.write().unwrap_or_else(|p| p.into_inner()) = keys;
        Ok(())
    }

    /// Use the keys of JWKS document `jwks` for `issuer` (instead of, or
    /// before, fetching them); how many were usable.
    pub fn load_jwks(&self, issuer: &str, jwks: serde_json::Value) -> Result<usize, AuthError> {
        let i = self
            .issuers
            .iter()
            .find(|i| i.cfg.issuer == issuer)
            .ok_or_else(|| AuthError::UnknownIssuer(issuer.to_string()))?;
        let keys = jws::parse_jwks(issuer, &jwks)?;
        let n = keys.len();
        *i.keys.write().unwrap_or_else(|p| p.into_inner()) = keys;
        Ok(n)
    }

    /// Validate `token`; an unknown `kid` waits for a fetch in flight,
    /// else refetches the issuer's keys (at most once per `MIN_REFETCH`),
    /// and tries again.
    pub async fn validate(&self, token: &str) -> Result<Arc<Validated>, AuthError> {
        match self.validate_cached(token) {
            Err(AuthError::UnknownKey { issuer, .. }) => {
                let i = self
                    .issuers
                    .iter()
                    .find(|i| i.cfg.issuer == issuer)
                    .ok_or_else(|| AuthError::UnknownIssuer(issuer.clone()))?;
                let _one_at_a_time = i.fetching.lock().await;
                // A fetch that was in flight may have brought the key.
                let (issuer, kid) = match self.validate_cached(token) {
                    Err(AuthError::UnknownKey { issuer, kid }) => (issuer, kid),
                    r => return r,
                };
                let recent = i
                    .fetched
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .is_some_and(|t| t.elapsed() < self.min_refetch);
                if recent {
                    return Err(AuthError::UnknownKey { issuer, kid });
                }
                self.fetch_keys_locked(i).await?;
                self.validate_cached(token)
            }
            r => r,
        }
    }

    /// Validate with the keys at hand (no I/O): the cache first.
    pub fn validate_cached(&self, token: &str) -> Result<Arc<Validated>, AuthError> {
        let t = now();
        if let Some(v) = self
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(token)
        {
            if v.grant.expires > t.saturating_sub(self.leeway) {
                return Ok(Arc::clone(v));
            }
        }
        let v = Arc::new(self.verify(token)?);
        let mut c = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if c.len() >= CACHE_MAX {
            c.retain(|_, v| v.grant.expires + self.leeway > t);
            if c.len() >= CACHE_MAX {
                c.clear();
            }
        }
        c.insert(token.to_string(), Arc::clone(&v));
        Ok(v)
    }

    fn verify(&self, token: &str) -> Result<Validated, AuthError> {
        let parts = jws::split(token)?;
        parts.alg()?; // refused before any key is looked up
        let kid = parts
            .header
            .kid
            .as_deref()
            .ok_or_else(|| AuthError::Malformed("no kid in the header".into()))?;
        let c: Claims = serde_json::from_slice(&parts.payload)
            .map_err(|e| AuthError::Malformed(format!("payload: {e}")))?;
        let iss = c
            .iss
            .as_deref()
            .ok_or_else(|| AuthError::Claims("no iss".into()))?;
        let i = self
            .issuers
            .iter()
            .find(|i| i.cfg.issuer == iss)
            .ok_or_else(|| AuthError::UnknownIssuer(iss.to_string()))?;
        let key = i
            .keys
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(kid)
            .cloned()
            .ok_or_else(|| AuthError::UnknownKey {
                issuer: iss.to_string(),
                kid: kid.to_string(),
            })?;
        self.signature_checks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        parts.verify(&key)?;
        // The signature holds: now the claims.
        let expires = claims::check_times(&c, now(), self.leeway)?;
        claims::check_audience(&c, &i.cfg.audiences)?;
        claims::check_version(&c)?;
        let sub = match c.sub.as_deref() {
            Some(s) if !s.is_empty() && s.len() <= 255 => s,
            _ => return Err(AuthError::Claims("sub missing or longer than 255".into())),
        };
        let scopes = claims::scopes(&c, &i.cfg.base_path, i.cfg.may_create)?;
        let group_names = claims::groups(&c)?;
        let mut groups: Vec<u32> = Vec::new();
        for g in &group_names {
            if let Some(&gid) = i.cfg.groups.get(g) {
                if !groups.contains(&gid) {
                    groups.push(gid);
                }
            }
        }
        // NSS only for issuers that map to local accounts (a lookup can
        // cost more than the signature check).
        let local = || {
            if !i.cfg.local_users {
                return None;
            }
            crate::users::user_by_name(sub)
                .filter(|u| u.uid != 0)
                .map(|u| (u.uid, u.gid, u.name))
        };
        let (uid, gid, name) = match i.cfg.subjects.get(sub).cloned().or_else(local) {
            Some(m) => m,
            None => {
                let (uid, gid, name) = i.cfg.default_identity.clone();
                (uid, groups.first().copied().unwrap_or(gid), name)
            }
        };
        Ok(Validated {
            grant: Arc::new(TokenGrant {
                issuer: iss.to_string(),
                subject: sub.to_string(),
                scopes,
                expires,
            }),
            uid,
            gid,
            name,
            groups,
            group_names,
        })
    }
}
