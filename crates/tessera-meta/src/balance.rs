//! The balancer's settings (`tessera balance start|stop`), kept in the
//! namespace (default column family, key `balance/settings`) so that a
//! restart and every metadata node see them; what they mean is the
//! core's (`tessera_core`'s `balance.rs`).

use crate::error::{corrupt, MetaError};
use crate::keys::CF_META;
use crate::store::MetaStore;
use prost::Message;

const KEY: &[u8] = b"balance/settings";
const BALANCE_V1: u8 = 1;

/// The balancer's settings as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BalanceRecord {
    pub enabled: bool,
    /// Filesystems of a space count as balanced when their fill levels
    /// are within this many thousandths of each other.
    pub threshold_milli: u32,
    /// Bytes per second the moves may take (0: no limit).
    pub rate_bytes: u64,
    /// Files moved at once.
    pub parallel: u32,
    /// How long a moved stripe's old copy stays for readers that opened
    /// the file before the move (seconds).
    pub grace_secs: u32,
}

impl Default for BalanceRecord {
    fn default() -> Self {
        BalanceRecord {
            enabled: true,
            threshold_milli: 100,
            rate_bytes: 0,
            parallel: 2,
            grace_secs: 60,
        }
    }
}

#[derive(Clone, PartialEq, Message)]
struct BalanceV1 {
    #[prost(bool, tag = "1")]
    enabled: bool,
    #[prost(uint32, tag = "2")]
    threshold_milli: u32,
    #[prost(uint64, tag = "3")]
    rate_bytes: u64,
    #[prost(uint32, tag = "4")]
    parallel: u32,
    #[prost(uint32, tag = "5")]
    grace_secs: u32,
}

impl MetaStore {
    /// The balancer's settings (the defaults until set).
    pub fn balance_settings(&self) -> Result<BalanceRecord, MetaError> {
        let h = self.db.cf_handle(CF_META).expect("cf exists");
        let Some(raw) = self.db.get_cf(h, KEY)? else {
            return Ok(BalanceRecord::default());
        };
        let what = "balancer settings";
        match raw.first() {
            Some(&BALANCE_V1) => {}
            Some(&v) => {
                return Err(MetaError::Version {
                    what: what.into(),
                    version: v,
                    max: BALANCE_V1,
                })
            }
            None => return Err(corrupt(what, "empty")),
        }
        let m = BalanceV1::decode(&raw[1..]).map_err(|e| corrupt(what, e))?;
        Ok(BalanceRecord {
            enabled: m.enabled,
            threshold_milli: m.threshold_milli,
            rate_bytes: m.rate_bytes,
            parallel: m.parallel,
            grace_secs: m.grace_secs,
        })
    }

    pub fn set_balance_settings(&self, r: &BalanceRecord) -> Result<(), MetaError> {
        self.may_write()?;
        let m = BalanceV1 {
            enabled: r.enabled,
            threshold_milli: r.threshold_milli,
            rate_bytes: r.rate_bytes,
            parallel: r.parallel,
            grace_secs: r.grace_secs,
        };
        let mut v = vec![BALANCE_V1];
        m.encode(&mut v).expect("Vec has room");
        let _st = self.lock();
        let h = self.db.cf_handle(CF_META).expect("cf exists");
        let mut b = rocksdb::WriteBatch::default();
        b.put_cf(h, KEY, v);
        self.write_synced(b)
    }
}
