//! Record formats. Every value starts with a one-byte format version; the
//! rest is a protobuf message (prost), so fields can be added without a new
//! version. A reader refuses versions it does not know instead of guessing.

use crate::error::{corrupt, MetaError};
use prost::Message;

/// Current version byte of every record this build writes.
pub const RECORD_V1: u8 = 1;

/// What a directory entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum EntryKind {
    Directory,
    #[default]
    File,
}

impl EntryKind {
    fn code(self) -> u8 {
        match self {
            EntryKind::Directory => 1,
            EntryKind::File => 2,
        }
    }
    fn from_code(c: u32) -> Option<EntryKind> {
        match c {
            1 => Some(EntryKind::Directory),
            2 => Some(EntryKind::File),
            _ => None,
        }
    }
}

/// A stored checksum: algorithm name (`adler32`, `crc32c`, ...) and value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checksum {
    pub kind: String,
    pub value: Vec<u8>,
}

impl Checksum {
    pub fn hex(&self) -> String {
        self.value.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// A file or directory. The default is an empty file record with every
/// number zero (tests and constructors fill in what they need).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Inode {
    pub ino: u64,
    pub kind: EntryKind,
    /// Parent directory (the root is its own parent).
    pub parent: u64,
    pub name: Vec<u8>,
    pub uid: u32,
    pub gid: u32,
    /// Permission bits (0o7777 at most).
    pub mode: u32,
    pub ctime_ns: i64,
    pub mtime_ns: i64,
    /// Bytes for a file; 0 for a directory.
    pub size: u64,
    pub checksum: Option<Checksum>,
    /// CRC-32C of a file's bytes, when known (files written before it
    /// was recorded have none).
    pub crc32c: Option<u32>,
    /// Opaque layout descriptor, owned by the data layer.
    pub layout: Vec<u8>,
    /// True for a directory that is a quota node.
    pub quota_node: bool,
    /// Number of entries in a directory.
    pub nchildren: u64,
}

impl Inode {
    /// A new, empty directory owned by `uid:gid`, made at `now`.
    pub fn new_dir(
        ino: u64,
        parent: u64,
        name: Vec<u8>,
        (uid, gid): (u32, u32),
        mode: u32,
        now: i64,
    ) -> Inode {
        Inode {
            ino,
            kind: EntryKind::Directory,
            parent,
            name,
            uid,
            gid,
            mode: mode & 0o7777,
            ctime_ns: now,
            mtime_ns: now,
            ..Inode::default()
        }
    }

    pub fn is_dir(&self) -> bool {
        self.kind == EntryKind::Directory
    }
}

#[derive(Clone, PartialEq, Message)]
struct InodeV1 {
    #[prost(uint32, tag = "1")]
    kind: u32,
    #[prost(uint64, tag = "2")]
    parent: u64,
    #[prost(bytes = "vec", tag = "3")]
    name: Vec<u8>,
    #[prost(uint32, tag = "4")]
    uid: u32,
    #[prost(uint32, tag = "5")]
    gid: u32,
    #[prost(uint32, tag = "6")]
    mode: u32,
    #[prost(int64, tag = "7")]
    ctime_ns: i64,
    #[prost(int64, tag = "8")]
    mtime_ns: i64,
    #[prost(uint64, tag = "9")]
    size: u64,
    #[prost(string, tag = "10")]
    cksum_type: String,
    #[prost(bytes = "vec", tag = "11")]
    cksum: Vec<u8>,
    #[prost(bytes = "vec", tag = "12")]
    layout: Vec<u8>,
    #[prost(bool, tag = "13")]
    quota_node: bool,
    #[prost(uint64, tag = "14")]
    nchildren: u64,
    #[prost(uint32, optional, tag = "15")]
    crc32c: Option<u32>,
}

fn versioned(msg: &impl Message) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + msg.encoded_len());
    out.push(RECORD_V1);
    msg.encode(&mut out).expect("Vec has room");
    out
}

fn unversion<'a>(what: &str, raw: &'a [u8]) -> Result<&'a [u8], MetaError> {
    match raw.first() {
        Some(&RECORD_V1) => Ok(&raw[1..]),
        Some(&v) => Err(MetaError::Version {
            what: what.to_string(),
            version: v,
            max: RECORD_V1,
        }),
        None => Err(corrupt(what, "empty record")),
    }
}

pub fn encode_inode(i: &Inode) -> Vec<u8> {
    let (cksum_type, cksum) = match &i.checksum {
        Some(c) => (c.kind.clone(), c.value.clone()),
        None => (String::new(), Vec::new()),
    };
    versioned(&InodeV1 {
        kind: i.kind.code() as u32,
        parent: i.parent,
        name: i.name.clone(),
        uid: i.uid,
        gid: i.gid,
        mode: i.mode,
        ctime_ns: i.ctime_ns,
        mtime_ns: i.mtime_ns,
        size: i.size,
        cksum_type,
        cksum,
        layout: i.layout.clone(),
        quota_node: i.quota_node,
        nchildren: i.nchildren,
        crc32c: i.crc32c,
    })
}

pub fn decode_inode(ino: u64, raw: &[u8]) -> Result<Inode, MetaError> {
    // Named only when something is wrong: this runs for every inode read.
    let what = || format!("inode {ino}");
    let body = match raw.first() {
        Some(&RECORD_V1) => &raw[1..],
        _ => unversion(&what(), raw)?,
    };
    let m = InodeV1::decode(body).map_err(|e| corrupt(what(), e))?;
    let kind = EntryKind::from_code(m.kind).ok_or_else(|| corrupt(what(), "bad kind"))?;
    Ok(Inode {
        ino,
        kind,
        parent: m.parent,
        name: m.name,
        uid: m.uid,
        gid: m.gid,
        mode: m.mode,
        ctime_ns: m.ctime_ns,
        mtime_ns: m.mtime_ns,
        size: m.size,
        checksum: if m.cksum_type.is_empty() {
            None
        } else {
            Some(Checksum {
                kind: m.cksum_type,
                value: m.cksum,
            })
        },
        crc32c: m.crc32c,
        layout: m.layout,
        quota_node: m.quota_node,
        nchildren: m.nchildren,
    })
}

/// Dentry value: `version(1) kind(1) ino(8)`.
pub fn encode_dentry(kind: EntryKind, ino: u64) -> [u8; 10] {
    let mut v = [0u8; 10];
    v[0] = RECORD_V1;
    v[1] = kind.code();
    v[2..].copy_from_slice(&ino.to_be_bytes());
    v
}

pub fn decode_dentry(raw: &[u8]) -> Result<(EntryKind, u64), MetaError> {
    let body = unversion("dentry", raw)?;
    if body.len() != 9 {
        return Err(corrupt("dentry", "bad length"));
    }
    let kind = EntryKind::from_code(body[0] as u32).ok_or_else(|| corrupt("dentry", "bad kind"))?;
    let ino = u64::from_be_bytes(body[1..].try_into().expect("8 bytes"));
    Ok((kind, ino))
}

/// Xattr value: `version(1) ++ value`.
pub fn encode_xattr(value: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(1 + value.len());
    v.push(RECORD_V1);
    v.extend_from_slice(value);
    v
}

pub fn decode_xattr(raw: &[u8]) -> Result<Vec<u8>, MetaError> {
    Ok(unversion("xattr", raw)?.to_vec())
}

/// One quota record: limits (absent = unlimited) and usage, for one node
/// and one user, group or the node's project.
#[derive(Clone, PartialEq, Eq, Message)]
pub struct QuotaRec {
    #[prost(uint64, optional, tag = "1")]
    pub max_bytes: Option<u64>,
    #[prost(uint64, optional, tag = "2")]
    pub max_inodes: Option<u64>,
    #[prost(uint64, tag = "3")]
    pub used_bytes: u64,
    #[prost(uint64, tag = "4")]
    pub used_inodes: u64,
}

pub fn encode_quota(q: &QuotaRec) -> Vec<u8> {
    versioned(q)
}

pub fn decode_quota(raw: &[u8]) -> Result<QuotaRec, MetaError> {
    let body = unversion("quota", raw)?;
    QuotaRec::decode(body).map_err(|e| corrupt("quota", e))
}

pub fn encode_u64(v: u64) -> Vec<u8> {
    let mut out = vec![RECORD_V1];
    out.extend_from_slice(&v.to_be_bytes());
    out
}

pub fn decode_u64(what: &str, raw: &[u8]) -> Result<u64, MetaError> {
    let body = unversion(what, raw)?;
    Ok(u64::from_be_bytes(
        body.try_into().map_err(|_| corrupt(what, "bad length"))?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inode_round_trip_and_version_refusal() {
        let i = Inode {
            ino: 7,
            kind: EntryKind::File,
            parent: 1,
            name: b"f\xffx".to_vec(),
            uid: 1000,
            gid: 1000,
            mode: 0o644,
            ctime_ns: 1,
            mtime_ns: 2,
            size: 3,
            checksum: Some(Checksum {
                kind: "adler32".into(),
                value: vec![1, 2, 3, 4],
            }),
            crc32c: Some(0xe306_9283),
            layout: vec![9],
            quota_node: false,
            nchildren: 0,
        };
        let raw = encode_inode(&i);
        assert_eq!(raw[0], RECORD_V1);
        assert_eq!(decode_inode(7, &raw).expect("decodes"), i);
        let mut future = raw.clone();
        future[0] = 9;
        assert!(matches!(
            decode_inode(7, &future),
            Err(MetaError::Version { version: 9, .. })
        ));
        assert!(decode_inode(7, &[]).is_err());
        // A record written before field 15 existed has no CRC-32C.
        let old = Inode { crc32c: None, ..i };
        assert_eq!(
            decode_inode(7, &encode_inode(&old))
                .expect("decodes")
                .crc32c,
            None
        );
        let d = encode_dentry(EntryKind::Directory, 42);
        assert_eq!(
            decode_dentry(&d).expect("decodes"),
            (EntryKind::Directory, 42)
        );
    }
}
