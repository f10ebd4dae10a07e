//! The operator's access rules (EOS `access`), decided once for every
//! front-end: before a request touches the namespace, the front-end asks
//! [`Core::admit`] and writes the answer in its protocol (`kXR_wait` /
//! `kXR_redirect`, 503 with `Retry-After` / 307).
//!
//! - **ban** (user, group, host or subnet, token issuer or subject, VOMS
//!   FQAN, or `all`): the client is told to wait, never dropped, so jobs
//!   back off and come back once the ban is lifted;
//! - **allow**: once a kind of subject has an allow rule, only what one of
//!   them names passes (the others wait);
//! - **redirect**: requests (all, or only writes; everywhere or under a
//!   path) go to another `host:port`, for a maintenance window;
//! - **stall**: the same requests are told to wait;
//! - **limit**: a rate (token bucket with a burst) per user, group or
//!   application, or for everyone, on a class of requests (`limits.rs`);
//!   over it, the client is told to wait until a token is there.
//!
//! Bans and allow lists come first, then redirects, then stalls, then
//! limits (a request turned away takes no token); within
//! each, the lowest rule id. A rule past its expiry does nothing. The
//! rules live in the namespace (`tessera_meta::AccessRule`); this keeps a
//! parsed copy, replaced when they change through this node and re-read
//! every few seconds (another node of the same store may change them).

mod limits;

use crate::CoreError;
use ipnet::IpNet;
use limits::{class_covers, Buckets};
pub(crate) use limits::{Counted, Shape};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
pub use tessera_meta::AccessRule;
use tessera_types::{Identity, NsPath};

/// How often the rules are read again from the store.
const RELOAD_EVERY: Duration = Duration::from_secs(5);
/// The wait a ban or stall says when its rule names none.
pub const DEFAULT_WAIT_SECS: u32 = 60;

/// What a request is, for the rules and the limits' classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Opening a file to read it (a GET).
    OpenRead,
    /// Opening a file to write it (a PUT).
    OpenWrite,
    /// A stat, a checksum, a locate (a HEAD).
    Stat,
    /// A directory listing.
    List,
    /// Removing a file or a directory.
    Delete,
    /// A third-party copy.
    Tpc,
    /// Any other change: mkdir, rename, chmod, truncate, attributes.
    Change,
}

impl Op {
    /// Whether `--writes` rules see it (a third-party copy counts: it
    /// writes on one side).
    pub fn writes(self) -> bool {
        matches!(self, Op::OpenWrite | Op::Delete | Op::Tpc | Op::Change)
    }
}

/// The rules' answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admit {
    Go,
    /// Ask again in `secs` (ban, allow list, stall).
    Wait {
        secs: u32,
        why: String,
        action: &'static str,
    },
    /// Send the request to `to` (`host:port`).
    Redirect {
        to: String,
        why: String,
    },
}

/// Who a rule names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Subject {
    All,
    User(String),
    Group(String),
    Host(IpNet),
    Issuer(String),
    Sub(String),
    Fqan(String),
}

impl Subject {
    fn parse(s: &str) -> Result<Subject, String> {
        if s == "all" {
            return Ok(Subject::All);
        }
        let (kind, v) = s
            .split_once(':')
            .filter(|(_, v)| !v.is_empty())
            .ok_or_else(|| format!("subject {s:?}: expected KIND:VALUE or all"))?;
        let v = v.to_string();
        Ok(match kind {
            "user" => Subject::User(v),
            "group" => Subject::Group(v),
            "host" => Subject::Host(match v.parse::<IpNet>() {
                Ok(n) => n,
                Err(_) => IpNet::from(
                    v.parse::<IpAddr>()
                        .map_err(|_| format!("host {v:?}: not an address or a subnet"))?,
                ),
            }),
            "issuer" => Subject::Issuer(v),
            "subject" => Subject::Sub(v),
            "fqan" if v.starts_with('/') => Subject::Fqan(v),
            _ => {
                return Err(format!(
                "subject {s:?}: the kinds are user, group, host, issuer, subject, fqan (/vo/...)"
            ))
            }
        })
    }

    /// The kind, for allow lists (one list per kind).
    fn kind(&self) -> u8 {
        match self {
            Subject::All => 0,
            Subject::User(_) => 1,
            Subject::Group(_) => 2,
            Subject::Host(_) => 3,
            Subject::Issuer(_) => 4,
            Subject::Sub(_) => 5,
            Subject::Fqan(_) => 6,
        }
    }

    fn matches(&self, who: &Identity, peer: IpAddr) -> bool {
        match self {
            Subject::All => true,
            Subject::User(u) => &who.name == u,
            Subject::Group(g) => who.group_names.iter().any(|n| n == g),
            Subject::Host(net) => net.contains(&peer.to_canonical()),
            Subject::Issuer(i) => who.token.as_ref().is_some_and(|t| &t.issuer == i),
            Subject::Sub(s) => who.token.as_ref().is_some_and(|t| &t.subject == s),
            // `/cms` names every FQAN of the VO; `/cms/higgs` its group.
            Subject::Fqan(f) => who.x509.as_ref().is_some_and(|x| {
                x.fqans.iter().any(|q| {
                    q.strip_prefix(f.as_str())
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
                })
            }),
        }
    }
}

/// One rule, parsed.
struct Rule {
    rule: AccessRule,
    subject: Subject,
    path: Option<NsPath>,
    /// A limit's buckets: whom they count, rate per second, burst.
    limit: Option<(Counted, f64, f64)>,
}

impl Rule {
    fn parse(rule: AccessRule) -> Result<Rule, String> {
        let limit = match rule.action.as_str() {
            "shape" | "reserve" => {
                let counted = Counted::parse(&rule.subject).ok_or_else(|| {
                    format!(
                        "{} subject {:?}: user:NAME|*, group:NAME|*, app:NAME|* or all",
                        rule.action, rule.subject
                    )
                })?;
                if !matches!(rule.ops.as_str(), "read" | "write" | "all" | "") {
                    return Err(format!("ops {:?}: read, write or all", rule.ops));
                }
                if rule.rate_milli < 1000 {
                    return Err(format!(
                        "a {} needs a rate of at least 1 byte per second",
                        rule.action
                    ));
                }
                Some((counted, rule.rate_milli as f64 / 1000.0, 0.0))
            }
            "limit" => {
                let counted = Counted::parse(&rule.subject).ok_or_else(|| {
                    format!(
                        "limit subject {:?}: user:NAME|*, group:NAME|*, app:NAME|* or all",
                        rule.subject
                    )
                })?;
                if class_covers(&rule.ops, Op::Stat).is_none() {
                    return Err(format!(
                        "ops {:?}: open-read, open-write, stat, list, delete, tpc or all",
                        rule.ops
                    ));
                }
                if rule.rate_milli == 0 {
                    return Err("a limit needs a rate above 0".into());
                }
                let rate = rule.rate_milli as f64 / 1000.0;
                let burst = f64::from(rule.burst).max(1.0);
                Some((counted, rate, burst))
            }
            _ => None,
        };
        let subject = match limit {
            Some(_) => Subject::All,
            None => Subject::parse(&rule.subject)?,
        };
        let path = if rule.path.is_empty() {
            None
        } else {
            Some(NsPath::parse(&rule.path).map_err(|e| format!("path {:?}: {e}", rule.path))?)
        };
        match rule.action.as_str() {
            "ban" | "allow" | "stall" | "limit" | "shape" | "reserve" => {}
            "redirect" if !rule.target.is_empty() => {}
            "redirect" => return Err("a redirect needs a target (host:port)".into()),
            a => {
                return Err(format!(
                "action {a:?}: the actions are ban, allow, stall, redirect, limit, shape, reserve"
            ))
            }
        }
        Ok(Rule {
            rule,
            subject,
            path,
            limit,
        })
    }

    /// Whether the rule covers `op` on `path` at `now` (its subject aside).
    fn covers(&self, op: Op, path: Option<&NsPath>, now: u64) -> bool {
        let live = self.rule.expires_at == 0 || now < self.rule.expires_at;
        let op_ok = (!self.rule.writes_only || op.writes())
            && (self.limit.is_none() || class_covers(&self.rule.ops, op) == Some(true));
        let path_ok = match (&self.path, path) {
            (None, _) => true,
            (Some(p), Some(q)) => q.starts_with(p),
            (Some(_), None) => false,
        };
        live && op_ok && path_ok
    }

    /// The wait `buckets` say for `who` from `app` (none: a token taken
    /// from each bucket counted).
    fn limited(
        &self,
        who: &Identity,
        app: &str,
        buckets: &mut Buckets,
        at: Instant,
    ) -> Option<u32> {
        let (counted, rate, burst) = self.limit.as_ref()?;
        counted
            .keys(who, app)
            .iter()
            .filter_map(|k| buckets.take(self.rule.id, k, *rate, *burst, at))
            .max()
    }

    fn wait(&self) -> u32 {
        match self.rule.wait_secs {
            0 => DEFAULT_WAIT_SECS,
            s => s,
        }
    }
}

/// The rules in force, parsed.
#[derive(Default)]
pub struct Rules {
    /// By action (each in id order), so that a request walks only the
    /// rules that can answer it at each step.
    bans: Vec<Rule>,
    allows: Vec<Rule>,
    redirects: Vec<Rule>,
    stalls: Vec<Rule>,
    limits: Vec<Rule>,
    /// I/O shaping (`shaping.rs`): not asked per request.
    shapes: Vec<Shape>,
    reserves: Vec<Shape>,
}

impl Rules {
    /// Parse `rules` (a rule that does not parse is skipped and logged:
    /// the store only holds rules that parsed when they were added).
    pub fn new(rules: Vec<AccessRule>) -> Rules {
        let mut out = Rules::default();
        for r in rules {
            let id = r.id;
            let r = match Rule::parse(r) {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(rule = id, "access rule skipped: {e}");
                    continue;
                }
            };
            match r.rule.action.as_str() {
                "ban" => out.bans.push(r),
                "allow" => out.allows.push(r),
                "redirect" => out.redirects.push(r),
                "stall" => out.stalls.push(r),
                "shape" | "reserve" => {
                    if let Some((counted, rate, _)) = r.limit {
                        let shape = Shape {
                            id: r.rule.id,
                            counted,
                            writes: match r.rule.ops.as_str() {
                                "read" => Some(false),
                                "write" => Some(true),
                                _ => None,
                            },
                            rate,
                        };
                        match r.rule.action.as_str() {
                            "shape" => out.shapes.push(shape),
                            _ => out.reserves.push(shape),
                        }
                    }
                }
                _ => out.limits.push(r),
            }
        }
        out
    }

    pub fn len(&self) -> usize {
        self.bans.len()
            + self.allows.len()
            + self.redirects.len()
            + self.stalls.len()
            + self.limits.len()
            + self.shapes.len()
            + self.reserves.len()
    }

    /// The I/O shaping rules.
    pub(crate) fn shapes(&self) -> &[Shape] {
        &self.shapes
    }

    /// The I/O reservations.
    pub(crate) fn reserves(&self) -> &[Shape] {
        &self.reserves
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The answer for `who` from `peer` doing `op` on `path` at `now`
    /// (Unix seconds).
    pub fn admit<'a>(
        &'a self,
        who: &'a Identity,
        peer: IpAddr,
        op: Op,
        path: Option<&'a NsPath>,
        now: u64,
    ) -> Admit {
        // The subject first: the cheap test, and most rules name someone.
        let first = |list: &'a [Rule]| {
            list.iter()
                .find(move |r| r.subject.matches(who, peer) && r.covers(op, path, now))
        };
        if let Some(r) = first(&self.bans) {
            return Admit::Wait {
                secs: r.wait(),
                why: format!("banned by access rule {} ({})", r.rule.id, r.rule.subject),
                action: "ban",
            };
        }
        // An allow list per kind of subject: once one exists, only what it
        // names passes.
        let allows = || self.allows.iter().filter(|r| r.covers(op, path, now));
        let mut kinds: Vec<u8> = allows().map(|r| r.subject.kind()).collect();
        kinds.sort_unstable();
        kinds.dedup();
        for k in kinds {
            let list = || allows().filter(|r| r.subject.kind() == k);
            if !list().any(|r| r.subject.matches(who, peer)) {
                let first = list().next().expect("the kind has a rule");
                return Admit::Wait {
                    secs: first.wait(),
                    why: format!(
                        "not in the allow list of access rule {} ({} ...)",
                        first.rule.id, first.rule.subject
                    ),
                    action: "allow",
                };
            }
        }
        if let Some(r) = first(&self.redirects) {
            return Admit::Redirect {
                to: r.rule.target.clone(),
                why: format!("redirected by access rule {}", r.rule.id),
            };
        }
        if let Some(r) = first(&self.stalls) {
            return Admit::Wait {
                secs: r.wait(),
                why: format!("stalled by access rule {}", r.rule.id),
                action: "stall",
            };
        }
        Admit::Go
    }

    /// After `admit` said go: the first limit covering the request whose
    /// bucket is empty says how long to wait.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn limited(
        &self,
        who: &Identity,
        op: Op,
        path: Option<&NsPath>,
        app: &str,
        now: u64,
        buckets: &mut Buckets,
        at: Instant,
    ) -> Admit {
        for r in self.limits.iter().filter(|r| r.covers(op, path, now)) {
            if let Some(secs) = r.limited(who, app, buckets, at) {
                return Admit::Wait {
                    secs,
                    why: format!(
                        "over the rate of access rule {} ({} {} per second)",
                        r.rule.id,
                        r.rule.ops,
                        r.rule.rate_milli as f64 / 1000.0
                    ),
                    action: "limit",
                };
            }
        }
        Admit::Go
    }
}

/// The parsed rules a core serves with, and when they were read.
pub(crate) struct RulesCell {
    now: Mutex<(Arc<Rules>, Instant)>,
    /// The limits' buckets (kept across reloads: by rule id).
    buckets: Mutex<Buckets>,
}

impl RulesCell {
    pub(crate) fn new(rules: Rules) -> RulesCell {
        RulesCell {
            now: Mutex::new((Arc::new(rules), Instant::now())),
            buckets: Mutex::new(Buckets::default()),
        }
    }

    fn set(&self, rules: Arc<Rules>) {
        *crate::lock(&self.now) = (rules, Instant::now());
    }

    /// The rules in force, and whether this caller is the one to read
    /// them again (their copy is older than [`RELOAD_EVERY`]: the first to
    /// see that claims the reload, the others go on with the copy).
    pub(crate) fn current(&self) -> (Arc<Rules>, bool) {
        let mut g = crate::lock(&self.now);
        let stale = g.1.elapsed() >= RELOAD_EVERY;
        if stale {
            g.1 = Instant::now();
        }
        (Arc::clone(&g.0), stale)
    }
}

/// Now, in Unix seconds (rules' `set_at` and expiry).
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Check a rule before it is stored (the admin API's `add`).
pub fn check(rule: &AccessRule) -> Result<(), CoreError> {
    Rule::parse(rule.clone())
        .map(drop)
        .map_err(CoreError::Invalid)
}

impl crate::Core {
    /// The access rules' answer for `who` from `peer` doing `op` on
    /// `path` (`None`: not about a path), counted and logged when it is
    /// not `Go`. Rules are re-read from the store every few seconds.
    /// `app`: the client's application (XRootD's `xrd.appname`, the
    /// User-Agent's product), for the limits that count by it.
    pub fn admit(
        &self,
        who: &Identity,
        peer: IpAddr,
        op: Op,
        path: Option<&NsPath>,
        app: &str,
    ) -> Admit {
        let (rules, stale) = self.rules.current();
        let rules = if stale {
            self.reload_rules().unwrap_or(rules)
        } else {
            rules
        };
        if rules.is_empty() {
            return Admit::Go;
        }
        let now = unix_now();
        let mut a = rules.admit(who, peer, op, path, now);
        if a == Admit::Go {
            let mut b = crate::lock(&self.rules.buckets);
            a = rules.limited(who, op, path, app, now, &mut b, Instant::now());
        }
        let action = match &a {
            Admit::Go => return a,
            Admit::Wait { action, .. } => *action,
            Admit::Redirect { .. } => "redirect",
        };
        self.metrics.rules.refused(action, who.protocol);
        let why = match &a {
            Admit::Wait { why, .. } | Admit::Redirect { why, .. } => why.as_str(),
            Admit::Go => "",
        };
        tracing::info!(user = %who.name, uid = who.uid, %peer, protocol = who.protocol,
            path = %path.map(|p| p.display()).unwrap_or_default(), "{why}");
        a
    }

    /// Read the rules from the store again (after a change, or when the
    /// copy is older than a few seconds).
    pub fn reload_rules(&self) -> Option<Arc<Rules>> {
        match self.meta.access_list() {
            Ok(list) => {
                let rules = Arc::new(Rules::new(list));
                self.metrics.rules.rules.set(rules.len() as u64);
                self.rules.set(Arc::clone(&rules));
                Some(rules)
            }
            Err(e) => {
                // The copy in force stays; tried again at the next period
                // (`current` has put it off).
                tracing::warn!("access rules not read again: {e}");
                None
            }
        }
    }

    /// Every rule, as stored.
    pub async fn access_rules(&self) -> Result<Vec<AccessRule>, CoreError> {
        let meta = Arc::clone(&self.meta);
        crate::blocking(move || Ok(meta.access_list()?)).await?
    }

    /// Store a new rule (checked first) and put it in force here.
    pub async fn add_access_rule(&self, rule: AccessRule) -> Result<AccessRule, CoreError> {
        check(&rule)?;
        let meta = Arc::clone(&self.meta);
        let r = crate::blocking(move || Ok::<_, CoreError>(meta.access_add(rule)?)).await??;
        self.reload_rules();
        Ok(r)
    }

    /// Remove rule `id` and take it out of force here.
    pub async fn remove_access_rule(&self, id: u64) -> Result<AccessRule, CoreError> {
        let meta = Arc::clone(&self.meta);
        let r = crate::blocking(move || Ok::<_, CoreError>(meta.access_remove(id)?)).await??;
        self.reload_rules();
        Ok(r)
    }
}

#[cfg(test)]
mod tests;
