//! The `Namespace` service: stat, list, mkdir, touch, remove, rename,
//! set attributes and extended attributes, the namespace check and stats;
//! each one core call as the caller's identity.

use crate::auth::AdminAuth;
use crate::convert::{entry, err, path};
use std::sync::Arc;
use tessera_core::{Core, RenameFlags, SetAttr};
use tessera_proto::admin::v1 as pb;
use tessera_proto::admin::v1::namespace_server::Namespace;
use tonic::{Request, Response, Status};

const DEFAULT_PAGE: usize = 1000;
const MAX_PAGE: usize = 10_000;

pub struct NamespaceSvc {
    pub core: Core,
    pub auth: Arc<AdminAuth>,
}

#[tonic::async_trait]
impl Namespace for NamespaceSvc {
    async fn stat(&self, req: Request<pb::StatRequest>) -> Result<Response<pb::Entry>, Status> {
        let who = self.auth.identity(&req)?;
        let p = path(&req.get_ref().path)?;
        let i = self.core.stat(&who, p.clone()).await.map_err(err)?;
        Ok(Response::new(entry(&p, &i)))
    }

    async fn list(
        &self,
        req: Request<pb::ListRequest>,
    ) -> Result<Response<pb::ListResponse>, Status> {
        let who = self.auth.identity(&req)?;
        let r = req.into_inner();
        let p = path(&r.path)?;
        let limit = match r.limit as usize {
            0 => DEFAULT_PAGE,
            n => n.min(MAX_PAGE),
        };
        let after = (!r.after.is_empty()).then_some(r.after);
        let items = self
            .core
            .list(&who, p.clone(), after, limit)
            .await
            .map_err(err)?;
        let next_after = if items.len() == limit {
            items.last().map(|i| i.name.clone()).unwrap_or_default()
        } else {
            Vec::new()
        };
        let entries = items
            .iter()
            .map(|i| {
                let cp = p.join(&i.name).unwrap_or_else(|_| p.clone());
                entry(&cp, i)
            })
            .collect();
        Ok(Response::new(pb::ListResponse {
            entries,
            next_after,
        }))
    }

    async fn mkdir(&self, req: Request<pb::MkdirRequest>) -> Result<Response<pb::Entry>, Status> {
        let who = self.auth.identity(&req)?;
        let r = req.into_inner();
        let (target, args) = (
            String::from_utf8_lossy(&r.path).into_owned(),
            format!("mode {:o} parents {}", r.mode, r.parents),
        );
        let res = async {
            let p = path(&r.path)?;
            let mode = if r.mode == 0 { 0o755 } else { r.mode };
            let i = self
                .core
                .mkdir(&who, p.clone(), mode, r.parents)
                .await
                .map_err(err)?;
            Ok(Response::new(entry(&p, &i)))
        }
        .await;
        self.auth.audited(&who, "mkdir", &target, &args, res)
    }

    async fn touch(&self, req: Request<pb::TouchRequest>) -> Result<Response<pb::Entry>, Status> {
        let who = self.auth.identity(&req)?;
        let r = req.into_inner();
        let (target, args) = (String::from_utf8_lossy(&r.path).into_owned(), String::new());
        let res = async {
            let p = path(&r.path)?;
            let mode = if r.mode == 0 { 0o644 } else { r.mode };
            let i = self.core.touch(&who, p.clone(), mode).await.map_err(err)?;
            Ok(Response::new(entry(&p, &i)))
        }
        .await;
        self.auth.audited(&who, "touch", &target, &args, res)
    }

    async fn remove(
        &self,
        req: Request<pb::RemoveRequest>,
    ) -> Result<Response<pb::RemoveResponse>, Status> {
        let who = self.auth.identity(&req)?;
        let r = req.into_inner();
        let (target, args) = (
            String::from_utf8_lossy(&r.path).into_owned(),
            format!("recursive {}", r.recursive),
        );
        let res = async {
            let rep = self
                .core
                .remove(&who, path(&r.path)?, r.recursive)
                .await
                .map_err(err)?;
            Ok(Response::new(pb::RemoveResponse {
                files: rep.files,
                directories: rep.dirs,
                recycled: rep.recycled,
            }))
        }
        .await;
        self.auth.audited(&who, "rm", &target, &args, res)
    }

    async fn rename(&self, req: Request<pb::RenameRequest>) -> Result<Response<pb::Entry>, Status> {
        let who = self.auth.identity(&req)?;
        let r = req.into_inner();
        let (target, args) = (
            String::from_utf8_lossy(&r.source).into_owned(),
            format!("to {}", String::from_utf8_lossy(&r.destination)),
        );
        let res = async {
            let dst = path(&r.destination)?;
            let i = self
                .core
                .rename(
                    &who,
                    path(&r.source)?,
                    dst.clone(),
                    RenameFlags {
                        no_replace: r.no_replace,
                    },
                )
                .await
                .map_err(err)?;
            Ok(Response::new(entry(&dst, &i)))
        }
        .await;
        self.auth.audited(&who, "mv", &target, &args, res)
    }

    async fn set_attr(
        &self,
        req: Request<pb::SetAttrRequest>,
    ) -> Result<Response<pb::Entry>, Status> {
        let who = self.auth.identity(&req)?;
        let r = req.into_inner();
        let (target, args) = (
            String::from_utf8_lossy(&r.path).into_owned(),
            format!(
                "uid {:?} gid {:?} mode {:?} mtime_ns {:?}",
                r.uid, r.gid, r.mode, r.mtime_ns
            ),
        );
        let res = async {
            let p = path(&r.path)?;
            let a = SetAttr {
                uid: r.uid,
                gid: r.gid,
                mode: r.mode,
                mtime_ns: r.mtime_ns,
            };
            let i = self.core.setattr(&who, p.clone(), a).await.map_err(err)?;
            Ok(Response::new(entry(&p, &i)))
        }
        .await;
        self.auth.audited(&who, "setattr", &target, &args, res)
    }

    async fn xattr_set(
        &self,
        req: Request<pb::XattrSetRequest>,
    ) -> Result<Response<pb::Empty>, Status> {
        let who = self.auth.identity(&req)?;
        let r = req.into_inner();
        let (target, args) = (
            String::from_utf8_lossy(&r.path).into_owned(),
            format!(
                "{}={}",
                String::from_utf8_lossy(&r.name),
                String::from_utf8_lossy(&r.value)
            ),
        );
        let res = async {
            self.core
                .xattr_set(&who, path(&r.path)?, r.name, r.value)
                .await
                .map_err(err)?;
            Ok(Response::new(pb::Empty {}))
        }
        .await;
        self.auth.audited(&who, "attr set", &target, &args, res)
    }

    async fn xattr_get(
        &self,
        req: Request<pb::XattrGetRequest>,
    ) -> Result<Response<pb::Xattr>, Status> {
        let who = self.auth.identity(&req)?;
        let r = req.into_inner();
        let value = self
            .core
            .xattr_get(&who, path(&r.path)?, r.name.clone())
            .await
            .map_err(err)?;
        Ok(Response::new(pb::Xattr {
            name: r.name,
            value,
        }))
    }

    async fn xattr_list(
        &self,
        req: Request<pb::PathRequest>,
    ) -> Result<Response<pb::XattrListResponse>, Status> {
        let who = self.auth.identity(&req)?;
        let attrs = self
            .core
            .xattr_list(&who, path(&req.get_ref().path)?)
            .await
            .map_err(err)?
            .into_iter()
            .map(|(name, value)| pb::Xattr { name, value })
            .collect();
        Ok(Response::new(pb::XattrListResponse { attrs }))
    }

    async fn xattr_remove(
        &self,
        req: Request<pb::XattrGetRequest>,
    ) -> Result<Response<pb::Empty>, Status> {
        let who = self.auth.identity(&req)?;
        let r = req.into_inner();
        let (target, args) = (
            String::from_utf8_lossy(&r.path).into_owned(),
            String::from_utf8_lossy(&r.name).into_owned(),
        );
        let res = async {
            self.core
                .xattr_rm(&who, path(&r.path)?, r.name)
                .await
                .map_err(err)?;
            Ok(Response::new(pb::Empty {}))
        }
        .await;
        self.auth.audited(&who, "attr rm", &target, &args, res)
    }

    async fn check(&self, req: Request<pb::Empty>) -> Result<Response<pb::CheckResponse>, Status> {
        let who = self.auth.identity(&req)?;
        crate::auth::admin_only(&who, "check is for admins")?;
        let rep = self.core.check(&who).await.map_err(err)?;
        Ok(Response::new(pb::CheckResponse {
            directories: rep.dirs,
            files: rep.files,
            bytes: rep.bytes,
            problems: rep.problems,
        }))
    }

    async fn stats(&self, req: Request<pb::Empty>) -> Result<Response<pb::StatsResponse>, Status> {
        let who = self.auth.identity(&req)?;
        let s = self.core.ns_stats(&who).await.map_err(err)?;
        Ok(Response::new(pb::StatsResponse {
            inodes: s.inodes,
            bytes: s.bytes,
            quota_nodes: s.quota_nodes,
            open_writes: s.open_reservations,
        }))
    }
}
