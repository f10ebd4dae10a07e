//! Writes into a view: the endpoint the view's write policy picks for a
//! client (an HTTP client is sent to an https or S3 endpoint, an XRootD
//! client to a root one).

use crate::{Endpoint, Federation, InView, Want, Write};
use std::net::IpAddr;

impl Federation {
    /// Where an HTTP client at `ip` writes the file of `at` (the URL to
    /// redirect it to), by the view's write policy; `Err` says why not.
    pub fn write_url(&self, at: &InView, ip: IpAddr) -> Result<String, String> {
        let to = self.write_choice(at, ip, Want::Http)?;
        let url = at.topo.endpoints[to].write_url(&at.rel)?;
        at.topo.endpoints[to].sent();
        Ok(url)
    }

    /// Where an XRootD client at `ip` writes the file of `at` (host and
    /// port of a root endpoint: the path is the view's), by the view's
    /// write policy; `Err` says why not.
    pub fn write_root(&self, at: &InView, ip: IpAddr) -> Result<(String, u16), String> {
        let to = self.write_choice(at, ip, Want::Root)?;
        let root = at.topo.endpoints[to]
            .replica(&at.rel, None)
            .root
            .ok_or("not an XRootD endpoint")?;
        at.topo.endpoints[to].sent();
        Ok(root)
    }

    /// The endpoint a write goes to for a client wanting `want`: the
    /// policy's endpoint, or, when it serves the other protocol, one of its
    /// site's that serves this one; for `closest`, the client's site's,
    /// else the fastest; only endpoints that are up.
    fn write_choice(&self, at: &InView, ip: IpAddr, want: Want) -> Result<usize, String> {
        let t = &at.topo;
        let v = &t.views[at.view];
        let fits = |i: &usize| want.takes(&t.endpoints[*i]) && t.endpoints[*i].health().up;
        let (site, what) = match v.write {
            Write::Refused => return Err("writes into this view are not configured".into()),
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
            if what.is_empty() {
                "no endpoint of the view for this protocol is up".into()
            } else {
                format!("{what} is down or serves the other protocol, and its site has no other")
            }
        })
    }
}
