//! A file open for update: `kXR_open_updt` (or `kXR_open_apnd`,
//! `kXR_open_wrto`) of an existing file without `kXR_delete`, as ROOT's
//! `TFile::Open(…, "UPDATE")` sends it. The core's copy-on-write
//! [`Update`] holds the policy; here its steps are applied in arrival
//! order (the connection task awaits each, all memory work), and answered
//! in the protocol's terms: `kXR_write`/`kXR_pgwrite` at any offset,
//! `kXR_truncate` (shrink or grow), `kXR_sync`, reads (`kXR_read`,
//! `kXR_pgread`, `kXR_readv`, through `read::Source`) of what the update
//! has, `kXR_stat` with its current size, and `kXR_close`, which builds and
//! commits the new version on its own task and answers from there.

use crate::error::XrdError;
use crate::ops::pgwrite;
use crate::ops::write::OnHandle;
use crate::proto::err;
use crate::reply::Out;
use crate::session::{Handle, Session, Target};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tessera_core::{Lease, Update};
use tessera_types::Identity;

/// A file open for update on a connection.
pub struct OpenUpdate {
    pub state: tokio::sync::Mutex<State>,
    /// The version being updated (its stat, with `size`).
    pub inode: tessera_core::Inode,
    /// The update's size now (for `kXR_stat` and readv's bounds).
    pub size: AtomicU64,
    /// The memory share of the identity updating it (its payloads).
    pub share: tessera_core::Share,
    /// Its I/O in the monitoring stream and its marked flow, when on.
    pub watch: tessera_wlcg::watch::Watch,
}

pub struct State {
    /// `None` once closed.
    pub up: Option<Update>,
    /// Pages a pgwrite found damaged, until they come again.
    missing: pgwrite::Missing,
}

fn closed() -> XrdError {
    XrdError::new(err::FILE_NOT_OPEN, "the file is closed")
}

/// Open `t` for update (on the blocking pool: it opens the old version
/// and the new one's stripes): the handle and the stat string.
pub async fn open(
    s: &Arc<Session>,
    who: &Arc<Identity>,
    t: &Target,
) -> Result<([u8; 4], String), XrdError> {
    let (core, path, w2) = (s.core()?.clone(), t.path.clone(), Arc::clone(who));
    // Its patches under the connection's and the writer's shares: one
    // user's updates hold no more than its share of the budget.
    let budget = s
        .cfg
        .buffers
        .for_identity(&who.limit_key())
        .with_share(&s.share);
    let up = tessera_core::blocking(move || core.open_update(&w2, &path, budget)).await??;
    let stat = crate::statfmt::stat_string(up.inode(), who, &s.cfg.names);
    let watch = s.watch(who, t, up.size(), true);
    let open = OpenUpdate {
        watch,
        inode: up.inode().clone(),
        size: AtomicU64::new(up.size()),
        state: tokio::sync::Mutex::new(State {
            up: Some(up),
            missing: pgwrite::Missing::default(),
        }),
        share: s.cfg.buffers.identity_share_of(&who.limit_key()),
    };
    let fh = s.add(Handle::Update(Arc::new(open)))?;
    Ok((fh, stat))
}

/// Apply a handle request to the update, in arrival order, and answer it.
pub async fn apply(
    s: &Session,
    out: &Out,
    st: [u8; 2],
    u: Arc<OpenUpdate>,
    what: OnHandle,
    lease: Lease,
) -> bool {
    let mut g = u.state.lock().await;
    if let OnHandle::Close = what {
        let Some(up) = g.up.take() else {
            return out.error(st, &closed()).await;
        };
        if let Some(e) = g.missing.at_close() {
            // Dropping the update aborts it: the old version stays.
            drop(up);
            return out.error(st, &e).await;
        }
        drop(g);
        // The new version is written on its own task (it streams the whole
        // file): the connection goes on meanwhile.
        let out = out.clone();
        tokio::spawn(async move {
            let r = up.close().await.map(|_| Vec::new()).map_err(XrdError::from);
            out.result(st, r).await;
        });
        return true;
    }
    let State { up, missing } = &mut *g;
    let Some(up) = up.as_mut() else {
        return out.error(st, &closed()).await;
    };
    let r = match what {
        OnHandle::Write(offset, data) => up.write(offset, data, lease).await,
        OnHandle::PgWrite(offset, payload, retry) => {
            let bad = match pg_write(up, missing, offset, payload, retry, lease).await {
                Ok(bad) => bad,
                Err(e) => return out.error(st, &e).await,
            };
            s.cfg
                .stats
                .page_crc_errors
                .fetch_add(bad.len() as u64, Ordering::Relaxed);
            u.size.store(up.size(), Ordering::Relaxed);
            return out.send(pgwrite::reply(st, offset, &bad)).await;
        }
        OnHandle::Truncate(size) => up.truncate(size),
        OnHandle::Sync => up.sync(),
        OnHandle::Close => unreachable!("handled above"),
    };
    u.size.store(up.size(), Ordering::Relaxed);
    out.result(st, r.map(|_| Vec::new()).map_err(XrdError::from))
        .await
}

/// A pgwrite into the update: its good pages written, the damaged ones
/// remembered until resent (see `pgwrite.rs`); the damaged ones.
async fn pg_write(
    up: &mut Update,
    missing: &mut pgwrite::Missing,
    offset: u64,
    payload: Vec<u8>,
    retry: bool,
    lease: Lease,
) -> Result<Vec<(u64, usize)>, XrdError> {
    let u = pgwrite::unpack(offset, payload)?;
    missing.note(&u, retry)?;
    let mut lease = Some(lease);
    for (at, data) in u.runs {
        up.write(at, data, lease.take().unwrap_or_default()).await?;
    }
    Ok(u.bad)
}

/// Up to `n` bytes at `pos` as the update has them.
pub async fn read(
    u: &OpenUpdate,
    pos: u64,
    n: usize,
) -> Result<Option<tessera_core::ReadData>, XrdError> {
    let g = u.state.lock().await;
    let up = g.up.as_ref().ok_or_else(closed)?;
    let bytes = up.read(pos, n).await?;
    Ok(Some(tessera_core::ReadData::from_vec(bytes)))
}

/// The stat of the file as the update has it.
pub fn stat_inode(u: &OpenUpdate) -> tessera_core::Inode {
    let mut i = u.inode.clone();
    i.size = u.size.load(Ordering::Relaxed);
    i
}
