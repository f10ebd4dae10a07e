//! An open on the metadata service: to a live gateway of the client's
//! site, with a capability signed for exactly that file, access and
//! client, after the checks a single server makes at the open.

use crate::{Mgm, Proto, Role, Route, RouteError};
use std::net::IpAddr;
use tessera_cluster::Capability;
use tessera_core::Core;
use tessera_types::{ErrorKind, Identity, NsPath};

/// What an open is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read,
    /// A new file, or a replacement when `overwrite`, with mode bits
    /// `mode`; `parents`: its missing parents are made first (an HTTP
    /// PUT, as XrdHttp), once a gateway is there to take the write.
    Write {
        overwrite: bool,
        mode: u32,
        parents: bool,
    },
}

/// One open to route.
pub struct Ask<'a> {
    pub who: &'a Identity,
    pub op: Op,
    pub path: &'a NsPath,
    /// The client's address (the capability is bound to it; it picks the
    /// site).
    pub peer: IpAddr,
    /// Gateways the client says failed it (XRootD's `tried=`): not
    /// again.
    pub tried: &'a [&'a str],
    pub proto: Proto,
}

impl Role {
    /// Where an open is served. On the metadata service: a gateway with a
    /// capability, a wait (a stalled file), or here (no live gateway; a
    /// directory, which is listed where the namespace is); elsewhere here
    /// (a gateway's opens are [`crate::Gateway::open`]'s).
    pub async fn route_open(&self, core: &Core, ask: &Ask<'_>) -> Result<Route, RouteError> {
        match self {
            Role::Mgm(m) => m.route_open(core, ask).await,
            _ => Ok(Route::Here),
        }
    }
}

impl Mgm {
    async fn route_open(&self, core: &Core, ask: &Ask<'_>) -> Result<Route, RouteError> {
        let site = self.sites.site_of(ask.peer);
        let gw = match ask.proto {
            Proto::Xroot => self.registry.pick(site, ask.tried),
            Proto::Https => self.registry.pick_https(site),
        };
        let Some(addr) = gw else {
            return Ok(Route::Here);
        };
        let cap = match ask.op {
            Op::Write {
                overwrite,
                mode,
                parents,
            } => {
                if parents {
                    core.make_parents(ask.who, ask.path).await?;
                }
                // The decision a single server makes at the open (scopes,
                // then ACLs and mode bits with the token's groups), made
                // before anything is signed; the gateway's BeginWrite makes
                // it again.
                core.may_write(ask.who, ask.path, overwrite).await?;
                Capability::write(ask.path, ask.who, mode, overwrite, ask.peer, self.cap_ttl)
            }
            Op::Read => {
                // What the gateway cannot check: existence and permission.
                let i = match core.readable(ask.who, ask.path).await {
                    Ok(i) => i,
                    Err(e) if e.kind() == ErrorKind::IsADirectory => return Ok(Route::Here),
                    Err(e) => return Err(e.into()),
                };
                if let Some(st) = core.stall_unavailable(&i, ask.path) {
                    return Ok(Route::Wait {
                        secs: st.secs,
                        why: st.why,
                    });
                }
                Capability::read(ask.path, ask.who, &i, ask.peer, self.cap_ttl)
            }
        };
        Ok(Route::Gateway {
            addr,
            cap: self.key.sign(&cap),
        })
    }
}
