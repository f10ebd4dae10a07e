//! A data gateway's side of the internal API: it registers with
//! heartbeats, keeps the filesystem list fresh, and carries writes whose
//! reservation and commit live on the metadata service.

use crate::service::kind_of;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tessera_core::{
    CommitWrite, CoreError, DataPath, EntryKind, FsConfigStatus, FsRecord, Inode, Ledger,
    Placement, WritePlan,
};
use tessera_proto::internal::v1 as pb;
use tonic::transport::Channel;
use tonic::{Request, Status};

pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(2);
pub const FS_REFRESH_EVERY: Duration = Duration::from_secs(5);

#[derive(Clone)]
pub struct ClusterClient {
    /// One per metadata node (several: a highly available service).
    chans: Arc<[Channel]>,
    /// The node calls go to; the next one after a call that could not
    /// reach it (a standby does not listen on this port, a dead node
    /// neither).
    cur: Arc<std::sync::atomic::AtomicUsize>,
    bearer: String,
}

fn remote(s: Status) -> CoreError {
    CoreError::Remote {
        kind: kind_of(&s),
        msg: s.message().to_string(),
    }
}

impl ClusterClient {
    /// A client of the metadata service's admin/internal port (connects
    /// lazily; calls fail with `Unavailable` while it is down). Call within
    /// a Tokio runtime.
    ///
    /// `mgm` may name every node of a highly available metadata service,
    /// comma-separated: calls go to one node until one cannot reach it,
    /// then to the next (only the active node listens on this port), so
    /// after a takeover they find the new active node.
    pub fn new(mgm: &str, secret: &str) -> Result<ClusterClient, CoreError> {
        let endpoints = mgm
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(|a| {
                Ok(Channel::from_shared(format!("http://{a}"))
                    .map_err(|e| CoreError::Invalid(format!("metadata service address {a}: {e}")))?
                    .connect_timeout(Duration::from_secs(5)))
            })
            .collect::<Result<Vec<_>, CoreError>>()?;
        if endpoints.is_empty() {
            return Err(CoreError::Invalid("no metadata service address".into()));
        }
        Ok(ClusterClient {
            chans: endpoints.iter().map(|e| e.connect_lazy()).collect(),
            cur: Arc::default(),
            bearer: format!("Bearer {secret}"),
        })
    }

    /// `s` as an error; a call that did not reach its node moves later
    /// calls to the next node.
    fn failed(&self, s: Status) -> CoreError {
        let unreached = s.code() == tonic::Code::Unavailable
            || (s.code() == tonic::Code::Unknown && s.message().contains("transport"));
        if unreached && self.chans.len() > 1 {
            self.cur.fetch_add(1, Ordering::Relaxed);
        }
        remote(s)
    }

    fn req<T>(&self, m: T) -> Request<T> {
        let mut r = Request::new(m);
        if let Ok(v) = self.bearer.parse() {
            r.metadata_mut().insert("authorization", v);
        }
        r.set_timeout(Duration::from_secs(30));
        r
    }

    fn api(&self) -> pb::cluster_client::ClusterClient<Channel> {
        let i = self.cur.load(Ordering::Relaxed) % self.chans.len();
        pb::cluster_client::ClusterClient::new(self.chans[i].clone())
    }

    pub async fn heartbeat(
        &self,
        xrootd: &str,
        https: &str,
        site: &str,
        open_files: u64,
    ) -> Result<(), CoreError> {
        self.api()
            .heartbeat(self.req(pb::HeartbeatRequest {
                xrootd: xrootd.to_string(),
                https: https.to_string(),
                site: site.to_string(),
                open_files,
            }))
            .await
            .map_err(|e| self.failed(e))?;
        Ok(())
    }

    /// Keep a registration stream open: a heartbeat on it every
    /// [`HEARTBEAT_EVERY`]; the metadata service forgets the gateway the
    /// moment the stream breaks. Returns when it breaks.
    pub async fn register(
        &self,
        xrootd: &str,
        https: &str,
        site: &str,
        open_files: &AtomicU64,
    ) -> Result<(), CoreError> {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let mut r = Request::new(tokio_stream::wrappers::ReceiverStream::new(rx));
        if let Ok(v) = self.bearer.parse() {
            r.metadata_mut().insert("authorization", v);
        }
        let beat = || pb::HeartbeatRequest {
            xrootd: xrootd.to_string(),
            https: https.to_string(),
            site: site.to_string(),
            open_files: open_files.load(Ordering::Relaxed),
        };
        let feed = async {
            let mut tick = tokio::time::interval(HEARTBEAT_EVERY);
            loop {
                tick.tick().await;
                if tx.send(beat()).await.is_err() {
                    return;
                }
            }
        };
        let mut api = self.api();
        tokio::select! {
            r = api.register(r) => r.map(|_| ()).map_err(|e| self.failed(e)),
            _ = feed => Ok(()),
        }
    }

    /// Say that this gateway is stopping: no more redirects to it.
    pub async fn deregister(&self, xrootd: &str) -> Result<(), CoreError> {
        self.api()
            .deregister(self.req(pb::DeregisterRequest {
                xrootd: xrootd.to_string(),
            }))
            .await
            .map_err(|e| self.failed(e))?;
        Ok(())
    }

    pub async fn filesystems(&self) -> Result<Vec<FsRecord>, CoreError> {
        let r = self
            .api()
            .filesystems(self.req(pb::FilesystemsRequest {}))
            .await
            .map_err(|e| self.failed(e))?;
        Ok(r.into_inner()
            .filesystems
            .into_iter()
            .map(|f| FsRecord {
                id: f.id,
                label: f.label,
                locator: f.locator,
                domain: f.domain,
                space: f.space,
                status: FsConfigStatus::parse(&f.status).unwrap_or(FsConfigStatus::Off),
                uuid: f.uuid,
            })
            .collect())
    }

    /// Reserve the write a capability names, for `gateway` (its heartbeat
    /// address).
    pub async fn begin_write(
        &self,
        capability: &str,
        size_hint: u64,
        gateway: &str,
    ) -> Result<WritePlan, CoreError> {
        let r = self
            .api()
            .begin_write(self.req(pb::BeginWriteRequest {
                capability: capability.to_string(),
                size_hint,
                gateway: gateway.to_string(),
            }))
            .await
            .map_err(|e| self.failed(e))?
            .into_inner();
        Ok(WritePlan {
            resv_id: r.reservation,
            fid: r.fid,
            placement: Placement::decode(&r.placement)?,
        })
    }

    /// The metadata service as the ledger of a gateway's writes (called
    /// from blocking threads: the write path is blocking).
    pub fn ledger(&self, rt: tokio::runtime::Handle) -> Arc<dyn Ledger> {
        Arc::new(RemoteLedger {
            client: self.clone(),
            rt,
        })
    }
}

struct RemoteLedger {
    client: ClusterClient,
    rt: tokio::runtime::Handle,
}

impl Ledger for RemoteLedger {
    fn extend(&self, id: u64, bytes: u64) -> Result<(), CoreError> {
        let c = &self.client;
        self.rt
            .block_on(c.api().extend_write(c.req(pb::ExtendWriteRequest {
                reservation: id,
                bytes,
            })))
            .map_err(|e| c.failed(e))?;
        Ok(())
    }

    fn commit(&self, id: u64, w: CommitWrite) -> Result<Inode, CoreError> {
        let c = &self.client;
        let (kind, value) = w.checksum.map(|c| (c.kind, c.value)).unwrap_or_default();
        let r = self
            .rt
            .block_on(c.api().commit_write(c.req(pb::CommitWriteRequest {
                reservation: id,
                size: w.size,
                checksum_kind: kind,
                checksum: value,
                placement: w.layout.clone(),
                crc32c: w.crc32c,
            })))
            .map_err(|e| c.failed(e))?
            .into_inner();
        // What the gateway needs of the committed file (the metadata
        // service holds the rest).
        Ok(Inode {
            ino: r.ino,
            kind: EntryKind::File,
            parent: 0,
            name: Vec::new(),
            uid: 0,
            gid: 0,
            mode: 0,
            ctime_ns: r.mtime_ns,
            mtime_ns: r.mtime_ns,
            size: r.size,
            checksum: None,
            crc32c: None,
            layout: w.layout,
            quota_node: false,
            nchildren: 0,
        })
    }

    fn abort(&self, id: u64) {
        // Sent in the background: an abort may come from a drop anywhere,
        // async code included, where blocking on the runtime is not allowed.
        let c = self.client.clone();
        self.rt.spawn(async move {
            let r = c
                .api()
                .abort_write(c.req(pb::AbortWriteRequest { reservation: id }))
                .await;
            if let Err(e) = r {
                tracing::warn!(reservation = id, "abort not delivered: {e}");
            }
        });
    }

    fn damaged(&self, fid: u64, stripes: Vec<(u8, u32, String)>) {
        // In the background, as `abort`: reported when a read session
        // ends, which may be inside async code.
        let c = self.client.clone();
        let stripes = stripes
            .into_iter()
            .map(|(stripe, fsid, what)| pb::DamagedStripe {
                stripe: stripe as u32,
                fsid,
                what,
            })
            .collect();
        self.rt.spawn(async move {
            let r = c
                .api()
                .report_damage(c.req(pb::ReportDamageRequest { fid, stripes }))
                .await;
            if let Err(e) = r {
                tracing::warn!(fid, "damage report not delivered: {e}");
            }
        });
    }
}

/// Keep a gateway registered and its filesystem list fresh, until the
/// task is dropped. The first list is loaded before this returns.
/// How long a starting gateway looks for the active metadata node.
pub const START_WAIT: Duration = Duration::from_secs(30);

pub async fn start_gateway_loops(
    client: ClusterClient,
    data: DataPath,
    xrootd: String,
    https: String,
    site: String,
    open_files: Arc<AtomicU64>,
) -> Result<tokio::task::JoinHandle<()>, CoreError> {
    // The first node named may be a standby or down (a takeover may be in
    // progress): every node is tried, for up to START_WAIT, before the
    // gateway gives up starting.
    let deadline = tokio::time::Instant::now() + START_WAIT;
    let list = loop {
        match client.filesystems().await {
            Ok(l) => break l,
            Err(e)
                if e.kind() == tessera_types::ErrorKind::Unavailable
                    && tokio::time::Instant::now() < deadline =>
            {
                tracing::info!("no active metadata node at this address yet: {e}");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => return Err(e),
        }
    };
    data.update(list);
    let _ = client
        .heartbeat(&xrootd, &https, &site, open_files.load(Ordering::Relaxed))
        .await;
    let c2 = client.clone();
    let registration = async move {
        // Reopened when it breaks (the metadata service restarted).
        loop {
            match c2.register(&xrootd, &https, &site, &open_files).await {
                Ok(()) => tracing::info!("registration stream ended; registering again"),
                Err(e) => tracing::warn!("registration with the metadata service broke: {e}"),
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    };
    Ok(tokio::spawn(async move {
        let refresh = async {
            let mut fsr = tokio::time::interval(FS_REFRESH_EVERY);
            loop {
                fsr.tick().await;
                match client.filesystems().await {
                    Ok(list) => data.update(list),
                    Err(e) => tracing::warn!("filesystem list not refreshed: {e}"),
                }
            }
        };
        tokio::join!(registration, refresh);
    }))
}
