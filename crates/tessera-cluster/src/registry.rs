//! The data gateways the metadata service knows, from their heartbeats,
//! and the choice of one for a redirect: alive, the client's site first
//! when known, then the least busy.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A gateway not heard from for this long is not chosen.
pub const GATEWAY_TTL: Duration = Duration::from_secs(6);

#[derive(Debug, Clone)]
struct Entry {
    /// host:port of its HTTPS listener ("" without one).
    https: String,
    site: String,
    open_files: u64,
    /// Redirects sent there since its last heartbeat.
    sent: u64,
    seen: Instant,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayView {
    pub xrootd: String,
    pub https: String,
    pub site: String,
    pub open_files: u64,
    pub age_ms: u64,
}

/// The host of `host:port` (`[v6]:port` too).
fn host_of(addr: &str) -> &str {
    let h = match addr.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => h,
        _ => addr,
    };
    h.trim_start_matches('[').trim_end_matches(']')
}

#[derive(Default)]
pub struct Registry {
    gateways: Mutex<HashMap<String, Entry>>,
    turn: AtomicU64,
    /// Open write reservations, by the gateway carrying them.
    writes: Mutex<HashMap<u64, (String, Instant)>>,
}

impl Registry {
    /// Gateway `xrootd` (its XRootD address names it) is alive.
    pub fn heartbeat(&self, xrootd: &str, https: &str, site: &str, open_files: u64) {
        let mut g = self.gateways.lock().unwrap_or_else(|p| p.into_inner());
        g.insert(
            xrootd.to_string(),
            Entry {
                https: https.to_string(),
                site: site.to_string(),
                open_files,
                sent: 0,
                seen: Instant::now(),
            },
        );
    }

    /// Gateway `xrootd` is gone (its registration stream broke) or going
    /// (it deregistered at shutdown): no more redirects there.
    pub fn forget(&self, xrootd: &str) {
        let mut g = self.gateways.lock().unwrap_or_else(|p| p.into_inner());
        if g.remove(xrootd).is_some() {
            tracing::info!(gateway = xrootd, "gateway left: no more redirects there");
        }
    }

    /// A live gateway's XRootD address for a client (at `site`, when
    /// known), none of whose host names the client `tried` already (the
    /// `tried=` CGI of a client coming back after a failed redirect);
    /// `None` when no gateway is left (the metadata service then serves
    /// data itself).
    pub fn pick(&self, site: Option<&str>, tried: &[&str]) -> Option<String> {
        self.pick_where(site, false, tried)
    }

    /// As [`Registry::pick`], among gateways with an HTTPS listener; its
    /// HTTPS address.
    pub fn pick_https(&self, site: Option<&str>) -> Option<String> {
        let xrootd = self.pick_where(site, true, &[])?;
        let g = self.gateways.lock().unwrap_or_else(|p| p.into_inner());
        g.get(&xrootd).map(|e| e.https.clone())
    }

    fn pick_where(&self, site: Option<&str>, https: bool, tried: &[&str]) -> Option<String> {
        let mut g = self.gateways.lock().unwrap_or_else(|p| p.into_inner());
        let was_tried = |addr: &str| tried.iter().any(|t| !t.is_empty() && *t == host_of(addr));
        let live: Vec<(&String, &Entry)> = g
            .iter()
            .filter(|(_, e)| e.seen.elapsed() < GATEWAY_TTL && (!https || !e.https.is_empty()))
            .filter(|(a, e)| !was_tried(a) && !was_tried(&e.https))
            .collect();
        if live.is_empty() {
            return None;
        }
        let local: Vec<&(&String, &Entry)> = live
            .iter()
            .filter(|(_, e)| site.is_some_and(|s| !s.is_empty() && e.site == s))
            .collect();
        let pool: Vec<&(&String, &Entry)> = if local.is_empty() {
            live.iter().collect()
        } else {
            local
        };
        let load = |e: &Entry| e.open_files + e.sent;
        let least = pool.iter().map(|(_, e)| load(e)).min().unwrap_or(0);
        let mut best: Vec<&String> = pool
            .iter()
            .filter(|(_, e)| load(e) == least)
            .map(|(a, _)| *a)
            .collect();
        best.sort();
        let turn = self.turn.fetch_add(1, Ordering::Relaxed) as usize;
        let chosen = best[turn % best.len()].clone();
        if let Some(e) = g.get_mut(&chosen) {
            e.sent += 1;
        }
        Some(chosen)
    }

    /// A gateway began write `resv`.
    pub fn track_write(&self, resv: u64, gateway: &str) {
        let mut w = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        w.insert(resv, (gateway.to_string(), Instant::now()));
    }

    /// Write `resv` was committed or aborted.
    pub fn untrack_write(&self, resv: u64) {
        let mut w = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        w.remove(&resv);
    }

    /// Reservations whose gateway has not been heard from for `lease`
    /// (nor began the write within it): they are forgotten here and
    /// returned for the caller to release.
    pub fn expired_writes(&self, lease: Duration) -> Vec<u64> {
        let g = self.gateways.lock().unwrap_or_else(|p| p.into_inner());
        let mut w = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        let dead: Vec<u64> = w
            .iter()
            .filter(|(_, (gw, began))| {
                began.elapsed() > lease && g.get(gw).is_none_or(|e| e.seen.elapsed() > lease)
            })
            .map(|(id, _)| *id)
            .collect();
        for id in &dead {
            w.remove(id);
        }
        dead
    }

    pub fn list(&self) -> Vec<GatewayView> {
        let g = self.gateways.lock().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<GatewayView> = g
            .iter()
            .map(|(a, e)| GatewayView {
                xrootd: a.clone(),
                https: e.https.clone(),
                site: e.site.clone(),
                open_files: e.open_files,
                age_ms: e.seen.elapsed().as_millis() as u64,
            })
            .collect();
        v.sort_by(|a, b| a.xrootd.cmp(&b.xrootd));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_and_prefers_site() {
        let r = Registry::default();
        assert_eq!(r.pick(None, &[]), None);
        r.heartbeat("a:1", "", "cern", 0);
        r.heartbeat("b:1", "", "desy", 0);
        let picks: Vec<String> = (0..4).filter_map(|_| r.pick(None, &[])).collect();
        assert!(picks.contains(&"a:1".to_string()) && picks.contains(&"b:1".to_string()));
        assert!((0..4).all(|_| r.pick(Some("desy"), &[]).as_deref() == Some("b:1")));
        r.heartbeat("a:1", "", "cern", 100);
        r.heartbeat("b:1", "", "desy", 0);
        assert_eq!(r.pick(None, &[]).as_deref(), Some("b:1"), "least busy");
        // Only gateways with an HTTPS listener serve HTTPS.
        assert_eq!(r.pick_https(None), None);
        r.heartbeat("a:1", "a:2", "cern", 100);
        assert_eq!(r.pick_https(Some("desy")).as_deref(), Some("a:2"));
    }

    #[test]
    fn tried_hosts_and_departed_gateways_are_not_chosen() {
        let r = Registry::default();
        r.heartbeat("localhost:1094", "", "", 0);
        r.heartbeat("127.0.0.1:1095", "", "", 0);
        // A client back from a failed redirect to localhost.
        for _ in 0..4 {
            assert_eq!(
                r.pick(None, &["localhost"]).as_deref(),
                Some("127.0.0.1:1095")
            );
        }
        assert_eq!(r.pick(None, &["localhost", "127.0.0.1"]), None);
        r.forget("127.0.0.1:1095");
        assert!((0..4).all(|_| r.pick(None, &[]).as_deref() == Some("localhost:1094")));
        assert_eq!(host_of("[::1]:1094"), "::1");
    }

    #[test]
    fn writes_of_silent_gateways_expire() {
        let r = Registry::default();
        r.heartbeat("a:1", "", "", 0);
        r.track_write(7, "a:1");
        r.track_write(8, "ghost:1");
        r.track_write(9, "ghost:1");
        r.untrack_write(9);
        assert!(r.expired_writes(Duration::from_secs(60)).is_empty());
        std::thread::sleep(Duration::from_millis(20));
        r.heartbeat("a:1", "", "", 0);
        assert_eq!(r.expired_writes(Duration::from_millis(10)), [8]);
        assert!(r.expired_writes(Duration::from_millis(10)).is_empty());
    }
}
