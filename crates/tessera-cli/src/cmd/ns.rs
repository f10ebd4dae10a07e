//! Namespace commands: ls, stat, mkdir, touch, rm, rmdir, mv, chmod, chown,
//! ns check, ns stat.

use crate::client::{Clients, Failure};
use crate::output::{emit, mode_string, time_string, Format, Rec};
use tessera_proto::admin::v1 as pb;

#[derive(clap::Args)]
pub struct MkdirArgs {
    /// Create parents as needed; an existing directory is fine.
    #[arg(short = 'p')]
    parents: bool,
    /// Octal permission bits.
    #[arg(long, default_value = "755")]
    mode: String,
    path: String,
}

#[derive(clap::Args)]
pub struct RmArgs {
    /// Remove directories and their contents.
    #[arg(short = 'r')]
    recursive: bool,
    path: String,
}

#[derive(clap::Args)]
pub struct MvArgs {
    /// Refuse to replace an existing destination.
    #[arg(short = 'n', long = "no-clobber")]
    no_replace: bool,
    source: String,
    destination: String,
}

#[derive(clap::Subcommand)]
pub enum NsCmd {
    /// Walk the whole namespace and verify it and the quota counters.
    Check,
    /// Namespace size.
    Stat,
}

pub(crate) fn is_dir(e: &pb::Entry) -> bool {
    e.r#type == pb::EntryType::Directory as i32
}

pub fn entry_rec(e: &pb::Entry) -> Rec {
    Rec::new()
        .s("path", String::from_utf8_lossy(&e.path))
        .s("type", if is_dir(e) { "dir" } else { "file" })
        .n("id", e.id)
        .n("pid", e.parent_id)
        .n("uid", e.uid)
        .n("gid", e.gid)
        .s("mode", format!("{:04o}", e.mode))
        .n("size", e.size)
        .n("mtime", e.mtime_ns / 1_000_000_000)
        .n("ctime", e.ctime_ns / 1_000_000_000)
        .n("children", e.children)
        .b("quotanode", e.quota_node)
        .s("xstype", e.checksum_type.clone())
        .s("xs", e.checksum_hex.clone())
        .s("layout", e.layout.clone())
        .n("blocksize", e.block_size)
        .s("stripes", stripes(e, ","))
}

/// A block size as it is set (`sys.forced.blocksize`): binary units.
fn block_size(b: u32) -> String {
    match b {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// The filesystem of each stripe, in stripe order.
fn stripes(e: &pb::Entry, sep: &str) -> String {
    e.stripe_fsids
        .iter()
        .map(|f| f.to_string())
        .collect::<Vec<_>>()
        .join(sep)
}

pub async fn stat(c: &mut Clients, fmt: Format, path: String) -> Result<(), Failure> {
    let e =
        c.ns.stat(pb::StatRequest {
            path: path.into_bytes(),
        })
        .await?
        .into_inner();
    let rec = entry_rec(&e);
    emit(fmt, std::slice::from_ref(&rec), || {
        let mut s = String::new();
        s.push_str(&format!(
            "  File: '{}'  {}\n",
            String::from_utf8_lossy(&e.path),
            if is_dir(&e) { "directory" } else { "file" }
        ));
        s.push_str(&format!(
            "  Size: {:<14} Id: {:<10} Parent: {}\n",
            e.size, e.id, e.parent_id
        ));
        s.push_str(&format!(
            "Access: ({:04o}/{})  Uid: {}  Gid: {}\n",
            e.mode,
            mode_string(is_dir(&e), e.mode),
            e.uid,
            e.gid
        ));
        s.push_str(&format!(
            "Modify: {}\nChange: {}\n",
            time_string(e.mtime_ns),
            time_string(e.ctime_ns)
        ));
        if is_dir(&e) {
            s.push_str(&format!(
                "Entries: {}  Quota node: {}\n",
                e.children,
                if e.quota_node { "yes" } else { "no" }
            ));
        }
        if !e.checksum_type.is_empty() {
            s.push_str(&format!(
                "Checksum: {} {}\n",
                e.checksum_type, e.checksum_hex
            ));
        }
        if !e.layout.is_empty() {
            s.push_str(&format!(
                "Layout: {}  Block: {}  Stripes on fs: {}\n",
                e.layout,
                block_size(e.block_size),
                stripes(&e, " ")
            ));
        }
        s
    });
    Ok(())
}

fn parse_mode(s: &str) -> Result<u32, Failure> {
    u32::from_str_radix(s, 8)
        .ok()
        .filter(|m| *m <= 0o7777)
        .ok_or_else(|| Failure::new(22, format!("mode must be octal, at most 7777: {s}")))
}

fn done(fmt: Format, rec: Rec, human: String) {
    emit(fmt, std::slice::from_ref(&rec), || human);
}

pub async fn mkdir(c: &mut Clients, fmt: Format, a: MkdirArgs) -> Result<(), Failure> {
    let mode = parse_mode(&a.mode)?;
    let e =
        c.ns.mkdir(pb::MkdirRequest {
            path: a.path.into_bytes(),
            mode,
            parents: a.parents,
        })
        .await?
        .into_inner();
    done(fmt, entry_rec(&e), String::new());
    Ok(())
}

pub async fn touch(c: &mut Clients, fmt: Format, path: String) -> Result<(), Failure> {
    let e =
        c.ns.touch(pb::TouchRequest {
            path: path.into_bytes(),
            mode: 0,
        })
        .await?
        .into_inner();
    done(fmt, entry_rec(&e), String::new());
    Ok(())
}

pub async fn rm(c: &mut Clients, fmt: Format, a: RmArgs) -> Result<(), Failure> {
    let r =
        c.ns.remove(pb::RemoveRequest {
            path: a.path.clone().into_bytes(),
            recursive: a.recursive,
        })
        .await?
        .into_inner();
    let rec = Rec::new()
        .s("path", a.path)
        .n("files", r.files)
        .n("directories", r.directories)
        .n("recycled", r.recycled);
    let human = if r.recycled > 0 {
        format!(
            "into the recycle bin ({} entr{}): tessera recycle ls",
            r.recycled,
            if r.recycled == 1 { "y" } else { "ies" }
        )
    } else {
        String::new()
    };
    done(fmt, rec, human);
    Ok(())
}

pub async fn rmdir(c: &mut Clients, fmt: Format, path: String) -> Result<(), Failure> {
    let st =
        c.ns.stat(pb::StatRequest {
            path: path.clone().into_bytes(),
        })
        .await?
        .into_inner();
    if !is_dir(&st) {
        return Err(Failure::new(20, format!("not a directory: {path}")));
    }
    rm(
        c,
        fmt,
        RmArgs {
            recursive: false,
            path,
        },
    )
    .await
}

pub async fn mv(c: &mut Clients, fmt: Format, a: MvArgs) -> Result<(), Failure> {
    let e =
        c.ns.rename(pb::RenameRequest {
            source: a.source.into_bytes(),
            destination: a.destination.into_bytes(),
            no_replace: a.no_replace,
        })
        .await?
        .into_inner();
    done(fmt, entry_rec(&e), String::new());
    Ok(())
}

pub async fn chmod(
    c: &mut Clients,
    fmt: Format,
    mode: String,
    path: String,
) -> Result<(), Failure> {
    let mode = parse_mode(&mode)?;
    let e =
        c.ns.set_attr(pb::SetAttrRequest {
            path: path.into_bytes(),
            mode: Some(mode),
            ..Default::default()
        })
        .await?
        .into_inner();
    done(fmt, entry_rec(&e), String::new());
    Ok(())
}

pub async fn chown(
    c: &mut Clients,
    fmt: Format,
    owner: String,
    path: String,
) -> Result<(), Failure> {
    let bad = || Failure::new(22, format!("owner must be UID or UID:GID: {owner}"));
    let (u, g) = match owner.split_once(':') {
        Some((u, g)) => (u.to_string(), Some(g.to_string())),
        None => (owner.clone(), None),
    };
    let uid = if u.is_empty() {
        None
    } else {
        Some(u.parse().map_err(|_| bad())?)
    };
    let gid = match g {
        Some(g) => Some(g.parse().map_err(|_| bad())?),
        None => None,
    };
    let e =
        c.ns.set_attr(pb::SetAttrRequest {
            path: path.into_bytes(),
            uid,
            gid,
            ..Default::default()
        })
        .await?
        .into_inner();
    done(fmt, entry_rec(&e), String::new());
    Ok(())
}

pub async fn ns(c: &mut Clients, fmt: Format, n: NsCmd) -> Result<(), Failure> {
    match n {
        NsCmd::Check => {
            let r = c.ns.check(pb::Empty {}).await?.into_inner();
            let rec = Rec::new()
                .n("directories", r.directories)
                .n("files", r.files)
                .n("bytes", r.bytes)
                .n("problems", r.problems.len() as u64);
            let problems = r.problems.clone();
            done(fmt, rec, {
                let mut s = format!(
                    "directories := {}\nfiles := {}\nbytes := {}\nproblems := {}\n",
                    r.directories,
                    r.files,
                    r.bytes,
                    r.problems.len()
                );
                for p in &problems {
                    s.push_str(&format!("  {p}\n"));
                }
                s
            });
            if !problems.is_empty() {
                if fmt != Format::Human {
                    for p in &problems {
                        eprintln!("{p}");
                    }
                }
                return Err(Failure::new(
                    5,
                    format!("{} problems found", problems.len()),
                ));
            }
            Ok(())
        }
        NsCmd::Stat => {
            let r = c.ns.stats(pb::Empty {}).await?.into_inner();
            let rec = Rec::new()
                .n("inodes", r.inodes)
                .n("bytes", r.bytes)
                .n("quotanodes", r.quota_nodes)
                .n("openwrites", r.open_writes);
            let h = format!(
                "inodes := {}\nbytes := {}\nquota nodes := {}\nopen writes := {}\n",
                r.inodes, r.bytes, r.quota_nodes, r.open_writes
            );
            done(fmt, rec, h);
            Ok(())
        }
    }
}
