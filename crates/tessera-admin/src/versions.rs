//! The `Versions` service (`tessera file versions|restore-version|
//! purge-versions`): the versions a directory with `sys.versioning`
//! keeps. Owners with their own token, or the admin credential; restores
//! and purges audited.

use crate::auth::AdminAuth;
use crate::convert::{entry, err, path};
use std::sync::Arc;
use tessera_core::Core;
use tessera_proto::admin::v1 as pb;
use tessera_proto::admin::v1::versions_server::Versions;
use tonic::{Request, Response, Status};

pub struct VersionsSvc {
    pub core: Core,
    pub auth: Arc<AdminAuth>,
}

#[tonic::async_trait]
impl Versions for VersionsSvc {
    async fn list(
        &self,
        req: Request<pb::VersionsRequest>,
    ) -> Result<Response<pb::VersionList>, Status> {
        let who = self.auth.user_identity(&req).await?;
        let p = path(&req.into_inner().path)?;
        let vs = self
            .core
            .file_versions(&who, p.clone())
            .await
            .map_err(err)?;
        Ok(Response::new(pb::VersionList {
            versions: vs.iter().map(|v| entry(&p, v)).collect(),
        }))
    }

    async fn restore(
        &self,
        req: Request<pb::VersionRestoreRequest>,
    ) -> Result<Response<pb::Entry>, Status> {
        let who = self.auth.user_identity(&req).await?;
        let r = req.into_inner();
        let target = String::from_utf8_lossy(&r.path).into_owned();
        let res = async {
            let p = path(&r.path)?;
            let i = self
                .core
                .restore_version(&who, p.clone(), r.id)
                .await
                .map_err(err)?;
            Ok(Response::new(entry(&p, &i)))
        }
        .await;
        self.auth
            .audited(&who, "restore-version", &target, &r.id.to_string(), res)
    }

    async fn purge(
        &self,
        req: Request<pb::VersionPurgeRequest>,
    ) -> Result<Response<pb::VersionPurged>, Status> {
        let who = self.auth.user_identity(&req).await?;
        let r = req.into_inner();
        let target = String::from_utf8_lossy(&r.path).into_owned();
        let res = async {
            let p = path(&r.path)?;
            let n = self
                .core
                .purge_versions(&who, p, r.keep)
                .await
                .map_err(err)?;
            Ok(Response::new(pb::VersionPurged { purged: n as u64 }))
        }
        .await;
        self.auth.audited(
            &who,
            "purge-versions",
            &target,
            &format!("keep {}", r.keep),
            res,
        )
    }
}
