//! `kXR_write`, `kXR_sync`, `kXR_close` and `kXR_truncate` on a handle.
//!
//! Each file open for writing has one task that owns its upload (the
//! core's `Upload`) and applies these in arrival order, then translates
//! each result to its reply. The rules are the core's: writes must extend
//! the file; one further on is held (up to [`MAX_HELD`] bytes per file,
//! `MAX_HELD_PER_CONNECTION` for all files of a connection) until the gap
//! is filled, a gap still open at close reads as zeros, rewriting is
//! refused, and any failure aborts the file: nothing of it becomes visible.

use crate::error::XrdError;
use crate::ops::pgwrite;
use crate::proto::{err, Header};
use crate::reply::{error_reply, Out, Reply};
use crate::request::Fh;
use crate::session::{Handle, OpenWrite, Session, MAX_HELD_PER_CONNECTION};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tessera_core::{
    Budget, CoreError, Done, Expect, Holds, Lease, Ran, Step, Upload, WriteSession,
};
use tessera_types::ErrorKind;
use tokio::sync::mpsc;

/// Bytes of out-of-order writes held per file.
pub const MAX_HELD: usize = 64 << 20;
/// Operations queued per file before the connection waits.
const QUEUE: usize = 4;

pub enum WriteOp {
    Write {
        stream: [u8; 2],
        offset: u64,
        data: Vec<u8>,
        /// The memory budget's bytes `data` holds.
        lease: Lease,
    },
    /// `kXR_pgwrite`: pages, each after its CRC (`pgwrite.rs`).
    PgWrite {
        stream: [u8; 2],
        offset: u64,
        payload: Vec<u8>,
        lease: Lease,
        retry: bool,
    },
    /// A write the gateway could not take: the file fails with this.
    Fail {
        stream: [u8; 2],
        error: XrdError,
    },
    Sync {
        stream: [u8; 2],
    },
    Truncate {
        stream: [u8; 2],
        size: u64,
    },
    Close {
        stream: [u8; 2],
    },
}

/// What a request does to an open handle.
pub enum OnHandle {
    /// `kXR_write` at this offset.
    Write(u64, Vec<u8>),
    /// `kXR_pgwrite` at this offset (`true`: a retry).
    PgWrite(u64, Vec<u8>, bool),
    Sync,
    /// `kXR_truncate` to this size.
    Truncate(u64),
    Close,
}

/// Route a handle request: queued for a file being written; answered here
/// for a file open for reading.
pub async fn queue(
    s: &Arc<Session>,
    out: &Out,
    st: [u8; 2],
    fh: Fh,
    what: OnHandle,
    lease: Lease,
) -> bool {
    let handle = if matches!(what, OnHandle::Close) {
        s.remove(fh)
    } else {
        s.get(fh)
    };
    if let Ok(h) = &handle {
        count_write(h, &what);
    }
    let w = match handle {
        Err(e) => return out.error(st, &e).await,
        Ok(Handle::Read(r)) => {
            return match what {
                OnHandle::Close | OnHandle::Sync => out.ok(st, Vec::new()).await,
                _ => {
                    let msg = format!("{} is open for reading only", r.path.display());
                    out.error(st, &XrdError::new(err::NOT_AUTHORIZED, msg))
                        .await
                }
            }
        }
        Ok(Handle::Write(w)) => w,
        Ok(Handle::Update(u)) => {
            return crate::ops::update::apply(s, out, st, u, what, lease).await
        }
    };
    let op = match what {
        OnHandle::Write(offset, data) => WriteOp::Write {
            stream: st,
            offset,
            data,
            lease,
        },
        OnHandle::PgWrite(offset, payload, retry) => WriteOp::PgWrite {
            stream: st,
            offset,
            payload,
            lease,
            retry,
        },
        OnHandle::Sync => WriteOp::Sync { stream: st },
        OnHandle::Truncate(size) => WriteOp::Truncate { stream: st, size },
        OnHandle::Close => WriteOp::Close { stream: st },
    };
    if w.ops.send(op).await.is_err() {
        return out
            .error(st, &XrdError::new(err::IO_ERROR, "the file was aborted"))
            .await;
    }
    true
}

/// A write's bytes in the monitoring stream (pgwrite's with their CRCs,
/// as XRootD counts them).
fn count_write(h: &Handle, what: &OnHandle) {
    let n = match what {
        OnHandle::Write(_, d) | OnHandle::PgWrite(_, d, _) => d.len() as u64,
        _ => return,
    };
    match h {
        Handle::Write(w) => w.watch.wrote(n),
        Handle::Update(u) => u.watch.wrote(n),
        Handle::Read(_) => {}
    }
}

/// Answer a write that was not taken with `error`; a file open for
/// writing fails with it (aborted: nothing of it becomes visible).
pub async fn refuse(s: &Session, out: &Out, h: &Header, error: XrdError) -> bool {
    match s.get(h.fhandle()) {
        Ok(Handle::Write(w)) => {
            let op = WriteOp::Fail {
                stream: h.stream,
                error: error.clone(),
            };
            if w.ops.send(op).await.is_ok() {
                return true;
            }
            out.error(h.stream, &error).await
        }
        Ok(Handle::Update(u)) => {
            // An update fails as a whole too: its close will say so.
            if let Some(up) = u.state.lock().await.up.as_mut() {
                up.abort_with(CoreError::Remote {
                    kind: kind_of(error.code),
                    msg: error.msg.clone(),
                });
            }
            out.error(h.stream, &error).await
        }
        _ => out.error(h.stream, &error).await,
    }
}

/// Register a new write session on the connection: its task, its handle,
/// and the stat string of the (not yet visible) file for the open reply.
pub fn register(
    s: &Session,
    out: &Out,
    ws: WriteSession,
    (mode, flow_tag): (u32, Option<tessera_wlcg::scitags::Tag>),
    who: &tessera_types::Identity,
) -> Result<([u8; 4], String), XrdError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let stat = crate::statfmt::fields(
        ws.fid(),
        0,
        crate::proto::sflags::READABLE | crate::proto::sflags::WRITABLE,
        [now; 3],
        mode,
        (who.uid, who.gid),
        &s.cfg.names,
    );
    let path = ws.path().clone();
    let share = s.cfg.buffers.identity_share_of(&who.limit_key());
    let held = Arc::clone(&s.held);
    // Its buffers and held writes under the connection's and the
    // writer's shares, as its payloads are.
    let budget = s
        .cfg
        .buffers
        .for_identity(&who.limit_key())
        .with_share(&s.share);
    // I/O shaping where the rules are (a data gateway has none).
    let pace = s
        .core()
        .map(|c| c.pace(who, s.app(), true))
        .unwrap_or_default();
    let watch = s.watch_path(who, &path, flow_tag, 0, true);
    let ops = spawn_writer(ws, out.clone(), held, budget, &s.cfg.stats, pace);
    let fh = s.add(Handle::Write(Arc::new(OpenWrite {
        ops,
        path,
        share,
        watch,
    })))?;
    Ok((fh, stat))
}

/// Start the task that owns `ws`; returns its queue. `conn_held` counts
/// the out-of-order bytes held by all files of the connection; the file's
/// buffers are leased from `budget` as it grows (the core's [`Upload`]
/// holds that policy, the order rules and where each step runs).
pub fn spawn_writer(
    ws: WriteSession,
    out: Out,
    conn_held: Arc<AtomicUsize>,
    budget: Budget,
    stats: &Arc<crate::Stats>,
    pace: tessera_core::Pace,
) -> mpsc::Sender<WriteOp> {
    let (tx, rx) = mpsc::channel(QUEUE);
    let holds = Holds {
        per_file: MAX_HELD,
        per_group: MAX_HELD_PER_CONNECTION,
        shared: conn_held,
    };
    let up = Upload::new(ws, budget, Some(holds));
    up.pace_with(pace);
    tokio::spawn(run(up, rx, out, Arc::clone(stats)));
    tx
}

/// How a step's result is answered.
enum Answer {
    /// `kXR_ok`, or the error (a write the gateway refused keeps its own).
    Plain(Option<XrdError>),
    /// A pgwrite's `kXR_status`, naming the pages to send again.
    Pg { offset: u64, bad: Vec<(u64, usize)> },
}

impl Answer {
    fn reply(self, stream: [u8; 2], r: Done) -> Reply {
        match (self, r) {
            (Answer::Plain(Some(e)), _) => error_reply(stream, &e),
            (_, Err(e)) => error_reply(stream, &XrdError::from(e)),
            (Answer::Plain(None), Ok(_)) => Reply {
                stream,
                status: crate::proto::status::OK,
                body: Vec::new(),
                counted: None,
            },
            (Answer::Pg { offset, bad }, Ok(_)) => pgwrite::reply(stream, offset, &bad),
        }
    }
}

/// The core's steps for `op` (a pgwrite with damaged pages is several
/// writes), and how the last one is answered. `missing` holds the pages a
/// pgwrite found damaged until they come again.
fn steps_of(op: WriteOp, missing: &mut pgwrite::Missing) -> ([u8; 2], Vec<Step<Vec<u8>>>, Answer) {
    let fail = |e: &XrdError| {
        Step::Fail(CoreError::Remote {
            kind: kind_of(e.code),
            msg: e.msg.clone(),
        })
    };
    match op {
        WriteOp::Write {
            stream,
            offset,
            data,
            lease,
        } => {
            let at = Some(offset);
            (
                stream,
                vec![Step::Write { at, data, lease }],
                Answer::Plain(None),
            )
        }
        WriteOp::PgWrite {
            stream,
            offset,
            payload,
            lease,
            retry,
        } => match pgwrite::unpack(offset, payload) {
            Err(e) => (stream, vec![fail(&e)], Answer::Plain(Some(e))),
            Ok(u) => {
                if let Err(e) = missing.note(&u, retry) {
                    return (stream, vec![fail(&e)], Answer::Plain(Some(e)));
                }
                let mut lease = Some(lease);
                let steps = u
                    .runs
                    .into_iter()
                    .map(|(at, data)| Step::Write {
                        at: Some(at),
                        data,
                        lease: lease.take().unwrap_or_default(),
                    })
                    .collect();
                (stream, steps, Answer::Pg { offset, bad: u.bad })
            }
        },
        WriteOp::Fail { stream, error } => (stream, vec![fail(&error)], Answer::Plain(Some(error))),
        WriteOp::Sync { stream } => (stream, vec![Step::Sync], Answer::Plain(None)),
        WriteOp::Truncate { stream, size } => {
            (stream, vec![Step::Truncate(size)], Answer::Plain(None))
        }
        WriteOp::Close { stream } => match missing.at_close() {
            Some(e) => (stream, vec![fail(&e)], Answer::Plain(Some(e))),
            None => (
                stream,
                vec![Step::Close(Expect::default())],
                Answer::Plain(None),
            ),
        },
    }
}

/// The kind a refusal's code stands for (refusals are `kXR_NoMemory`).
fn kind_of(code: i32) -> ErrorKind {
    match code {
        err::NO_MEMORY => ErrorKind::NoMemory,
        err::CHKSUM_ERR => ErrorKind::Corrupt,
        _ => ErrorKind::Io,
    }
}

async fn run(
    up: Upload<Vec<u8>>,
    mut rx: mpsc::Receiver<WriteOp>,
    out: Out,
    stats: Arc<crate::Stats>,
) {
    let mut missing = pgwrite::Missing::default();
    while let Some(op) = rx.recv().await {
        let last = matches!(op, WriteOp::Close { .. });
        let (stream, mut steps, answer) = steps_of(op, &mut missing);
        if let Answer::Pg { bad, .. } = &answer {
            let n = bad.len() as u64;
            stats.page_crc_errors.fetch_add(n, Ordering::Relaxed);
        }
        // All but the last step of a request answer nothing: a failure
        // sticks, so the last one meets it.
        let final_step = steps.pop();
        for step in steps {
            let _ = up.step(step).await;
        }
        let Some(step) = final_step else {
            // A pgwrite whose every page was damaged: nothing to write.
            out.send(answer.reply(stream, Ok(Default::default()))).await;
            continue;
        };
        let out2 = out.clone();
        // Whoever did the work answers (a runtime thread for an append
        // into memory, else the pool thread); the next operation on the
        // file waits for it.
        let finish = move |r: Done, ran: Ran| {
            let reply = answer.reply(stream, r);
            match ran {
                Ran::InLine => Some(reply),
                Ran::OnPool => {
                    out2.send_from_pool(reply);
                    None
                }
            }
        };
        match up.apply(step, finish).await {
            Ok(Some(r)) => {
                out.send(r).await;
            }
            Ok(None) => {}
            Err(e) => {
                let e = XrdError::new(err::SERVER_ERROR, e.to_string());
                out.error(stream, &e).await;
            }
        }
        if last {
            return;
        }
    }
    // The queue ended without a close (connection gone): dropping the
    // upload aborts the file.
}
