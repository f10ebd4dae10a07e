//! `tessera fed`: `probe URL` needs no admin API: it runs the WLCG-style
//! checks against any https/WebDAV endpoint (reachable with valid TLS, a
//! probe file written with the user's token, read back, its adler32,
//! removed) and prints Nagios plugin output; the exit code is the Nagios
//! state (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN). `endpoint ls|add|set|rm`
//! changes the server's federation at run time through the admin API.

use crate::client::{Clients, Failure};
use crate::output::{emit, table, Format, Rec};
use clap::Subcommand;
use std::path::PathBuf;
use std::time::Duration;
use tessera_proto::admin::v1 as pb;

#[derive(Subcommand)]
pub enum FedCmd {
    /// Check an endpoint: reachable, TLS, token, write, read, checksum, delete.
    Probe {
        /// A directory URL the token may write to (https:// or http://).
        url: String,
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
    Set {
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
    },
    /// Remove an endpoint from the federation and its views.
    Rm { name: String },
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
            status(e).to_string(),
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
        EndpointCmd::Set {
            name,
            site,
            url,
            region,
            bearer_file,
            access_key_file,
            secret_key_file,
            disabled,
            add_views,
            remove_views,
            timeout_ms,
            max_parallel,
        } => {
            let s = pb::FedEndpointSet {
                name,
                site,
                url,
                region,
                token_file: bearer_file,
                access_key_file,
                secret_key_file,
                disabled,
                add_views,
                remove_views,
                timeout_ms,
                max_parallel,
            };
            one(c.fed.set_endpoint(s).await?.into_inner());
        }
        EndpointCmd::Rm { name } => {
            c.fed.remove_endpoint(pb::FedEndpointName { name }).await?;
        }
    }
    Ok(())
}

/// Run `f` with the user's bearer token, if any; the Nagios state.
pub async fn run(f: &FedCmd, token: Option<String>) -> u8 {
    let FedCmd::Probe { url, ca, timeout_s } = f else {
        return tessera_fed::probe::UNKNOWN;
    };
    let tls = match tessera_fed::trust(ca) {
        Ok(t) => t,
        Err(e) => {
            println!("FED PROBE UNKNOWN - {e}");
            return tessera_fed::probe::UNKNOWN;
        }
    };
    let deadline = Duration::from_secs((*timeout_s).max(1));
    let r = tessera_fed::probe::probe(url, Some(tls), token.as_deref(), deadline).await;
    print!("{}", r.text());
    r.state()
}
