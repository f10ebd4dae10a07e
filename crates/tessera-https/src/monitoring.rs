//! The XRootD monitoring stream as the HTTPS front-end feeds it (XrdHttp
//! does the same through its bridge): a connection becomes a monitored
//! user (`u`, protocol `https`, the client's port as its process id, the
//! identity of its first transfer, the User-Agent's product as the
//! application) at its first GET or PUT of a file; each transfer's
//! bytes are counted as they go (a GET's as the body is sent, a PUT's as
//! they arrive) and recorded at its end.

use crate::body::Body;
use crate::Ctx;
use hyper::Response;
use tessera_types::NsPath;
use tessera_wlcg::monitor::{self, MonFile};

impl Ctx {
    /// The monitoring record of a transfer of `path` by application
    /// `app` (the User-Agent's product; none when the stream is off).
    pub fn mon_open(&self, app: &str, path: &NsPath, size: u64, write: bool) -> Option<MonFile> {
        let mon = self.cfg.monitor.as_ref()?;
        let user = self.mon.get_or_init(|| {
            let host = monitor::host_of(self.peer.ip());
            let info = monitor::client_info(&self.who, &host, app, self.peer.is_ipv6());
            let client = monitor::Client {
                user: &self.who.name,
                pid: u32::from(self.peer.port()),
                host: &host,
                info,
            };
            Some(mon.login("https", client))
        });
        Some(user.as_ref()?.open(&path.display(), size, write))
    }
}

/// `r` with its body's bytes counted as read from `m` (none: as it is).
pub fn counted(r: Response<Body>, m: Option<MonFile>) -> Response<Body> {
    match m {
        Some(m) => r.map(|b| Body::Counted(Box::new(b), m)),
        None => r,
    }
}
