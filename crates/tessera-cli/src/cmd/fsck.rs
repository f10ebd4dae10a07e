//! `tessera fsck report|repair` and `tessera fs drain`, as `eos fsck`.

use crate::client::{Clients, Failure};
use crate::output::{emit, Format, Rec};
use tessera_proto::admin::v1 as pb;

#[derive(clap::Subcommand)]
pub enum FsckCmd {
    /// Scan every file's stripes and every filesystem; print the tags.
    Report {
        /// Also verify every block's checksum.
        #[arg(long)]
        deep: bool,
        /// List every affected file and orphan.
        #[arg(short = 'a')]
        all: bool,
    },
    /// Scan, then say what repair would do: rebuild broken stripes, remove
    /// orphans older than the grace period. Changes nothing without --apply.
    Repair {
        #[arg(long)]
        deep: bool,
        /// Rebuild and remove for real.
        #[arg(long)]
        apply: bool,
        /// Keep orphans last written less than this long ago (seconds, or
        /// with s, m, h or d); default 1h.
        #[arg(long, value_parser = parse_age)]
        grace: Option<u64>,
    },
}

/// `90`, `90s`, `15m`, `1h`, `2d` as seconds.
fn parse_age(s: &str) -> Result<u64, String> {
    let (n, unit) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&s[..i], c),
        _ => (s, 's'),
    };
    let mult = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86400,
        _ => return Err(format!("{s:?}: a number of seconds, or with s, m, h or d")),
    };
    n.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("{s:?}: a number of seconds, or with s, m, h or d"))
}

// long-fn: one short arm per fsck subcommand, each printing its own table.
pub async fn fsck(c: &mut Clients, fmt: Format, cmd: FsckCmd) -> Result<(), Failure> {
    match cmd {
        FsckCmd::Report { deep, all } => {
            let r = c
                .fsck
                .report(pb::FsckRequest {
                    deep,
                    ..Default::default()
                })
                .await?
                .into_inner();
            let mut recs: Vec<Rec> = r
                .tags
                .iter()
                .map(|t| {
                    Rec::new()
                        .n("timestamp", r.timestamp)
                        .s("tag", t.tag.clone())
                        .n("count", t.count)
                })
                .collect();
            if all {
                for i in &r.issues {
                    for s in &i.stripes {
                        recs.push(
                            Rec::new()
                                .n("fid", i.fid)
                                .s("path", i.path.clone())
                                .s("layout", i.layout.clone())
                                .n("stripe", s.index)
                                .n("fsid", s.fsid)
                                .s("state", s.state.clone())
                                .b("recoverable", i.recoverable),
                        );
                    }
                }
                for o in &r.orphans {
                    recs.push(
                        Rec::new()
                            .s("orphan", "stripe")
                            .n("fsid", o.fsid)
                            .n("fid", o.fid)
                            .n("stripe", o.index)
                            .o("tempofwrite", o.temp_of_write)
                            .n("bytes", o.bytes)
                            .o("age", o.age_s),
                    );
                }
                for d in &r.read_errors {
                    recs.push(
                        Rec::new()
                            .s("readerror", "stripe")
                            .n("fid", d.fid)
                            .n("stripe", d.stripe)
                            .n("fsid", d.fsid)
                            .s("what", d.what.clone())
                            .n("count", d.count)
                            .n("lastseen", d.last_seen),
                    );
                }
            }
            emit(fmt, &recs, || {
                let mut s = format!("files := {}\nstripes := {}\n", r.files, r.stripes);
                for t in &r.tags {
                    s.push_str(&format!("{} := {}\n", t.tag, t.count));
                }
                if all {
                    for i in &r.issues {
                        for b in &i.stripes {
                            s.push_str(&format!(
                                "  {} (fid {}, {}): stripe {} on fs {}: {}\n",
                                i.path, i.fid, i.layout, b.index, b.fsid, b.state
                            ));
                        }
                    }
                    for o in &r.orphans {
                        s.push_str(&format!(
                            "  orphan: fs {} fid {} stripe {} ({} bytes{})\n",
                            o.fsid,
                            o.fid,
                            o.index,
                            o.bytes,
                            o.age_s.map(|a| format!(", {a} s old")).unwrap_or_default()
                        ));
                    }
                    for d in &r.read_errors {
                        s.push_str(&format!(
                            "  read error: fid {} stripe {} on fs {}: {} ({} times)\n",
                            d.fid, d.stripe, d.fsid, d.what, d.count
                        ));
                    }
                }
                s
            });
        }
        FsckCmd::Repair { deep, apply, grace } => {
            let q = pb::FsckRequest {
                deep,
                apply,
                orphan_grace_s: grace,
            };
            let r = c.fsck.repair(q).await?.into_inner();
            let rec = Rec::new()
                .b("applied", r.applied)
                .n("stripesrebuilt", r.stripes_rebuilt)
                .n("filesrepaired", r.files_repaired)
                .n("orphansremoved", r.orphans_removed)
                .n("orphanskept", r.orphans_kept)
                .n("waiting", r.waiting.len() as u64)
                .n("failed", r.failed.len() as u64);
            let (failed, waiting) = (r.failed.clone(), r.waiting.clone());
            emit(fmt, std::slice::from_ref(&rec), || {
                let (would, note) = if r.applied {
                    ("", "")
                } else {
                    (
                        " (would be)",
                        "dry run: nothing was changed; repeat with --apply to repair\n",
                    )
                };
                let mut s = format!(
                    "{note}stripes rebuilt{would} := {}\nfiles repaired{would} := {}\n\
                     orphans removed{would} := {}\norphans kept (younger than the grace \
                     period) := {}\n",
                    r.stripes_rebuilt, r.files_repaired, r.orphans_removed, r.orphans_kept
                );
                for w in &waiting {
                    s.push_str(&format!("  waiting: {w}\n"));
                }
                for f in &failed {
                    s.push_str(&format!("  failed: {f}\n"));
                }
                s
            });
            if !failed.is_empty() {
                return Err(Failure::new(
                    5,
                    format!("{} files or stripes cannot be repaired", failed.len()),
                ));
            }
        }
    }
    Ok(())
}

pub async fn drain(c: &mut Clients, fmt: Format, fsid: u32) -> Result<(), Failure> {
    let r = c.fsck.drain(pb::DrainRequest { fsid }).await?.into_inner();
    let rec = Rec::new()
        .n("id", fsid)
        .n("stripesmoved", r.stripes_moved)
        .b("emptied", r.emptied)
        .n("failed", r.failed.len() as u64);
    // Each stripe that could not be moved is a record of its own (why).
    let mut recs = vec![rec];
    recs.extend(
        r.failed
            .iter()
            .map(|f| Rec::new().n("id", fsid).s("failure", f.clone())),
    );
    emit(fmt, &recs, || {
        format!(
            "stripes moved := {}\nemptied := {}\n{}",
            r.stripes_moved,
            r.emptied,
            r.failed
                .iter()
                .map(|f| format!("  failed: {f}\n"))
                .collect::<String>()
        )
    });
    if !r.failed.is_empty() {
        return Err(Failure::new(
            5,
            format!("{} stripes could not be moved", r.failed.len()),
        ));
    }
    Ok(())
}
