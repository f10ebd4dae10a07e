//! `kXR_write`, `kXR_sync`, `kXR_close` and `kXR_truncate` on a handle.
//!
//! Each file open for writing has one task that owns its write session and
//! applies these in arrival order. Writes must extend the file: a write at
//! the current end is applied at once, one further on is held (up to
//! [`MAX_HELD`] bytes per file, `MAX_HELD_PER_CONNECTION` for all files of
//! a connection) until the gap is filled, and a gap still open at
//! close reads as zeros. Rewriting bytes already written is refused. Any
//! failure aborts the file: nothing of it becomes visible.

use crate::error::XrdError;
use crate::proto::{err, Header};
use crate::reply::Out;
use crate::request::Fh;
use crate::session::{Handle, OpenWrite, Session, MAX_HELD_PER_CONNECTION};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tessera_core::{Budget, Lease, WriteSession};
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
    };
    let op = match what {
        OnHandle::Write(offset, data) => WriteOp::Write {
            stream: st,
            offset,
            data,
            lease,
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
        _ => out.error(h.stream, &error).await,
    }
}

/// Register a new write session on the connection: its task, its handle,
/// and the stat string of the (not yet visible) file for the open reply.
pub fn register(
    s: &Session,
    out: &Out,
    ws: WriteSession,
    mode: u32,
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
    let ops = spawn_writer(ws, out.clone(), Arc::clone(&s.held), s.cfg.buffers.clone());
    let fh = s.add(Handle::Write(Arc::new(OpenWrite { ops, path, share })))?;
    Ok((fh, stat))
}

/// Start the task that owns `ws`; returns its queue. `conn_held` counts
/// the out-of-order bytes held by all files of the connection; the file's
/// buffers are leased from `budget` as it grows.
pub fn spawn_writer(
    ws: WriteSession,
    out: Out,
    conn_held: Arc<AtomicUsize>,
    budget: Budget,
) -> mpsc::Sender<WriteOp> {
    let (tx, rx) = mpsc::channel(QUEUE);
    tokio::spawn(run(ws, rx, out, conn_held, budget));
    tx
}

struct State {
    ws: Option<WriteSession>,
    held: BTreeMap<u64, (Vec<u8>, Lease)>,
    held_bytes: usize,
    conn_held: Arc<AtomicUsize>,
    failed: Option<XrdError>,
}

impl Drop for State {
    fn drop(&mut self) {
        self.release_held();
    }
}

impl State {
    /// Drop the out-of-order writes held (the file failed or is gone).
    fn release_held(&mut self) {
        self.conn_held.fetch_sub(self.held_bytes, Ordering::Relaxed);
        self.held_bytes = 0;
        self.held.clear();
    }

    /// A write at the end of the file that only lands in memory (applied in
    /// line, without a trip to the blocking pool).
    fn in_memory(&self, offset: u64, len: usize) -> bool {
        self.failed.is_none()
            && self.held.is_empty()
            && self
                .ws
                .as_ref()
                .is_some_and(|ws| ws.written() == offset && ws.write_is_buffered(len))
    }

    /// How many bytes applying `op` appends to the session (a write at
    /// the end, with the held writes it makes contiguous; a truncate's
    /// zeros; a close's gap filled with zeros); 0 when it appends none
    /// or the file already failed.
    fn appended_by(&self, op: &WriteOp) -> u64 {
        let Some(ws) = self.ws.as_ref().filter(|_| self.failed.is_none()) else {
            return 0;
        };
        let end = ws.written();
        let held_end = self
            .held
            .iter()
            .next_back()
            .map_or(0, |(off, (d, _))| off + d.len() as u64);
        let upto = match op {
            WriteOp::Write { offset, data, .. } if *offset == end => offset + data.len() as u64,
            WriteOp::Truncate { size, .. } => *size,
            WriteOp::Close { .. } => end,
            _ => return 0,
        };
        upto.max(held_end).saturating_sub(end)
    }

    fn write(&mut self, offset: u64, data: Vec<u8>, lease: Lease) -> Result<(), XrdError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let ws = self.ws.as_mut().ok_or_else(XrdError::bad_handle)?;
        let end = ws.written();
        if offset < end {
            return Err(XrdError::new(
                err::UNSUPPORTED,
                format!(
                    "rewriting bytes already written (offset {offset} < {end}) is not supported"
                ),
            ));
        }
        if offset > end {
            let n = data.len();
            let conn = self.conn_held.fetch_add(n, Ordering::Relaxed) + n;
            if self.held_bytes + n > MAX_HELD
                || conn > MAX_HELD_PER_CONNECTION
                || self.held.contains_key(&offset)
            {
                self.conn_held.fetch_sub(n, Ordering::Relaxed);
                return Err(XrdError::new(
                    err::UNSUPPORTED,
                    format!("writes too far out of order (offset {offset}, file at {end})"),
                ));
            }
            self.held_bytes += n;
            self.held.insert(offset, (data, lease));
            return Ok(());
        }
        ws.write(&data)?;
        drop((data, lease));
        self.drain(false)
    }

    /// Apply held writes that now continue the file; with `fill`, zeros
    /// close any gap (at close).
    fn drain(&mut self, fill: bool) -> Result<(), XrdError> {
        let ws = self.ws.as_mut().ok_or_else(XrdError::bad_handle)?;
        while let Some((&off, _)) = self.held.iter().next() {
            let end = ws.written();
            if off < end {
                return Err(XrdError::new(
                    err::UNSUPPORTED,
                    format!("overlapping writes at offset {off}"),
                ));
            }
            if off > end {
                if !fill {
                    break;
                }
                zeros(ws, off - end)?;
            }
            let (data, _lease) = self.held.remove(&off).expect("present");
            self.held_bytes -= data.len();
            self.conn_held.fetch_sub(data.len(), Ordering::Relaxed);
            ws.write(&data)?;
        }
        Ok(())
    }

    fn truncate(&mut self, size: u64) -> Result<(), XrdError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.drain(true)?;
        let ws = self.ws.as_mut().ok_or_else(XrdError::bad_handle)?;
        let end = ws.written();
        if size < end {
            return Err(XrdError::new(
                err::UNSUPPORTED,
                format!("shrinking a file being written ({end} -> {size} bytes) is not supported"),
            ));
        }
        zeros(ws, size - end)
    }

    fn close(&mut self) -> Result<(), XrdError> {
        if let Some(e) = self.failed.take() {
            self.ws = None; // dropping aborts
            return Err(e);
        }
        self.drain(true)?;
        let ws = self.ws.take().ok_or_else(XrdError::bad_handle)?;
        ws.close()?;
        Ok(())
    }
}

fn zeros(ws: &mut WriteSession, mut n: u64) -> Result<(), XrdError> {
    let z = vec![0u8; (n.min(1 << 20)) as usize];
    while n > 0 {
        let k = n.min(z.len() as u64) as usize;
        ws.write(&z[..k])?;
        n -= k as u64;
    }
    Ok(())
}

/// Apply a write that only lands in memory right here; any other
/// operation is handed back.
fn in_memory(state: &Mutex<State>, op: WriteOp) -> Result<Result<(), XrdError>, WriteOp> {
    let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
    match op {
        WriteOp::Write {
            offset,
            data,
            lease,
            ..
        } if s.in_memory(offset, data.len()) => Ok(s.write(offset, data, lease)),
        op => Err(op),
    }
}

/// Lease what applying `op` makes the file's buffers hold (the core's one
/// policy, `lease_for_append`); not granted within the budget's wait, `op`
/// becomes the file's failure (`kXR_NoMemory`: it is aborted, nothing of
/// it becomes visible).
async fn take_memory(
    state: &Mutex<State>,
    mut op: WriteOp,
    stream: [u8; 2],
    budget: &Budget,
) -> WriteOp {
    let appended = state
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .appended_by(&op);
    if appended == 0 {
        return op;
    }
    // A write's own payload lease is handed to the file first.
    let held = match &mut op {
        WriteOp::Write { lease, .. } => Some(lease),
        _ => None,
    };
    let r = tessera_core::lease_for_append(state, |s| &mut s.ws, appended, budget, held).await;
    match r {
        Ok(()) => op,
        Err(e) if e.kind() == tessera_types::ErrorKind::NoMemory => WriteOp::Fail {
            stream,
            error: e.into(),
        },
        // The file already failed: the operation meets that failure.
        Err(_) => op,
    }
}

async fn run(
    ws: WriteSession,
    mut rx: mpsc::Receiver<WriteOp>,
    out: Out,
    conn_held: Arc<AtomicUsize>,
    budget: Budget,
) {
    let state = Arc::new(Mutex::new(State {
        ws: Some(ws),
        held: BTreeMap::new(),
        held_bytes: 0,
        conn_held,
        failed: None,
    }));
    while let Some(op) = rx.recv().await {
        let st = Arc::clone(&state);
        let (stream, last) = match &op {
            WriteOp::Write { stream, .. }
            | WriteOp::Fail { stream, .. }
            | WriteOp::Sync { stream }
            | WriteOp::Truncate { stream, .. } => (*stream, false),
            WriteOp::Close { stream } => (*stream, true),
        };
        let op = take_memory(&state, op, stream, &budget).await;
        let op = match in_memory(&state, op) {
            Ok(r) => {
                out.result(stream, r.map(|()| Vec::new())).await;
                continue;
            }
            Err(op) => op,
        };
        let out2 = out.clone();
        // The thread that did the work answers; the next operation on the
        // file waits for it as before.
        let done = tokio::task::spawn_blocking(move || {
            let mut s = st.lock().unwrap_or_else(|p| p.into_inner());
            let r = match op {
                WriteOp::Write {
                    offset,
                    data,
                    lease,
                    ..
                } => s.write(offset, data, lease),
                WriteOp::Fail { error, .. } => Err(error),
                WriteOp::Sync { .. } => match &s.failed {
                    Some(e) => Err(e.clone()),
                    None => Ok(()),
                },
                WriteOp::Truncate { size, .. } => s.truncate(size),
                WriteOp::Close { .. } => s.close(),
            };
            if let Err(e) = &r {
                if s.failed.is_none() && !last {
                    // Abort now (release the quota reservation, drop the
                    // stripes); later requests on the handle get this error.
                    s.failed = Some(e.clone());
                    s.ws = None;
                    s.release_held();
                }
            }
            drop(s);
            out2.result_from_pool(stream, r.map(|()| Vec::new()));
        })
        .await;
        if let Err(e) = done {
            let e = XrdError::new(err::SERVER_ERROR, e.to_string());
            out.error(stream, &e).await;
        }
        if last {
            return;
        }
    }
    // The queue ended without a close (connection gone): dropping the
    // session aborts the file.
}
