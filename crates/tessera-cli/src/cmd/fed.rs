//! `tessera fed`: federation commands that need no admin API. `probe URL`
//! runs the WLCG-style checks against any https/WebDAV endpoint (reachable
//! with valid TLS, a probe file written with the user's token, read back,
//! its adler32, removed) and prints Nagios plugin output; the exit code is
//! the Nagios state (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN).

use clap::Subcommand;
use std::path::PathBuf;
use std::time::Duration;

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
}

/// Run `f` with the user's bearer token, if any; the Nagios state.
pub async fn run(f: &FedCmd, token: Option<String>) -> u8 {
    let FedCmd::Probe { url, ca, timeout_s } = f;
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
