//! `tessera access ban|allow|stall|redirect|ls|rm`, as `eos access`: the
//! operator's access rules. A banned or stalled client is told to wait
//! (`kXR_wait`, 503 + `Retry-After`), never dropped.

use crate::client::{Clients, Failure};
use crate::output::{emit, table, time_string, Format, Rec};
use tessera_proto::admin::v1 as pb;
use tessera_types::units::{parse_millis, show_millis};

/// What every kind of rule can say.
#[derive(clap::Args)]
pub struct Scope {
    /// Only requests under this path (default: everywhere).
    #[arg(long)]
    path: Option<String>,
    /// Only requests that change something (writes, deletes, renames).
    #[arg(long)]
    writes: bool,
    /// The rule ends after this long (60s, 2h, 1d; default: never).
    #[arg(long = "for")]
    lasts: Option<String>,
    /// Shown in `access ls`.
    #[arg(long, default_value = "")]
    comment: String,
}

/// What a `shape` or `reserve` rule says.
#[derive(clap::Args)]
pub struct Bandwidth {
    subject: String,
    /// read, write or all.
    #[arg(long, default_value = "all")]
    ops: String,
    /// Bytes per second (100M, 2G).
    #[arg(long)]
    rate: String,
    #[command(flatten)]
    scope: Scope,
}

#[derive(clap::Subcommand)]
pub enum AccessCmd {
    /// Tell SUBJECT to wait: user:NAME, group:NAME, host:ADDR[/LEN],
    /// issuer:URL, subject:SUB (a token's), fqan:/vo[/group], all.
    Ban {
        subject: String,
        /// The wait told to the client (default 60s).
        #[arg(long)]
        wait: Option<String>,
        #[command(flatten)]
        scope: Scope,
    },
    /// Only the subjects of allow rules (per kind: users, groups, hosts,
    /// ...) pass; the others are told to wait.
    Allow {
        subject: String,
        #[arg(long)]
        wait: Option<String>,
        #[command(flatten)]
        scope: Scope,
    },
    /// Tell every client (or SUBJECT) to wait, for a maintenance window.
    Stall {
        #[arg(default_value = "all")]
        subject: String,
        #[arg(long)]
        wait: Option<String>,
        #[command(flatten)]
        scope: Scope,
    },
    /// Send requests to another host (HOST keeps each protocol's port).
    Redirect {
        #[arg(default_value = "all")]
        subject: String,
        #[arg(long)]
        to: String,
        #[command(flatten)]
        scope: Scope,
    },
    /// At most RATE requests per second of a class (--ops), with a burst,
    /// for SUBJECT: user:NAME, group:NAME, app:NAME (an XRootD appname or
    /// a User-Agent product), user:*, group:*, app:* (a bucket each), or
    /// all (one for everyone). Over it, the client is told to wait.
    Limit {
        subject: String,
        /// open-read, open-write, stat, list, delete, tpc or all.
        #[arg(long)]
        ops: String,
        /// Requests per second (0.5, 100, ...).
        #[arg(long)]
        rate: f64,
        /// Requests allowed at once after a quiet spell (default: two
        /// seconds' worth: clients told to wait come back after whole
        /// seconds, a little late, and a burst of one second's would
        /// lose what the bucket gained meanwhile).
        #[arg(long)]
        burst: Option<u32>,
        #[command(flatten)]
        scope: Scope,
    },
    /// Bandwidth: at most RATE bytes per second (100M, 2G) of reads,
    /// writes or both (--ops) for SUBJECT: user:NAME, group:NAME,
    /// app:NAME, user:*, group:*, app:* (each its own), or all (together).
    /// Transfers are slowed (paced), never refused.
    Shape(Bandwidth),
    /// A share protected for SUBJECT (RATE bytes per second of reads,
    /// writes or both): while it moves bytes, every client no reservation
    /// covers shares what is left of the storage's capacity (`[io]
    /// read_capacity`, `write_capacity`).
    Reserve(Bandwidth),
    /// Every rule, with who set it and when.
    Ls,
    /// Remove rule ID.
    Rm { id: u64 },
}

fn secs(s: Option<&str>) -> Result<u64, Failure> {
    match s {
        None => Ok(0),
        Some(s) => parse_millis(s)
            .map(|ms| ms.div_ceil(1000))
            .map_err(|e| Failure::new(22, e)),
    }
}

fn rule(
    action: &str,
    subject: String,
    wait: Option<&str>,
    scope: Scope,
) -> Result<pb::AccessRule, Failure> {
    let lasts = secs(scope.lasts.as_deref())?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Ok(pb::AccessRule {
        action: action.into(),
        subject,
        path: scope.path.unwrap_or_default(),
        writes_only: scope.writes,
        wait_secs: u32::try_from(secs(wait)?)
            .map_err(|_| Failure::new(22, "--wait is too long"))?,
        expires_at: if lasts == 0 { 0 } else { now + lasts },
        comment: scope.comment,
        ..Default::default()
    })
}

/// A `shape` or `reserve` rule: `rate` in bytes per second (100M, 2G).
fn bandwidth(action: &str, b: Bandwidth) -> Result<pb::AccessRule, Failure> {
    let bytes = tessera_types::parse_size(&b.rate).map_err(|e| Failure::new(22, e.to_string()))?;
    Ok(pb::AccessRule {
        ops: b.ops,
        rate: bytes as f64,
        ..rule(action, b.subject, None, b.scope)?
    })
}

fn records(rules: &[pb::AccessRule]) -> (Vec<Rec>, String) {
    let mut rows = vec![[
        "id", "action", "subject", "path", "ops", "wait", "to", "set by", "set at", "expires",
        "comment",
    ]
    .map(String::from)
    .to_vec()];
    let when = |s: u64| time_string(s as i64 * 1_000_000_000);
    let mut recs = Vec::new();
    for r in rules {
        recs.push(
            Rec::new()
                .n("id", r.id)
                .s("action", r.action.clone())
                .s("subject", r.subject.clone())
                .s("path", r.path.clone())
                .b("writes", r.writes_only)
                .n("wait", r.wait_secs)
                .s("to", r.target.clone())
                .s("setby", r.set_by.clone())
                .n("setat", r.set_at)
                .n("expires", r.expires_at)
                .s("comment", r.comment.clone())
                .s("ops", r.ops.clone())
                .s("rate", r.rate.to_string())
                .n("burst", r.burst),
        );
        let wait = match (r.action.as_str(), r.wait_secs) {
            ("redirect", _) => "-".to_string(),
            ("limit", _) => format!("{} {}/s burst {}", r.ops, r.rate, r.burst),
            ("shape" | "reserve", _) => {
                format!("{} {}/s", r.ops, tessera_types::format_size(r.rate as u64))
            }
            (_, 0) => "60s".into(),
            (_, s) => show_millis(u64::from(s) * 1000),
        };
        rows.push(vec![
            r.id.to_string(),
            r.action.clone(),
            r.subject.clone(),
            if r.path.is_empty() {
                "/".into()
            } else {
                r.path.clone()
            },
            if r.writes_only {
                "writes".into()
            } else {
                "all".into()
            },
            wait,
            if r.target.is_empty() {
                "-".into()
            } else {
                r.target.clone()
            },
            r.set_by.clone(),
            when(r.set_at),
            if r.expires_at == 0 {
                "never".into()
            } else {
                when(r.expires_at)
            },
            r.comment.clone(),
        ]);
    }
    let human = if rules.is_empty() {
        "no access rules".to_string()
    } else {
        table(&rows)
    };
    (recs, human)
}

pub async fn run(c: &mut Clients, fmt: Format, a: AccessCmd) -> Result<(), Failure> {
    let new = match a {
        AccessCmd::Ls => {
            let rules = c.access.list(pb::Empty {}).await?.into_inner().rules;
            let (recs, human) = records(&rules);
            emit(fmt, &recs, || human);
            return Ok(());
        }
        AccessCmd::Rm { id } => {
            let gone = c.access.remove(pb::AccessRuleId { id }).await?.into_inner();
            let (recs, human) = records(&[gone]);
            emit(fmt, &recs, || format!("removed:\n{human}"));
            return Ok(());
        }
        AccessCmd::Ban {
            subject,
            wait,
            scope,
        } => rule("ban", subject, wait.as_deref(), scope)?,
        AccessCmd::Allow {
            subject,
            wait,
            scope,
        } => rule("allow", subject, wait.as_deref(), scope)?,
        AccessCmd::Stall {
            subject,
            wait,
            scope,
        } => rule("stall", subject, wait.as_deref(), scope)?,
        AccessCmd::Limit {
            subject,
            ops,
            rate,
            burst,
            scope,
        } => pb::AccessRule {
            ops,
            rate,
            burst: burst.unwrap_or((2.0 * rate).ceil().max(1.0) as u32),
            ..rule("limit", subject, None, scope)?
        },
        AccessCmd::Shape(b) => bandwidth("shape", b)?,
        AccessCmd::Reserve(b) => bandwidth("reserve", b)?,
        AccessCmd::Redirect { subject, to, scope } => pb::AccessRule {
            target: to,
            ..rule("redirect", subject, None, scope)?
        },
    };
    let stored = c.access.add(new).await?.into_inner();
    let (recs, human) = records(&[stored]);
    emit(fmt, &recs, || human);
    Ok(())
}
