//! The recycle bin (EOS `recycle`): a delete under a directory whose
//! nearest ancestor (or itself) carries `sys.recycle = <bin>` moves the
//! entry, a file or a whole tree, into that bin in the same transaction
//! instead of removing it. The entry keeps its inode (owner, mode, ACLs,
//! attributes, stripes) and is no longer reachable from `/`; its bytes and
//! inodes leave the quota node it was in and count in the bin's own
//! account, which has a volume cap and a lifetime. Restore puts it back
//! (charging quota again, checked); purge removes it a bounded piece at a
//! time (`purge.rs`), and only then are its stripes removed.
//!
//! Records (default column family, `docs/meta-schema.md`):
//! `recycle/bin/<name>` the bin's settings and account,
//! `recycle/e/<id u64 BE>` one entry (the id is its top inode's number),
//! `recycle/t/<name> 0x00 <deleted ns u64 BE> <id u64 BE>` the bin's
//! entries oldest first, `recycle/u/<uid u32 BE> <id u64 BE>` each owner's
//! entries (empty values).

mod check;
mod moves;
mod purge;
mod restore;

use crate::error::{corrupt, MetaError};
use crate::keys::CF_META;
use crate::read::Get;
use crate::records::EntryKind;
use crate::store::{MetaStore, ROOT_INO};
use crate::txn::{Cf, Txn};
use prost::Message;
use tessera_types::Identity;

pub use moves::Removal;
pub use purge::PurgeStep;
pub use restore::Restored;

/// The attribute that sends deletes under a directory to a bin.
pub const RECYCLE_ATTR: &[u8] = b"sys.recycle";
const BIN_PREFIX: &[u8] = b"recycle/bin/";
const ENTRY_PREFIX: &[u8] = b"recycle/e/";
const TIME_PREFIX: &[u8] = b"recycle/t/";
const OWNER_PREFIX: &[u8] = b"recycle/u/";
const BIN_V1: u8 = 1;
const ENTRY_V1: u8 = 1;
/// A bin nobody configured keeps entries this long (30 days, EOS's
/// usual setting) with no volume cap.
pub const DEFAULT_LIFETIME_SECS: u64 = 30 * 86_400;

/// A recycle bin: its settings and what it holds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecycleBin {
    pub name: String,
    /// Entries older than this are purged (seconds; 0: kept until the
    /// volume cap or an explicit purge removes them).
    pub lifetime_secs: u64,
    /// The bin's volume cap in bytes (0: none); past it the oldest
    /// entries are purged first.
    pub max_bytes: u64,
    /// Its cap on inodes (0: none): deleted empty files cost no bytes
    /// but must not pile up either.
    pub max_inodes: u64,
    pub used_bytes: u64,
    pub used_inodes: u64,
    pub entries: u64,
    pub set_by: String,
    pub set_at: u64,
}

impl RecycleBin {
    /// Whether holding `bytes` and `inodes` is past either cap.
    pub fn over_cap(&self, bytes: u64, inodes: u64) -> bool {
        (self.max_bytes > 0 && bytes > self.max_bytes)
            || (self.max_inodes > 0 && inodes > self.max_inodes)
    }
}

/// One deleted file or tree in a bin.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecycleEntry {
    /// The inode number of the entry's top (file or directory).
    pub id: u64,
    pub bin: String,
    /// Where it was when deleted.
    pub path: String,
    pub kind: EntryKind,
    /// Owner of the top entry (who may restore or purge it).
    pub uid: u32,
    pub gid: u32,
    /// Who deleted it, and when (ns since the epoch).
    pub deleted_by: String,
    pub deleted_ns: i64,
    /// What it holds: bytes (as quota counts them: sizes and `user.*`
    /// attributes) and inodes, the top included.
    pub bytes: u64,
    pub inodes: u64,
    /// A purge has started (part of a tree may be gone already): it can
    /// no longer be restored.
    pub purging: bool,
}

#[derive(Clone, PartialEq, Message)]
struct BinV1 {
    #[prost(uint64, tag = "1")]
    lifetime_secs: u64,
    #[prost(uint64, tag = "2")]
    max_bytes: u64,
    #[prost(uint64, tag = "3")]
    used_bytes: u64,
    #[prost(uint64, tag = "4")]
    used_inodes: u64,
    #[prost(uint64, tag = "5")]
    entries: u64,
    #[prost(string, tag = "6")]
    set_by: String,
    #[prost(uint64, tag = "7")]
    set_at: u64,
    #[prost(uint64, tag = "8")]
    max_inodes: u64,
}

#[derive(Clone, PartialEq, Message)]
struct EntryV1 {
    #[prost(string, tag = "1")]
    bin: String,
    #[prost(string, tag = "2")]
    path: String,
    #[prost(bool, tag = "3")]
    is_dir: bool,
    #[prost(uint32, tag = "4")]
    uid: u32,
    #[prost(uint32, tag = "5")]
    gid: u32,
    #[prost(string, tag = "6")]
    deleted_by: String,
    #[prost(int64, tag = "7")]
    deleted_ns: i64,
    #[prost(uint64, tag = "8")]
    bytes: u64,
    #[prost(uint64, tag = "9")]
    inodes: u64,
    #[prost(bool, tag = "10")]
    purging: bool,
}

fn versioned(v: u8, m: impl Message) -> Vec<u8> {
    let mut out = vec![v];
    m.encode(&mut out).expect("Vec has room");
    out
}

fn payload<'a>(what: &str, raw: &'a [u8], max: u8) -> Result<&'a [u8], MetaError> {
    match raw.first() {
        Some(&v) if v == max => Ok(&raw[1..]),
        Some(&v) => Err(MetaError::Version {
            what: what.to_string(),
            version: v,
            max,
        }),
        None => Err(corrupt(what, "empty")),
    }
}

fn encode_bin(b: &RecycleBin) -> Vec<u8> {
    versioned(
        BIN_V1,
        BinV1 {
            lifetime_secs: b.lifetime_secs,
            max_bytes: b.max_bytes,
            max_inodes: b.max_inodes,
            used_bytes: b.used_bytes,
            used_inodes: b.used_inodes,
            entries: b.entries,
            set_by: b.set_by.clone(),
            set_at: b.set_at,
        },
    )
}

fn decode_bin(name: &str, raw: &[u8]) -> Result<RecycleBin, MetaError> {
    let what = format!("recycle bin {name}");
    let m = BinV1::decode(payload(&what, raw, BIN_V1)?).map_err(|e| corrupt(&what, e))?;
    Ok(RecycleBin {
        name: name.to_string(),
        lifetime_secs: m.lifetime_secs,
        max_bytes: m.max_bytes,
        max_inodes: m.max_inodes,
        used_bytes: m.used_bytes,
        used_inodes: m.used_inodes,
        entries: m.entries,
        set_by: m.set_by,
        set_at: m.set_at,
    })
}

fn encode_entry(e: &RecycleEntry) -> Vec<u8> {
    versioned(
        ENTRY_V1,
        EntryV1 {
            bin: e.bin.clone(),
            path: e.path.clone(),
            is_dir: e.kind == EntryKind::Directory,
            uid: e.uid,
            gid: e.gid,
            deleted_by: e.deleted_by.clone(),
            deleted_ns: e.deleted_ns,
            bytes: e.bytes,
            inodes: e.inodes,
            purging: e.purging,
        },
    )
}

fn decode_entry(id: u64, raw: &[u8]) -> Result<RecycleEntry, MetaError> {
    let what = format!("recycle entry {id}");
    let m = EntryV1::decode(payload(&what, raw, ENTRY_V1)?).map_err(|e| corrupt(&what, e))?;
    Ok(RecycleEntry {
        id,
        bin: m.bin,
        path: m.path,
        kind: if m.is_dir {
            EntryKind::Directory
        } else {
            EntryKind::File
        },
        uid: m.uid,
        gid: m.gid,
        deleted_by: m.deleted_by,
        deleted_ns: m.deleted_ns,
        bytes: m.bytes,
        inodes: m.inodes,
        purging: m.purging,
    })
}

fn owner_key(uid: u32, id: u64) -> Vec<u8> {
    [OWNER_PREFIX, &uid.to_be_bytes()[..], &id.to_be_bytes()[..]].concat()
}

fn bin_key(name: &str) -> Vec<u8> {
    [BIN_PREFIX, name.as_bytes()].concat()
}

fn entry_key(id: u64) -> Vec<u8> {
    [ENTRY_PREFIX, &id.to_be_bytes()[..]].concat()
}

fn time_key(bin: &str, deleted_ns: i64, id: u64) -> Vec<u8> {
    [
        TIME_PREFIX,
        bin.as_bytes(),
        &[0],
        &(deleted_ns.max(0) as u64).to_be_bytes()[..],
        &id.to_be_bytes()[..],
    ]
    .concat()
}

/// A bin's name: what `sys.recycle` says (a path, usually the directory
/// it was set on, or a project's name).
pub(crate) fn check_bin_name(name: &[u8]) -> Result<String, MetaError> {
    if name.is_empty() || name.len() > 1024 || name.contains(&0) {
        return Err(MetaError::Invalid(
            "a recycle bin's name is 1 to 1024 bytes, without NUL".into(),
        ));
    }
    String::from_utf8(name.to_vec())
        .map_err(|_| MetaError::Invalid("a recycle bin's name is UTF-8".into()))
}

/// The bin deletes in directory `dir` go to: the `sys.recycle` of `dir` or
/// its nearest ancestor that has one.
pub(crate) fn bin_of<G: Get>(g: &G, mut dir: u64) -> Result<Option<String>, MetaError> {
    loop {
        let key = crate::keys::xattr_key(dir, RECYCLE_ATTR);
        if let Some(raw) = g.get_raw(Cf::Xattr, &key)? {
            let v = crate::records::decode_xattr(&raw)?;
            return Ok(check_bin_name(&v).ok());
        }
        if dir == ROOT_INO {
            return Ok(None);
        }
        dir = crate::read::must_inode(g, dir)?.parent;
    }
}

pub(crate) fn load_bin(txn: &Txn<'_>, name: &str) -> Result<Option<RecycleBin>, MetaError> {
    txn.get(Cf::Meta, &bin_key(name))?
        .map(|raw| decode_bin(name, &raw))
        .transpose()
}

pub(crate) fn load_entry(txn: &Txn<'_>, id: u64) -> Result<RecycleEntry, MetaError> {
    match txn.get(Cf::Meta, &entry_key(id))? {
        Some(raw) => decode_entry(id, &raw),
        None => Err(MetaError::NotFound(format!("recycle bin entry {id}"))),
    }
}

/// Change bin `name`'s account by the given amounts (made with the
/// defaults when missing).
pub(crate) fn account(
    txn: &mut Txn<'_>,
    name: &str,
    bytes: i128,
    inodes: i128,
    entries: i64,
) -> Result<RecycleBin, MetaError> {
    let mut b = load_bin(txn, name)?.unwrap_or_else(|| RecycleBin {
        name: name.to_string(),
        lifetime_secs: DEFAULT_LIFETIME_SECS,
        ..RecycleBin::default()
    });
    let add = |v: u64, d: i128| (v as i128 + d).clamp(0, u64::MAX as i128) as u64;
    b.used_bytes = add(b.used_bytes, bytes);
    b.used_inodes = add(b.used_inodes, inodes);
    b.entries = add(b.entries, entries as i128);
    txn.put(Cf::Meta, &bin_key(name), encode_bin(&b));
    Ok(b)
}

pub(crate) fn put_entry(txn: &mut Txn<'_>, e: &RecycleEntry) {
    txn.put(Cf::Meta, &entry_key(e.id), encode_entry(e));
    txn.put(Cf::Meta, &time_key(&e.bin, e.deleted_ns, e.id), Vec::new());
    txn.put(Cf::Meta, &owner_key(e.uid, e.id), Vec::new());
}

pub(crate) fn drop_entry(txn: &mut Txn<'_>, e: &RecycleEntry) {
    txn.delete(Cf::Meta, &entry_key(e.id));
    txn.delete(Cf::Meta, &time_key(&e.bin, e.deleted_ns, e.id));
    txn.delete(Cf::Meta, &owner_key(e.uid, e.id));
}

/// Who may restore or purge an entry: its owner and root.
pub(crate) fn owner_or_root(who: &Identity, e: &RecycleEntry) -> Result<(), MetaError> {
    if who.is_root() || who.uid == e.uid {
        return Ok(());
    }
    // Said as if there were none: ids are inode numbers, and another
    // owner's entry must not tell its path or owner.
    Err(MetaError::NotFound(format!(
        "recycle bin entry {} (none of yours)",
        e.id
    )))
}

impl MetaStore {
    /// Every bin with its settings and account.
    pub fn recycle_bins(&self) -> Result<Vec<RecycleBin>, MetaError> {
        let mut out = Vec::new();
        for (k, v) in self.meta_prefix(BIN_PREFIX, BIN_PREFIX)? {
            let name = String::from_utf8_lossy(&k[BIN_PREFIX.len()..]).into_owned();
            out.push(decode_bin(&name, &v)?);
        }
        Ok(out)
    }

    /// Entries after id `after`, up to `limit`, in id order: the caller's
    /// own (`who`'s uid), or with `all` (root only) everyone's; only bin
    /// `bin` when given.
    pub fn recycle_list(
        &self,
        who: &Identity,
        bin: Option<&str>,
        all: bool,
        after: u64,
        limit: usize,
    ) -> Result<Vec<RecycleEntry>, MetaError> {
        if all && !who.is_root() {
            return Err(MetaError::NotPermitted(
                "only an admin lists everyone's recycle bin entries".into(),
            ));
        }
        let h = self.db.cf_handle(CF_META).expect("cf exists");
        // Everyone's: the entries in id order; one owner's: their index.
        let (prefix, start) = if all {
            (ENTRY_PREFIX.to_vec(), entry_key(after.saturating_add(1)))
        } else {
            let p = [OWNER_PREFIX, &who.uid.to_be_bytes()[..]].concat();
            (p, owner_key(who.uid, after.saturating_add(1)))
        };
        let it = self.db.iterator_cf(
            h,
            rocksdb::IteratorMode::From(&start, rocksdb::Direction::Forward),
        );
        let mut out = Vec::new();
        for item in it {
            let (k, v) = item?;
            let Some(id) = k.strip_prefix(&prefix[..]) else {
                break;
            };
            let id = u64::from_be_bytes(
                id.try_into()
                    .map_err(|_| corrupt("recycle entry key", "length"))?,
            );
            let e = if all {
                decode_entry(id, &v)?
            } else {
                match self.db.get_cf(h, entry_key(id))? {
                    Some(raw) => decode_entry(id, &raw)?,
                    None => return Err(corrupt(format!("recycle entry {id}"), "indexed, missing")),
                }
            };
            if bin.is_none_or(|b| b == e.bin) {
                out.push(e);
                if out.len() >= limit {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// Entry `id` (its owner or root).
    pub fn recycle_entry(&self, who: &Identity, id: u64) -> Result<RecycleEntry, MetaError> {
        let h = self.db.cf_handle(CF_META).expect("cf exists");
        let raw = self
            .db
            .get_cf(h, entry_key(id))?
            .ok_or_else(|| MetaError::NotFound(format!("recycle bin entry {id}")))?;
        let e = decode_entry(id, &raw)?;
        owner_or_root(who, &e)?;
        Ok(e)
    }

    /// Set bin `name`'s lifetime and caps (bytes, inodes; root only), keeping its
    /// account; the bin is made when missing.
    pub fn recycle_set_bin(
        &self,
        who: &Identity,
        name: &str,
        lifetime_secs: u64,
        (max_bytes, max_inodes): (u64, u64),
    ) -> Result<RecycleBin, MetaError> {
        if !who.is_root() {
            return Err(MetaError::NotPermitted(
                "only an admin configures recycle bins".into(),
            ));
        }
        let name = check_bin_name(name.as_bytes())?;
        let seq = {
            let st = self.lock();
            let mut txn = self.txn();
            let mut b = account(&mut txn, &name, 0, 0, 0)?;
            // At most a century (a larger one would wrap in nanoseconds).
            b.lifetime_secs = lifetime_secs.min(100 * 365 * 86_400);
            b.max_bytes = max_bytes;
            b.max_inodes = max_inodes;
            b.set_by = who.name.clone();
            b.set_at = crate::store::now_ns().max(0) as u64 / 1_000_000_000;
            txn.put(Cf::Meta, &bin_key(&name), encode_bin(&b));
            self.commit(txn, &st)?
        };
        self.finish(seq)?;
        self.recycle_bins()?
            .into_iter()
            .find(|b| b.name == name)
            .ok_or_else(|| corrupt(format!("recycle bin {name}"), "missing after set"))
    }

    /// Records of the default column family from `start` while their key
    /// starts with `prefix` (bins, and entries for the check: the caller
    /// holds them all anyway).
    pub(crate) fn meta_prefix(&self, prefix: &[u8], start: &[u8]) -> Result<Records, MetaError> {
        let h = self.db.cf_handle(CF_META).expect("cf exists");
        let it = self.db.iterator_cf(
            h,
            rocksdb::IteratorMode::From(start, rocksdb::Direction::Forward),
        );
        let mut out = Vec::new();
        for item in it {
            let (k, v) = item?;
            if !k.starts_with(prefix) {
                break;
            }
            out.push((k, v));
        }
        Ok(out)
    }
}

/// (key, value) pairs as read.
pub(crate) type Records = Vec<(Box<[u8]>, Box<[u8]>)>;
