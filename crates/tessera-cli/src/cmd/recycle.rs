//! `tessera recycle ls|restore|purge|bins|config`, as `eos recycle`:
//! owners list, restore and purge what they deleted under a directory
//! with a recycle bin (with their own token, or the admin credential and
//! `--role`); admins see everyone's entries and set the bins.

use crate::client::{Clients, Failure};
use crate::output::{emit, table, time_string, Format, Rec};
use tessera_proto::admin::v1 as pb;
use tessera_types::units::{parse_millis, show_millis};
use tessera_types::{format_size, parse_size};

/// Which entries a restore or purge takes.
#[derive(clap::Args)]
pub struct Pick {
    /// Entry ids (`recycle ls`).
    ids: Vec<u64>,
    /// Every entry deleted at PATH or under it (directories first on
    /// restore).
    #[arg(long)]
    under: Option<String>,
    /// With --under, everyone's entries, not only the caller's (admins).
    #[arg(long)]
    everyone: bool,
}

#[derive(clap::Subcommand)]
pub enum RecycleCmd {
    /// Your entries (admins: --all for everyone's).
    Ls {
        #[arg(long)]
        all: bool,
        /// Only this bin's.
        #[arg(long)]
        bin: Option<String>,
    },
    /// Put entries back where they were (or --to PATH, one entry).
    Restore {
        #[command(flatten)]
        pick: Pick,
        #[arg(long)]
        to: Option<String>,
        /// Replace a file or an empty directory that is there now (it
        /// goes to its own bin when one covers it).
        #[arg(long)]
        force: bool,
    },
    /// Remove entries for good now.
    Purge {
        #[command(flatten)]
        pick: Pick,
    },
    /// Every bin: what it holds, its lifetime and volume cap (admins).
    Bins,
    /// Deletes under DIR go to a bin (admins): `sys.recycle` on DIR.
    Config {
        dir: String,
        /// Entries older than this are purged (7d, 12h; 0: no age limit;
        /// default 30d).
        #[arg(long, default_value = "30d")]
        lifetime: String,
        /// The bin's volume cap (1T, 500G), required: what is deleted
        /// leaves its owners' quota for the bin's account, so without a
        /// cap ("0", allowed when asked for) deleted data is bounded by
        /// the lifetime alone. Past it the oldest entries go first.
        #[arg(long, required_unless_present = "off")]
        size: Option<String>,
        /// The bin's cap on inodes (deleted files and directories; 0 or
        /// unset: none): deleted empty files cost no bytes.
        #[arg(long, default_value_t = 0)]
        inodes: u64,
        /// The bin's name (default: DIR; several directories may share
        /// one, a project's).
        #[arg(long)]
        name: Option<String>,
        /// Deletes under DIR no longer go to a bin (what it holds stays
        /// until purged).
        #[arg(long)]
        off: bool,
    },
}

fn entry_recs(entries: &[pb::RecycleEntry]) -> (Vec<Rec>, String) {
    let mut rows = vec![[
        "id", "deleted", "by", "type", "size", "inodes", "path", "bin",
    ]
    .map(String::from)
    .to_vec()];
    let mut recs = Vec::new();
    for e in entries {
        recs.push(
            Rec::new()
                .n("id", e.id)
                .s("path", e.path.clone())
                .s("type", if e.is_dir { "dir" } else { "file" })
                .n("uid", e.uid)
                .n("gid", e.gid)
                .s("deletedby", e.deleted_by.clone())
                .n("deleted", e.deleted_ns / 1_000_000_000)
                .n("bytes", e.bytes)
                .n("inodes", e.inodes)
                .s("bin", e.bin.clone())
                .b("purging", e.purging),
        );
        rows.push(vec![
            e.id.to_string(),
            time_string(e.deleted_ns),
            e.deleted_by.clone(),
            if e.is_dir { "dir" } else { "file" }.into(),
            format_size(e.bytes),
            e.inodes.to_string(),
            e.path.clone(),
            e.bin.clone(),
        ]);
    }
    let human = if entries.is_empty() {
        "the recycle bin holds nothing of yours".to_string()
    } else {
        table(&rows)
    };
    (recs, human)
}

fn bin_recs(bins: &[pb::RecycleBin]) -> (Vec<Rec>, String) {
    let mut rows = vec![[
        "bin", "entries", "bytes", "inodes", "cap", "lifetime", "set by",
    ]
    .map(String::from)
    .to_vec()];
    let mut recs = Vec::new();
    for b in bins {
        recs.push(
            Rec::new()
                .s("bin", b.name.clone())
                .n("entries", b.entries)
                .n("bytes", b.used_bytes)
                .n("inodes", b.used_inodes)
                .n("maxbytes", b.max_bytes)
                .n("maxinodes", b.max_inodes)
                .n("lifetime", b.lifetime_secs)
                .s("setby", b.set_by.clone())
                .n("setat", b.set_at),
        );
        rows.push(vec![
            b.name.clone(),
            b.entries.to_string(),
            format_size(b.used_bytes),
            b.used_inodes.to_string(),
            if b.max_bytes == 0 {
                "none".into()
            } else {
                format_size(b.max_bytes)
            },
            if b.lifetime_secs == 0 {
                "forever".into()
            } else {
                show_millis(b.lifetime_secs * 1000)
            },
            b.set_by.clone(),
        ]);
    }
    let human = if bins.is_empty() {
        "no recycle bins".to_string()
    } else {
        table(&rows)
    };
    (recs, human)
}

/// Every entry of the caller's (or everyone's) listing.
async fn all_entries(
    c: &mut Clients,
    all: bool,
    bin: Option<String>,
) -> Result<Vec<pb::RecycleEntry>, Failure> {
    let mut out: Vec<pb::RecycleEntry> = Vec::new();
    loop {
        let after = out.last().map_or(0, |e| e.id);
        let page = c
            .recycle
            .list(pb::RecycleListRequest {
                bin: bin.clone().unwrap_or_default(),
                all,
                after,
                limit: 1000,
            })
            .await?
            .into_inner()
            .entries;
        let full = page.len() == 1000;
        out.extend(page);
        if !full {
            return Ok(out);
        }
    }
}

/// The ids a restore or purge takes, parents before their children.
async fn picked(c: &mut Clients, pick: Pick) -> Result<Vec<u64>, Failure> {
    let Some(under) = pick.under else {
        if pick.ids.is_empty() {
            return Err(Failure::new(22, "name entry ids, or --under PATH"));
        }
        return Ok(pick.ids);
    };
    let base = under.trim_end_matches('/').to_string();
    let mut es: Vec<_> = all_entries(c, pick.everyone, None)
        .await?
        .into_iter()
        .filter(|e| e.path == base || e.path.starts_with(&format!("{base}/")))
        .collect();
    // Oldest first within a depth: a path deleted twice comes back as its
    // last version (a later restore of the same path is refused).
    es.sort_by_key(|e| (e.path.matches('/').count(), e.deleted_ns));
    Ok(pick
        .ids
        .into_iter()
        .chain(es.into_iter().map(|e| e.id))
        .collect())
}

fn secs(s: &str) -> Result<u64, Failure> {
    parse_millis(s)
        .map(|ms| ms / 1000)
        .map_err(|e| Failure::new(22, e))
}

pub async fn run(c: &mut Clients, fmt: Format, cmd: RecycleCmd) -> Result<(), Failure> {
    match cmd {
        RecycleCmd::Ls { all, bin } => {
            let es = all_entries(c, all, bin).await?;
            let (recs, human) = entry_recs(&es);
            emit(fmt, &recs, || human);
        }
        RecycleCmd::Restore { pick, to, force } => {
            let ids = picked(c, pick).await?;
            if to.is_some() && ids.len() != 1 {
                return Err(Failure::new(22, "--to restores one entry"));
            }
            let mut recs = Vec::new();
            for id in ids {
                let r = c
                    .recycle
                    .restore(pb::RecycleRestoreRequest {
                        id,
                        to: to.clone().unwrap_or_default().into_bytes(),
                        force,
                    })
                    .await?
                    .into_inner();
                recs.push(
                    Rec::new()
                        .n("id", id)
                        .s("path", String::from_utf8_lossy(&r.path)),
                );
            }
            let n = recs.len();
            emit(fmt, &recs, || {
                format!("restored {n} entr{}", if n == 1 { "y" } else { "ies" })
            });
        }
        RecycleCmd::Purge { pick } => {
            let ids = picked(c, pick).await?;
            let (mut entries, mut bytes) = (0, 0);
            for id in ids {
                let p = c.recycle.purge(pb::RecycleId { id }).await?.into_inner();
                entries += p.entries;
                bytes += p.bytes;
            }
            let rec = Rec::new().n("entries", entries).n("bytes", bytes);
            emit(fmt, &[rec], || {
                format!("purged {entries} entries, {}", format_size(bytes))
            });
        }
        RecycleCmd::Bins => {
            let bins = c.recycle.bins(pb::Empty {}).await?.into_inner().bins;
            let (recs, human) = bin_recs(&bins);
            emit(fmt, &recs, || human);
        }
        RecycleCmd::Config {
            dir,
            lifetime,
            size,
            inodes,
            name,
            off,
        } => {
            let b = c
                .recycle
                .config(pb::RecycleConfigRequest {
                    dir: dir.into_bytes(),
                    name: name.unwrap_or_default(),
                    lifetime_secs: secs(&lifetime)?,
                    max_bytes: parse_size(size.as_deref().unwrap_or("0"))
                        .map_err(|e| Failure::new(22, e.to_string()))?,
                    disable: off,
                    max_inodes: inodes,
                })
                .await?
                .into_inner();
            let (recs, human) = bin_recs(&[b]);
            emit(fmt, &recs, || human);
        }
    }
    Ok(())
}
