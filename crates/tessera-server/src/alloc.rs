//! What the C allocator keeps. glibc gives each thread that allocates an
//! arena of its own (up to eight per core) and keeps what is freed in them
//! for reuse: in a 4-client soak, 80 MB of arenas held 25 MB in use at
//! 13 minutes and grew on (docs/benchmarks.md, "Memory over time"), while
//! everything Tessera itself holds stayed flat. Every [`TRIM_EVERY`] the
//! free pages go back to the system (`malloc_trim`), and the gauges
//! `tessera_memory_bytes{part="allocator_in_use"|"allocator_free"}` say
//! what the allocator holds. At start the number of arenas is capped at
//! [`ARENAS`] (`MALLOC_ARENA_MAX` in the environment still wins): with
//! two arenas the same soak held ~25% less at five minutes. Other
//! allocators and C libraries: nothing.

use std::sync::Arc;
use std::time::Duration;
use tessera_obs::Metrics;
use tokio::sync::watch;

/// How often free allocator pages go back to the system.
pub const TRIM_EVERY: Duration = Duration::from_secs(10);

/// The most malloc arenas the process keeps when the operator set none.
pub const ARENAS: i32 = 2;

/// Cap glibc's arenas at [`ARENAS`] unless `MALLOC_ARENA_MAX` is set.
/// Call once, before any thread starts.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)] // glibc's mallopt has no safe wrapper
pub fn limit_arenas() {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return;
    }
    // SAFETY: mallopt takes two integers; called before other threads exist.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, ARENAS);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn limit_arenas() {}

/// Give free pages back every [`TRIM_EVERY`] until `stop`, and report
/// what the allocator holds to `metrics`.
pub async fn trim_loop(metrics: Arc<Metrics>, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(TRIM_EVERY) => {}
            _ = stop.changed() => return,
        }
        let Ok(Some((in_use, free))) = tokio::task::spawn_blocking(trim).await else {
            return;
        };
        for (part, v) in [("allocator_in_use", in_use), ("allocator_free", free)] {
            let l = tessera_obs::PartLabels { part: part.into() };
            metrics.memory.get_or_create(&l).set(v);
        }
    }
}

/// Trim, then (bytes in use, bytes free) in the allocator's arenas.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)] // glibc's malloc_trim and mallinfo2 have no safe wrapper
fn trim() -> Option<(u64, u64)> {
    // SAFETY: malloc_trim and mallinfo2 take no pointers and may be called
    // from any thread at any time (they lock each arena in turn).
    let info = unsafe {
        libc::malloc_trim(0);
        libc::mallinfo2()
    };
    let in_use = (info.uordblks + info.hblkhd) as u64;
    Some((in_use, info.fordblks as u64))
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() -> Option<(u64, u64)> {
    None
}
