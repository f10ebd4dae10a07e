//! `tessera attr ls|get|set|rm`, as `eos attr`.

use crate::client::{Clients, Failure};
use crate::output::{emit, quote, Format, Rec};
use tessera_proto::admin::v1 as pb;

#[derive(clap::Subcommand)]
pub enum AttrCmd {
    /// List all attributes of PATH.
    Ls { path: String },
    /// Print one attribute.
    Get { name: String, path: String },
    /// Set KEY=VALUE on PATH (sys.* needs an admin).
    Set { assignment: String, path: String },
    /// Remove one attribute.
    Rm { name: String, path: String },
}

fn rec(path: &str, name: &[u8], value: &[u8]) -> Rec {
    Rec::new()
        .s("path", path)
        .s("key", String::from_utf8_lossy(name))
        .s("value", String::from_utf8_lossy(value))
}

pub async fn run(c: &mut Clients, fmt: Format, a: AttrCmd) -> Result<(), Failure> {
    match a {
        AttrCmd::Ls { path } => {
            let r =
                c.ns.xattr_list(pb::PathRequest {
                    path: path.clone().into_bytes(),
                })
                .await?
                .into_inner();
            let recs: Vec<Rec> = r
                .attrs
                .iter()
                .map(|x| rec(&path, &x.name, &x.value))
                .collect();
            emit(fmt, &recs, || {
                r.attrs
                    .iter()
                    .map(|x| {
                        format!(
                            "{}={}\n",
                            String::from_utf8_lossy(&x.name),
                            quote(&String::from_utf8_lossy(&x.value))
                        )
                    })
                    .collect()
            });
        }
        AttrCmd::Get { name, path } => {
            let x =
                c.ns.xattr_get(pb::XattrGetRequest {
                    path: path.clone().into_bytes(),
                    name: name.into_bytes(),
                })
                .await?
                .into_inner();
            let r = rec(&path, &x.name, &x.value);
            emit(fmt, std::slice::from_ref(&r), || {
                format!(
                    "{}={}",
                    String::from_utf8_lossy(&x.name),
                    quote(&String::from_utf8_lossy(&x.value))
                )
            });
        }
        AttrCmd::Set { assignment, path } => {
            let (k, v) = assignment
                .split_once('=')
                .ok_or_else(|| Failure::new(22, "give the attribute as KEY=VALUE"))?;
            let v = v
                .strip_prefix('"')
                .and_then(|x| x.strip_suffix('"'))
                .unwrap_or(v);
            c.ns.xattr_set(pb::XattrSetRequest {
                path: path.clone().into_bytes(),
                name: k.as_bytes().to_vec(),
                value: v.as_bytes().to_vec(),
            })
            .await?;
            let r = rec(&path, k.as_bytes(), v.as_bytes());
            emit(fmt, std::slice::from_ref(&r), String::new);
        }
        AttrCmd::Rm { name, path } => {
            c.ns.xattr_remove(pb::XattrGetRequest {
                path: path.clone().into_bytes(),
                name: name.clone().into_bytes(),
            })
            .await?;
            let r = Rec::new().s("path", path).s("key", name);
            emit(fmt, std::slice::from_ref(&r), String::new);
        }
    }
    Ok(())
}
