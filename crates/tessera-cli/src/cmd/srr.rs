//! `tessera srr [--refresh]`: the Storage Resource Report (SRR v4.2 JSON)
//! the server serves at `/.well-known/tessera/srr` and writes into the
//! namespace, printed as it is (the document is the format WLCG reads,
//! whatever the output option).

use crate::client::{Clients, Failure};
use tessera_proto::admin::v1 as pb;

#[derive(clap::Args)]
pub struct SrrArgs {
    /// Make it anew now (admins), rather than the last one made.
    #[arg(long)]
    pub refresh: bool,
}

pub async fn run(c: &mut Clients, a: SrrArgs) -> Result<(), Failure> {
    let r = c
        .report
        .srr(pb::SrrRequest { refresh: a.refresh })
        .await?
        .into_inner();
    print!("{}", r.json);
    Ok(())
}
