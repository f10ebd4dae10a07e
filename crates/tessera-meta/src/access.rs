//! Access rules (EOS `access`): bans, allow lists, stalls and redirects an
//! operator sets at run time. Kept in the namespace (the default column
//! family, keys `access/<id u64 BE>`) so that a restart and every node
//! sharing the store see them; what they mean is the core's
//! (`tessera_core::access`), the store only keeps them.

use crate::error::{corrupt, MetaError};
use crate::keys::CF_META;
use crate::store::MetaStore;
use prost::Message;

const PREFIX: &[u8] = b"access/";
const NEXT_ID_KEY: &[u8] = b"access-next-id";
const RULE_V1: u8 = 1;

/// One access rule, as set.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AccessRule {
    /// Given by the store (`access_add`); never reused.
    pub id: u64,
    /// `ban`, `allow`, `stall` or `redirect`.
    pub action: String,
    /// Who it applies to: `user:NAME`, `group:NAME`, `host:ADDR[/LEN]`,
    /// `issuer:URL`, `subject:SUB`, `fqan:/vo/...`, or `all`.
    pub subject: String,
    /// Only requests under this path (empty: everywhere).
    pub path: String,
    /// Only requests that change something.
    pub writes_only: bool,
    /// The wait told to the client (ban, stall), seconds.
    pub wait_secs: u32,
    /// Where a redirect sends the client (`host:port`).
    pub target: String,
    /// Who set it (the admin's identity) and when (Unix seconds).
    pub set_by: String,
    pub set_at: u64,
    /// When it stops applying (Unix seconds; 0: never).
    pub expires_at: u64,
    pub comment: String,
    /// A limit's class of requests: `open-read`, `open-write`, `stat`,
    /// `list`, `delete`, `tpc` or `all`.
    pub ops: String,
    /// A limit's rate, in thousandths of a request per second, and its
    /// burst (requests).
    pub rate_milli: u64,
    pub burst: u32,
}

#[derive(Clone, PartialEq, Message)]
struct RuleV1 {
    #[prost(string, tag = "1")]
    action: String,
    #[prost(string, tag = "2")]
    subject: String,
    #[prost(string, tag = "3")]
    path: String,
    #[prost(bool, tag = "4")]
    writes_only: bool,
    #[prost(uint32, tag = "5")]
    wait_secs: u32,
    #[prost(string, tag = "6")]
    target: String,
    #[prost(string, tag = "7")]
    set_by: String,
    #[prost(uint64, tag = "8")]
    set_at: u64,
    #[prost(uint64, tag = "9")]
    expires_at: u64,
    #[prost(string, tag = "10")]
    comment: String,
    #[prost(string, tag = "11")]
    ops: String,
    #[prost(uint64, tag = "12")]
    rate_milli: u64,
    #[prost(uint32, tag = "13")]
    burst: u32,
}

fn encode(r: &AccessRule) -> Vec<u8> {
    let m = RuleV1 {
        action: r.action.clone(),
        subject: r.subject.clone(),
        path: r.path.clone(),
        writes_only: r.writes_only,
        wait_secs: r.wait_secs,
        target: r.target.clone(),
        set_by: r.set_by.clone(),
        set_at: r.set_at,
        expires_at: r.expires_at,
        comment: r.comment.clone(),
        ops: r.ops.clone(),
        rate_milli: r.rate_milli,
        burst: r.burst,
    };
    let mut out = vec![RULE_V1];
    m.encode(&mut out).expect("Vec has room");
    out
}

fn decode(id: u64, raw: &[u8]) -> Result<AccessRule, MetaError> {
    let what = format!("access rule {id}");
    match raw.first() {
        Some(&RULE_V1) => {}
        Some(&v) => {
            return Err(MetaError::Version {
                what,
                version: v,
                max: RULE_V1,
            })
        }
        None => return Err(corrupt(what, "empty")),
    }
    let m = RuleV1::decode(&raw[1..]).map_err(|e| corrupt(&what, e))?;
    Ok(AccessRule {
        id,
        action: m.action,
        subject: m.subject,
        path: m.path,
        writes_only: m.writes_only,
        wait_secs: m.wait_secs,
        target: m.target,
        set_by: m.set_by,
        set_at: m.set_at,
        expires_at: m.expires_at,
        comment: m.comment,
        ops: m.ops,
        rate_milli: m.rate_milli,
        burst: m.burst,
    })
}

fn key(id: u64) -> Vec<u8> {
    let mut k = PREFIX.to_vec();
    k.extend_from_slice(&id.to_be_bytes());
    k
}

impl MetaStore {
    /// Every access rule, by id.
    pub fn access_list(&self) -> Result<Vec<AccessRule>, MetaError> {
        let h = self.db.cf_handle(CF_META).expect("cf exists");
        let mut out = Vec::new();
        let it = self.db.iterator_cf(
            h,
            rocksdb::IteratorMode::From(PREFIX, rocksdb::Direction::Forward),
        );
        for item in it {
            let (k, v) = item?;
            let Some(id) = k.strip_prefix(PREFIX) else {
                break;
            };
            let id = u64::from_be_bytes(
                id.try_into()
                    .map_err(|_| corrupt("access rule key", "length"))?,
            );
            out.push(decode(id, &v)?);
        }
        Ok(out)
    }

    /// Keep `r` under a new id (its `id` is ignored) and give it back.
    pub fn access_add(&self, mut r: AccessRule) -> Result<AccessRule, MetaError> {
        if r.action.is_empty() || r.subject.is_empty() {
            return Err(MetaError::Invalid(
                "an access rule needs an action and a subject".into(),
            ));
        }
        let _st = self.lock();
        let h = self.db.cf_handle(CF_META).expect("cf exists");
        let next = match self.db.get_cf(h, NEXT_ID_KEY)? {
            Some(v) => u64::from_be_bytes(
                v[..]
                    .try_into()
                    .map_err(|_| corrupt("access next id", "length"))?,
            ),
            None => 1,
        };
        r.id = next;
        let mut b = rocksdb::WriteBatch::default();
        b.put_cf(h, NEXT_ID_KEY, (next + 1).to_be_bytes());
        b.put_cf(h, key(r.id), encode(&r));
        self.write_synced(b)?;
        Ok(r)
    }

    /// Remove rule `id` (`NotFound` when there is none).
    pub fn access_remove(&self, id: u64) -> Result<AccessRule, MetaError> {
        let _st = self.lock();
        let h = self.db.cf_handle(CF_META).expect("cf exists");
        let Some(raw) = self.db.get_cf(h, key(id))? else {
            return Err(MetaError::NotFound(format!("access rule {id}")));
        };
        let r = decode(id, &raw)?;
        let mut b = rocksdb::WriteBatch::default();
        b.delete_cf(h, key(id));
        self.write_synced(b)?;
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use crate::{MetaOptions, MetaStore};

    use super::AccessRule;

    #[test]
    fn rules_are_kept_numbered_and_removed() {
        let d = tempfile::tempdir().unwrap();
        let m = MetaStore::open(d.path(), MetaOptions::default()).unwrap();
        assert!(m.access_list().unwrap().is_empty());
        let ban = AccessRule {
            action: "ban".into(),
            subject: "user:alice".into(),
            wait_secs: 30,
            set_by: "root".into(),
            set_at: 7,
            ..Default::default()
        };
        let a = m.access_add(ban.clone()).unwrap();
        let b = m
            .access_add(AccessRule {
                action: "stall".into(),
                subject: "all".into(),
                path: "/atlas".into(),
                writes_only: true,
                ..Default::default()
            })
            .unwrap();
        assert_eq!((a.id, b.id), (1, 2));
        assert_eq!(m.access_list().unwrap(), vec![a.clone(), b.clone()]);
        assert!(m.access_add(AccessRule::default()).is_err(), "no action");
        m.access_remove(1).unwrap();
        assert!(m.access_remove(1).is_err(), "gone");
        // Ids are never reused, and the rules survive a reopen.
        let c = m.access_add(ban).unwrap();
        assert_eq!(c.id, 3);
        drop(m);
        let m = MetaStore::open(d.path(), MetaOptions::default()).unwrap();
        assert_eq!(m.access_list().unwrap(), vec![b, c]);
    }
}
