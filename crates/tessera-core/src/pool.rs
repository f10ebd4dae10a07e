//! What runs off the runtime's threads, decided here for every crate
//! above: [`blocking`] (the blocking pool: the core's blocking calls, and
//! CPU-heavy work a front-end hands over, such as gsi's RSA) and [`lock`]
//! (a std mutex, its poisoning taken as the data it guards: a panicked
//! holder does not take the server down). The front-ends' `clippy.toml`
//! forbids the direct calls.

use crate::CoreError;
use std::sync::{Mutex, MutexGuard};

/// Run `f` on the blocking pool.
#[allow(clippy::disallowed_methods)] // the one place that may
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, CoreError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| CoreError::Task(e.to_string()))
}

/// `m` locked, poisoned or not.
#[allow(clippy::disallowed_methods)] // the one place that may
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
