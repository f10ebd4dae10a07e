//! The balancer: when the filesystems of a space are filled unevenly (a
//! filesystem was added, one was emptied), stripes move from the fullest
//! to the emptiest until their fill levels are within the threshold of
//! each other. Each move is the repair's and the drain's (`rebuild_file`):
//! the stripe is copied to its new filesystem block by block, every
//! checksum verified, sealed, and only then is the file's placement
//! changed, in one namespace transaction that also checks nobody changed
//! the file meanwhile. The old copy stays for readers that opened the file
//! before (the grace period) and is removed by a later round; a crash at
//! any point leaves the file readable from one copy or the other (what is
//! left over is an orphan `fsck repair` removes). A round plans at most
//! `ROUND_MOVES` moves from listings of the fullest filesystems (never a
//! namespace scan), runs `parallel` at once, paced to `rate_bytes`.

use crate::{Core, CoreError};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tessera_backend::StripeName;
use tessera_data::Placement;
use tessera_meta::{BalanceRecord, FsConfigStatus, Inode};
use tessera_types::Identity;

/// Moves planned per round at most (the next round goes on).
const ROUND_MOVES: usize = 512;

/// What the balancer is doing, for `tessera balance status`.
#[derive(Debug, Clone, Default)]
pub struct BalanceStatus {
    pub settings: BalanceRecord,
    /// Every space's filesystems within the threshold at the last round.
    pub balanced: bool,
    /// The largest difference of fill levels in a space (0 to 1).
    pub spread: f64,
    /// (filesystem, label, space, fill 0 to 1) at the last round.
    pub fills: Vec<(u32, String, String, f64)>,
    pub rounds: u64,
    pub moved_stripes: u64,
    pub moved_bytes: u64,
    pub failed: u64,
    /// Bytes per second of the last round that moved something.
    pub rate: f64,
    pub last_error: String,
}

/// The balancer's state in the core.
#[derive(Default)]
pub(crate) struct Balancer {
    status: Mutex<BalanceStatus>,
    pub(crate) kick: tokio::sync::Notify,
    /// Set by a stop: the round in progress ends after its current moves.
    stop: AtomicBool,
    /// Old copies of moved stripes: when they were replaced, where, and
    /// their bytes (counted as gone when fill levels are planned).
    deferred: Mutex<Vec<(Instant, u32, StripeName, u64)>>,
    /// Held shared by every stripe move (balancer, drain, repair) from its
    /// copy to its commit, and alone by the removal of an old copy: a
    /// copy moved back meanwhile is seen as the file's and kept.
    pub(crate) moves: std::sync::RwLock<()>,
    /// Files a move (balancer, drain, repair) is working on: one at a
    /// time per file, so that one move's clean-up never meets another's
    /// copy.
    in_flight: Mutex<std::collections::HashSet<u64>>,
}

/// A file's move under way; ends when dropped.
pub(crate) struct Moving<'a>(&'a Balancer, u64);

impl Drop for Moving<'_> {
    fn drop(&mut self) {
        crate::lock(&self.0.in_flight).remove(&self.1);
    }
}

impl Balancer {
    /// Keep the old copy of a moved stripe until the grace period ends.
    fn defer(&self, fsid: u32, name: StripeName, bytes: u64) {
        crate::lock(&self.deferred).push((Instant::now(), fsid, name, bytes));
    }

    /// Claim file `fid` for a move (`None`: another one is under way).
    pub(crate) fn claim(&self, fid: u64) -> Option<Moving<'_>> {
        crate::lock(&self.in_flight)
            .insert(fid)
            .then_some(Moving(self, fid))
    }

    /// Bytes of old copies waiting on filesystem `fsid`.
    fn pending(&self, fsid: u32) -> u64 {
        crate::lock(&self.deferred)
            .iter()
            .filter(|d| d.1 == fsid)
            .map(|d| d.3)
            .sum()
    }
}

/// One filesystem's fill, as planned.
struct Fill {
    id: u32,
    domain: String,
    total: u64,
    used: u64,
}

impl Fill {
    fn ratio(&self) -> f64 {
        self.used as f64 / self.total as f64
    }
}

/// One planned move: stripe `index` of file `f` to filesystem `to`.
struct Move {
    f: Inode,
    p: Placement,
    index: usize,
    to: u32,
    bytes: u64,
}

/// What a round did.
#[derive(Debug, Default, Clone, Copy)]
pub struct BalanceRound {
    pub moved: u64,
    pub bytes: u64,
    pub failed: u64,
    pub balanced: bool,
}

impl Core {
    /// What the balancer is doing.
    pub fn balance_status(&self) -> BalanceStatus {
        crate::lock(&self.balancer.status).clone()
    }

    /// Wake the balancer (a filesystem was added).
    pub fn balance_kick(&self) {
        self.balancer.kick.notify_one();
    }

    /// Until something wakes the balancer (a filesystem added, a start).
    pub async fn balance_woken(&self) {
        self.balancer.kick.notified().await
    }

    /// Start (with these settings) or stop the balancer (admins); kept
    /// in the namespace.
    pub async fn balance_set(
        &self,
        who: &Identity,
        rec: BalanceRecord,
    ) -> Result<BalanceStatus, CoreError> {
        crate::fs::admin(who)?;
        if rec.threshold_milli == 0 || rec.threshold_milli > 1000 || rec.parallel == 0 {
            return Err(CoreError::Invalid(
                "a threshold of 0.1 to 100 percent and at least one file at a time".into(),
            ));
        }
        let core = self.clone();
        let r = rec.clone();
        crate::blocking(move || core.meta.set_balance_settings(&r)).await??;
        self.balancer.stop.store(!rec.enabled, Ordering::Relaxed);
        crate::lock(&self.balancer.status).settings = rec;
        self.balance_kick();
        Ok(self.balance_status())
    }

    /// Old copies past the grace period go (all of them with `all`).
    fn remove_deferred(&self, grace: Duration) {
        let due: Vec<(u32, StripeName)> = {
            let mut d = crate::lock(&self.balancer.deferred);
            let (due, keep): (Vec<_>, Vec<_>) =
                d.drain(..).partition(|(t, _, _, _)| t.elapsed() >= grace);
            *d = keep;
            due.into_iter().map(|(_, id, n, _)| (id, n)).collect()
        };
        for (id, name) in due {
            // Moved back meanwhile (a drain, another round): the copy
            // there is the file's own again.
            let _alone = self
                .balancer
                .moves
                .write()
                .unwrap_or_else(|e| e.into_inner());
            if self.references(id, &name) {
                continue;
            }
            if let Some(b) = self.fs.backend(id) {
                if let Err(e) = b.remove(&name, None) {
                    tracing::warn!(
                        fsid = id,
                        fid = name.fid,
                        "old stripe copy not removed: {e}"
                    );
                }
            }
        }
    }

    /// Fills of the writable, healthy filesystems, by space.
    fn fills(&self) -> HashMap<String, Vec<Fill>> {
        let mut by: HashMap<String, Vec<Fill>> = HashMap::new();
        let mut shown = Vec::new();
        for v in self.fs.views() {
            let Some(c) = v.capacity else { continue };
            let usable = v.rec.status == FsConfigStatus::Rw
                && v.error.is_none()
                && v.health.state == crate::HealthState::Ok;
            if !usable || c.total_bytes == 0 {
                continue;
            }
            let f = Fill {
                id: v.rec.id,
                domain: v.rec.domain.clone(),
                total: c.total_bytes,
                used: c
                    .total_bytes
                    .saturating_sub(c.free_bytes)
                    .saturating_sub(self.balancer.pending(v.rec.id)),
            };
            shown.push((f.id, v.rec.label.clone(), v.rec.space.clone(), f.ratio()));
            by.entry(v.rec.space.clone()).or_default().push(f);
        }
        crate::lock(&self.balancer.status).fills = shown;
        by
    }

    /// One round (blocking): see the module.
    pub fn balance_round(&self) -> Result<BalanceRound, CoreError> {
        let s = self.meta.balance_settings()?;
        self.remove_deferred(Duration::from_secs(s.grace_secs.into()));
        let threshold = f64::from(s.threshold_milli) / 1000.0;
        let spaces = self.fills();
        let spread = spaces
            .values()
            .filter(|f| f.len() > 1)
            .map(|f| {
                let (lo, hi) = f.iter().fold((1f64, 0f64), |(lo, hi), x| {
                    (lo.min(x.ratio()), hi.max(x.ratio()))
                });
                hi - lo
            })
            .fold(0f64, f64::max);
        let mut round = BalanceRound {
            balanced: spread <= threshold,
            ..BalanceRound::default()
        };
        {
            let mut st = crate::lock(&self.balancer.status);
            st.settings = s.clone();
            st.spread = spread;
            st.balanced = round.balanced;
            st.rounds += 1;
        }
        self.metrics.balance.spread.set(spread);
        self.metrics.balance.enabled.set(i64::from(s.enabled));
        if !s.enabled || round.balanced {
            return Ok(round);
        }
        self.balancer.stop.store(false, Ordering::Relaxed);
        let mut plan = Vec::new();
        for (_, mut fills) in spaces {
            self.plan_space(&mut fills, threshold, &mut plan)?;
        }
        let started = Instant::now();
        self.run_moves(plan, &s, &mut round);
        let mut st = crate::lock(&self.balancer.status);
        st.moved_stripes += round.moved;
        st.moved_bytes += round.bytes;
        st.failed += round.failed;
        if round.bytes > 0 {
            st.rate = round.bytes as f64 / started.elapsed().as_secs_f64().max(1e-3);
        }
        Ok(round)
    }

    /// Moves from the fullest filesystems of a space to the emptiest,
    /// until the fullest is within half the threshold of the average.
    fn plan_space(
        &self,
        fills: &mut [Fill],
        threshold: f64,
        plan: &mut Vec<Move>,
    ) -> Result<(), CoreError> {
        if fills.len() < 2 {
            return Ok(());
        }
        let (used, total) = fills
            .iter()
            .fold((0u64, 0u64), |(u, t), f| (u + f.used, t + f.total));
        let avg = used as f64 / total as f64;
        let high = avg + threshold / 2.0;
        fills.sort_by(|a, b| b.ratio().total_cmp(&a.ratio()));
        for si in 0..fills.len() {
            if fills[si].ratio() <= high || plan.len() >= ROUND_MOVES {
                break;
            }
            let src = fills[si].id;
            let Some(b) = self.fs.backend(src) else {
                continue;
            };
            for s in b.list()?.into_iter().filter(|s| s.temp_of_write.is_none()) {
                if fills[si].ratio() <= high || plan.len() >= ROUND_MOVES {
                    break;
                }
                let Ok(f) = self.meta.stat_ino(s.name.fid) else {
                    continue;
                };
                let Ok(p) = Placement::decode(&f.layout) else {
                    continue;
                };
                let index = usize::from(s.name.index);
                if p.fsids.get(index) != Some(&src) {
                    continue;
                }
                // The other stripes' failure domains, from the records
                // (a stripe on a read-only or unhealthy one counts too).
                let domains: Vec<String> = (p.fsids.iter().enumerate())
                    .filter(|(i, _)| *i != index)
                    .filter_map(|(_, id)| self.fs.record(*id).map(|r| r.domain))
                    .collect();
                let Some(ti) = target(fills, si, (&p, index), &domains, s.bytes) else {
                    continue;
                };
                fills[si].used = fills[si].used.saturating_sub(s.bytes);
                fills[ti].used += s.bytes;
                plan.push(Move {
                    f,
                    p,
                    index,
                    to: fills[ti].id,
                    bytes: s.bytes,
                });
            }
        }
        Ok(())
    }

    /// Run the planned moves, `parallel` at once, paced to the rate.
    fn run_moves(&self, plan: Vec<Move>, s: &BalanceRecord, round: &mut BalanceRound) {
        let queue = Mutex::new(plan.into_iter());
        let (moved, bytes, failed) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
        let started = Instant::now();
        std::thread::scope(|sc| {
            for _ in 0..s.parallel.max(1) {
                sc.spawn(|| loop {
                    if self.balancer.stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let Some(m) = crate::lock(&queue).next() else {
                        return;
                    };
                    let Some(b) = self.fs.backend(m.to) else {
                        continue;
                    };
                    match self.rebuild_file_keeping_old(&m.f, &m.p, &[(m.index, m.to, b)]) {
                        Ok(()) => {
                            let from = m.p.fsids[m.index];
                            let name = StripeName::new(m.f.ino, m.index as u8);
                            self.balancer.defer(from, name, m.bytes);
                            moved.fetch_add(1, Ordering::Relaxed);
                            let done = bytes.fetch_add(m.bytes, Ordering::Relaxed) + m.bytes;
                            self.metrics.balance.moved_stripes.inc();
                            self.metrics.balance.moved_bytes.inc_by(m.bytes);
                            if s.rate_bytes > 0 {
                                let due =
                                    Duration::from_secs_f64(done as f64 / s.rate_bytes as f64);
                                // In short naps: a stop ends the wait.
                                while let Some(w) = due.checked_sub(started.elapsed()) {
                                    if self.balancer.stop.load(Ordering::Relaxed) {
                                        break;
                                    }
                                    std::thread::sleep(w.min(Duration::from_millis(200)));
                                }
                            }
                        }
                        Err(e) => {
                            // A file changed or removed meanwhile: its move
                            // is simply not made.
                            failed.fetch_add(1, Ordering::Relaxed);
                            self.metrics.balance.failed.inc();
                            crate::lock(&self.balancer.status).last_error =
                                format!("file {}: {e}", m.f.ino);
                        }
                    }
                });
            }
        });
        round.moved = moved.into_inner();
        round.bytes = bytes.into_inner();
        round.failed = failed.into_inner();
    }
}

/// The emptiest filesystem stripe `index` of `p` may move to from
/// `fills[src]`: another failure domain than the file's other stripes,
/// and emptier after the move than the source is.
fn target(
    fills: &[Fill],
    src: usize,
    (p, index): (&Placement, usize),
    domains: &[String],
    bytes: u64,
) -> Option<usize> {
    let others: Vec<u32> = p
        .fsids
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != index)
        .map(|(_, id)| *id)
        .collect();
    let after_src = fills[src].used.saturating_sub(bytes) as f64 / fills[src].total as f64;
    fills
        .iter()
        .enumerate()
        .filter(|(i, f)| *i != src && !others.contains(&f.id) && !domains.contains(&f.domain))
        .filter(|(_, f)| (f.used + bytes) as f64 / (f.total as f64) < after_src)
        .min_by(|a, b| a.1.ratio().total_cmp(&b.1.ratio()))
        .map(|(i, _)| i)
}
