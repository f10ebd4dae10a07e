//! fsck, repair and drain (EOS names for the counters: `rep_missing_n`,
//! `d_mem_sz_diff`, `blockxs_err`, `orphans_n`). All blocking: call from
//! `spawn_blocking`.

use crate::{Core, CoreError};
use std::collections::HashSet;
use std::time::Duration;
use tessera_backend::StripeName;
use tessera_data::{check_stripe, Placement, StripeState};
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
    /// How long ago it was last written, when the scan listed it
    /// (`None`: the filesystem could not say).
    pub age: Option<Duration>,
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

/// How many files damage records (in file order, as the store keeps
/// them) name.
pub(crate) fn files_in(records: &[DamageRecord]) -> u64 {
    let mut fids: Vec<u64> = records.iter().map(|d| d.fid).collect();
    fids.dedup();
    fids.len() as u64
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
                count(&|s| {
                    matches!(
                        s,
                        StripeState::SizeMismatch { .. } | StripeState::Truncated { .. }
                    )
                }),
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
pub struct DrainReport {
    pub stripes_moved: u64,
    pub failed: Vec<(u64, String)>,
    /// True when nothing is left and the filesystem was marked `empty`.
    pub emptied: bool,
}

/// Why a stripe has nowhere to go.
pub(crate) fn no_target(stripe: usize) -> String {
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
        let now = std::time::SystemTime::now();
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
                        age: s
                            .modified
                            .map(|m| now.duration_since(m).unwrap_or_default()),
                    });
                }
            }
        }
        let d = &self.metrics.data;
        d.fsck_orphans.set(rep.orphans.len() as u64);
        d.fsck_files_with_issues.set(rep.issues.len() as u64);
        d.fsck_unrecoverable
            .set(rep.issues.iter().filter(|i| !i.recoverable).count() as u64);
        d.fsck_last_scan.set(rep.started_ns / 1_000_000_000);
        d.damaged_files.set(files_in(&rep.read_errors));
        Ok(rep)
    }

    /// Every damage record (paged from the store).
    pub(crate) fn damage_all(&self) -> Result<Vec<DamageRecord>, CoreError> {
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
    pub(crate) fn check_file(&self, f: &Inode, p: &Placement, deep: bool) -> Option<FileIssue> {
        let mut bad = Vec::new();
        for (i, id) in p.fsids.iter().enumerate() {
            // An unresponsive filesystem is not asked (fsck ends in
            // bounded time): its stripes are unavailable.
            let b = self.fs.backend_for_read(*id);
            let st = check_stripe(b.as_ref(), p, f.ino, f.size, i, deep);
            if !st.is_ok() {
                bad.push((i, *id, st));
            }
        }
        if bad.is_empty() {
            return None;
        }
        // An empty file has nothing to lose: its stripes are only headers.
        // Group by group: a corrupt block rules out only its own group.
        let states: Vec<&StripeState> = bad.iter().map(|(_, _, s)| s).collect();
        let recoverable = tessera_data::recoverable(&states, p.layout.m as usize) || f.size == 0;
        Some(FileIssue {
            fid: f.ino,
            path: self.path_or_fid(f.ino),
            layout: p.layout.name(),
            bad,
            recoverable,
        })
    }

    pub(crate) fn path_or_fid(&self, ino: u64) -> String {
        self.meta
            .path_of(ino)
            .map(|p| p.display())
            .unwrap_or_else(|_| format!("fid:{ino}"))
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
                Ok(()) => {
                    out.stripes_moved += moves.len() as u64;
                    let l = tessera_obs::FsLabels {
                        fs: fsid.to_string(),
                        label: rec.label.clone(),
                    };
                    let n = moves.len() as u64;
                    self.metrics.data.drain_stripes.get_or_create(&l).inc_by(n);
                }
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
