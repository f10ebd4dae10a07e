//! The internal API on the metadata service (`Cluster`), over the core.

use crate::cap::{Access, CapKey};
use crate::registry::Registry;
use aws_lc_rs::constant_time;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tessera_core::{Checksum, CommitWrite, Core, CoreError, Placement};
use tessera_proto::internal::v1 as pb;
use tessera_types::{ErrorKind, NsPath};
use tonic::{Request, Response, Status};

pub struct ClusterService {
    core: Core,
    key: CapKey,
    secret: Vec<u8>,
    registry: Arc<Registry>,
    /// Write capabilities already used (nonce → expiry): each opens once.
    used: Mutex<HashMap<u64, u64>>,
}

/// Past this many remembered nonces, the expired ones are forgotten.
const USED_SWEEP: usize = 4096;

impl ClusterService {
    pub fn new(core: Core, secret: &[u8], registry: Arc<Registry>) -> ClusterService {
        ClusterService {
            core,
            key: CapKey::new(secret),
            secret: secret.to_vec(),
            registry,
            used: Mutex::new(HashMap::new()),
        }
    }

    /// Release, every `lease / 2`, the reservations of writes whose gateway
    /// has gone silent for `lease` (a gateway that died mid-write).
    pub fn spawn_lease_sweeper(&self, lease: std::time::Duration) -> tokio::task::JoinHandle<()> {
        let (registry, ledger) = (Arc::clone(&self.registry), self.core.ledger());
        tokio::spawn(async move {
            let mut tick =
                tokio::time::interval((lease / 2).max(std::time::Duration::from_millis(100)));
            loop {
                tick.tick().await;
                for id in registry.expired_writes(lease) {
                    tracing::warn!(reservation = id, "gateway went silent: write aborted");
                    let l = Arc::clone(&ledger);
                    let _ = tokio::task::spawn_blocking(move || l.abort(id)).await;
                }
            }
        })
    }

    pub fn server(self) -> pb::cluster_server::ClusterServer<ClusterService> {
        pb::cluster_server::ClusterServer::new(self)
    }

    fn auth<T>(&self, r: &Request<T>) -> Result<(), Status> {
        let given = r
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        constant_time::verify_slices_are_equal(given.as_bytes(), &self.secret)
            .map_err(|_| Status::unauthenticated("cluster secret required"))
    }
}

impl ClusterService {
    /// Accept write capability `nonce` (good until `expires`) once only.
    fn use_once(&self, nonce: u64, expires: u64) -> Result<(), Status> {
        if nonce == 0 {
            return Err(Status::permission_denied(
                "write capability without a nonce",
            ));
        }
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        if used.len() >= USED_SWEEP {
            let now = crate::cap::now_secs();
            used.retain(|_, exp| *exp >= now);
        }
        if used.insert(nonce, expires).is_some() {
            return Err(Status::permission_denied(crate::CapError::Used.to_string()));
        }
        Ok(())
    }
}

/// A core error as a status that names its kind (the gateway maps it back).
pub fn status(e: CoreError) -> Status {
    let kind = e.kind();
    let mut s = Status::new(tonic::Code::Aborted, e.to_string());
    if let Ok(v) = kind.as_str().parse() {
        s.metadata_mut().insert(tessera_proto::ERROR_KIND_KEY, v);
    }
    s
}

fn blocking_err(e: tokio::task::JoinError) -> Status {
    Status::internal(e.to_string())
}

#[tonic::async_trait]
impl pb::cluster_server::Cluster for ClusterService {
    async fn heartbeat(
        &self,
        r: Request<pb::HeartbeatRequest>,
    ) -> Result<Response<pb::HeartbeatReply>, Status> {
        self.auth(&r)?;
        let h = r.into_inner();
        self.registry
            .heartbeat(&h.xrootd, &h.https, &h.site, h.open_files);
        Ok(Response::new(pb::HeartbeatReply {}))
    }

    async fn register(
        &self,
        r: Request<tonic::Streaming<pb::HeartbeatRequest>>,
    ) -> Result<Response<pb::HeartbeatReply>, Status> {
        self.auth(&r)?;
        let mut stream = r.into_inner();
        let mut name: Option<String> = None;
        // Each message is a heartbeat; the end of the stream (the gateway
        // died, its connection broke, it stopped) is its departure.
        let end = loop {
            match stream.message().await {
                Ok(Some(h)) => {
                    self.registry
                        .heartbeat(&h.xrootd, &h.https, &h.site, h.open_files);
                    name = Some(h.xrootd);
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        if let Some(n) = name {
            self.registry.forget(&n);
        }
        end.map(|()| Response::new(pb::HeartbeatReply {}))
    }

    async fn deregister(
        &self,
        r: Request<pb::DeregisterRequest>,
    ) -> Result<Response<pb::Done>, Status> {
        self.auth(&r)?;
        self.registry.forget(&r.get_ref().xrootd);
        Ok(Response::new(pb::Done {}))
    }

    async fn filesystems(
        &self,
        r: Request<pb::FilesystemsRequest>,
    ) -> Result<Response<pb::FilesystemsReply>, Status> {
        self.auth(&r)?;
        let filesystems = self
            .core
            .fs_list()
            .into_iter()
            .map(|f| pb::FsEntry {
                id: f.rec.id,
                label: f.rec.label,
                locator: f.rec.locator,
                domain: f.rec.domain,
                space: f.rec.space,
                status: f.rec.status.as_str().to_string(),
                uuid: f.rec.uuid,
            })
            .collect();
        Ok(Response::new(pb::FilesystemsReply { filesystems }))
    }

    async fn begin_write(
        &self,
        r: Request<pb::BeginWriteRequest>,
    ) -> Result<Response<pb::BeginWriteReply>, Status> {
        self.auth(&r)?;
        let q = r.into_inner();
        let cap = self
            .key
            .verify(&q.capability)
            .map_err(|e| Status::permission_denied(e.to_string()))?;
        if cap.access != Access::Write {
            return Err(Status::permission_denied("not a write capability"));
        }
        let path = NsPath::parse(&cap.path).map_err(|e| Status::invalid_argument(e.to_string()))?;
        // Exactly the identity the capability was signed for: its token's
        // scopes, groups and group names are decided on again here.
        let who = cap
            .holder()
            .ok_or_else(|| Status::permission_denied("malformed capability identity"))?;
        self.use_once(cap.nonce, cap.expires)?;
        let core = self.core.clone();
        let plan = tokio::task::spawn_blocking(move || {
            core.plan_write(&who, &path, cap.mode, cap.overwrite, q.size_hint)
        })
        .await
        .map_err(blocking_err)?
        .map_err(status)?;
        self.registry.track_write(plan.resv_id, &q.gateway);
        Ok(Response::new(pb::BeginWriteReply {
            reservation: plan.resv_id,
            fid: plan.fid,
            placement: plan.placement.encode(),
        }))
    }

    async fn extend_write(
        &self,
        r: Request<pb::ExtendWriteRequest>,
    ) -> Result<Response<pb::Done>, Status> {
        self.auth(&r)?;
        let q = r.into_inner();
        let ledger = self.core.ledger();
        tokio::task::spawn_blocking(move || ledger.extend(q.reservation, q.bytes))
            .await
            .map_err(blocking_err)?
            .map_err(status)?;
        Ok(Response::new(pb::Done {}))
    }

    async fn commit_write(
        &self,
        r: Request<pb::CommitWriteRequest>,
    ) -> Result<Response<pb::CommitWriteReply>, Status> {
        self.auth(&r)?;
        let q = r.into_inner();
        Placement::decode(&q.placement).map_err(|e| Status::invalid_argument(e.to_string()))?;
        let c = CommitWrite {
            size: q.size,
            checksum: Some(Checksum {
                kind: q.checksum_kind,
                value: q.checksum,
            }),
            crc32c: q.crc32c,
            layout: q.placement,
            mtime_ns: None,
        };
        let ledger = self.core.ledger();
        self.registry.untrack_write(q.reservation);
        let i = tokio::task::spawn_blocking(move || ledger.commit(q.reservation, c))
            .await
            .map_err(blocking_err)?
            .map_err(status)?;
        Ok(Response::new(pb::CommitWriteReply {
            ino: i.ino,
            size: i.size,
            mtime_ns: i.mtime_ns,
        }))
    }

    async fn abort_write(
        &self,
        r: Request<pb::AbortWriteRequest>,
    ) -> Result<Response<pb::Done>, Status> {
        self.auth(&r)?;
        let q = r.into_inner();
        self.registry.untrack_write(q.reservation);
        let ledger = self.core.ledger();
        let _ = tokio::task::spawn_blocking(move || ledger.abort(q.reservation)).await;
        Ok(Response::new(pb::Done {}))
    }

    async fn report_damage(
        &self,
        r: Request<pb::ReportDamageRequest>,
    ) -> Result<Response<pb::Done>, Status> {
        self.auth(&r)?;
        let q = r.into_inner();
        // Bounded: a file has at most 255 stripes.
        if q.stripes.len() > 255 || q.stripes.iter().any(|s| s.stripe > 255) {
            return Err(Status::invalid_argument("at most 255 stripes per file"));
        }
        let stripes = q
            .stripes
            .into_iter()
            .map(|s| (s.stripe as u8, s.fsid, s.what))
            .collect();
        let ledger = self.core.ledger();
        let _ = tokio::task::spawn_blocking(move || ledger.damaged(q.fid, stripes)).await;
        Ok(Response::new(pb::Done {}))
    }
}

/// The error kind a status names (set by [`status`]).
pub fn kind_of(s: &Status) -> ErrorKind {
    s.metadata()
        .get(tessera_proto::ERROR_KIND_KEY)
        .and_then(|v| v.to_str().ok())
        .and_then(ErrorKind::from_name)
        .unwrap_or(match s.code() {
            tonic::Code::PermissionDenied | tonic::Code::Unauthenticated => {
                ErrorKind::PermissionDenied
            }
            tonic::Code::Unavailable => ErrorKind::Unavailable,
            _ => ErrorKind::Io,
        })
}
