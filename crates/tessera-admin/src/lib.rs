//! The gRPC admin API front-end: authenticates the admin credential, turns
//! messages into core-service calls, and maps errors to gRPC codes (with
//! the errno in the `tessera-errno` metadata key).

mod access;
mod auth;
mod balance;
mod convert;
mod fed;
mod fs;
mod fsck;
mod namespace;
mod quota;
mod recycle;
mod report;
mod versions;

pub use auth::AdminAuth;

use std::sync::Arc;
use tessera_core::Core;
use tessera_proto::admin::v1::access_server::AccessServer;
use tessera_proto::admin::v1::balance_server::BalanceServer;
use tessera_proto::admin::v1::federation_server::FederationServer;
use tessera_proto::admin::v1::fs_server::FsServer;
use tessera_proto::admin::v1::fsck_server::FsckServer;
use tessera_proto::admin::v1::namespace_server::NamespaceServer;
use tessera_proto::admin::v1::quota_server::QuotaServer;
use tessera_proto::admin::v1::recycle_server::RecycleServer;
use tessera_proto::admin::v1::report_server::ReportServer;
use tessera_proto::admin::v1::versions_server::VersionsServer;

/// The admin services, ready to be added to a tonic server.
pub struct Services {
    pub namespace: NamespaceServer<namespace::NamespaceSvc>,
    pub quota: QuotaServer<quota::QuotaSvc>,
    pub fs: FsServer<fs::FsSvc>,
    pub fsck: FsckServer<fsck::FsckSvc>,
    pub access: AccessServer<access::AccessSvc>,
    pub recycle: RecycleServer<recycle::RecycleSvc>,
    pub versions: VersionsServer<versions::VersionsSvc>,
    pub balance: BalanceServer<balance::BalanceSvc>,
    /// When the server federates (`[federation]`, or endpoints added at
    /// run time).
    pub federation: Option<FederationServer<fed::FedSvc>>,
}

pub fn services(
    core: Core,
    auth: Arc<AdminAuth>,
    federation: Option<Arc<tessera_fed::Federation>>,
) -> Services {
    Services {
        federation: federation.map(|fed| {
            FederationServer::new(fed::FedSvc {
                fed,
                auth: Arc::clone(&auth),
            })
        }),
        namespace: NamespaceServer::new(namespace::NamespaceSvc {
            core: core.clone(),
            auth: Arc::clone(&auth),
        }),
        quota: QuotaServer::new(quota::QuotaSvc {
            core: core.clone(),
            auth: Arc::clone(&auth),
        }),
        fs: FsServer::new(fs::FsSvc {
            core: core.clone(),
            auth: Arc::clone(&auth),
        }),
        access: AccessServer::new(access::AccessSvc {
            core: core.clone(),
            auth: Arc::clone(&auth),
        }),
        balance: BalanceServer::new(balance::BalanceSvc {
            core: core.clone(),
            auth: Arc::clone(&auth),
        }),
        versions: VersionsServer::new(versions::VersionsSvc {
            core: core.clone(),
            auth: Arc::clone(&auth),
        }),
        recycle: RecycleServer::new(recycle::RecycleSvc {
            core: core.clone(),
            auth: Arc::clone(&auth),
        }),
        fsck: FsckServer::new(fsck::FsckSvc { core, auth }),
    }
}

/// The `Report` service over the server's Storage Resource Report.
pub fn report(
    srr: Arc<tessera_wlcg::srr::Reporter>,
    auth: Arc<AdminAuth>,
) -> ReportServer<report::ReportSvc> {
    ReportServer::new(report::ReportSvc { srr, auth })
}
