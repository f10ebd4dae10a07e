//! `kXR_read`: file bytes straight from the stripe buffers; a long read
//! goes out as `kXR_oksofar` parts of at most [`PART`] bytes.

use crate::error::XrdError;
use crate::proto::{err, status};
use crate::reply::{Out, Piece};
use crate::request::Read;
use crate::session::{Handle, OpenRead, Session};
use std::sync::Arc;
use tessera_core::ReadData;

/// Largest part of a read reply (what one storage read fetches).
pub const PART: usize = 8 << 20;

/// Reads up to this long are short: served from memory in microseconds
/// when the file's blocks are there (`ReadSession::read_cached`).
pub const SHORT: i32 = 512 << 10;

/// Whether `rd` asks for a short read.
pub fn is_short(rd: &Read) -> bool {
    rd.len < SHORT as usize
}

/// What a handle's reads read: a file open for reading, or a file open
/// for update (what the update has: `ops/update.rs`).
pub enum Source {
    File(Arc<OpenRead>),
    Update(Arc<crate::ops::update::OpenUpdate>),
}

impl Source {
    /// The file's size now.
    pub fn size(&self) -> u64 {
        match self {
            Source::File(r) => r.rs.size(),
            Source::Update(u) => u.size.load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// The memory share of the identity the handle was opened as.
    pub fn share(&self) -> &tessera_core::Share {
        match self {
            Source::File(r) => &r.share,
            Source::Update(u) => &u.share,
        }
    }

    /// Its I/O in the monitoring stream and its marked flow.
    pub fn watch(&self) -> &tessera_wlcg::watch::Watch {
        match self {
            Source::File(r) => &r.watch,
            Source::Update(u) => &u.watch,
        }
    }

    /// Ranges less apart than this are cheaper read as one.
    pub fn merge_gap(&self) -> u64 {
        match self {
            Source::File(r) => r.rs.merge_gap(),
            Source::Update(_) => 0,
        }
    }

    /// Read `n` bytes at `pos` (`None`: empty file): the core copies a
    /// read that memory holds right here, else reads on the blocking pool.
    pub async fn fetch(&self, pos: u64, n: usize) -> Result<Option<ReadData>, XrdError> {
        match self {
            Source::File(r) => Ok(r.rs.fetch(pos, n).await?),
            Source::Update(u) => crate::ops::update::read(u, pos, n).await,
        }
    }
}

/// What handle `fh` reads (a file open only for writing is refused).
pub fn reader(s: &Session, fh: crate::request::Fh) -> Result<Source, XrdError> {
    match s.get(fh)? {
        Handle::Read(r) => Ok(Source::File(r)),
        Handle::Update(u) => Ok(Source::Update(u)),
        Handle::Write(w) => {
            let msg = format!("{} is open for writing only", w.path.display());
            Err(XrdError::new(err::NOT_AUTHORIZED, msg))
        }
    }
}

/// [`reader`], or its error answered (None).
pub async fn reader_or_answer(
    s: &Session,
    out: &Out,
    st: [u8; 2],
    fh: crate::request::Fh,
) -> Option<Source> {
    match reader(s, fh) {
        Ok(r) => Some(r),
        Err(e) => {
            out.error(st, &e).await;
            None
        }
    }
}

pub async fn read(s: &Session, out: &Out, st: [u8; 2], rd: Read) {
    let Some(r) = reader_or_answer(s, out, st, rd.fh).await else {
        return;
    };
    let (mut pos, end) = (rd.offset, rd.offset.saturating_add(rd.len as u64));
    loop {
        let n = PART.min((end - pos) as usize);
        // Held until the part is sent.
        let Some(_lease) = lease(s, r.share(), n).await else {
            out.error(st, &no_memory()).await;
            return;
        };
        match r.fetch(pos, n).await {
            Err(e) => {
                out.error(st, &e).await;
                return;
            }
            Ok(d) => {
                let got = d.as_ref().map_or(0, ReadData::len);
                r.watch().read(got as u64);
                pos += got as u64;
                let more = got == n && pos < end;
                let body = d.map(|d| vec![Piece::Data(d)]).unwrap_or_default();
                let code = if more { status::OKSOFAR } else { status::OK };
                if !out.pieces(st, code, body).await || !more {
                    return;
                }
            }
        }
    }
}

/// `n` bytes of the memory budget for a reply (`None`: not in time),
/// under the connection's share and `id`, the share of the identity the
/// file was opened as: pipelined reads whose replies a client never takes
/// hold at most those, whoever asks.
pub async fn lease(s: &Session, id: &tessera_core::Share, n: usize) -> Option<tessera_core::Lease> {
    if n == 0 {
        return Some(tessera_core::Lease::default());
    }
    s.cfg.buffers.lease_shared(n, &[&s.share, id]).await
}

/// What a read the memory budget could not take is answered with.
pub fn no_memory() -> XrdError {
    XrdError::new(
        err::NO_MEMORY,
        "insufficient memory to read file now (errno 12)",
    )
}
