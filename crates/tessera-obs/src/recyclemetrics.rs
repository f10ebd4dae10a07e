//! Metrics of the recycle bins (issue 39): what each bin holds, what went
//! in, came back and was purged. Part of [`crate::Metrics`].

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BinLabels {
    /// The bin's name (`sys.recycle`; bins are set by admins, so few).
    pub bin: String,
}

pub struct RecycleMetrics {
    /// Bytes, inodes and entries each bin holds (refreshed by every purge
    /// round).
    pub bytes: Family<BinLabels, Gauge<u64, AtomicU64>>,
    pub inodes: Family<BinLabels, Gauge<u64, AtomicU64>>,
    pub entries: Family<BinLabels, Gauge<u64, AtomicU64>>,
    /// The volume cap of each bin (0: none).
    pub max_bytes: Family<BinLabels, Gauge<u64, AtomicU64>>,
    /// Deletes that went into a bin, restores, and bytes purged.
    pub moved: Counter,
    pub restored: Counter,
    pub purged_bytes: Counter,
    pub purged_entries: Counter,
}

impl RecycleMetrics {
    pub fn register(r: &mut Registry) -> RecycleMetrics {
        let m = RecycleMetrics {
            bytes: Family::default(),
            inodes: Family::default(),
            entries: Family::default(),
            max_bytes: Family::default(),
            moved: Counter::default(),
            restored: Counter::default(),
            purged_bytes: Counter::default(),
            purged_entries: Counter::default(),
        };
        let gauges = [
            ("recycle_bytes", "Bytes a recycle bin holds", &m.bytes),
            ("recycle_inodes", "Inodes a recycle bin holds", &m.inodes),
            (
                "recycle_entries",
                "Entries (deleted files and trees) a recycle bin holds",
                &m.entries,
            ),
            (
                "recycle_max_bytes",
                "A recycle bin's volume cap (0: none)",
                &m.max_bytes,
            ),
        ];
        for (name, help, g) in gauges {
            r.register(name, help, g.clone());
        }
        r.register(
            "recycle_moved",
            "Deletes that went into a recycle bin (one per entry: a file or a whole tree)",
            m.moved.clone(),
        );
        r.register(
            "recycle_restored",
            "Recycle bin entries restored",
            m.restored.clone(),
        );
        r.register(
            "recycle_purged_bytes",
            "Bytes purged from recycle bins (by age, volume or on request)",
            m.purged_bytes.clone(),
        );
        r.register(
            "recycle_purged_entries",
            "Recycle bin entries purged",
            m.purged_entries.clone(),
        );
        m
    }

    /// One bin's account as it is now.
    pub fn set_bin(&self, bin: &str, bytes: u64, inodes: u64, entries: u64, max_bytes: u64) {
        let l = BinLabels {
            bin: bin.to_string(),
        };
        self.bytes.get_or_create(&l).set(bytes);
        self.inodes.get_or_create(&l).set(inodes);
        self.entries.get_or_create(&l).set(entries);
        self.max_bytes.get_or_create(&l).set(max_bytes);
    }
}
