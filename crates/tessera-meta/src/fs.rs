//! The filesystem registry: where stripes can go (EOS `fs`). Records live
//! in the `fs` column family, keyed by the filesystem id (u32 BE). Spaces
//! are the set of `space` names the records use.

use crate::error::{corrupt, MetaError};
use crate::keys::CF_FS;
use crate::store::MetaStore;
use prost::Message;

/// The key of the lowest filesystem id never handed out (not a u32 key,
/// so no record).
const NEXT_ID_KEY: &[u8] = b"next-id";

/// EOS `configstatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FsConfigStatus {
    /// Read and write.
    Rw,
    /// Read only: no new stripes.
    Ro,
    /// Being drained: no new stripes; its stripes move elsewhere.
    Drain,
    /// Drained: holds nothing.
    Empty,
    /// Not used at all (reads avoid it too).
    Off,
}

impl FsConfigStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            FsConfigStatus::Rw => "rw",
            FsConfigStatus::Ro => "ro",
            FsConfigStatus::Drain => "drain",
            FsConfigStatus::Empty => "empty",
            FsConfigStatus::Off => "off",
        }
    }

    pub fn parse(s: &str) -> Option<FsConfigStatus> {
        match s {
            "rw" => Some(FsConfigStatus::Rw),
            "ro" => Some(FsConfigStatus::Ro),
            "drain" => Some(FsConfigStatus::Drain),
            "empty" => Some(FsConfigStatus::Empty),
            "off" => Some(FsConfigStatus::Off),
            _ => None,
        }
    }
}

/// One registered filesystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsRecord {
    pub id: u32,
    /// Human label, unique.
    pub label: String,
    /// How to reach it: `folder:/mnt/cephfs1/tessera` (a mount or local
    /// folder) or `cephfs:<conf path>:<fs name>:<dir>` (native client).
    pub locator: String,
    /// Failure domain: the Ceph cluster / CephFS instance and the host it
    /// depends on. Two filesystems with the same domain never hold two
    /// stripes of one file.
    pub domain: String,
    /// Placement pool.
    pub space: String,
    pub status: FsConfigStatus,
    /// The identity written into the filesystem's marker when it was
    /// added (random, hex): a root whose marker says otherwise is not this
    /// filesystem. Empty for filesystems added before markers had one.
    pub uuid: String,
}

#[derive(Clone, PartialEq, Message)]
struct FsV1 {
    #[prost(string, tag = "1")]
    label: String,
    #[prost(string, tag = "2")]
    locator: String,
    #[prost(string, tag = "3")]
    domain: String,
    #[prost(string, tag = "4")]
    space: String,
    #[prost(string, tag = "5")]
    status: String,
    #[prost(string, tag = "6")]
    uuid: String,
}

const FS_V1: u8 = 1;

fn encode(r: &FsRecord) -> Vec<u8> {
    let m = FsV1 {
        label: r.label.clone(),
        locator: r.locator.clone(),
        domain: r.domain.clone(),
        space: r.space.clone(),
        status: r.status.as_str().to_string(),
        uuid: r.uuid.clone(),
    };
    let mut out = vec![FS_V1];
    m.encode(&mut out).expect("Vec has room");
    out
}

fn decode(id: u32, raw: &[u8]) -> Result<FsRecord, MetaError> {
    let what = format!("fs {id}");
    match raw.first() {
        Some(&FS_V1) => {}
        Some(&v) => {
            return Err(MetaError::Version {
                what,
                version: v,
                max: FS_V1,
            });
        }
        None => return Err(corrupt(what, "empty")),
    }
    let m = FsV1::decode(&raw[1..]).map_err(|e| corrupt(&what, e))?;
    Ok(FsRecord {
        id,
        label: m.label,
        locator: m.locator,
        domain: m.domain,
        space: m.space,
        status: FsConfigStatus::parse(&m.status).ok_or_else(|| corrupt(&what, "status"))?,
        uuid: m.uuid,
    })
}

impl MetaStore {
    /// Every registered filesystem, by id.
    pub fn fs_list(&self) -> Result<Vec<FsRecord>, MetaError> {
        let h = self.db.cf_handle(CF_FS).expect("cf exists");
        let mut out = Vec::new();
        for item in self.db.iterator_cf(h, rocksdb::IteratorMode::Start) {
            let (k, v) = item?;
            if &k[..] == NEXT_ID_KEY {
                continue;
            }
            let id = u32::from_be_bytes(k[..].try_into().map_err(|_| corrupt("fs key", "length"))?);
            out.push(decode(id, &v)?);
        }
        Ok(out)
    }

    /// The lowest id never handed out (ids are never reused: a removed
    /// filesystem's stripes, found again, must not pass for another's).
    fn fs_next_id(&self, all: &[FsRecord]) -> Result<u32, MetaError> {
        let h = self.db.cf_handle(CF_FS).expect("cf exists");
        let kept = match self.db.get_cf(h, NEXT_ID_KEY)? {
            Some(v) => u32::from_be_bytes(
                v[..]
                    .try_into()
                    .map_err(|_| corrupt("fs next id", "length"))?,
            ),
            None => 1,
        };
        let used = all.iter().map(|f| f.id + 1).max().unwrap_or(1);
        Ok(kept.max(used))
    }

    /// Register a filesystem; id 0 picks the next free id. Labels are unique.
    pub fn fs_add(&self, mut r: FsRecord) -> Result<FsRecord, MetaError> {
        let _st = self.lock();
        let all = self.fs_list()?;
        if r.label.is_empty() || r.locator.is_empty() || r.domain.is_empty() || r.space.is_empty() {
            return Err(MetaError::Invalid(
                "label, locator, domain and space are required".into(),
            ));
        }
        if all.iter().any(|f| f.label == r.label) {
            return Err(MetaError::AlreadyExists(format!(
                "filesystem label {}",
                r.label
            )));
        }
        let next = self.fs_next_id(&all)?;
        if r.id == 0 {
            r.id = next;
        } else if all.iter().any(|f| f.id == r.id) || r.id < next {
            return Err(MetaError::AlreadyExists(format!(
                "filesystem id {} (ids are never reused; the next is {next})",
                r.id
            )));
        }
        // The high-water mark and the record in one batch.
        let h = self.db.cf_handle(CF_FS).expect("cf exists");
        let mut b = rocksdb::WriteBatch::default();
        b.put_cf(h, NEXT_ID_KEY, (r.id + 1).max(next).to_be_bytes());
        b.put_cf(h, r.id.to_be_bytes(), encode(&r));
        self.write_synced(b)?;
        Ok(r)
    }

    /// Replace a filesystem's record (same id).
    pub fn fs_update(&self, r: &FsRecord) -> Result<(), MetaError> {
        let _st = self.lock();
        let all = self.fs_list()?;
        if !all.iter().any(|f| f.id == r.id) {
            return Err(MetaError::NotFound(format!("filesystem {}", r.id)));
        }
        if all.iter().any(|f| f.label == r.label && f.id != r.id) {
            return Err(MetaError::AlreadyExists(format!(
                "filesystem label {}",
                r.label
            )));
        }
        self.fs_put(r)
    }

    /// Forget a filesystem. Only an `empty` or `off` one may go.
    pub fn fs_remove(&self, id: u32) -> Result<FsRecord, MetaError> {
        let _st = self.lock();
        let r = self
            .fs_list()?
            .into_iter()
            .find(|f| f.id == id)
            .ok_or_else(|| MetaError::NotFound(format!("filesystem {id}")))?;
        if !matches!(r.status, FsConfigStatus::Empty | FsConfigStatus::Off) {
            return Err(MetaError::Busy(format!(
                "filesystem {id} is {}: drain it first (tessera fs drain {id}); a lost one: set \
                 it off and repair its files (tessera fsck repair --apply), then remove it",
                r.status.as_str()
            )));
        }
        let h = self.db.cf_handle(CF_FS).expect("cf exists");
        let mut b = rocksdb::WriteBatch::default();
        b.delete_cf(h, id.to_be_bytes());
        self.write_synced(b)?;
        Ok(r)
    }

    /// Drop filesystem `id`'s record whatever its status (a registration
    /// that did not complete); its id stays used.
    pub fn fs_forget(&self, id: u32) -> Result<(), MetaError> {
        let _st = self.lock();
        let h = self.db.cf_handle(CF_FS).expect("cf exists");
        let mut b = rocksdb::WriteBatch::default();
        b.delete_cf(h, id.to_be_bytes());
        self.write_synced(b)
    }

    fn fs_put(&self, r: &FsRecord) -> Result<(), MetaError> {
        let h = self.db.cf_handle(CF_FS).expect("cf exists");
        let mut b = rocksdb::WriteBatch::default();
        b.put_cf(h, r.id.to_be_bytes(), encode(r));
        self.write_synced(b)
    }
}
