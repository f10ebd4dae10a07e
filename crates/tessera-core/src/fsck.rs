//! fsck, repair and drain (EOS names for the counters: `rep_missing_n`,
//! `d_mem_sz_diff`, `blockxs_err`, `orphans_n`). All blocking: call from
//! `spawn_blocking`.

use crate::{Core, CoreError};
use std::collections::HashSet;
use std::sync::Arc;
use tessera_backend::{Backend, StripeName};
use tessera_data::{check_stripe, place, Candidate, Placement, StripeState};
use tessera_meta::{DamageRecord, FsConfigStatus, Inode};

/// One file with stripes that are not as they should be.
#[derive(Debug, Clone)]
pub struct FileIssue {
    pub fid: u64,
    pub path: String,
    pub layout: String,
    /// (stripe index, filesystem id, what is wrong)
    pub bad: Vec<(usize, u32, StripeState)>,
    /// At most m stripes bad: repair can rebuild them.
    pub recoverable: bool,
}

/// A stripe no file references (or the temporary stripe of no running write).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphan {
    pub fsid: u32,
    pub name: StripeName,
    pub temp_of_write: Option<u64>,
    pub bytes: u64,
}

#[derive(Debug, Clone, Default)]
pub struct FsckReport {
    pub files: u64,
    pub stripes: u64,
    pub issues: Vec<FileIssue>,
    pub orphans: Vec<Orphan>,
    /// Filesystems that could not be listed.
    pub unlisted: Vec<(u32, String)>,
    /// Stripes that reads found damaged and repair has not dealt with
    /// yet (kept in the namespace store across restarts). Their files
    /// are checked block by block even by a shallow scan.
    pub read_errors: Vec<DamageRecord>,
    /// When the scan started (ns since the epoch): repair forgets only
    /// damage noted before it.
    pub started_ns: u64,
}

/// Nanoseconds since the epoch (damage records).
pub(crate) fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Damage records read per page.
const DAMAGE_PAGE: usize = 1024;

impl FsckReport {
    /// Counters by EOS fsck tag.
    pub fn tags(&self) -> Vec<(&'static str, u64)> {
        let count = |f: &dyn Fn(&StripeState) -> bool| {
            self.issues
                .iter()
                .flat_map(|i| i.bad.iter())
                .filter(|(_, _, s)| f(s))
                .count() as u64
        };
        vec![
            (
                "rep_missing_n",
                count(&|s| matches!(s, StripeState::Missing)),
            ),
            (
                "d_mem_sz_diff",
                count(&|s| matches!(s, StripeState::SizeMismatch { .. })),
            ),
            (
                "blockxs_err",
                count(&|s| matches!(s, StripeState::CorruptBlocks(_))),
            ),
            (
                "bad_header_n",
                count(&|s| matches!(s, StripeState::BadHeader(_))),
            ),
            (
                "unavail_n",
                count(&|s| matches!(s, StripeState::Unavailable(_))),
            ),
            ("orphans_n", self.orphans.len() as u64),
            ("rep_diff_n", self.issues.len() as u64),
            (
                "unrecoverable_n",
                self.issues.iter().filter(|i| !i.recoverable).count() as u64,
            ),
            ("read_errors_n", self.read_errors.len() as u64),
        ]
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    pub stripes_rebuilt: u64,
    pub files_repaired: u64,
    pub orphans_removed: u64,
    /// (fid or 0, what failed)
    pub failed: Vec<(u64, String)>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DrainReport {
    pub stripes_moved: u64,
    pub failed: Vec<(u64, String)>,
    /// True when nothing is left and the filesystem was marked `empty`.
    pub emptied: bool,
}

/// Why a stripe has nowhere to go.
fn no_target(stripe: usize) -> String {
    format!(
        "no filesystem for stripe {stripe}: none is rw, healthy and has room in the file's \
         space in a failure domain the file's other stripes do not use"
    )
}

impl Core {
    /// Call `f` for every file with data, a page at a time (the namespace
    /// is never held in memory whole).
    pub(crate) fn for_each_file(&self, mut f: impl FnMut(&Inode)) -> Result<(), CoreError> {
        let mut after = 0;
        loop {
            let page = self.meta.scan_files(after, 1024)?;
            let Some(last) = page.last() else { break };
            after = last.ino;
            page.iter().for_each(&mut f);
        }
        Ok(())
    }

    /// Compare every file's stripes with what the filesystems hold.
    /// `deep` verifies every block's checksum too.
    pub fn fsck_scan(&self, deep: bool) -> Result<FsckReport, CoreError> {
        let mut rep = FsckReport {
            started_ns: now_ns(),
            read_errors: self.damage_all()?,
            ..FsckReport::default()
        };
        let suspect: HashSet<u64> = rep.read_errors.iter().map(|d| d.fid).collect();
        // List the filesystems first: a stripe sealed after its listing is
        // simply not seen, never reported as an orphan.
        let mut listed = Vec::new();
        for v in self.fs.views() {
            match self.fs.backend(v.rec.id).map(|b| b.list()) {
                Some(Ok(l)) => listed.push((v.rec.id, l)),
                Some(Err(e)) => rep.unlisted.push((v.rec.id, e.to_string())),
                None => rep
                    .unlisted
                    .push((v.rec.id, v.error.unwrap_or_else(|| "off".into()))),
            }
        }
        // Writes in progress, taken before the namespace walk: a stripe
        // listed above whose file is not in the walk was either never
        // committed (an orphan) or belongs to a write open now (a new
        // file's stripes have their final name from the start).
        let open: HashSet<u64> = self.meta.open_write_ids().into_iter().collect();
        let open_fids: HashSet<u64> = self.meta.open_write_inos().into_iter().collect();
        let mut referenced: HashSet<(u32, u64, u8)> = HashSet::new();
        self.for_each_file(|f| {
            rep.files += 1;
            let p = match Placement::decode(&f.layout) {
                Ok(p) => p,
                Err(e) => {
                    rep.issues.push(FileIssue {
                        fid: f.ino,
                        path: self.path_or_fid(f.ino),
                        layout: "?".into(),
                        bad: vec![(0, 0, StripeState::BadHeader(e.to_string()))],
                        recoverable: false,
                    });
                    return;
                }
            };
            for (i, id) in p.fsids.iter().enumerate() {
                rep.stripes += 1;
                referenced.insert((*id, f.ino, i as u8));
            }
            if let Some(issue) = self.check_file(f, &p, deep || suspect.contains(&f.ino)) {
                rep.issues.push(issue);
            }
        })?;
        for (fsid, stripes) in listed {
            for s in stripes {
                let orphan = match s.temp_of_write {
                    Some(w) => !open.contains(&w),
                    None => {
                        !referenced.contains(&(fsid, s.name.fid, s.name.index))
                            && !open_fids.contains(&s.name.fid)
                    }
                };
                if orphan {
                    rep.orphans.push(Orphan {
                        fsid,
                        name: s.name,
                        temp_of_write: s.temp_of_write,
                        bytes: s.bytes,
                    });
                }
            }
        }
        Ok(rep)
    }

    /// Every damage record (paged from the store).
    fn damage_all(&self) -> Result<Vec<DamageRecord>, CoreError> {
        let mut out: Vec<DamageRecord> = Vec::new();
        loop {
            let after = out.last().map(|d| d.fid).unwrap_or(0);
            let page = self.meta.damage_list(after, DAMAGE_PAGE)?;
            let full = page.len() == DAMAGE_PAGE;
            out.extend(page);
            if !full {
                return Ok(out);
            }
        }
    }

    /// What is wrong with file `f`'s stripes (`deep`: every block's
    /// checksum too); `None` when nothing is.
    fn check_file(&self, f: &Inode, p: &Placement, deep: bool) -> Option<FileIssue> {
        let mut bad = Vec::new();
        for (i, id) in p.fsids.iter().enumerate() {
            let b = self.fs.backend(*id);
            let st = check_stripe(b.as_ref(), p, f.ino, f.size, i, deep);
            if !st.is_ok() {
                bad.push((i, *id, st));
            }
        }
        if bad.is_empty() {
            return None;
        }
        let recoverable = bad.len() <= p.layout.m as usize;
        Some(FileIssue {
            fid: f.ino,
            path: self.path_or_fid(f.ino),
            layout: p.layout.name(),
            bad,
            recoverable,
        })
    }

    /// Deal with the files reads found damaged, and only those: check
    /// each one block by block, rebuild what is broken, and forget the
    /// record once the file is whole again (or gone). A file that cannot
    /// be repaired keeps its record. (What a server runs in the
    /// background; `fsck_repair` does the same for a whole scan.)
    pub fn repair_damaged(&self) -> Result<RepairReport, CoreError> {
        let mut out = RepairReport::default();
        let mut fids: Vec<u64> = self.damage_all()?.iter().map(|d| d.fid).collect();
        fids.dedup();
        for fid in fids {
            let looked = now_ns();
            let f = match self.meta.stat_ino(fid) {
                Ok(f) if !f.layout.is_empty() => f,
                // Gone, or no stripes any more: nothing to repair.
                _ => {
                    self.meta.damage_clear(fid, looked)?;
                    continue;
                }
            };
            let p = match Placement::decode(&f.layout) {
                Ok(p) => p,
                Err(e) => {
                    out.failed.push((fid, e.to_string()));
                    continue;
                }
            };
            match self.check_file(&f, &p, true) {
                None => self.meta.damage_clear(fid, looked)?,
                Some(issue) if !issue.recoverable => out.failed.push((
                    fid,
                    format!("{} stripes lost: beyond repair", issue.bad.len()),
                )),
                Some(issue) => {
                    if self.repair_issue(&issue, &mut out) {
                        self.meta.damage_clear(fid, looked)?;
                    }
                }
            }
        }
        Ok(out)
    }

    /// Rebuild the bad stripes of one file; true when all were rebuilt.
    fn repair_issue(&self, issue: &FileIssue, out: &mut RepairReport) -> bool {
        let Ok(f) = self.meta.stat_ino(issue.fid) else {
            return true; // removed meanwhile
        };
        let p = match Placement::decode(&f.layout) {
            Ok(p) => p,
            Err(e) => {
                out.failed.push((f.ino, e.to_string()));
                return false;
            }
        };
        let mut moves = Vec::new();
        for (i, _, state) in &issue.bad {
            let same_ok = !matches!(state, StripeState::Unavailable(_));
            match self.target_for(&p, *i, f.ino, same_ok) {
                Some((id, b)) => moves.push((*i, id, b)),
                None => out.failed.push((f.ino, no_target(*i))),
            }
        }
        if moves.is_empty() {
            return false;
        }
        // What has a target is rebuilt even when another stripe has none.
        let all = moves.len() == issue.bad.len();
        match self.rebuild_file(&f, &p, &moves) {
            Ok(()) => {
                out.stripes_rebuilt += moves.len() as u64;
                out.files_repaired += 1;
                all
            }
            Err(e) => {
                out.failed.push((f.ino, e.to_string()));
                false
            }
        }
    }

    fn path_or_fid(&self, ino: u64) -> String {
        self.meta
            .path_of(ino)
            .map(|p| p.display())
            .unwrap_or_else(|_| format!("fid:{ino}"))
    }

    /// A filesystem for stripe `index` of `p` avoiding the failure domains
    /// of every other stripe (the same one if it is still usable).
    fn target_for(
        &self,
        p: &Placement,
        index: usize,
        fid: u64,
        allow_same: bool,
    ) -> Option<(u32, Arc<dyn Backend>)> {
        let cur = p.fsids[index];
        if allow_same {
            if let Some(rec) = self.fs.record(cur) {
                if rec.status == FsConfigStatus::Rw {
                    if let Some(b) = self.fs.backend(cur) {
                        return Some((cur, b));
                    }
                }
            }
        }
        let others: HashSet<String> = p
            .fsids
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != index)
            .filter_map(|(_, id)| self.fs.record(*id).map(|r| r.domain))
            .collect();
        let space = self
            .fs
            .record(cur)
            .map(|r| r.space)
            .unwrap_or_else(|| crate::DEFAULT_SPACE.into());
        let cands: Vec<Candidate> = self
            .fs
            .candidates(&space)
            .into_iter()
            .filter(|c| c.fsid != cur && !others.contains(&c.domain))
            .collect();
        let one = tessera_data::Layout::plain();
        let id = *place(&one, &cands, fid ^ index as u64).ok()?.first()?;
        self.fs.backend(id).map(|b| (id, b))
    }

    /// Move or rebuild stripes `moves` of file `f`, then record the new
    /// placement atomically; old stripes on other filesystems are removed.
    fn rebuild_file(
        &self,
        f: &Inode,
        p: &Placement,
        moves: &[(usize, u32, Arc<dyn Backend>)],
    ) -> Result<(), CoreError> {
        let sources: Vec<_> = p.fsids.iter().map(|id| self.fs.backend(*id)).collect();
        // A write id no real write uses: the top bit is set.
        let write_id = (1u64 << 63) | f.ino;
        let (newp, adler) = tessera_data::rebuild(p, f.ino, f.size, sources, moves, write_id)?;
        if let Some(c) = &f.checksum {
            if c.kind == "adler32" && c.value != adler.to_be_bytes() {
                for (i, id, b) in moves {
                    if *id != p.fsids[*i] {
                        let _ = b.remove(&StripeName::new(f.ino, *i as u8), None);
                    }
                }
                return Err(CoreError::Invalid(format!(
                    "file {} reads back with adler32 {adler:08x}, stored {}: not rewritten",
                    f.ino,
                    c.hex()
                )));
            }
        }
        self.meta.set_layout(f.ino, &f.layout, newp.encode())?;
        for (i, id, _) in moves {
            let old = p.fsids[*i];
            if *id != old {
                if let Some(b) = self.fs.backend(old) {
                    let _ = b.remove(&StripeName::new(f.ino, *i as u8), None);
                }
            }
        }
        Ok(())
    }

    /// Rebuild what `fsck_scan` found broken and remove orphans.
    pub fn fsck_repair(&self, report: &FsckReport) -> Result<RepairReport, CoreError> {
        let mut out = RepairReport::default();
        let mut unrepaired: HashSet<u64> = HashSet::new();
        for issue in &report.issues {
            if !issue.recoverable || !self.repair_issue(issue, &mut out) {
                unrepaired.insert(issue.fid);
            } else {
                self.meta.damage_clear(issue.fid, report.started_ns)?;
            }
        }
        // The scan checked every damaged file block by block: what it
        // found is repaired now, the rest was whole.
        let mut cleared: HashSet<u64> = HashSet::new();
        for d in &report.read_errors {
            if !unrepaired.contains(&d.fid) && cleared.insert(d.fid) {
                self.meta.damage_clear(d.fid, report.started_ns)?;
            }
        }
        // Orphans: re-check against running writes and the namespace right
        // before removing each one.
        let open: HashSet<u64> = self.meta.open_write_ids().into_iter().collect();
        let open_inos: HashSet<u64> = self.meta.open_write_inos().into_iter().collect();
        for o in &report.orphans {
            let live = match o.temp_of_write {
                Some(w) => open.contains(&w),
                None => open_inos.contains(&o.name.fid) || self.references(o.fsid, &o.name),
            };
            if live {
                continue;
            }
            if let Some(b) = self.fs.backend(o.fsid) {
                match b.remove(&o.name, o.temp_of_write) {
                    Ok(()) => out.orphans_removed += 1,
                    Err(tessera_backend::BackendError::NotFound(_)) => {}
                    Err(e) => out.failed.push((o.name.fid, e.to_string())),
                }
            }
        }
        Ok(out)
    }

    fn references(&self, fsid: u32, name: &StripeName) -> bool {
        let Ok(f) = self.meta.stat_ino(name.fid) else {
            return false;
        };
        Placement::decode(&f.layout)
            .map(|p| p.fsids.get(name.index as usize) == Some(&fsid))
            .unwrap_or(false)
    }

    /// Move every stripe off filesystem `fsid` (set to `drain` first), then
    /// mark it `empty`.
    pub fn drain(&self, fsid: u32) -> Result<DrainReport, CoreError> {
        let mut rec = self
            .fs
            .record(fsid)
            .ok_or_else(|| CoreError::NotFound(format!("filesystem {fsid}")))?;
        if rec.status != FsConfigStatus::Drain {
            rec.status = FsConfigStatus::Drain;
            self.meta.fs_update(&rec)?;
            self.fs.set_record(rec.clone());
        }
        let mut out = DrainReport::default();
        self.for_each_file(|f| {
            let Ok(p) = Placement::decode(&f.layout) else {
                return;
            };
            let here: Vec<usize> = (0..p.fsids.len()).filter(|i| p.fsids[*i] == fsid).collect();
            if here.is_empty() {
                return;
            }
            let mut moves = Vec::new();
            for i in &here {
                match self.target_for(&p, *i, f.ino, false) {
                    Some((id, b)) => moves.push((*i, id, b)),
                    None => out.failed.push((f.ino, no_target(*i))),
                }
            }
            if moves.len() != here.len() {
                return;
            }
            match self.rebuild_file(f, &p, &moves) {
                Ok(()) => out.stripes_moved += moves.len() as u64,
                Err(e) => out.failed.push((f.ino, e.to_string())),
            }
        })?;
        if out.failed.is_empty() {
            rec.status = FsConfigStatus::Empty;
            self.meta.fs_update(&rec)?;
            self.fs.set_record(rec);
            out.emptied = true;
        }
        Ok(out)
    }
}
