//! `tessera quota set|rm|rmnode|ls|show`, as `eos quota`. Project quota is
//! `--project` (EOS spells it `-g 99`).

use crate::client::{Clients, Failure};
use crate::output::{emit, table, Format, Rec};
use tessera_proto::admin::v1 as pb;
use tessera_types::{format_size, parse_size};

#[derive(clap::Args)]
#[group(id = "who", required = true, multiple = false)]
pub struct Who {
    #[arg(long, group = "who")]
    uid: Option<u32>,
    #[arg(long, group = "who")]
    gid: Option<u32>,
    #[arg(long, group = "who")]
    project: bool,
}

impl Who {
    fn target(&self) -> pb::QuotaTarget {
        let (kind, id) = match (self.uid, self.gid, self.project) {
            (Some(u), _, _) => (pb::QuotaKind::User, u),
            (_, Some(g), _) => (pb::QuotaKind::Group, g),
            _ => (pb::QuotaKind::Project, 0),
        };
        pb::QuotaTarget {
            kind: kind as i32,
            id,
        }
    }
}

#[derive(clap::Subcommand)]
pub enum QuotaCmd {
    /// Set limits; makes the directory a quota node if needed.
    Set {
        #[arg(long)]
        path: String,
        #[command(flatten)]
        who: Who,
        /// Byte limit: 4096, 10G (decimal), 512Gi (binary).
        #[arg(long)]
        max_bytes: Option<String>,
        #[arg(long)]
        max_inodes: Option<u64>,
    },
    /// Clear limits (both unless --bytes or --inodes is given).
    Rm {
        #[arg(long)]
        path: String,
        #[command(flatten)]
        who: Who,
        #[arg(long)]
        bytes: bool,
        #[arg(long)]
        inodes: bool,
    },
    /// Stop a directory being a quota node (usage returns to the node above).
    Rmnode {
        #[arg(long)]
        path: String,
    },
    /// Every quota node at or below PATH.
    Ls { path: Option<String> },
    /// The node governing PATH, with the records of a uid/gid and the project.
    Show {
        #[arg(long)]
        path: String,
        #[arg(long, default_value_t = 0)]
        uid: u32,
        #[arg(long, default_value_t = 0)]
        gid: u32,
    },
}

fn kind_name(t: &pb::QuotaTarget) -> (&'static str, String) {
    match pb::QuotaKind::try_from(t.kind) {
        Ok(pb::QuotaKind::User) => ("user", t.id.to_string()),
        Ok(pb::QuotaKind::Group) => ("group", t.id.to_string()),
        _ => ("project", "-".to_string()),
    }
}

fn pct(used: u64, max: Option<u64>) -> String {
    match max {
        Some(0) => "100.00".into(),
        Some(m) => format!("{:.2}", used as f64 * 100.0 / m as f64),
        None => "0.00".into(),
    }
}

fn status(used: u64, max: Option<u64>) -> &'static str {
    match max {
        None => "ignored",
        Some(m) if used >= m => "exceeded",
        Some(m) if used as f64 >= 0.9 * m as f64 => "warning",
        Some(_) => "ok",
    }
}

fn records(nodes: &[pb::QuotaNode]) -> (Vec<Rec>, String) {
    let mut recs = Vec::new();
    let mut rows = vec![vec![
        "node".to_string(),
        "type".into(),
        "id".into(),
        "used bytes".into(),
        "max bytes".into(),
        "used files".into(),
        "max files".into(),
        "reserved".into(),
        "status".into(),
    ]];
    for n in nodes {
        let path = String::from_utf8_lossy(&n.path).into_owned();
        for r in &n.records {
            let t = r.target.unwrap_or_default();
            let (kind, id) = kind_name(&t);
            let mut rec = Rec::new()
                .s("quota", "node")
                .s("space", path.clone())
                .s("type", kind);
            rec = match kind {
                "user" => rec.n("uid", t.id),
                "group" => rec.n("gid", t.id),
                _ => rec,
            };
            rec = rec
                .n("usedbytes", r.used_bytes)
                .n("usedfiles", r.used_inodes)
                .o("maxbytes", r.max_bytes)
                .o("maxfiles", r.max_inodes)
                .n("reservedbytes", r.reserved_bytes)
                .n("reservedfiles", r.reserved_inodes)
                .s("percentageusedbytes", pct(r.used_bytes, r.max_bytes))
                .s("statusbytes", status(r.used_bytes, r.max_bytes))
                .s("statusfiles", status(r.used_inodes, r.max_inodes));
            recs.push(rec);
            let worst = match (
                status(r.used_bytes, r.max_bytes),
                status(r.used_inodes, r.max_inodes),
            ) {
                ("exceeded", _) | (_, "exceeded") => "exceeded",
                ("warning", _) | (_, "warning") => "warning",
                ("ok", _) | (_, "ok") => "ok",
                _ => "ignored",
            };
            rows.push(vec![
                path.clone(),
                kind.into(),
                id,
                format_size(r.used_bytes),
                r.max_bytes.map(format_size).unwrap_or_else(|| "-".into()),
                r.used_inodes.to_string(),
                r.max_inodes
                    .map(|x| x.to_string())
                    .unwrap_or_else(|| "-".into()),
                format_size(r.reserved_bytes),
                worst.into(),
            ]);
        }
    }
    let human = if rows.len() == 1 {
        "no quota records".to_string()
    } else {
        table(&rows)
    };
    (recs, human)
}

pub async fn run(c: &mut Clients, fmt: Format, q: QuotaCmd) -> Result<(), Failure> {
    match q {
        QuotaCmd::Set {
            path,
            who,
            max_bytes,
            max_inodes,
        } => {
            let max_bytes = match max_bytes {
                Some(s) => Some(parse_size(&s).map_err(|e| Failure::new(22, e.to_string()))?),
                None => None,
            };
            if max_bytes.is_none() && max_inodes.is_none() {
                return Err(Failure::new(22, "give --max-bytes and/or --max-inodes"));
            }
            c.quota
                .set(pb::QuotaSetRequest {
                    path: path.clone().into_bytes(),
                    target: Some(who.target()),
                    max_bytes,
                    max_inodes,
                })
                .await?;
            let n = c
                .quota
                .list(pb::PathRequest {
                    path: path.into_bytes(),
                })
                .await?
                .into_inner();
            let (recs, human) = records(&n.nodes[..n.nodes.len().min(1)]);
            emit(fmt, &recs, || human);
        }
        QuotaCmd::Rm {
            path,
            who,
            bytes,
            inodes,
        } => {
            c.quota
                .remove(pb::QuotaRemoveRequest {
                    path: path.into_bytes(),
                    target: Some(who.target()),
                    bytes,
                    inodes,
                })
                .await?;
        }
        QuotaCmd::Rmnode { path } => {
            c.quota
                .remove_node(pb::PathRequest {
                    path: path.into_bytes(),
                })
                .await?;
        }
        QuotaCmd::Ls { path } => {
            let n = c
                .quota
                .list(pb::PathRequest {
                    path: path.unwrap_or_else(|| "/".into()).into_bytes(),
                })
                .await?
                .into_inner();
            let (recs, human) = records(&n.nodes);
            emit(fmt, &recs, || human);
        }
        QuotaCmd::Show { path, uid, gid } => {
            let n = c
                .quota
                .show(pb::QuotaShowRequest {
                    path: path.into_bytes(),
                    uid,
                    gid,
                })
                .await?
                .into_inner();
            let (recs, human) = records(std::slice::from_ref(&n));
            emit(fmt, &recs, || human);
        }
    }
    Ok(())
}
