//! Writes into a view: the endpoint the view's write policy picks for a
//! client (an HTTP client is sent to an https or S3 endpoint, an XRootD
//! client to a root one).

use crate::{Endpoint, Federation, InView, Want, Write};
use std::net::IpAddr;

/// What a write into a view asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteAsk {
    /// The writer may replace a file that is there (its token's modify
    /// scope); else it may only create.
    pub may_replace: bool,
    /// The client itself asked for create-only (`If-None-Match: *`).
    pub if_none_match: bool,
}

/// Why a write into a view is sent nowhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteRefused {
    /// The view takes no writes.
    NotConfigured,
    /// No endpoint that could take it is up (why).
    Unavailable(String),
    /// A create-only write found the file there.
    Exists,
    /// A create-only write to an object store must say so itself
    /// (`If-None-Match: *`): its grant carries the condition.
    MustBeConditional,
    /// The endpoint could not say whether the file is there.
    Lookup(String),
}

impl std::error::Error for WriteRefused {}

impl std::fmt::Display for WriteRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteRefused::NotConfigured => f.write_str("writes into this view are not configured"),
            WriteRefused::Unavailable(why) => f.write_str(why),
            WriteRefused::Exists => f.write_str(
                "the file exists and this token may create files here but not replace them",
            ),
            WriteRefused::MustBeConditional => f.write_str(
                "this token may only create files here: send If-None-Match: * (the object store then refuses to replace)",
            ),
            WriteRefused::Lookup(why) => write!(f, "the endpoint could not be asked: {why}"),
        }
    }
}

impl Federation {
    /// Where an HTTP client at `ip` writes the file of `at` (the URL to
    /// redirect it to), by the view's write policy; `Err` says why not.
    pub async fn write_url(
        &self,
        at: &InView,
        ip: IpAddr,
        ask: WriteAsk,
    ) -> Result<String, WriteRefused> {
        let to = self.write_choice(at, ip, Want::Http)?;
        let e = &at.topo.endpoints[to];
        let deadline = at.topo.cfg.timeout;
        let url = e
            .write_url(&at.rel, ask, self.tls.as_ref(), deadline)
            .await?;
        e.sent();
        Ok(url)
    }

    /// Where an XRootD client at `ip` writes the file of `at` (host and
    /// port of a root endpoint: the path is the view's), by the view's
    /// write policy; `Err` says why not.
    pub fn write_root(&self, at: &InView, ip: IpAddr) -> Result<(String, u16), WriteRefused> {
        let to = self.write_choice(at, ip, Want::Root)?;
        let root = at.topo.endpoints[to]
            .replica(&at.rel, None)
            .root
            .ok_or_else(|| WriteRefused::Unavailable("not an XRootD endpoint".into()))?;
        at.topo.endpoints[to].sent();
        Ok(root)
    }

    /// The endpoint a write goes to for a client wanting `want`: the
    /// policy's endpoint, or, when it serves the other protocol, one of its
    /// site's that serves this one; for `closest`, the client's site's,
    /// else the fastest; only endpoints that are up.
    fn write_choice(&self, at: &InView, ip: IpAddr, want: Want) -> Result<usize, WriteRefused> {
        let t = &at.topo;
        let v = &t.views[at.view];
        let fits = |i: &usize| want.takes(&t.endpoints[*i]) && t.endpoints[*i].health().up;
        let (site, what) = match v.write {
            Write::Refused => return Err(WriteRefused::NotConfigured),
            Write::To(i) if fits(&i) => return Ok(i),
            Write::To(i) => (Some(t.endpoints[i].site.as_str()), &t.endpoints[i].name),
            Write::Closest => (t.site_of(ip), &String::new()),
        };
        let mut cands: Vec<usize> = v.endpoints.iter().copied().filter(fits).collect();
        if !what.is_empty() {
            cands.retain(|i| Some(t.endpoints[*i].site.as_str()) == site);
        }
        cands.sort_by_key(|i| {
            let e = &t.endpoints[*i];
            let h = e.health();
            (Some(e.site.as_str()) != site, Endpoint::cost(&h))
        });
        cands.first().copied().ok_or_else(|| {
            WriteRefused::Unavailable(if what.is_empty() {
                "no endpoint of the view for this protocol is up".into()
            } else {
                format!("{what} is down or serves the other protocol, and its site has no other")
            })
        })
    }
}
