//! A data gateway: a capability the metadata service signed, and the
//! client it was signed for, become a read or write session as the
//! capability's holder (whatever the connection logged in as).

use crate::{Proto, RouteError};
use std::net::IpAddr;
use tessera_cluster::{Access, CapKey, Capability, ClusterClient};
use tessera_core::{DataPath, MgmAddr, ReadSession, WriteSession};
use tessera_types::{ErrorKind, Identity, NsPath};

/// A gateway's part: its data path, its link to the metadata service and
/// the key capabilities verify with.
pub struct Gateway {
    pub data: DataPath,
    pub client: ClusterClient,
    pub key: CapKey,
    /// The metadata service's XRootD endpoint (`host:port`; it moves
    /// with a takeover).
    pub mgm_xrootd: MgmAddr,
    /// Its HTTPS endpoint, when this gateway serves HTTPS.
    pub mgm_https: Option<MgmAddr>,
    /// This gateway's name as registered (its XRootD address).
    pub advertise: String,
}

/// A capability whose signature verified (not yet checked against a
/// path and client).
pub struct Verified {
    text: String,
    cap: Capability,
}

/// An open a capability allowed.
pub enum Opened {
    /// A read of the file the capability describes (`rs.inode()`: its
    /// facts as signed; opening reads nothing).
    Read { rs: ReadSession, holder: Identity },
    /// A write reserved at the metadata service; a new file gets `mode`.
    Write {
        ws: WriteSession,
        holder: Identity,
        mode: u32,
    },
}

impl Gateway {
    /// The metadata service's address for `proto`.
    pub fn mgm(&self, proto: Proto) -> Option<String> {
        match proto {
            Proto::Xroot => Some(self.mgm_xrootd.get()),
            Proto::Https => self.mgm_https.as_ref().map(MgmAddr::get),
        }
    }

    /// Capability `cap` (its text as signed), verified: the first thing
    /// a gateway does with a request, before it reads its path.
    pub fn verify(&self, cap: Option<&str>) -> Result<Verified, RouteError> {
        let text = cap.ok_or_else(|| {
            RouteError::denied("this is a data gateway: open files through the metadata service")
        })?;
        let cap = self
            .key
            .verify(text)
            .map_err(|e| RouteError::denied(e.to_string()))?;
        Ok(Verified {
            text: text.to_string(),
            cap,
        })
    }

    /// Open `path` for `peer` with a verified capability, reading or
    /// `writing` (`size_hint`: the client's announced size).
    pub async fn open(
        &self,
        v: Verified,
        path: &NsPath,
        peer: IpAddr,
        writing: bool,
        size_hint: u64,
    ) -> Result<Opened, RouteError> {
        let (text, c) = (v.text.as_str(), v.cap);
        c.check_target(path, peer)
            .map_err(|e| RouteError::denied(e.to_string()))?;
        let holder = c
            .holder()
            .ok_or_else(|| RouteError::denied("malformed capability identity"))?;
        let log = self
            .data
            .session_log(&holder, path, std::time::Instant::now());
        match (&c.access, writing) {
            (Access::Write, true) => {
                let plan = self
                    .client
                    .begin_write(text, size_hint, &self.advertise)
                    .await?;
                let (data, ledger, p) = (
                    self.data.clone(),
                    self.client.ledger(tokio::runtime::Handle::current()),
                    path.clone(),
                );
                let mut ws = tokio::task::spawn_blocking(move || {
                    data.start_write(plan, ledger, p, size_hint)
                })
                .await
                .map_err(|e| RouteError::Refused {
                    kind: ErrorKind::Io,
                    msg: format!("internal task failed: {e}"),
                })??;
                if let Some(l) = log {
                    ws.set_log(l);
                }
                Ok(Opened::Write {
                    ws,
                    holder,
                    mode: c.mode,
                })
            }
            (Access::Read, false) => {
                let f = c
                    .file
                    .as_ref()
                    .ok_or_else(|| RouteError::denied("read capability without a file"))?;
                let inode = f
                    .inode(path.name().map(<[u8]>::to_vec).unwrap_or_default())
                    .ok_or_else(|| RouteError::denied("bad file facts in capability"))?;
                let mut rs = self.data.open_inode(inode)?;
                if let Some(l) = log {
                    rs.set_log(l);
                }
                Ok(Opened::Read { rs, holder })
            }
            _ => Err(RouteError::denied(
                "the capability is for another access mode",
            )),
        }
    }
}
