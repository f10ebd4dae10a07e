//! `tessera acl ls|set|rm`, in the spirit of `eos acl`: the access control
//! lists of a directory (`sys.acl` by default, `user.acl` with `--user`;
//! the latter counts only where `sys.eval.useracl` is set). Entries are
//! `u:<uid|name>:<rights>`, `g:<gid|name>:<rights>`, `z:<rights>`, rights from
//! `rwxdum` and the denials `!d !u !m` (ARCHITECTURE.md, ACLs).

use crate::client::{Clients, Failure};
use crate::output::{emit, Format, Rec};
use tessera_proto::admin::v1 as pb;

#[derive(clap::Subcommand)]
pub enum AclCmd {
    /// Show the lists of PATH.
    Ls { path: String },
    /// Replace a list: ENTRIES is comma-separated, e.g. 'u:1000:rwx,z:!d'.
    Set {
        /// The owner's list (`user.acl`) instead of the admins' (`sys.acl`).
        #[arg(long)]
        user: bool,
        entries: String,
        path: String,
    },
    /// Remove a list.
    Rm {
        #[arg(long)]
        user: bool,
        path: String,
    },
}

fn name(user: bool) -> &'static str {
    if user {
        "user.acl"
    } else {
        "sys.acl"
    }
}

pub async fn run(c: &mut Clients, fmt: Format, a: AclCmd) -> Result<(), Failure> {
    match a {
        AclCmd::Ls { path } => {
            let r =
                c.ns.xattr_list(pb::PathRequest {
                    path: path.clone().into_bytes(),
                })
                .await?
                .into_inner();
            let wanted = [&b"sys.acl"[..], b"user.acl", b"sys.eval.useracl"];
            let recs: Vec<Rec> = r
                .attrs
                .iter()
                .filter(|x| wanted.contains(&x.name.as_slice()))
                .map(|x| {
                    Rec::new()
                        .s("path", path.clone())
                        .s("list", String::from_utf8_lossy(&x.name))
                        .s("entries", String::from_utf8_lossy(&x.value))
                })
                .collect();
            let human: String = recs
                .iter()
                .map(|r| {
                    let get = |k: &str| {
                        r.0.iter()
                            .find(|(n, _)| n == k)
                            .and_then(|(_, v)| v.as_str().map(str::to_string))
                            .unwrap_or_default()
                    };
                    format!("{}={}\n", get("list"), get("entries"))
                })
                .collect();
            emit(fmt, &recs, || human);
        }
        AclCmd::Set {
            user,
            entries,
            path,
        } => {
            c.ns.xattr_set(pb::XattrSetRequest {
                path: path.clone().into_bytes(),
                name: name(user).as_bytes().to_vec(),
                value: entries.clone().into_bytes(),
            })
            .await?;
            let r = Rec::new()
                .s("path", path)
                .s("list", name(user))
                .s("entries", entries);
            emit(fmt, std::slice::from_ref(&r), String::new);
        }
        AclCmd::Rm { user, path } => {
            c.ns.xattr_remove(pb::XattrGetRequest {
                path: path.clone().into_bytes(),
                name: name(user).as_bytes().to_vec(),
            })
            .await?;
            let r = Rec::new().s("path", path).s("list", name(user));
            emit(fmt, std::slice::from_ref(&r), String::new);
        }
    }
    Ok(())
}
