//! The `Fs` service: filesystems (add, set, remove, list with health),
//! spaces and drain.

use crate::auth::AdminAuth;
use crate::convert::err;
use std::sync::Arc;
use tessera_core::{Core, FsChange, FsConfigStatus, FsRecord, FsView, DEFAULT_SPACE};
use tessera_proto::admin::v1 as pb;
use tessera_proto::admin::v1::fs_server::Fs;
use tonic::{Request, Response, Status};

pub struct FsSvc {
    pub core: Core,
    pub auth: Arc<AdminAuth>,
}

fn status_of(s: &str) -> Result<FsConfigStatus, Status> {
    FsConfigStatus::parse(s).ok_or_else(|| {
        Status::invalid_argument(format!(
            "status must be rw, ro, drain, empty or off, not {s:?}"
        ))
    })
}

fn rec_pb(r: &FsRecord) -> pb::Filesystem {
    pb::Filesystem {
        id: r.id,
        label: r.label.clone(),
        locator: r.locator.clone(),
        domain: r.domain.clone(),
        space: r.space.clone(),
        status: r.status.as_str().to_string(),
        ..Default::default()
    }
}

fn view_pb(v: &FsView) -> pb::Filesystem {
    let mut f = rec_pb(&v.rec);
    if let Some(c) = v.capacity {
        f.capacity_bytes = c.total_bytes;
        f.free_bytes = c.free_bytes;
    }
    f.error = v.error.clone().unwrap_or_default();
    f.cluster = v.cluster.clone().unwrap_or_default();
    f.health = v.health.state.as_str().to_string();
    if let Some((since, why)) = &v.health.reason {
        f.health_reason = why.clone();
        f.health_since = since
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
    }
    f.probe_seconds = v
        .health
        .probe_latency
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    f
}

#[tonic::async_trait]
impl Fs for FsSvc {
    async fn add(
        &self,
        req: Request<pb::FsAddRequest>,
    ) -> Result<Response<pb::Filesystem>, Status> {
        let who = self.auth.identity(&req)?;
        let r = req.into_inner();
        let (target, args) = (r.locator.clone(), format!("{r:?}"));
        let res = self.add_one(&who, r).await;
        self.auth.audited(&who, "fs add", &target, &args, res)
    }

    async fn list(&self, req: Request<pb::Empty>) -> Result<Response<pb::FsListResponse>, Status> {
        self.auth.identity(&req)?;
        let filesystems = self.core.fs_list().iter().map(view_pb).collect();
        Ok(Response::new(pb::FsListResponse { filesystems }))
    }

    async fn set(
        &self,
        req: Request<pb::FsSetRequest>,
    ) -> Result<Response<pb::Filesystem>, Status> {
        let who = self.auth.identity(&req)?;
        let r = req.into_inner();
        let (target, args) = (r.id.to_string(), format!("{r:?}"));
        let res = self.set_one(&who, r).await;
        self.auth.audited(&who, "fs set", &target, &args, res)
    }

    async fn remove(
        &self,
        req: Request<pb::FsRemoveRequest>,
    ) -> Result<Response<pb::Filesystem>, Status> {
        let who = self.auth.identity(&req)?;
        let id = req.get_ref().id;
        let res = self.core.fs_rm(&who, id).await.map_err(err);
        let res = res.map(|rec| Response::new(rec_pb(&rec)));
        self.auth.audited(&who, "fs rm", &id.to_string(), "", res)
    }

    async fn spaces(
        &self,
        req: Request<pb::Empty>,
    ) -> Result<Response<pb::SpaceListResponse>, Status> {
        self.auth.identity(&req)?;
        let spaces = self
            .core
            .spaces()
            .into_iter()
            .map(|s| pb::Space {
                name: s.name,
                filesystems: s.filesystems,
                writable: s.writable,
                domains: s.domains,
                capacity_bytes: s.total_bytes,
                free_bytes: s.free_bytes,
            })
            .collect();
        Ok(Response::new(pb::SpaceListResponse { spaces }))
    }
}

impl FsSvc {
    async fn add_one(
        &self,
        who: &tessera_types::Identity,
        r: pb::FsAddRequest,
    ) -> Result<Response<pb::Filesystem>, Status> {
        let rec = FsRecord {
            id: r.id,
            label: r.label,
            locator: r.locator,
            domain: r.domain,
            space: if r.space.is_empty() {
                DEFAULT_SPACE.to_string()
            } else {
                r.space
            },
            status: if r.status.is_empty() {
                FsConfigStatus::Rw
            } else {
                status_of(&r.status)?
            },
            uuid: String::new(),
        };
        let rec = self.core.fs_add(who, rec, r.create).await.map_err(err)?;
        Ok(Response::new(rec_pb(&rec)))
    }

    async fn set_one(
        &self,
        who: &tessera_types::Identity,
        r: pb::FsSetRequest,
    ) -> Result<Response<pb::Filesystem>, Status> {
        let change = FsChange {
            label: r.label,
            domain: r.domain,
            space: r.space,
            status: r.status.as_deref().map(status_of).transpose()?,
        };
        let rec = self.core.fs_set(who, r.id, change).await.map_err(err)?;
        // Answered as `fs ls` shows it (capacity, error, cluster), not just
        // the record that was changed.
        let shown = self.core.fs_list().into_iter().find(|v| v.rec.id == rec.id);
        Ok(Response::new(
            shown.as_ref().map_or_else(|| rec_pb(&rec), view_pb),
        ))
    }
}
