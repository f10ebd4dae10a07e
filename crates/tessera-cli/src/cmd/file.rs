//! `tessera file versions|restore-version|purge-versions`, as `eos file
//! versions|versions <grab>|purgeversion`: the versions a directory with
//! `sys.versioning = N` keeps of a file (`tessera attr set
//! sys.versioning 3 DIR` turns it on). Owners with their own token.

use crate::client::{Clients, Failure};
use crate::cmd::ns::entry_rec;
use crate::output::{emit, table, time_string, Format, Rec};
use tessera_proto::admin::v1 as pb;
use tessera_types::format_size;

#[derive(clap::Subcommand)]
pub enum FileCmd {
    /// The versions kept of PATH, oldest first.
    Versions { path: String },
    /// Make version ID (`file versions`) the current PATH; the current
    /// one becomes a version.
    RestoreVersion { path: String, id: u64 },
    /// Keep only the newest KEEP versions of PATH (default: none).
    PurgeVersions {
        path: String,
        #[arg(long, default_value_t = 0)]
        keep: u32,
    },
}

pub async fn run(c: &mut Clients, fmt: Format, cmd: FileCmd) -> Result<(), Failure> {
    match cmd {
        FileCmd::Versions { path } => {
            let vs = c
                .versions
                .list(pb::VersionsRequest {
                    path: path.clone().into_bytes(),
                })
                .await?
                .into_inner()
                .versions;
            let mut rows = vec![["id", "replaced", "modified", "size", "checksum"]
                .map(String::from)
                .to_vec()];
            let mut recs: Vec<Rec> = Vec::new();
            for v in &vs {
                recs.push(entry_rec(v).n("replaced", v.ctime_ns / 1_000_000_000));
                rows.push(vec![
                    v.id.to_string(),
                    time_string(v.ctime_ns),
                    time_string(v.mtime_ns),
                    format_size(v.size),
                    format!("{}:{}", v.checksum_type, v.checksum_hex),
                ]);
            }
            emit(fmt, &recs, || {
                if vs.is_empty() {
                    format!("no versions of {path}")
                } else {
                    table(&rows)
                }
            });
        }
        FileCmd::RestoreVersion { path, id } => {
            let e = c
                .versions
                .restore(pb::VersionRestoreRequest {
                    path: path.into_bytes(),
                    id,
                })
                .await?
                .into_inner();
            emit(fmt, &[entry_rec(&e)], String::new);
        }
        FileCmd::PurgeVersions { path, keep } => {
            let n = c
                .versions
                .purge(pb::VersionPurgeRequest {
                    path: path.into_bytes(),
                    keep,
                })
                .await?
                .into_inner()
                .purged;
            emit(fmt, &[Rec::new().n("purged", n)], || {
                format!("purged {n} version(s)")
            });
        }
    }
    Ok(())
}
