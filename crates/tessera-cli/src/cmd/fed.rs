//! `tessera fed`: `probe URL` needs no admin API: it runs the WLCG-style
//! checks against any https/WebDAV endpoint (reachable with valid TLS, a
//! probe file written with the user's token, read back, its adler32,
//! removed) and prints Nagios plugin output; the exit code is the Nagios
//! state (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN). `endpoint ls|add|set|rm`
//! changes the server's federation at run time through the admin API.

use crate::client::{Clients, Failure};
use crate::output::{emit, table, Format, Rec};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::time::Duration;
use tessera_proto::admin::v1 as pb;

#[derive(Subcommand)]
pub enum FedCmd {
    /// Check an endpoint: reachable, TLS, token, write, read, checksum,
    /// delete. The token sent is the user's own (`--bearer-file`, else
    /// WLCG token discovery: BEARER_TOKEN, BEARER_TOKEN_FILE, bt_u<uid>),
    /// never the admin credential (`--token-file`, TESSERA_TOKEN_FILE),
    /// which must not reach another site.
    Probe {
        /// A directory URL the token may write to (https:// or http://).
        url: String,
        /// The bearer token to probe with (its first line).
        #[arg(long)]
        bearer_file: Option<PathBuf>,
        /// More CA certificates to trust (PEM), besides the system's.
        #[arg(long)]
        ca: Vec<PathBuf>,
        /// Deadline of each request, in seconds.
        #[arg(long, default_value_t = 10)]
        timeout_s: u64,
    },
    /// The server's endpoints at run time (admin API; kept across restarts).
    #[command(subcommand)]
    Endpoint(EndpointCmd),
}

#[derive(Subcommand)]
pub enum EndpointCmd {
    /// Every endpoint: its site, kind, health, latency, views.
    Ls,
    /// A new endpoint, into the views given (a view not there is made:
    /// public, no writes; a site not there is made with no subnets).
    Add {
        name: String,
        #[arg(long)]
        site: String,
        /// https, root or s3.
        #[arg(long, default_value = "https")]
        kind: String,
        /// Its base URL (s3: http(s)://host:port/bucket/prefix).
        #[arg(long)]
        url: String,
        #[arg(long = "view")]
        views: Vec<String>,
        #[arg(long, default_value = "")]
        region: String,
        /// A bearer token for the server's own requests (https). Not
        /// `--token-file`: that is the CLI's own admin credential.
        #[arg(long, default_value = "")]
        bearer_file: String,
        #[arg(long, default_value = "")]
        access_key_file: String,
        #[arg(long, default_value = "")]
        secret_key_file: String,
        /// Added but left out of every choice.
        #[arg(long)]
        disabled: bool,
        /// Its own deadline for lookups and probes (0: the federation's).
        #[arg(long, default_value_t = 0)]
        timeout_ms: u64,
        /// Lookups at once at most (0: no limit).
        #[arg(long, default_value_t = 0)]
        max_parallel: u32,
    },
    /// Change an endpoint (--disabled true|false leaves it out of, or back
    /// in, every choice).
    Set(SetArgs),
    /// Remove an endpoint from the federation and its views.
    Rm { name: String },
}

#[derive(Args)]
pub struct SetArgs {
    name: String,
    #[arg(long)]
    site: Option<String>,
    #[arg(long)]
    url: Option<String>,
    #[arg(long)]
    region: Option<String>,
    #[arg(long)]
    bearer_file: Option<String>,
    #[arg(long)]
    access_key_file: Option<String>,
    #[arg(long)]
    secret_key_file: Option<String>,
    #[arg(long)]
    disabled: Option<bool>,
    #[arg(long = "add-view")]
    add_views: Vec<String>,
    #[arg(long = "rm-view")]
    remove_views: Vec<String>,
    /// Its own deadline (0: the federation's).
    #[arg(long)]
    timeout_ms: Option<u64>,
    /// Lookups at once at most (0: no limit).
    #[arg(long)]
    max_parallel: Option<u32>,
}

impl From<SetArgs> for pb::FedEndpointSet {
    fn from(a: SetArgs) -> pb::FedEndpointSet {
        pb::FedEndpointSet {
            name: a.name,
            site: a.site,
            url: a.url,
            region: a.region,
            token_file: a.bearer_file,
            access_key_file: a.access_key_file,
            secret_key_file: a.secret_key_file,
            disabled: a.disabled,
            add_views: a.add_views,
            remove_views: a.remove_views,
            timeout_ms: a.timeout_ms,
            max_parallel: a.max_parallel,
        }
    }
}

fn status(e: &pb::FedEndpoint) -> &'static str {
    match (e.disabled, e.up) {
        (true, _) => "disabled",
        (false, true) => "up",
        (false, false) => "down",
    }
}

fn rec(e: &pb::FedEndpoint) -> Rec {
    Rec::new()
        .s("name", e.name.clone())
        .s("site", e.site.clone())
        .s("kind", e.kind.clone())
        .s("url", e.url.clone())
        .s("status", status(e))
        .n("failures", e.failures)
        .s("latency.ms", format!("{:.1}", e.latency_ms))
        .s("load", format!("{:.2}", e.load))
        .s("views", e.views.join(","))
        .s("reason", e.reason.clone())
        .n("timeout.ms", e.timeout_ms)
        .n("max_parallel", e.max_parallel)
}

fn endpoints_table(list: &[pb::FedEndpoint]) -> String {
    let mut rows = vec![[
        "name", "site", "kind", "status", "latency", "load", "views", "url",
    ]
    .map(String::from)
    .to_vec()];
    for e in list {
        rows.push(vec![
            e.name.clone(),
            e.site.clone(),
            e.kind.clone(),
            if e.reason.is_empty() || e.up {
                status(e).to_string()
            } else {
                format!("{} ({})", status(e), e.reason)
            },
            format!("{:.1} ms", e.latency_ms),
            format!("{:.2}", e.load),
            e.views.join(","),
            e.url.clone(),
        ]);
    }
    table(&rows)
}

/// `tessera fed endpoint …`.
pub async fn endpoint(c: &mut Clients, fmt: Format, cmd: EndpointCmd) -> Result<(), Failure> {
    let one = |e: pb::FedEndpoint| {
        emit(fmt, &[rec(&e)], || {
            endpoints_table(std::slice::from_ref(&e))
        });
    };
    match cmd {
        EndpointCmd::Ls => {
            let l = c.fed.endpoints(pb::Empty {}).await?.into_inner().endpoints;
            let recs: Vec<Rec> = l.iter().map(rec).collect();
            emit(fmt, &recs, || endpoints_table(&l));
        }
        EndpointCmd::Add {
            name,
            site,
            kind,
            url,
            views,
            region,
            bearer_file,
            access_key_file,
            secret_key_file,
            disabled,
            timeout_ms,
            max_parallel,
        } => {
            let e = pb::FedEndpoint {
                name,
                site,
                kind,
                url,
                region,
                token_file: bearer_file,
                access_key_file,
                secret_key_file,
                disabled,
                views,
                timeout_ms,
                max_parallel,
                ..Default::default()
            };
            one(c.fed.add_endpoint(e).await?.into_inner());
        }
        EndpointCmd::Set(a) => {
            one(c
                .fed
                .set_endpoint(pb::FedEndpointSet::from(a))
                .await?
                .into_inner());
        }
        EndpointCmd::Rm { name } => {
            c.fed.remove_endpoint(pb::FedEndpointName { name }).await?;
        }
    }
    Ok(())
}

/// Run `f` with the user's own bearer token (`discovered`: WLCG token
/// discovery, or its error), printed in `fmt`; the Nagios state.
pub async fn run(f: &FedCmd, fmt: Format, discovered: Result<String, Failure>) -> u8 {
    use tessera_fed::probe::{Check, Report, UNKNOWN};
    let FedCmd::Probe {
        url,
        bearer_file,
        ca,
        timeout_s,
    } = f
    else {
        return UNKNOWN;
    };
    let unknown = |detail: String| Report {
        checks: vec![Check {
            name: "setup",
            state: UNKNOWN,
            detail,
        }],
    };
    let token = match bearer_file {
        Some(p) => match std::fs::read_to_string(p) {
            Ok(t) => Some(t.lines().next().unwrap_or("").trim().to_string()),
            Err(e) => return show(fmt, &unknown(format!("{}: {e}", p.display()))),
        },
        None => discovered.ok(),
    };
    let tls = match tessera_fed::trust(ca) {
        Ok(t) => t,
        Err(e) => return show(fmt, &unknown(e)),
    };
    let deadline = Duration::from_secs((*timeout_s).max(1));
    let r = tessera_fed::probe::probe(url, Some(tls), token.as_deref(), deadline).await;
    show(fmt, &r)
}

/// Print a probe's report (Nagios text, `-m` lines, `--json`); its state.
fn show(fmt: Format, r: &tessera_fed::probe::Report) -> u8 {
    const WORDS: [&str; 4] = ["ok", "warning", "critical", "unknown"];
    let word = |s: u8| WORDS[s.min(3) as usize];
    let mut recs = vec![Rec::new()
        .s("check", "probe")
        .s("state", word(r.state()))
        .n("code", r.state())];
    recs.extend(r.checks.iter().map(|c| {
        Rec::new()
            .s("check", c.name)
            .s("state", word(c.state))
            .n("code", c.state)
            .s("detail", c.detail.clone())
    }));
    match fmt {
        Format::Human => print!("{}", r.text()),
        _ => emit(fmt, &recs, String::new),
    }
    r.state()
}
