//! Checking and rebuilding stripes (fsck, repair, drain).

use crate::file_writer::FileWriter;
use crate::format::{StripeHeader, HEADER_LEN};
use crate::layout::{Geometry, Placement};
use crate::DataError;
use crate::FileReader;
use std::sync::Arc;
use tessera_backend::{Backend, BackendError, StripeName};

/// What fsck found for one stripe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StripeState {
    Ok,
    /// Not on its filesystem.
    Missing,
    /// Its filesystem is unknown, off or unreachable.
    Unavailable(String),
    /// The header does not describe this stripe.
    BadHeader(String),
    /// Wrong length (EOS `d_mem_sz_diff`): longer than it should be, or
    /// so short its header is gone.
    SizeMismatch {
        expected: u64,
        actual: u64,
    },
    /// Shorter than it should be (EOS `d_mem_sz_diff` too): the blocks of
    /// `groups` are cut off (or, checked deep, corrupt); the blocks before
    /// the cut are whole, so only those groups lose this stripe.
    Truncated {
        expected: u64,
        actual: u64,
        groups: Vec<u64>,
    },
    /// Blocks whose CRC does not match (EOS `blockxs_err`).
    CorruptBlocks(Vec<u64>),
}

impl StripeState {
    pub fn is_ok(&self) -> bool {
        *self == StripeState::Ok
    }
}

/// Length of a sealed stripe file of a file of this geometry.
pub fn expected_stripe_len(geo: &Geometry) -> u64 {
    match geo.groups() {
        0 => HEADER_LEN as u64,
        n => geo.block_offset(n - 1) + geo.block_span(n - 1) as u64,
    }
}

/// Check stripe `index` of file `fid`: present, header, length, and with
/// `deep` every block's CRC.
/// Whether a file whose stripes are in the states `bad` (the others are
/// whole) can be read and rebuilt: every group has at most `m` bad blocks,
/// a stripe that is missing, unreadable or of the wrong size counting in
/// every group, one with corrupt blocks only in the groups named.
pub fn recoverable(bad: &[&StripeState], m: usize) -> bool {
    let whole = bad
        .iter()
        .filter(|s| bad_groups(s).is_none() && !s.is_ok())
        .count();
    let mut per_group: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    for s in bad {
        for g in bad_groups(s).unwrap_or_default() {
            *per_group.entry(*g).or_default() += 1;
        }
    }
    whole + per_group.values().copied().max().unwrap_or(0) <= m
}

/// The groups a stripe in state `s` is bad in, when that is not all of
/// them (corrupt blocks, a truncated stripe).
fn bad_groups(s: &StripeState) -> Option<&[u64]> {
    match s {
        StripeState::CorruptBlocks(g) | StripeState::Truncated { groups: g, .. } => Some(g),
        _ => None,
    }
}

pub fn check_stripe(
    backend: Option<&Arc<dyn Backend>>,
    placement: &Placement,
    fid: u64,
    size: u64,
    index: usize,
    deep: bool,
) -> StripeState {
    let Some(b) = backend else {
        return StripeState::Unavailable("filesystem unknown or off".into());
    };
    let r = match b.open(&StripeName::new(fid, index as u8)) {
        Ok(r) => r,
        Err(BackendError::NotFound(_)) => return StripeState::Missing,
        Err(e) => return StripeState::Unavailable(e.to_string()),
    };
    let geo = placement.layout.geometry(size);
    let expected = expected_stripe_len(&geo);
    let actual = match r.len() {
        Ok(l) => l,
        Err(e) => return StripeState::Unavailable(e.to_string()),
    };
    // Shorter, with its header: the groups whose block is cut off are bad
    // (and, deep, any corrupt before the cut); longer or headless: bad.
    let short = actual < expected && actual >= HEADER_LEN as u64;
    if actual != expected && !short {
        return StripeState::SizeMismatch { expected, actual };
    }
    let mut h = vec![0u8; HEADER_LEN];
    if r.read_at(0, &mut h).ok() != Some(HEADER_LEN) {
        return StripeState::BadHeader("unreadable".into());
    }
    match StripeHeader::decode(&h) {
        Err(e) => return StripeState::BadHeader(e),
        Ok(hd) => {
            let want = (placement.layout, index as u8, true, fid, size, geo.groups());
            let got = (hd.layout, hd.index, hd.sealed, hd.fid, hd.size, hd.blocks);
            if got != want {
                return StripeState::BadHeader(format!("header says {got:?}, expected {want:?}"));
            }
        }
    }
    let mut bad = Vec::new();
    for g in 0..geo.groups() {
        let (len, span) = (geo.block_len(g), geo.block_span(g));
        if geo.block_offset(g) + span as u64 > actual {
            bad.push(g);
            continue;
        }
        if !deep {
            continue;
        }
        let mut buf = vec![0u8; span];
        let ok = r.read_at(geo.block_offset(g), &mut buf).ok() == Some(span)
            && crate::sums::verify_all(&geo.layout, &buf[..len], &buf[len..]);
        if !ok {
            bad.push(g);
        }
    }
    match (short, bad.is_empty()) {
        (true, _) => StripeState::Truncated {
            expected,
            actual,
            groups: bad,
        },
        (false, false) => StripeState::CorruptBlocks(bad),
        (false, true) => StripeState::Ok,
    }
}

/// Rebuild the stripes in `targets` (index → new filesystem) by reading
/// the file (degraded where needed) and re-encoding it. Returns the new
/// placement and the adler32 of the data read (compare it with the stored
/// checksum before committing).
pub fn rebuild(
    placement: &Placement,
    fid: u64,
    size: u64,
    sources: Vec<Option<Arc<dyn Backend>>>,
    targets: &[(usize, u32, Arc<dyn Backend>)],
    write_id: u64,
) -> Result<(Placement, u32), DataError> {
    let reader = FileReader::new(placement.clone(), fid, size, sources)?;
    let mut slots: Vec<Option<(u32, Arc<dyn Backend>)>> = vec![None; placement.layout.stripes()];
    for (i, id, b) in targets {
        slots[*i] = Some((*id, Arc::clone(b)));
    }
    let mut w = FileWriter::create_partial(placement.layout, fid, write_id, &slots)?;
    let chunk = placement.layout.group_bytes().min(64 << 20) as usize;
    let mut buf = vec![0u8; chunk];
    let mut off = 0u64;
    while off < size {
        let n = match reader.read_at(off, &mut buf) {
            Ok(n) => n,
            Err(e) => {
                w.abort();
                return Err(e);
            }
        };
        if let Err(e) = w.write(&buf[..n]) {
            w.abort();
            return Err(e);
        }
        off += n as u64;
    }
    let done = w.finish()?;
    let mut fsids = placement.fsids.clone();
    for (i, id, _) in targets {
        fsids[*i] = *id;
    }
    Ok((
        Placement {
            layout: placement.layout,
            fsids,
        },
        done.adler32,
    ))
}
