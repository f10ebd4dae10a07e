//! The close of a read or write session, as the access log and metrics see
//! it: one line per opened file when it is closed (`close_read`,
//! `close_write`), with the bytes it moved and how long it was open, as
//! EOS's report log and XRootD's file monitoring record a close.

use crate::CoreError;
use std::sync::Arc;
use std::time::Instant;
use tessera_obs::{AccessLog, AccessRecord, Metrics};
use tessera_types::{Identity, NsPath};

/// Status of a write dropped without `close` (the client went away).
pub const ABORTED: &str = "aborted";
/// errno logged with [`ABORTED`] (ECANCELED).
const ECANCELED: i32 = 125;

pub struct SessionLog {
    metrics: Arc<Metrics>,
    access: Arc<AccessLog>,
    protocol: &'static str,
    uid: u32,
    gid: u32,
    name: String,
    /// The grid certificate's DN and primary FQAN, if any.
    dn: String,
    fqan: String,
    path: String,
    opened: Instant,
}

impl SessionLog {
    /// A session `who` opened on `path` at `opened`.
    pub fn new(
        metrics: Arc<Metrics>,
        access: Arc<AccessLog>,
        who: &Identity,
        path: &NsPath,
        opened: Instant,
    ) -> SessionLog {
        SessionLog {
            metrics,
            access,
            protocol: who.protocol,
            uid: who.uid,
            gid: who.gid,
            name: who.name.clone(),
            dn: who.x509.as_ref().map(|x| x.dn.clone()).unwrap_or_default(),
            fqan: who
                .x509
                .as_ref()
                .and_then(|x| x.fqans.first().cloned())
                .unwrap_or_default(),
            path: path.display(),
            opened,
        }
    }

    /// A write closed with `res` after `bytes`.
    pub(crate) fn write_closed<T>(&self, bytes: u64, res: &Result<T, CoreError>) {
        let (status, errno) = crate::error::outcome(res);
        self.record(true, bytes, status, errno);
    }

    /// A write given up before its close.
    pub(crate) fn write_aborted(&self, bytes: u64) {
        self.record(true, bytes, ABORTED, ECANCELED);
    }

    /// A read session closed after reading `bytes`, `in_line` of its
    /// reads served from memory on the request's own thread; `failed`: the
    /// first error a read of it met (the session's outcome).
    pub(crate) fn read_closed(
        &self,
        bytes: u64,
        in_line: u64,
        failed: Option<tessera_types::ErrorKind>,
    ) {
        self.metrics.read_in_line(self.protocol, in_line);
        match failed {
            None => self.record(false, bytes, "ok", 0),
            Some(k) => self.record(false, bytes, k.as_str(), k.errno()),
        }
    }

    /// What reads of a session had to work around: groups rebuilt, and
    /// stripe requests given up for slowness.
    pub(crate) fn read_events(&self, degraded_groups: u64, hedged: u64) {
        self.metrics.data.degraded_groups.inc_by(degraded_groups);
        self.metrics.data.hedged_reads.inc_by(hedged);
    }

    fn record(&self, write: bool, bytes: u64, status: &'static str, errno: i32) {
        let op = if write { "close_write" } else { "close_read" };
        let secs = self.opened.elapsed().as_secs_f64();
        self.metrics.observe(self.protocol, op, status, secs);
        self.metrics.transferred(self.protocol, write, bytes);
        self.access.record(&AccessRecord {
            protocol: self.protocol,
            op,
            path: &self.path,
            ruid: self.uid,
            rgid: self.gid,
            name: &self.name,
            dn: &self.dn,
            fqan: &self.fqan,
            status,
            errno,
            duration_s: secs,
            bytes,
        });
    }
}
