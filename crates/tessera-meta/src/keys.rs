//! Key encodings. All integers big-endian so that byte order is numeric
//! order; see `docs/meta-schema.md`.

pub const CF_INODE: &str = "inode";
pub const CF_DENTRY: &str = "dentry";
pub const CF_XATTR: &str = "xattr";
pub const CF_QUOTA: &str = "quota";
pub const CF_FS: &str = "fs";
pub const CF_DAMAGE: &str = "damage";

/// Every column family, in open order (a store from before `damage`
/// existed gets it created on open).
pub const ALL_CFS: [&str; 7] = [
    CF_META, CF_INODE, CF_DENTRY, CF_XATTR, CF_QUOTA, CF_FS, CF_DAMAGE,
];
pub const CF_META: &str = "default";

pub const META_SCHEMA: &[u8] = b"schema_version";
pub const META_NEXT_INO: &[u8] = b"next_ino";

pub fn ino_key(ino: u64) -> [u8; 8] {
    ino.to_be_bytes()
}

/// `parent(8) ++ name`
pub fn dentry_key(parent: u64, name: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(8 + name.len());
    k.extend_from_slice(&parent.to_be_bytes());
    k.extend_from_slice(name);
    k
}

/// `ino(8) ++ name`
pub fn xattr_key(ino: u64, name: &[u8]) -> Vec<u8> {
    dentry_key(ino, name)
}

/// Upper bound (exclusive) of every key starting with `ino(8)`.
pub fn prefix_end(ino: u64) -> Vec<u8> {
    match ino.checked_add(1) {
        Some(n) => n.to_be_bytes().to_vec(),
        None => vec![0xff; 9],
    }
}

pub fn split_prefixed(key: &[u8]) -> Option<(u64, &[u8])> {
    if key.len() < 8 {
        return None;
    }
    let (a, b) = key.split_at(8);
    Some((u64::from_be_bytes(a.try_into().ok()?), b))
}

/// `node(8) ++ kind(1: 'u' | 'g' | 'p') ++ id(4)`
pub fn quota_key(node: u64, kind: u8, id: u32) -> [u8; 13] {
    let mut k = [0u8; 13];
    k[..8].copy_from_slice(&node.to_be_bytes());
    k[8] = kind;
    k[9..].copy_from_slice(&id.to_be_bytes());
    k
}

pub fn split_quota_key(key: &[u8]) -> Option<(u64, u8, u32)> {
    if key.len() != 13 {
        return None;
    }
    let node = u64::from_be_bytes(key[..8].try_into().ok()?);
    let id = u32::from_be_bytes(key[9..].try_into().ok()?);
    Some((node, key[8], id))
}
