//! Connection to the admin API: endpoint, credential, role, and the
//! mapping of a failed call to the process exit status (the errno).

use tessera_proto::admin::v1::access_client::AccessClient;
use tessera_proto::admin::v1::balance_client::BalanceClient;
use tessera_proto::admin::v1::federation_client::FederationClient;
use tessera_proto::admin::v1::fs_client::FsClient;
use tessera_proto::admin::v1::fsck_client::FsckClient;
use tessera_proto::admin::v1::namespace_client::NamespaceClient;
use tessera_proto::admin::v1::quota_client::QuotaClient;
use tessera_proto::admin::v1::recycle_client::RecycleClient;
use tessera_proto::admin::v1::report_client::ReportClient;
use tessera_proto::admin::v1::versions_client::VersionsClient;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tonic::{Request, Status};

pub type Intercept = Box<dyn FnMut(Request<()>) -> Result<Request<()>, Status> + Send + Sync>;
pub type Ns = NamespaceClient<InterceptedService<Channel, Intercept>>;
pub type Quota = QuotaClient<InterceptedService<Channel, Intercept>>;
pub type Fs = FsClient<InterceptedService<Channel, Intercept>>;
pub type Fsck = FsckClient<InterceptedService<Channel, Intercept>>;
pub type Fed = FederationClient<InterceptedService<Channel, Intercept>>;
pub type Access = AccessClient<InterceptedService<Channel, Intercept>>;
pub type Recycle = RecycleClient<InterceptedService<Channel, Intercept>>;
pub type Versions = VersionsClient<InterceptedService<Channel, Intercept>>;
pub type Balance = BalanceClient<InterceptedService<Channel, Intercept>>;
pub type Report = ReportClient<InterceptedService<Channel, Intercept>>;

/// A failure with the errno to exit with.
#[derive(Debug)]
pub struct Failure {
    pub errno: i32,
    pub msg: String,
}

impl Failure {
    pub fn new(errno: i32, msg: impl Into<String>) -> Failure {
        Failure {
            errno,
            msg: msg.into(),
        }
    }
}

impl From<Status> for Failure {
    fn from(s: Status) -> Failure {
        let errno = s
            .metadata()
            .get(tessera_proto::ERRNO_KEY)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(match s.code() {
                tonic::Code::Unauthenticated | tonic::Code::PermissionDenied => 13,
                tonic::Code::Unavailable => 111,
                tonic::Code::InvalidArgument => 22,
                tonic::Code::NotFound => 2,
                tonic::Code::AlreadyExists => 17,
                tonic::Code::FailedPrecondition => 22,
                tonic::Code::DeadlineExceeded => 110,
                _ => 5,
            });
        Failure {
            errno,
            msg: s.message().to_string(),
        }
    }
}

pub struct Clients {
    pub ns: Ns,
    pub quota: Quota,
    pub fs: Fs,
    pub fsck: Fsck,
    pub fed: Fed,
    pub access: Access,
    pub recycle: Recycle,
    pub versions: Versions,
    pub balance: Balance,
    pub report: Report,
}

/// A channel to one admin address.
async fn channel(addr: &str) -> Result<tonic::transport::Channel, Failure> {
    let url = if addr.contains("://") {
        addr.to_string()
    } else {
        format!("http://{addr}")
    };
    tonic::transport::Endpoint::from_shared(url)
        .map_err(|e| Failure::new(22, format!("bad admin address {addr}: {e}")))?
        .connect_timeout(std::time::Duration::from_secs(5))
        .connect()
        .await
        .map_err(|e| Failure::new(111, format!("cannot reach the admin API at {addr}: {e}")))
}

/// Connect to the admin API at `addrs`: one `HOST:PORT`, or the metadata
/// nodes of a highly available service, comma-separated (`a,b`): the
/// active one is the one that takes the connection (a standby does not
/// listen on its admin address), tried in turn for up to 15 s (a
/// takeover).
pub async fn connect(addrs: &str, token: String, role: Option<String>) -> Result<Clients, Failure> {
    let list: Vec<&str> = addrs
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .collect();
    if list.is_empty() {
        return Err(Failure::new(22, "no admin address"));
    }
    let until = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let channel = 'found: loop {
        let mut why = None;
        for a in &list {
            match channel(a).await {
                Ok(c) => break 'found c,
                Err(e) => why = Some(e),
            }
        }
        let why = why.unwrap_or_else(|| Failure::new(22, "no admin address"));
        if list.len() == 1 || std::time::Instant::now() > until {
            return Err(why);
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    };
    let bearer: MetadataValue<_> = format!("Bearer {token}")
        .parse()
        .map_err(|_| Failure::new(22, "the admin token contains invalid characters"))?;
    let role: Option<MetadataValue<_>> = match role {
        Some(r) => Some(r.parse().map_err(|_| Failure::new(22, "bad --role"))?),
        None => None,
    };
    let make = move || -> Intercept {
        let bearer = bearer.clone();
        let role = role.clone();
        Box::new(move |mut req: Request<()>| {
            req.metadata_mut().insert("authorization", bearer.clone());
            if let Some(r) = &role {
                req.metadata_mut()
                    .insert(tessera_proto::ROLE_KEY, r.clone());
            }
            Ok(req)
        })
    };
    Ok(Clients {
        ns: NamespaceClient::with_interceptor(channel.clone(), make()),
        quota: QuotaClient::with_interceptor(channel.clone(), make()),
        fs: FsClient::with_interceptor(channel.clone(), make()),
        fsck: FsckClient::with_interceptor(channel.clone(), make()),
        access: AccessClient::with_interceptor(channel.clone(), make()),
        recycle: RecycleClient::with_interceptor(channel.clone(), make()),
        versions: VersionsClient::with_interceptor(channel.clone(), make()),
        balance: BalanceClient::with_interceptor(channel.clone(), make()),
        report: ReportClient::with_interceptor(channel.clone(), make()),
        fed: FederationClient::with_interceptor(channel, make()),
    })
}
