//! Stripes that reads found damaged (missing, unreadable, corrupt or slow),
//! kept until repair has looked at their file. Records live in the
//! `damage` column family, keyed by `fid (8) ++ stripe index (1)`; they are
//! advice for fsck and repair, not namespace state, so they are written
//! without fsync and outside namespace batches.

use crate::error::{corrupt, MetaError};
use crate::keys::{prefix_end, CF_DAMAGE};
use crate::store::MetaStore;
use prost::Message;

/// What reads ran into on one stripe of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DamageRecord {
    pub fid: u64,
    pub stripe: u8,
    /// The filesystem that held the stripe when it was read (0: unknown).
    pub fsid: u32,
    /// The last thing that went wrong.
    pub what: String,
    pub first_ns: u64,
    pub last_ns: u64,
    /// How many reads ran into it.
    pub count: u64,
}

#[derive(Clone, PartialEq, Message)]
struct DamageV1 {
    #[prost(uint32, tag = "1")]
    fsid: u32,
    #[prost(string, tag = "2")]
    what: String,
    #[prost(uint64, tag = "3")]
    first_ns: u64,
    #[prost(uint64, tag = "4")]
    last_ns: u64,
    #[prost(uint64, tag = "5")]
    count: u64,
}

const DAMAGE_V1: u8 = 1;

/// Longest `what` kept (a backend's error text).
const WHAT_MAX: usize = 512;

fn key(fid: u64, stripe: u8) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[..8].copy_from_slice(&fid.to_be_bytes());
    k[8] = stripe;
    k
}

fn decode(k: &[u8], raw: &[u8]) -> Result<DamageRecord, MetaError> {
    if k.len() != 9 {
        return Err(corrupt("damage key", "length"));
    }
    let fid = u64::from_be_bytes(k[..8].try_into().expect("8 bytes"));
    let what = format!("damage {fid}/{}", k[8]);
    match raw.first() {
        Some(&DAMAGE_V1) => {}
        Some(&v) => {
            return Err(MetaError::Version {
                what,
                version: v,
                max: DAMAGE_V1,
            })
        }
        None => return Err(corrupt(what, "empty")),
    }
    let m = DamageV1::decode(&raw[1..]).map_err(|e| corrupt(&what, e))?;
    Ok(DamageRecord {
        fid,
        stripe: k[8],
        fsid: m.fsid,
        what: m.what,
        first_ns: m.first_ns,
        last_ns: m.last_ns,
        count: m.count,
    })
}

impl MetaStore {
    /// Note that a read ran into `what` on stripe `stripe` of file `fid`.
    pub fn damage_note(
        &self,
        fid: u64,
        stripe: u8,
        fsid: u32,
        what: &str,
        now_ns: u64,
    ) -> Result<(), MetaError> {
        let h = self.db.cf_handle(CF_DAMAGE).expect("cf exists");
        let k = key(fid, stripe);
        let _st = self.lock();
        let mut m = match self.db.get_cf(h, k)? {
            Some(raw) => {
                let r = decode(&k, &raw)?;
                DamageV1 {
                    fsid: r.fsid,
                    what: r.what,
                    first_ns: r.first_ns,
                    last_ns: r.last_ns,
                    count: r.count,
                }
            }
            None => DamageV1 {
                first_ns: now_ns,
                ..DamageV1::default()
            },
        };
        m.fsid = fsid;
        m.what = what.chars().take(WHAT_MAX).collect();
        m.last_ns = now_ns;
        m.count = m.count.saturating_add(1);
        let mut v = vec![DAMAGE_V1];
        m.encode(&mut v).expect("Vec has room");
        self.may_change()?;
        self.db.put_cf(h, k, v)?;
        Ok(())
    }

    /// Up to `limit` records of files after `after_fid` (0: from the
    /// start), in fid then stripe order.
    pub fn damage_list(
        &self,
        after_fid: u64,
        limit: usize,
    ) -> Result<Vec<DamageRecord>, MetaError> {
        let h = self.db.cf_handle(CF_DAMAGE).expect("cf exists");
        let from = if after_fid == 0 {
            vec![]
        } else {
            prefix_end(after_fid)
        };
        let mut out = Vec::new();
        let it = self.db.iterator_cf(
            h,
            rocksdb::IteratorMode::From(&from, rocksdb::Direction::Forward),
        );
        for item in it {
            if out.len() >= limit {
                break;
            }
            let (k, v) = item?;
            out.push(decode(&k, &v)?);
        }
        Ok(out)
    }

    /// Forget the records of file `fid` last noted at or before `up_to_ns`
    /// (repair has dealt with what was known when it looked; damage a
    /// read found after that stays).
    pub fn damage_clear(&self, fid: u64, up_to_ns: u64) -> Result<(), MetaError> {
        let h = self.db.cf_handle(CF_DAMAGE).expect("cf exists");
        let _st = self.lock();
        let from = fid.to_be_bytes();
        let to = prefix_end(fid);
        let it = self.db.iterator_cf(
            h,
            rocksdb::IteratorMode::From(&from, rocksdb::Direction::Forward),
        );
        let mut batch = rocksdb::WriteBatch::default();
        for item in it {
            let (k, v) = item?;
            if k[..] >= to[..] {
                break;
            }
            if decode(&k, &v)
                .map(|r| r.last_ns <= up_to_ns)
                .unwrap_or(true)
            {
                batch.delete_cf(h, k);
            }
        }
        self.may_change()?;
        self.db.write(batch)?;
        Ok(())
    }
}
