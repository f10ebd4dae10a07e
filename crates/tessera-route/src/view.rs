//! Federated views (`tessera-fed`): the gates every request under a view
//! passes and the choices made for it, once for both protocols. A
//! private view needs a verified credential; a token's scopes are checked
//! on the path before any endpoint is asked; replicas are ordered for the
//! client (site, health, distance, latency and load) and the one a client
//! is sent to is counted; writes go where the view's policy says. The
//! front-ends write the answers (`kXR_redirect`, `kXR_locate`'s list,
//! 302/307, Metalink, a merged listing).

use crate::RouteError;
use std::net::IpAddr;
use tessera_core::Core;
use tessera_fed::{Federation, InView, Merged, Replica, Want, WriteAsk};
use tessera_types::{ErrorKind, Identity, NsPath};

/// A request under a view.
pub struct ViewAsk<'a> {
    pub fed: &'a Federation,
    pub core: &'a Core,
    pub who: &'a Identity,
    /// The request carried a credential the server verified (a token, a
    /// macaroon, a certificate, HTTP Basic): the front-end's word, as it
    /// authenticated the request.
    pub credentialed: bool,
    pub path: &'a NsPath,
    /// Where in which view (`Federation::view_of`).
    pub at: InView,
    pub peer: IpAddr,
}

/// Where a read goes.
pub enum Pick {
    /// Redirect there (counted as sent to its endpoint).
    Redirect(Replica),
    /// A HEAD whose best replica is a grant for GET alone (presigned S3;
    /// clients reuse a HEAD's redirect for their GET): answered here, with
    /// what the lookup found.
    AnswerHere(Replica),
}

impl ViewAsk<'_> {
    /// The view of `path`, if it is in one.
    pub fn view_of(fed: &Federation, path: &NsPath) -> Option<InView> {
        fed.view_of(&path.display())
    }

    fn admit_read(&self) -> Result<(), RouteError> {
        if !self.at.public && !self.credentialed {
            return Err(RouteError::Refused {
                kind: ErrorKind::Unauthenticated,
                msg: "this view needs a token or a certificate".into(),
            });
        }
        Ok(self.core.token_allows_read(self.who, self.path)?)
    }

    /// Whether a write may go on, and whether the writer may replace what
    /// is there (else it may only create).
    fn admit_write(&self) -> Result<bool, RouteError> {
        if !self.credentialed {
            return Err(RouteError::Refused {
                kind: ErrorKind::Unauthenticated,
                msg: "writes into a view need a token or a certificate".into(),
            });
        }
        Ok(self.core.token_allows_create(self.who, self.path)?)
    }

    /// Every replica of the file a client of this protocol can be sent
    /// to (`Want::Root`: XRootD ones, else HTTP ones), the client's best
    /// first.
    pub async fn replicas(&self, want: Want) -> Result<Vec<Replica>, RouteError> {
        self.admit_read()?;
        let root = want == Want::Root;
        let found: Vec<Replica> = self
            .fed
            .find(&self.at, self.peer, want)
            .await
            .into_iter()
            .filter(|r| r.root.is_some() == root)
            .collect();
        if found.is_empty() {
            let which = if root {
                "XRootD endpoints"
            } else {
                "endpoints"
            };
            return Err(RouteError::Refused {
                kind: ErrorKind::NotFound,
                msg: format!("{} is on none of the view's {which}", self.path.display()),
            });
        }
        Ok(self.fed.order(found, self.peer))
    }

    /// The replica a read (`head`: a HEAD) is sent to.
    pub async fn pick(&self, want: Want, head: bool) -> Result<Pick, RouteError> {
        let first = self.replicas(want).await?.swap_remove(0);
        if head && first.get_only {
            return Ok(Pick::AnswerHere(first));
        }
        self.fed.sent(&first.endpoint);
        Ok(Pick::Redirect(first))
    }

    /// The listing every endpoint gives of `rel` (from the view's root,
    /// percent-encoded), merged.
    pub async fn listing(&self, rel: &str) -> Result<Merged, RouteError> {
        self.admit_read()?;
        let m = self.fed.merged(&self.at, rel).await;
        if !m.found {
            return Err(RouteError::Refused {
                kind: ErrorKind::NotFound,
                msg: format!("{} is on none of the view's endpoints", self.path.display()),
            });
        }
        Ok(m)
    }

    /// The XRootD endpoint a write goes to.
    pub fn write_root(&self) -> Result<(String, u16), RouteError> {
        self.admit_write()?;
        Ok(self.fed.write_root(&self.at, self.peer)?)
    }

    /// The URL an HTTP write goes to (`if_none_match`: the client asked
    /// for create-only itself).
    pub async fn write_url(&self, if_none_match: bool) -> Result<String, RouteError> {
        let may_replace = self.admit_write()?;
        let ask = WriteAsk {
            may_replace,
            if_none_match,
        };
        Ok(self.fed.write_url(&self.at, self.peer, ask).await?)
    }
}
