//! The `Fsck` service: the report of damaged files, orphans and
//! unresponsive filesystems, and repair (a dry run unless applied).

use crate::auth::AdminAuth;
use crate::convert::err;
use std::sync::Arc;
use tessera_core::{Core, CoreError, FsckReport, RepairPlan, StripeState, ORPHAN_GRACE};
use tessera_proto::admin::v1 as pb;
use tessera_proto::admin::v1::fsck_server::Fsck;
use tonic::{Request, Response, Status};

pub struct FsckSvc {
    pub core: Core,
    pub auth: Arc<AdminAuth>,
}

fn state(s: &StripeState) -> String {
    match s {
        StripeState::Ok => "ok".into(),
        StripeState::Missing => "missing".into(),
        StripeState::Unavailable(e) => format!("unavailable: {e}"),
        StripeState::BadHeader(e) => format!("bad header: {e}"),
        StripeState::SizeMismatch { expected, actual } => {
            format!("size {actual}, expected {expected}")
        }
        StripeState::Truncated {
            expected,
            actual,
            groups,
        } => format!("size {actual}, expected {expected}: blocks of groups {groups:?} lost"),
        StripeState::CorruptBlocks(b) => format!("corrupt blocks {b:?}"),
    }
}

fn report_pb(r: &FsckReport) -> pb::FsckResponse {
    pb::FsckResponse {
        files: r.files,
        stripes: r.stripes,
        tags: r
            .tags()
            .into_iter()
            .map(|(t, c)| pb::FsckTag {
                tag: t.into(),
                count: c,
            })
            .collect(),
        issues: r
            .issues
            .iter()
            .map(|i| pb::FsckIssue {
                fid: i.fid,
                path: i.path.clone(),
                layout: i.layout.clone(),
                stripes: i
                    .bad
                    .iter()
                    .map(|(idx, fsid, s)| pb::BadStripe {
                        index: *idx as u32,
                        fsid: *fsid,
                        state: state(s),
                    })
                    .collect(),
                recoverable: i.recoverable,
            })
            .collect(),
        orphans: r
            .orphans
            .iter()
            .map(|o| pb::OrphanStripe {
                fsid: o.fsid,
                fid: o.name.fid,
                index: o.name.index as u32,
                temp_of_write: o.temp_of_write,
                bytes: o.bytes,
                age_s: o.age.map(|a| a.as_secs()),
            })
            .collect(),
        read_errors: r
            .read_errors
            .iter()
            .map(|d| pb::ReadError {
                fid: d.fid,
                stripe: d.stripe as u32,
                fsid: d.fsid,
                what: d.what.clone(),
                count: d.count,
                last_seen: (d.last_ns / 1_000_000_000) as i64,
            })
            .collect(),
        timestamp: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0),
    }
}

fn admin(who: &tessera_types::Identity) -> Result<(), Status> {
    crate::auth::admin_only(who, "fsck is for admins")
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, CoreError> + Send + 'static,
) -> Result<T, Status> {
    tessera_core::blocking(f)
        .await
        .map_err(|e| Status::internal(e.to_string()))?
        .map_err(err)
}

#[tonic::async_trait]
impl Fsck for FsckSvc {
    async fn report(
        &self,
        req: Request<pb::FsckRequest>,
    ) -> Result<Response<pb::FsckResponse>, Status> {
        admin(&self.auth.identity(&req)?)?;
        let (core, deep) = (self.core.clone(), req.get_ref().deep);
        let r = blocking(move || core.fsck_scan(deep)).await?;
        Ok(Response::new(report_pb(&r)))
    }

    async fn repair(
        &self,
        req: Request<pb::FsckRequest>,
    ) -> Result<Response<pb::RepairResponse>, Status> {
        let who = self.auth.identity(&req)?;
        let args = format!("{:?}", req.get_ref());
        let res = self.repair_all(&who, req.into_inner()).await;
        self.auth.audited(&who, "fsck repair", "/", &args, res)
    }

    async fn drain(
        &self,
        req: Request<pb::DrainRequest>,
    ) -> Result<Response<pb::DrainResponse>, Status> {
        let who = self.auth.identity(&req)?;
        let fsid = req.get_ref().fsid;
        let res = self.drain_one(&who, fsid).await;
        self.auth
            .audited(&who, "fs drain", &fsid.to_string(), "", res)
    }
}

impl FsckSvc {
    async fn repair_all(
        &self,
        who: &tessera_types::Identity,
        q: pb::FsckRequest,
    ) -> Result<Response<pb::RepairResponse>, Status> {
        admin(who)?;
        let plan = RepairPlan {
            apply: q.apply,
            orphan_grace: q
                .orphan_grace_s
                .map(std::time::Duration::from_secs)
                .unwrap_or(ORPHAN_GRACE),
        };
        let (core, deep) = (self.core.clone(), q.deep);
        let r = blocking(move || {
            let scan = core.fsck_scan(deep)?;
            core.fsck_repair(&scan, &plan)
        })
        .await?;
        Ok(Response::new(pb::RepairResponse {
            applied: r.applied,
            stripes_rebuilt: r.stripes_rebuilt,
            files_repaired: r.files_repaired,
            orphans_removed: r.orphans_removed,
            orphans_kept: r.orphans_kept,
            waiting: r
                .waiting
                .iter()
                .map(|(fid, e)| format!("fid {fid}: {e}"))
                .collect(),
            failed: failures(&r.failed),
        }))
    }

    async fn drain_one(
        &self,
        who: &tessera_types::Identity,
        fsid: u32,
    ) -> Result<Response<pb::DrainResponse>, Status> {
        admin(who)?;
        let core = self.core.clone();
        let r = blocking(move || core.drain(fsid)).await?;
        Ok(Response::new(pb::DrainResponse {
            stripes_moved: r.stripes_moved,
            emptied: r.emptied,
            failed: failures(&r.failed),
        }))
    }
}

/// Each failure as a line: `fid N: why` (fid 0: a failure of no one file).
fn failures(failed: &[(u64, String)]) -> Vec<String> {
    failed
        .iter()
        .map(|(fid, e)| match fid {
            0 => e.clone(),
            _ => format!("fid {fid}: {e}"),
        })
        .collect()
}
