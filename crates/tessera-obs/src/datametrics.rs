//! Metrics of the data layer's health: filesystems (state, probe time,
//! space), degraded and hedged reads, repair, drain and fsck's findings.
//! Part of [`crate::Metrics`] (one registry).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use std::sync::atomic::AtomicU64;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FsLabels {
    pub fs: String,
    pub label: String,
}

type GaugeU = Gauge<u64, AtomicU64>;
type GaugeF = Gauge<f64, AtomicU64>;

pub struct DataMetrics {
    /// Each filesystem's health (0 ok, 1 degraded, 2 unresponsive), set by
    /// the probes.
    pub fs_state: Family<FsLabels, GaugeU>,
    pub fs_probe_seconds: Family<FsLabels, GaugeF>,
    pub fs_free_bytes: Family<FsLabels, GaugeU>,
    pub fs_capacity_bytes: Family<FsLabels, GaugeU>,
    /// Groups that reads rebuilt from parity or another copy.
    pub degraded_groups: Counter,
    /// Stripe requests given up for slowness (the group was rebuilt
    /// without them).
    pub hedged_reads: Counter,
    pub repair_stripes: Counter,
    pub repair_bytes: Counter,
    pub repair_failures: Counter,
    pub drain_stripes: Family<FsLabels, Counter>,
    /// What the last fsck scan found.
    pub fsck_orphans: GaugeU,
    pub fsck_files_with_issues: GaugeU,
    pub fsck_unrecoverable: GaugeU,
    pub fsck_last_scan: GaugeU,
    /// Files reads found damaged, not yet repaired (at the last scan or
    /// background repair).
    pub damaged_files: GaugeU,
}

impl DataMetrics {
    pub fn register(r: &mut Registry) -> DataMetrics {
        let m = DataMetrics {
            fs_state: Family::default(),
            fs_probe_seconds: Family::default(),
            fs_free_bytes: Family::default(),
            fs_capacity_bytes: Family::default(),
            degraded_groups: Counter::default(),
            hedged_reads: Counter::default(),
            repair_stripes: Counter::default(),
            repair_bytes: Counter::default(),
            repair_failures: Counter::default(),
            drain_stripes: Family::default(),
            fsck_orphans: GaugeU::default(),
            fsck_files_with_issues: GaugeU::default(),
            fsck_unrecoverable: GaugeU::default(),
            fsck_last_scan: GaugeU::default(),
            damaged_files: GaugeU::default(),
        };
        r.register(
            "fs_state",
            "Filesystem health as this process sees it: 0 ok, 1 degraded (an I/O error; no new stripes), 2 unresponsive (a probe past its deadline)",
            m.fs_state.clone(),
        );
        r.register_with_unit(
            "fs_probe",
            "How long the last finished health probe of a filesystem took",
            Unit::Seconds,
            m.fs_probe_seconds.clone(),
        );
        r.register_with_unit(
            "fs_free",
            "Free space of a filesystem at its last probe",
            Unit::Bytes,
            m.fs_free_bytes.clone(),
        );
        r.register_with_unit(
            "fs_capacity",
            "Size of a filesystem at its last probe",
            Unit::Bytes,
            m.fs_capacity_bytes.clone(),
        );
        r.register(
            "degraded_read_groups",
            "Groups reads rebuilt because a stripe's block was missing, corrupt, unreadable or slow",
            m.degraded_groups.clone(),
        );
        r.register(
            "hedged_reads",
            "Stripe requests a read stopped waiting for (slower than the slow threshold); their groups were rebuilt from the others",
            m.hedged_reads.clone(),
        );
        r.register(
            "repair_stripes",
            "Stripes rebuilt or moved by repair (fsck repair, the background repair)",
            m.repair_stripes.clone(),
        );
        r.register_with_unit(
            "repair",
            "File bytes read to rebuild stripes",
            Unit::Bytes,
            m.repair_bytes.clone(),
        );
        r.register(
            "repair_failures",
            "Files a repair could not rebuild (no target, beyond repair, checksum)",
            m.repair_failures.clone(),
        );
        r.register(
            "drain_stripes",
            "Stripes moved off a draining filesystem",
            m.drain_stripes.clone(),
        );
        r.register(
            "fsck_orphans",
            "Orphan stripes the last fsck scan found",
            m.fsck_orphans.clone(),
        );
        r.register(
            "fsck_files_with_issues",
            "Files with missing, damaged or unavailable stripes at the last fsck scan",
            m.fsck_files_with_issues.clone(),
        );
        r.register(
            "fsck_unrecoverable",
            "Files beyond repair at the last fsck scan",
            m.fsck_unrecoverable.clone(),
        );
        r.register(
            "fsck_last_scan_timestamp",
            "When the last fsck scan ran (seconds since the epoch)",
            m.fsck_last_scan.clone(),
        );
        r.register(
            "damaged_files",
            "Files reads found damaged that repair has not dealt with yet",
            m.damaged_files.clone(),
        );
        m
    }
}
