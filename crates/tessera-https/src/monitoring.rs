//! The XRootD monitoring stream and SciTags flow marking as the HTTPS
//! front-end feeds them (XrdHttp does the same through its bridge): a
//! connection's transfers are recorded under a monitored user per
//! identity and application it uses (`u`, protocol `https`, the client's
//! port as its process id, the User-Agent's product as the application),
//! announced at its first GET or PUT of a file; a request with a `SciTag` header (or `scitag.flow` in its
//! query) marks its flow (`http-get` from here to the client, `http-put`
//! from the client here). Each transfer's bytes are counted as they go (a
//! GET's as the body is sent, a PUT's as they arrive) and recorded at its
//! end.

use crate::body::Body;
use crate::Ctx;
use hyper::Response;
use tessera_types::NsPath;
use tessera_wlcg::monitor::{self, MonFile};
use tessera_wlcg::scitags;
use tessera_wlcg::watch::Watch;

/// The scitag a request carries: its `SciTag` header, else `scitag.flow`
/// in its query (an invalid one marks nothing).
pub fn tag_of(req: &hyper::Request<impl Sized>) -> Option<scitags::Tag> {
    if let Some(v) = req.headers().get("scitag") {
        return scitags::parse(v.to_str().ok()?);
    }
    let q = req.uri().query()?;
    q.split('&')
        .find_map(|kv| kv.strip_prefix("scitag.flow="))
        .and_then(scitags::parse)
}

impl Ctx {
    /// What follows a GET (`write` false) or PUT of `path` by application
    /// `app` (the User-Agent's product), marked with `tag`: nothing when
    /// monitoring and marking are off.
    pub fn watch(
        &self,
        app: &str,
        tag: Option<scitags::Tag>,
        path: &NsPath,
        (size, write): (u64, bool),
    ) -> Watch {
        let flow = match (&self.cfg.fireflies, tag) {
            (Some(ff), Some(tag)) => Some(match write {
                true => ff.start(tag, "http-put", self.peer, self.local),
                false => ff.start(tag, "http-get", self.local, self.peer),
            }),
            _ => None,
        };
        Watch {
            mon: self.mon_open(app, path, size, write),
            flow,
        }
    }

    fn mon_open(&self, app: &str, path: &NsPath, size: u64, write: bool) -> Option<MonFile> {
        let mon = self.cfg.monitor.as_ref()?;
        let peer = monitor::Peer {
            prot: "https",
            login: &self.who.name,
            pid: u32::from(self.peer.port()),
            addr: self.peer,
            app,
        };
        let what = (path.display(), size, write);
        Some(
            self.mon
                .open(mon, &self.who, peer, (&what.0, what.1, what.2)),
        )
    }
}

/// `r` with its body's bytes counted as read by `w` (nothing watched: as
/// it is).
pub fn counted(r: Response<Body>, w: Watch) -> Response<Body> {
    match w.is_on() {
        true => r.map(|b| {
            let watched = crate::body::Watched {
                watch: w,
                ended: false,
            };
            Body::Counted(Box::new(b), Box::new(watched))
        }),
        false => r,
    }
}
