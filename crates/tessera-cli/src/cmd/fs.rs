//! `tessera fs add|ls|set|rm` and `tessera space ls`, as `eos fs` / `eos space`.

use crate::client::{Clients, Failure};
use crate::output::{emit, table, Format, Rec};
use tessera_proto::admin::v1 as pb;
use tessera_types::format_size;

#[derive(clap::Subcommand)]
pub enum FsCmd {
    /// Register a filesystem: LOCATOR is folder:/path (a CephFS mount or local
    /// folder) or cephfs:CONF:FSNAME:/dir. The path must exist and be a mount
    /// point or a Tessera filesystem, and no other registered filesystem's
    /// storage.
    Add {
        #[arg(long)]
        label: String,
        /// Make the directory if missing, and use it although it is neither a
        /// mount point nor a Tessera filesystem yet (dev and test folders, a
        /// directory inside a mount).
        #[arg(long)]
        create: bool,
        /// Failure domain (the Ceph cluster / CephFS instance and host).
        #[arg(long)]
        domain: String,
        #[arg(long, default_value = "default")]
        space: String,
        #[arg(long, default_value_t = 0)]
        id: u32,
        locator: String,
    },
    /// List filesystems.
    Ls,
    /// Change a filesystem: --status rw|ro|drain|empty|off, --label, --domain, --space.
    Set {
        id: u32,
        #[arg(long)]
        status: Option<String>,
        #[arg(long)]
        label: Option<String>,
        #[arg(long)]
        domain: Option<String>,
        #[arg(long)]
        space: Option<String>,
    },
    /// Forget a filesystem that holds no stripe (drained, or off and never
    /// used); its id is never reused.
    Rm { id: u32 },
    /// Move every stripe off a filesystem, then mark it empty.
    Drain { id: u32 },
}

#[derive(clap::Subcommand)]
pub enum SpaceCmd {
    /// List spaces with their summed capacity.
    Ls,
}

fn fs_rec(f: &pb::Filesystem) -> Rec {
    Rec::new()
        .n("id", f.id)
        .s("label", f.label.clone())
        .s("path", f.locator.clone())
        .s("domain", f.domain.clone())
        .s("space", f.space.clone())
        .s("configstatus", f.status.clone())
        .n("stat.statfs.capacity", f.capacity_bytes)
        .n("stat.statfs.freebytes", f.free_bytes)
        .n(
            "stat.statfs.usedbytes",
            f.capacity_bytes.saturating_sub(f.free_bytes),
        )
        .s("stat.error", f.error.clone())
        .s("stat.cluster", f.cluster.clone())
        .s("stat.health", f.health.clone())
        .s("stat.health.reason", f.health_reason.clone())
        .n("stat.health.since", f.health_since)
}

fn fs_table(list: &[pb::Filesystem]) -> String {
    let mut rows = vec![vec![
        "id".to_string(),
        "label".into(),
        "domain".into(),
        "space".into(),
        "status".into(),
        "capacity".into(),
        "free".into(),
        "path".into(),
    ]];
    for f in list {
        rows.push(vec![
            f.id.to_string(),
            f.label.clone(),
            f.domain.clone(),
            f.space.clone(),
            match (f.error.is_empty(), f.health.as_str()) {
                (false, _) => format!("{} (error)", f.status),
                (true, "ok" | "") => f.status.clone(),
                (true, h) => format!("{} ({h})", f.status),
            },
            format_size(f.capacity_bytes),
            format_size(f.free_bytes),
            f.locator.clone(),
        ]);
    }
    table(&rows)
}

pub async fn fs(c: &mut Clients, fmt: Format, cmd: FsCmd) -> Result<(), Failure> {
    let one = |fmt: Format, f: pb::Filesystem| {
        emit(fmt, &[fs_rec(&f)], || fs_table(std::slice::from_ref(&f)));
    };
    match cmd {
        FsCmd::Add {
            label,
            create,
            domain,
            space,
            id,
            locator,
        } => {
            let f =
                c.fs.add(pb::FsAddRequest {
                    id,
                    label,
                    locator,
                    domain,
                    space,
                    status: String::new(),
                    create,
                })
                .await?
                .into_inner();
            one(fmt, f);
        }
        FsCmd::Ls => {
            let l = c.fs.list(pb::Empty {}).await?.into_inner().filesystems;
            let recs: Vec<Rec> = l.iter().map(fs_rec).collect();
            emit(fmt, &recs, || fs_table(&l));
        }
        FsCmd::Set {
            id,
            status,
            label,
            domain,
            space,
        } => {
            let f =
                c.fs.set(pb::FsSetRequest {
                    id,
                    label,
                    domain,
                    space,
                    status,
                })
                .await?
                .into_inner();
            one(fmt, f);
        }
        FsCmd::Drain { id } => return crate::cmd::fsck::drain(c, fmt, id).await,
        FsCmd::Rm { id } => {
            let f = c.fs.remove(pb::FsRemoveRequest { id }).await?.into_inner();
            one(fmt, f);
        }
    }
    Ok(())
}

pub async fn space(c: &mut Clients, fmt: Format, cmd: SpaceCmd) -> Result<(), Failure> {
    match cmd {
        SpaceCmd::Ls => {
            let l = c.fs.spaces(pb::Empty {}).await?.into_inner().spaces;
            let recs: Vec<Rec> = l
                .iter()
                .map(|s| {
                    Rec::new()
                        .s("type", "spaceview")
                        .s("name", s.name.clone())
                        .n("nofs", s.filesystems)
                        .n("nofs.rw", s.writable)
                        .n("domains", s.domains)
                        .n("sum.stat.statfs.capacity", s.capacity_bytes)
                        .n("sum.stat.statfs.freebytes", s.free_bytes)
                })
                .collect();
            emit(fmt, &recs, || {
                let mut rows = vec![vec![
                    "name".to_string(),
                    "filesystems".into(),
                    "writable".into(),
                    "domains".into(),
                    "capacity".into(),
                    "free".into(),
                ]];
                for s in &l {
                    rows.push(vec![
                        s.name.clone(),
                        s.filesystems.to_string(),
                        s.writable.to_string(),
                        s.domains.to_string(),
                        format_size(s.capacity_bytes),
                        format_size(s.free_bytes),
                    ]);
                }
                table(&rows)
            });
        }
    }
    Ok(())
}
