//! The `Recycle` service (`tessera recycle`): owners list, restore and
//! purge their entries (with their own token, or the admin credential
//! and a role); admins list everyone's, see the bins and set them. Every
//! restore, purge and setting audited.

use crate::auth::AdminAuth;
use crate::convert::{err, path};
use std::sync::Arc;
use tessera_core::{BinSettings, Core, RecycleBin, RecycleEntry};
use tessera_proto::admin::v1 as pb;
use tessera_proto::admin::v1::recycle_server::Recycle;
use tonic::{Request, Response, Status};

pub struct RecycleSvc {
    pub core: Core,
    pub auth: Arc<AdminAuth>,
}

fn entry_pb(e: RecycleEntry) -> pb::RecycleEntry {
    pb::RecycleEntry {
        id: e.id,
        bin: e.bin,
        path: e.path,
        is_dir: e.kind == tessera_core::EntryKind::Directory,
        uid: e.uid,
        gid: e.gid,
        deleted_by: e.deleted_by,
        deleted_ns: e.deleted_ns,
        bytes: e.bytes,
        inodes: e.inodes,
        purging: e.purging,
    }
}

fn bin_pb(b: RecycleBin) -> pb::RecycleBin {
    pb::RecycleBin {
        name: b.name,
        lifetime_secs: b.lifetime_secs,
        max_bytes: b.max_bytes,
        max_inodes: b.max_inodes,
        used_bytes: b.used_bytes,
        used_inodes: b.used_inodes,
        entries: b.entries,
        set_by: b.set_by,
        set_at: b.set_at,
    }
}

#[tonic::async_trait]
impl Recycle for RecycleSvc {
    async fn list(
        &self,
        req: Request<pb::RecycleListRequest>,
    ) -> Result<Response<pb::RecycleEntryList>, Status> {
        let who = self.auth.user_identity(&req).await?;
        let r = req.into_inner();
        let bin = (!r.bin.is_empty()).then_some(r.bin);
        let limit = if r.limit == 0 { 1000 } else { r.limit as usize };
        let entries = self
            .core
            .recycle_list(&who, bin, r.all, r.after, limit)
            .await
            .map_err(err)?;
        Ok(Response::new(pb::RecycleEntryList {
            entries: entries.into_iter().map(entry_pb).collect(),
        }))
    }

    async fn restore(
        &self,
        req: Request<pb::RecycleRestoreRequest>,
    ) -> Result<Response<pb::RecycleRestored>, Status> {
        let who = self.auth.user_identity(&req).await?;
        let r = req.into_inner();
        let args = format!("to={:?} force={}", String::from_utf8_lossy(&r.to), r.force);
        let res = async {
            let to = if r.to.is_empty() {
                None
            } else {
                Some(path(&r.to)?)
            };
            let done = self
                .core
                .recycle_restore(&who, r.id, to, r.force)
                .await
                .map_err(err)?;
            Ok(Response::new(pb::RecycleRestored {
                path: done.path.display().into_bytes(),
                entry: Some(entry_pb(done.entry)),
            }))
        }
        .await;
        self.auth
            .audited(&who, "recycle restore", &r.id.to_string(), &args, res)
    }

    async fn purge(
        &self,
        req: Request<pb::RecycleId>,
    ) -> Result<Response<pb::RecyclePurged>, Status> {
        let who = self.auth.user_identity(&req).await?;
        let id = req.into_inner().id;
        let res = async {
            let p = self.core.recycle_purge(&who, id).await.map_err(err)?;
            Ok(Response::new(pb::RecyclePurged {
                entries: p.entries,
                bytes: p.bytes,
                inodes: p.inodes,
            }))
        }
        .await;
        self.auth
            .audited(&who, "recycle purge", &id.to_string(), "", res)
    }

    async fn bins(&self, req: Request<pb::Empty>) -> Result<Response<pb::RecycleBinList>, Status> {
        let who = self.auth.identity(&req)?;
        let bins = self.core.recycle_bins(&who).await.map_err(err)?;
        Ok(Response::new(pb::RecycleBinList {
            bins: bins.into_iter().map(bin_pb).collect(),
        }))
    }

    async fn config(
        &self,
        req: Request<pb::RecycleConfigRequest>,
    ) -> Result<Response<pb::RecycleBin>, Status> {
        let who = self.auth.identity(&req)?;
        let r = req.into_inner();
        let target = String::from_utf8_lossy(&r.dir).into_owned();
        let args = format!(
            "name={:?} lifetime={} max_bytes={} max_inodes={} disable={}",
            r.name, r.lifetime_secs, r.max_bytes, r.max_inodes, r.disable
        );
        let res = async {
            let s = BinSettings {
                dir: path(&r.dir)?,
                name: (!r.name.is_empty()).then_some(r.name),
                lifetime_secs: r.lifetime_secs,
                max_bytes: r.max_bytes,
                max_inodes: r.max_inodes,
                enabled: !r.disable,
            };
            let b = self.core.recycle_config(&who, s).await.map_err(err)?;
            Ok(Response::new(bin_pb(b)))
        }
        .await;
        self.auth
            .audited(&who, "recycle config", &target, &args, res)
    }
}
