//! Where a request is served, decided once for every front-end.
//!
//! A node has one [`Role`]: all-in-one, the metadata service of a
//! scale-out cluster, a data gateway, or an HA standby. The front-ends
//! decode a request, build its identity and ask this crate; they write the
//! answer ([`Route`]) in their protocol (`kXR_redirect`/`kXR_wait`,
//! 307/503) and map its typed error ([`RouteError`]) with their own table.
//! No scale-out or standby decision is made in a front-end.
//!
//! - [`Role::route_open`]: an open for reading or writing on the metadata
//!   service goes to a live gateway of the client's site with a capability
//!   signed for exactly that file, access and client (after the checks a
//!   single server makes at the open: readable, may write, stalls).
//! - [`Role::route_other`]: a request only the namespace answers goes to
//!   the metadata service from a gateway, to the active node from a
//!   standby (or waits while none is known).
//! - [`Gateway::verify`], [`Gateway::open`]: on a gateway, a capability
//!   (checked first) and the client's address become a read or write
//!   session as the capability's holder.
//! - [`ViewAsk`]: a request under a federated view: its gates (private
//!   views, token scopes), the replica a read goes to, every replica
//!   (Metalink, `kXR_locate`), the merged listing, where a write goes.

mod error;
mod gateway;
mod open;
mod view;

pub use error::RouteError;
pub use gateway::{Gateway, Opened, Verified};
pub use open::{Ask, Op};
pub use view::{Pick, ViewAsk};

use std::sync::Arc;
use tessera_cluster::{CapKey, Registry, SiteMap};
use tessera_core::ActiveNode;

/// The protocol a request came on: which of a node's addresses an answer
/// names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    Xroot,
    Https,
}

/// What this node is.
#[derive(Default)]
pub enum Role {
    /// Serves everything itself (`role = "all"`).
    #[default]
    Local,
    /// The metadata service: opens go to a live data gateway.
    Mgm(Mgm),
    /// A data gateway: file data with a capability, nothing else.
    Gateway(Gateway),
    /// An HA standby: no namespace; everything goes to the active node.
    Standby(ActiveNode),
}

/// The metadata service's part: who is alive, and how to sign for them.
pub struct Mgm {
    pub registry: Arc<Registry>,
    pub key: CapKey,
    /// Lifetime of the capabilities it signs, seconds.
    pub cap_ttl: u64,
    /// Client networks to sites (a client goes to a gateway of its site).
    pub sites: SiteMap,
}

/// The answer to "where is this served".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Here.
    Here,
    /// To the data gateway at `addr` (`host:port` of the request's
    /// protocol), with `cap` (the signed capability, for `tessera.cap`).
    Gateway { addr: String, cap: String },
    /// To another node (`host:port`): the metadata service from a
    /// gateway, the active metadata node from a standby. The request goes
    /// there as it is.
    Node { addr: String },
    /// Ask again in `secs` (a takeover, a file whose stripes cannot be
    /// read now and whose directory asks for stalls).
    Wait { secs: u32, why: String },
}

impl Role {
    /// Whether clients should treat this node as a redirector (XRootD's
    /// `kXR_isManager`): the metadata service and a standby.
    pub fn is_manager(&self) -> bool {
        matches!(self, Role::Mgm(_) | Role::Standby(_))
    }

    pub fn is_gateway(&self) -> bool {
        matches!(self, Role::Gateway(_))
    }

    pub fn is_standby(&self) -> bool {
        matches!(self, Role::Standby(_))
    }

    pub fn is_mgm(&self) -> bool {
        matches!(self, Role::Mgm(_))
    }

    /// The gateway part, on a gateway.
    pub fn gateway(&self) -> Option<&Gateway> {
        match self {
            Role::Gateway(g) => Some(g),
            _ => None,
        }
    }

    /// A request that needs the namespace: here where the namespace is;
    /// from a gateway to the metadata service; from a standby to the
    /// active node, or a wait of a second while none is known.
    pub fn route_other(&self, proto: Proto) -> Route {
        match self {
            Role::Local | Role::Mgm(_) => Route::Here,
            Role::Gateway(g) => match g.mgm(proto) {
                Some(addr) => Route::Node { addr },
                None => Route::Here,
            },
            Role::Standby(active) => {
                let to = active.get().and_then(|(_, a)| match proto {
                    Proto::Xroot => a.xrootd,
                    Proto::Https => a.https,
                });
                match to {
                    Some(addr) => Route::Node { addr },
                    None => Route::Wait {
                        secs: 1,
                        why: "no active metadata node yet (a takeover)".into(),
                    },
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
