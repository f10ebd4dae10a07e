//! The `Quota` service: set, remove, list and show quota nodes (a user
//! sees their own records and their groups' and projects', as `eos quota`).

use crate::auth::AdminAuth;
use crate::convert::{err, node, path, target};
use std::sync::Arc;
use tessera_core::Core;
use tessera_proto::admin::v1 as pb;
use tessera_proto::admin::v1::quota_server::Quota;
use tessera_types::Identity;
use tonic::{Request, Response, Status};

pub struct QuotaSvc {
    pub core: Core,
    pub auth: Arc<AdminAuth>,
}

fn admin_only(who: &Identity) -> Result<(), Status> {
    crate::auth::admin_only(who, "quota changes are for admins")
}

#[tonic::async_trait]
impl Quota for QuotaSvc {
    async fn set(&self, req: Request<pb::QuotaSetRequest>) -> Result<Response<pb::Empty>, Status> {
        let who = self.auth.identity(&req)?;
        let r = req.into_inner();
        let (target, args) = (
            String::from_utf8_lossy(&r.path).into_owned(),
            format!("{r:?}"),
        );
        let res = self.set_one(&who, r).await;
        self.auth.audited(&who, "quota set", &target, &args, res)
    }

    async fn remove(
        &self,
        req: Request<pb::QuotaRemoveRequest>,
    ) -> Result<Response<pb::Empty>, Status> {
        let who = self.auth.identity(&req)?;
        let r = req.into_inner();
        let (target, args) = (
            String::from_utf8_lossy(&r.path).into_owned(),
            format!("{r:?}"),
        );
        let res = self.remove_one(&who, r).await;
        self.auth.audited(&who, "quota rm", &target, &args, res)
    }

    async fn remove_node(
        &self,
        req: Request<pb::PathRequest>,
    ) -> Result<Response<pb::Empty>, Status> {
        let who = self.auth.identity(&req)?;
        let target = String::from_utf8_lossy(&req.get_ref().path).into_owned();
        let res = self.remove_node_one(&who, &req.get_ref().path).await;
        self.auth.audited(&who, "quota rmnode", &target, "", res)
    }
    async fn list(
        &self,
        req: Request<pb::PathRequest>,
    ) -> Result<Response<pb::QuotaListResponse>, Status> {
        let who = self.auth.user_identity(&req).await?;
        let nodes = self
            .core
            .quota_ls(&who, path(&req.get_ref().path)?)
            .await
            .map_err(err)?
            .into_iter()
            .map(node)
            .collect();
        Ok(Response::new(pb::QuotaListResponse { nodes }))
    }

    async fn show(
        &self,
        req: Request<pb::QuotaShowRequest>,
    ) -> Result<Response<pb::QuotaNode>, Status> {
        let who = self.auth.user_identity(&req).await?;
        let r = req.into_inner();
        let n = self
            .core
            .quota_show(&who, path(&r.path)?, r.uid, r.gid)
            .await
            .map_err(err)?;
        Ok(Response::new(node(n)))
    }
}

impl QuotaSvc {
    async fn set_one(
        &self,
        who: &Identity,
        r: pb::QuotaSetRequest,
    ) -> Result<Response<pb::Empty>, Status> {
        admin_only(who)?;
        if r.max_bytes.is_none() && r.max_inodes.is_none() {
            return Err(Status::invalid_argument("give max_bytes and/or max_inodes"));
        }
        self.core
            .quota_set(
                who,
                path(&r.path)?,
                target(r.target)?,
                r.max_bytes,
                r.max_inodes,
            )
            .await
            .map_err(err)?;
        Ok(Response::new(pb::Empty {}))
    }

    async fn remove_one(
        &self,
        who: &Identity,
        r: pb::QuotaRemoveRequest,
    ) -> Result<Response<pb::Empty>, Status> {
        admin_only(who)?;
        let (b, i) = if !r.bytes && !r.inodes {
            (true, true)
        } else {
            (r.bytes, r.inodes)
        };
        self.core
            .quota_rm(who, path(&r.path)?, target(r.target)?, b, i)
            .await
            .map_err(err)?;
        Ok(Response::new(pb::Empty {}))
    }

    async fn remove_node_one(
        &self,
        who: &Identity,
        p: &[u8],
    ) -> Result<Response<pb::Empty>, Status> {
        admin_only(who)?;
        self.core.quota_rmnode(who, path(p)?).await.map_err(err)?;
        Ok(Response::new(pb::Empty {}))
    }
}
