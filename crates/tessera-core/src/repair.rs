//! Repair: rebuild what fsck or reads found broken, remove orphans. An
//! orphan is removed only when no namespace record references it, no
//! running write owns it, it is older than the grace period and its
//! filesystem's marker is the registered one; and only with `apply` (the
//! CLI's default is a dry run, as `eos fsck repair`). All blocking.

use crate::fsck::{no_target, now_ns, FileIssue, FsckReport};
use crate::{Core, CoreError};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tessera_backend::{Backend, StripeName};
use tessera_data::{Placement, StripeState};
use tessera_meta::{FsConfigStatus, Inode};

/// Orphans younger than this are kept by default: a write or a repair
/// running now may own them.
pub const ORPHAN_GRACE: Duration = Duration::from_secs(3600);

/// What a repair may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepairPlan {
    /// Change things; `false` reports what would be done and changes nothing.
    pub apply: bool,
    /// Orphans last written less than this long ago are kept.
    pub orphan_grace: Duration,
}

impl RepairPlan {
    /// Repair for real with the default grace period.
    pub fn apply() -> RepairPlan {
        RepairPlan {
            apply: true,
            orphan_grace: ORPHAN_GRACE,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// Whether anything was changed (false: a dry run, the counts are
    /// what would be done).
    pub applied: bool,
    pub stripes_rebuilt: u64,
    pub files_repaired: u64,
    pub orphans_removed: u64,
    /// Orphans kept: younger than the grace period (or of unknown age).
    pub orphans_kept: u64,
    /// (fid or 0, what failed): files beyond repair are here too.
    pub failed: Vec<(u64, String)>,
    /// (fid, why): stripes on filesystems that are unreachable but not
    /// declared lost, left as they are (rebuilt when an admin sets the
    /// filesystem `off`, or read again when it is back).
    pub waiting: Vec<(u64, String)>,
}

impl Core {
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
                    format!(
                        "{} stripes damaged, more than the layout's parity in a group: beyond repair",
                        issue.bad.len()
                    ),
                )),
                Some(issue) => {
                    if self.repair_issue(&issue, &mut out) {
                        self.meta.damage_clear(fid, looked)?;
                    }
                }
            }
        }
        self.metrics
            .data
            .repair_failures
            .inc_by(out.failed.len() as u64);
        self.metrics.data.damaged_files.set(self.damaged_fids()?);
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
        let mut waiting = 0;
        for (i, id, state) in &issue.bad {
            let unavailable = matches!(state, StripeState::Unavailable(_));
            // An unreachable filesystem is not lost data: its stripes stay
            // as they are until an admin says it is lost (status off, or
            // drained), lest they come back as orphans of copies made
            // meanwhile.
            if unavailable && !self.declared_lost(*id) {
                out.waiting.push((
                    f.ino,
                    format!(
                        "stripe {i} on filesystem {id} is unavailable: kept; rebuilt once the \
                         filesystem is set off (lost), read again when it is back"
                    ),
                ));
                waiting += 1;
                continue;
            }
            match self.target_for(&p, *i, f.ino, !unavailable) {
                Some((id, b)) => moves.push((*i, id, b)),
                None => out.failed.push((f.ino, no_target(*i))),
            }
        }
        if moves.is_empty() {
            return false;
        }
        // What has a target is rebuilt even when another stripe has none.
        let all = moves.len() + waiting == issue.bad.len() && waiting == 0;
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

    /// Whether an admin has said filesystem `id` is lost (or it is not
    /// registered any more): its stripes are rebuilt elsewhere.
    fn declared_lost(&self, id: u32) -> bool {
        self.fs.record(id).is_none_or(|r| {
            matches!(
                r.status,
                FsConfigStatus::Off | FsConfigStatus::Drain | FsConfigStatus::Empty
            )
        })
    }

    /// A filesystem for stripe `index` of `p` avoiding the failure domains
    /// of every other stripe (the same one if it is still usable).
    pub(crate) fn target_for(
        &self,
        p: &Placement,
        index: usize,
        fid: u64,
        allow_same: bool,
    ) -> Option<(u32, Arc<dyn Backend>)> {
        let cur = p.fsids[index];
        if allow_same {
            if let Some(rec) = self.fs.record(cur) {
                let healthy = self.fs.health_of(cur).is_some_and(|h| h.usable());
                if rec.status == FsConfigStatus::Rw && healthy {
                    if let Some(b) = self.fs.backend(cur) {
                        return Some((cur, b));
                    }
                }
            }
        }
        let id = self.fs.replacement(p, index, fid ^ index as u64)?;
        self.fs.backend(id).map(|b| (id, b))
    }

    /// Move or rebuild stripes `moves` of file `f`, then record the new
    /// placement atomically; old stripes on other filesystems are removed.
    pub(crate) fn rebuild_file(
        &self,
        f: &Inode,
        p: &Placement,
        moves: &[(usize, u32, Arc<dyn Backend>)],
    ) -> Result<(), CoreError> {
        self.rebuild_file_as(f, p, moves, false)
    }

    /// [`Core::rebuild_file`], the old copies left in place: the
    /// balancer removes them after its grace period (readers that opened
    /// the file before the move).
    pub(crate) fn rebuild_file_keeping_old(
        &self,
        f: &Inode,
        p: &Placement,
        moves: &[(usize, u32, Arc<dyn Backend>)],
    ) -> Result<(), CoreError> {
        self.rebuild_file_as(f, p, moves, true)
    }

    fn rebuild_file_as(
        &self,
        f: &Inode,
        p: &Placement,
        moves: &[(usize, u32, Arc<dyn Backend>)],
        keep_old: bool,
    ) -> Result<(), CoreError> {
        // No old copy is removed while this move runs, and no other move
        // of this file runs (`balance.rs`).
        let _moving = self
            .balancer
            .moves
            .read()
            .unwrap_or_else(|e| e.into_inner());
        let Some(_mine) = self.balancer.claim(f.ino) else {
            return Err(CoreError::from(tessera_meta::MetaError::Busy(format!(
                "another move of file {} is under way",
                f.ino
            ))));
        };
        let sources: Vec<_> = p.fsids.iter().map(|id| self.fs.backend(*id)).collect();
        // A write id no real write uses (the top bit is set), new for
        // every attempt: what a crashed attempt left behind never blocks
        // the next one (fsck removes it once past the orphan grace period).
        let write_id = (1u64 << 63) | (tessera_backend::random_u64() >> 1);
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
        if let Err(e) = self.meta.set_layout(f.ino, &f.layout, newp.encode()) {
            // Changed or removed meanwhile: the new copies are nobody's,
            // unless the file's placement names that very place now (an
            // earlier move of it went there: the copy is its own).
            for (i, id, b) in moves {
                let name = StripeName::new(f.ino, *i as u8);
                if *id != p.fsids[*i] && !self.references(*id, &name) {
                    let _ = b.remove(&name, None);
                }
            }
            return Err(e.into());
        }
        let d = &self.metrics.data;
        d.repair_stripes.inc_by(moves.len() as u64);
        d.repair_bytes.inc_by(f.size);
        for (i, id, _) in moves {
            let old = p.fsids[*i];
            if *id != old && !keep_old {
                if let Some(b) = self.fs.backend(old) {
                    let _ = b.remove(&StripeName::new(f.ino, *i as u8), None);
                }
            }
        }
        Ok(())
    }

    /// Rebuild what `fsck_scan` found broken and remove its orphans (see
    /// the module's rules), or with `!plan.apply` only say what would be.
    pub fn fsck_repair(
        &self,
        report: &FsckReport,
        plan: &RepairPlan,
    ) -> Result<RepairReport, CoreError> {
        let mut out = RepairReport {
            applied: plan.apply,
            ..RepairReport::default()
        };
        let mut unrepaired: HashSet<u64> = HashSet::new();
        for issue in &report.issues {
            let fixed = if !issue.recoverable {
                out.failed.push((
                    issue.fid,
                    format!(
                        "{}: {} of its stripes damaged, more than the layout's parity in a \
                         group: beyond repair",
                        issue.path,
                        issue.bad.len()
                    ),
                ));
                false
            } else if plan.apply {
                self.repair_issue(issue, &mut out)
            } else {
                self.plan_issue(issue, &mut out)
            };
            if !fixed {
                unrepaired.insert(issue.fid);
            } else if plan.apply {
                self.meta.damage_clear(issue.fid, report.started_ns)?;
            }
        }
        if plan.apply {
            // The scan checked every damaged file block by block: what it
            // found is repaired now, the rest was whole.
            let mut cleared: HashSet<u64> = HashSet::new();
            for d in &report.read_errors {
                if !unrepaired.contains(&d.fid) && cleared.insert(d.fid) {
                    self.meta.damage_clear(d.fid, report.started_ns)?;
                }
            }
        }
        self.remove_orphans(report, plan, &mut out);
        if plan.apply {
            let d = &self.metrics.data;
            d.repair_failures.inc_by(out.failed.len() as u64);
            d.damaged_files.set(self.damaged_fids()?);
        }
        Ok(out)
    }

    /// What repairing `issue` would do, changing nothing.
    fn plan_issue(&self, issue: &FileIssue, out: &mut RepairReport) -> bool {
        let Ok(f) = self.meta.stat_ino(issue.fid) else {
            return true;
        };
        let Ok(p) = Placement::decode(&f.layout) else {
            out.failed.push((f.ino, "unreadable placement".into()));
            return false;
        };
        let mut n = 0;
        for (i, _, state) in &issue.bad {
            let same_ok = !matches!(state, StripeState::Unavailable(_));
            match self.target_for(&p, *i, f.ino, same_ok) {
                Some(_) => n += 1,
                None => out.failed.push((f.ino, no_target(*i))),
            }
        }
        if n > 0 {
            out.stripes_rebuilt += n;
            out.files_repaired += 1;
        }
        n as usize == issue.bad.len()
    }

    /// Orphans: re-checked against running writes and the namespace right
    /// before removing each one; kept while young, and all of a
    /// filesystem's kept when its marker is not the registered one.
    fn remove_orphans(&self, report: &FsckReport, plan: &RepairPlan, out: &mut RepairReport) {
        let open: HashSet<u64> = self.meta.open_write_ids().into_iter().collect();
        let open_inos: HashSet<u64> = self.meta.open_write_inos().into_iter().collect();
        let mut wrong_marker: HashSet<u32> = HashSet::new();
        for fsid in report
            .orphans
            .iter()
            .map(|o| o.fsid)
            .collect::<HashSet<_>>()
        {
            let (Some(rec), Some(b)) = (self.fs.record(fsid), self.fs.backend(fsid)) else {
                wrong_marker.insert(fsid);
                continue;
            };
            if let Err(e) = crate::fsident::check_identity(&rec, b.as_ref()) {
                out.failed
                    .push((0, format!("filesystem {fsid}: {e}: its orphans are kept")));
                wrong_marker.insert(fsid);
            }
        }
        for o in &report.orphans {
            if wrong_marker.contains(&o.fsid) {
                continue;
            }
            if o.age.is_none_or(|a| a < plan.orphan_grace) {
                out.orphans_kept += 1;
                continue;
            }
            let live = match o.temp_of_write {
                Some(w) => open.contains(&w),
                None => open_inos.contains(&o.name.fid) || self.references(o.fsid, &o.name),
            };
            if live {
                continue;
            }
            if !plan.apply {
                out.orphans_removed += 1;
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
    }

    /// How many files have damage records.
    fn damaged_fids(&self) -> Result<u64, CoreError> {
        Ok(crate::fsck::files_in(&self.damage_all()?))
    }

    /// Whether the file of stripe `name` places it on filesystem `fsid`
    /// now (a stat error counts as no).
    pub(crate) fn references(&self, fsid: u32, name: &StripeName) -> bool {
        let Ok(f) = self.meta.stat_ino(name.fid) else {
            return false;
        };
        Placement::decode(&f.layout)
            .map(|p| p.fsids.get(name.index as usize) == Some(&fsid))
            .unwrap_or(false)
    }
}
