//! `tessera token`: look inside a token, and mint one with the development
//! issuer of a `tesserad --dev` data directory. Both run locally (no admin
//! API); `inspect` does not verify the signature (the server does).

use crate::client::Failure;
use crate::output::{emit, Format, Rec};
use clap::Subcommand;
use std::path::PathBuf;
use tessera_auth::dev::DevIssuer;

#[derive(Subcommand)]
pub enum TokenCmd {
    /// Show a token's header and claims (not verified).
    Inspect { token: String },
    /// Mint a token signed by the development issuer of `tesserad --dev`.
    Issue {
        /// The dev server's data directory.
        #[arg(long)]
        data_dir: PathBuf,
        /// The subject (`sub`).
        #[arg(long)]
        sub: String,
        /// Space-separated scopes, e.g. 'storage.read:/ storage.create:/data'.
        #[arg(long)]
        scope: String,
        /// Seconds until it expires.
        #[arg(long, default_value_t = 3600)]
        lifetime: u64,
        /// A `wlcg.groups` entry, e.g. /cms (repeatable).
        #[arg(long = "group")]
        groups: Vec<String>,
    },
}

pub fn run(fmt: Format, cmd: TokenCmd) -> Result<(), Failure> {
    match cmd {
        TokenCmd::Inspect { token } => {
            let (h, claims) =
                tessera_auth::peek(token.trim()).map_err(|e| Failure::new(22, e.to_string()))?;
            let mut rec = Rec::new()
                .s("alg", h.alg.unwrap_or_default())
                .s("kid", h.kid.unwrap_or_default());
            if let Some(obj) = claims.as_object() {
                for (k, v) in obj {
                    let text = match v {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    rec = rec.s(k, text);
                }
            }
            let human = rec
                .0
                .iter()
                .map(|(k, v)| {
                    let v = match v {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    format!("{k} := {v}\n")
                })
                .collect::<String>();
            emit(fmt, &[rec], || human);
            Ok(())
        }
        TokenCmd::Issue {
            data_dir,
            sub,
            scope,
            lifetime,
            groups,
        } => {
            let dev = data_dir.join("dev");
            let info = DevIssuer::read_info(&dev).map_err(|e| {
                Failure::new(
                    2,
                    format!(
                        "{e} (start `tesserad serve --dev --data-dir {}` first)",
                        data_dir.display()
                    ),
                )
            })?;
            let key =
                DevIssuer::load_or_create(&dev).map_err(|e| Failure::new(5, e.to_string()))?;
            if key.kid != info.kid {
                return Err(Failure::new(
                    22,
                    "the issuer key does not match the running server's; restart it",
                ));
            }
            let t = key
                .issue_in_groups(&info, &sub, &scope, &groups, lifetime)
                .map_err(|e| Failure::new(5, e.to_string()))?;
            crate::output::line(t);
            Ok(())
        }
    }
}
