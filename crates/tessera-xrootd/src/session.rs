//! One client connection's state: its identity and its open files.

use crate::error::XrdError;
use crate::identity::{self, UnixPolicy};
use crate::ops::write::WriteOp;
use crate::XrootdConfig;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use tessera_core::{Core, ReadSession};
use tessera_types::{Identity, NsPath};
/// A request's path and CGI (the shared codec's).
pub use tessera_xrdproto::Target;
use tokio::sync::mpsc;

/// At most this many files open at once on one connection.
pub const MAX_HANDLES: usize = 16384;
/// Bytes of out-of-order writes held on one connection, all its files
/// together (each file may hold up to `write::MAX_HELD`).
pub const MAX_HELD_PER_CONNECTION: usize = 256 << 20;

/// A file open for reading: concurrent reads share it.
pub struct OpenRead {
    pub rs: Arc<ReadSession>,
    /// Its I/O in the monitoring stream and its marked flow, when on.
    pub watch: tessera_wlcg::watch::Watch,
    pub path: NsPath,
    /// The memory share of the identity that opened it (a token in the
    /// open's `authz=` makes it the token's, not the login's): its read
    /// replies are leased under it (and the connection's).
    pub share: tessera_core::Share,
}

/// A file open for writing: its operations go, in arrival order, to the
/// task that owns the write session.
pub struct OpenWrite {
    pub ops: mpsc::Sender<WriteOp>,
    /// Its I/O in the monitoring stream and its marked flow, when on.
    pub watch: tessera_wlcg::watch::Watch,
    pub path: NsPath,
    /// The memory share of the identity writing it: its payloads are
    /// leased under it (and the connection's).
    pub share: tessera_core::Share,
}

pub enum Handle {
    Read(Arc<OpenRead>),
    Write(Arc<OpenWrite>),
    /// An existing file open for update (`ops/update.rs`).
    Update(Arc<crate::ops::update::OpenUpdate>),
}

impl Clone for Handle {
    fn clone(&self) -> Handle {
        match self {
            Handle::Read(r) => Handle::Read(Arc::clone(r)),
            Handle::Write(w) => Handle::Write(Arc::clone(w)),
            Handle::Update(u) => Handle::Update(Arc::clone(u)),
        }
    }
}

pub struct Session {
    core: Option<Core>,
    pub cfg: Arc<XrootdConfig>,
    /// The address the client reached us at (for `kXR_locate`).
    pub local: SocketAddr,
    pub peer: SocketAddr,
    pub tls: bool,
    who: RwLock<Arc<Identity>>,
    logged_in: RwLock<bool>,
    handles: Mutex<HashMap<u32, Handle>>,
    next: AtomicU32,
    /// Out-of-order write bytes held by this connection's files.
    pub held: Arc<AtomicUsize>,
    /// The connection's share of the memory budget (long payloads, read
    /// replies).
    pub share: tessera_core::Share,
    /// The connection in the limits (anonymous ones count apart).
    pub mark: tessera_core::ConnMark,
    /// When the session last did more than ping (ms since `born`): a
    /// connection that only pings is idle.
    worked: std::sync::atomic::AtomicU64,
    born: std::time::Instant,
    /// A gsi handshake between its two messages, and how many were begun.
    gsi: Mutex<(Option<tessera_gsi::Pending>, u32)>,
    /// The client's application (`xrd.appname` at login), for limits.
    app: std::sync::OnceLock<String>,
    /// The login's user name and process id, for monitoring.
    pub(crate) login_hint: std::sync::OnceLock<(String, u32)>,
    /// The session's users in the monitoring stream, one per identity it
    /// opened files as (its login's, or a token's in an open's CGI).
    pub(crate) mon_users: tessera_wlcg::monitor::Users,
}

impl Session {
    pub fn new(
        core: Option<Core>,
        cfg: Arc<XrootdConfig>,
        local: SocketAddr,
        peer: SocketAddr,
        tls: bool,
        mark: tessera_core::ConnMark,
    ) -> Session {
        let policy = cfg.unix;
        let share = cfg.buffers.connection_share();
        let who = identity::initial(policy);
        Session {
            share,
            core,
            cfg,
            local,
            peer,
            tls,
            who: RwLock::new(Arc::new(who)),
            mark,
            worked: std::sync::atomic::AtomicU64::new(0),
            born: std::time::Instant::now(),
            gsi: Mutex::new((None, 0)),
            app: std::sync::OnceLock::new(),
            login_hint: std::sync::OnceLock::new(),
            mon_users: Default::default(),
            logged_in: RwLock::new(false),
            handles: Mutex::new(HashMap::new()),
            next: AtomicU32::new(1),
            held: Arc::default(),
        }
    }

    /// The core service; a data gateway has none (its path requests are
    /// redirected before they get here).
    pub fn core(&self) -> Result<&Core, XrdError> {
        self.core.as_ref().ok_or_else(|| {
            XrdError::new(
                crate::proto::err::UNSUPPORTED,
                "this data gateway serves only opened files",
            )
        })
    }

    /// The client's identity (shared, cheap to hand out per request).
    /// The identity the session logged in as (a request with its own
    /// `authz=` token is served as that token's instead: see
    /// `ops::serve`).
    pub fn who(&self) -> Arc<Identity> {
        Arc::clone(&self.who.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// The auth error when the session logged in with a token that has
    /// expired since (one clock read per request).
    pub fn token_expired(&self) -> Option<XrdError> {
        let who = self.who.read().unwrap_or_else(|p| p.into_inner());
        let g = who.token.as_ref()?;
        let v = self.cfg.tokens.as_ref()?;
        if v.still_valid(g.expires) {
            return None;
        }
        Some(XrdError::new(
            crate::proto::err::AUTH_FAILED,
            format!(
                "the token this session logged in with (subject {}) has expired: log in again",
                g.subject
            ),
        ))
    }

    /// The gsi handshake in progress, taken for its next step, and how
    /// many handshakes this connection has begun (counting this step when
    /// `begins`).
    pub fn take_gsi(&self, begins: bool) -> (Option<tessera_gsi::Pending>, u32) {
        let mut g = tessera_core::lock(&self.gsi);
        g.1 += u32::from(begins);
        (g.0.take(), g.1)
    }

    pub fn put_gsi(&self, p: Option<tessera_gsi::Pending>) {
        tessera_core::lock(&self.gsi).0 = p;
    }

    /// The application the client named at login (empty if none).
    pub fn app(&self) -> &str {
        self.app.get().map_or("", String::as_str)
    }

    pub fn set_app(&self, app: String) {
        let _ = self.app.set(app);
    }

    pub fn set_who(&self, who: Identity) {
        *self.who.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(who);
    }

    /// The session did something (any request but a ping).
    pub fn worked(&self) {
        let ms = self.born.elapsed().as_millis() as u64;
        self.worked.store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// How long since the session last did more than ping.
    pub fn since_work(&self) -> std::time::Duration {
        let ms = self.worked.load(std::sync::atomic::Ordering::Relaxed);
        self.born
            .elapsed()
            .saturating_sub(std::time::Duration::from_millis(ms))
    }

    /// Count the connection among the anonymous ones (once); refused when
    /// they are at their limit (the connection then closes).
    pub fn count_anonymous(&self) -> Result<(), XrdError> {
        self.mark.anonymous().map_err(|why| {
            XrdError::new(
                crate::proto::err::OVERLOADED,
                format!("server busy: {why}; try again later"),
            )
        })
    }

    pub fn unix_policy(&self) -> UnixPolicy {
        self.cfg.unix
    }

    pub fn logged_in(&self) -> bool {
        *self.logged_in.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Mark the login done; false if it already was (a second login).
    pub fn login(&self) -> bool {
        let mut l = self.logged_in.write().unwrap_or_else(|p| p.into_inner());
        !std::mem::replace(&mut *l, true)
    }

    pub fn add(&self, h: Handle) -> Result<[u8; 4], XrdError> {
        let mut t = tessera_core::lock(&self.handles);
        if t.len() >= MAX_HANDLES {
            return Err(XrdError::new(
                crate::proto::err::INVALID_REQUEST,
                format!("too many open files on this connection (max {MAX_HANDLES})"),
            ));
        }
        loop {
            let id = self.next.fetch_add(1, Ordering::Relaxed);
            if id != 0 && !t.contains_key(&id) {
                t.insert(id, h);
                self.cfg.stats.open_files.fetch_add(1, Ordering::Relaxed);
                self.cfg.stats.opens.fetch_add(1, Ordering::Relaxed);
                return Ok(id.to_be_bytes());
            }
        }
    }

    pub fn get(&self, fh: [u8; 4]) -> Result<Handle, XrdError> {
        let t = tessera_core::lock(&self.handles);
        t.get(&u32::from_be_bytes(fh))
            .cloned()
            .ok_or_else(XrdError::bad_handle)
    }

    /// The files open on this connection now.
    pub fn open_handles(&self) -> Vec<Handle> {
        tessera_core::lock(&self.handles)
            .values()
            .cloned()
            .collect()
    }

    /// Files open on this connection.
    pub fn open_files(&self) -> usize {
        tessera_core::lock(&self.handles).len()
    }

    /// The identity share of the file open for writing as `fh`, if it is.
    pub fn write_share(&self, fh: [u8; 4]) -> Option<tessera_core::Share> {
        let t = tessera_core::lock(&self.handles);
        match t.get(&u32::from_be_bytes(fh)) {
            Some(Handle::Write(w)) => Some(w.share.clone()),
            Some(Handle::Update(u)) => Some(u.share.clone()),
            _ => None,
        }
    }

    pub fn remove(&self, fh: [u8; 4]) -> Result<Handle, XrdError> {
        let mut t = tessera_core::lock(&self.handles);
        let h = t
            .remove(&u32::from_be_bytes(fh))
            .ok_or_else(XrdError::bad_handle)?;
        self.cfg.stats.open_files.fetch_sub(1, Ordering::Relaxed);
        Ok(h)
    }

    /// Forget every open file (the connection ended): files being written
    /// and not closed are aborted when their write task sees its queue end.
    pub fn close_all(&self) {
        // What is still open closes because the client went (monitoring).
        if self.cfg.monitor.is_some() {
            self.mark_forced();
        }
        let mut t = tessera_core::lock(&self.handles);
        self.cfg
            .stats
            .open_files
            .fetch_sub(t.len() as u64, Ordering::Relaxed);
        t.clear();
    }
}
