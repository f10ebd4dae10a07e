//! Read paths: resolution, stat, listing, xattrs. Readers never take the
//! writer lock; each point read sees committed state.

use crate::dircache::Perm;
use crate::error::MetaError;
use crate::keys::*;
use crate::perm;
use crate::readcache::ReadCache;
use crate::records::*;
use crate::store::{MetaStore, NsStats, ROOT_INO};
use crate::txn::{Cf, Txn};
use rocksdb::DB;
use tessera_types::{Identity, NsPath};

/// Point reads, from committed state or through a transaction's overlay.
pub(crate) trait Get {
    fn get_raw(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>, MetaError>;
    fn db(&self) -> &DB;

    /// Inode `ino`, decoded.
    fn inode(&self, ino: u64) -> Result<Option<Inode>, MetaError> {
        read_inode(self, ino)
    }
}

/// Inode `ino` read through `get_raw` and decoded.
fn read_inode<G: Get + ?Sized>(g: &G, ino: u64) -> Result<Option<Inode>, MetaError> {
    match g.get_raw(Cf::Inode, &ino_key(ino))? {
        Some(raw) => Ok(Some(decode_inode(ino, &raw)?)),
        None => Ok(None),
    }
}

/// Committed state, through the reader cache (inode and directory-entry
/// records) when one is given; with `Reach::Memory`, a read that would need
/// storage fails with RocksDB's `Incomplete` (see [`nowait`]).
pub(crate) struct DbGet<'a>(pub &'a DB, pub Option<&'a ReadCache>, pub Reach);

/// Where a point read may look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Anywhere, storage included.
    Storage,
    /// RocksDB's memtables and block cache only.
    Memory,
}

impl DbGet<'_> {
    fn point(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>, MetaError> {
        let h = self.0.cf_handle(cf.name()).expect("cf exists");
        Ok(match self.2 {
            Reach::Storage => self.0.get_cf(h, key)?,
            Reach::Memory => self.0.get_cf_opt(h, key, &memory_only())?,
        })
    }
}

/// Read options for RocksDB's `kBlockCacheTier`: memtables and block cache,
/// `Incomplete` where storage would have to be read.
#[allow(unsafe_code)] // the crate (pinned) does not export its ReadTier type
#[allow(clippy::missing_transmute_annotations)] // the type cannot be named
fn memory_only() -> rocksdb::ReadOptions {
    let mut ro = rocksdb::ReadOptions::default();
    // SAFETY: `set_read_tier` takes rocksdb 0.20.1's `ReadTier`, a
    // `#[repr(i32)]` enum whose variant `BlockCache` is 1 (the workspace
    // pins that version); the type is inferred from the argument and
    // `transmute` checks that the sizes match.
    ro.set_read_tier(unsafe { std::mem::transmute::<i32, _>(1) });
    ro
}

/// The answer of a read from memory only (`Reach::Memory`): `None` when it
/// needs a read from storage.
pub(crate) fn nowait<T>(r: Result<T, MetaError>) -> Result<Option<T>, MetaError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(MetaError::Db(e)) if e.kind() == rocksdb::ErrorKind::Incomplete => Ok(None),
        Err(e) => Err(e),
    }
}

impl Get for DbGet<'_> {
    fn get_raw(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>, MetaError> {
        let (Some(cache), Cf::Dentry) = (self.1, cf) else {
            return self.point(cf, key);
        };
        if let Some(v) = cache.dentry(key) {
            return Ok(Some(v));
        }
        let seq = cache.seq();
        let v = self.point(cf, key)?;
        if let Some(v) = &v {
            cache.fill_dentry(seq, key, v);
        }
        Ok(v)
    }

    fn db(&self) -> &DB {
        self.0
    }

    fn inode(&self, ino: u64) -> Result<Option<Inode>, MetaError> {
        let Some(cache) = self.1 else {
            return read_inode(self, ino);
        };
        if let Some(i) = cache.inode(ino) {
            return Ok(Some(i));
        }
        let seq = cache.seq();
        let Some(raw) = self.point(Cf::Inode, &ino_key(ino))? else {
            return Ok(None);
        };
        let i = decode_inode(ino, &raw)?;
        cache.fill_inode(seq, &i);
        Ok(Some(i))
    }
}

impl Get for Txn<'_> {
    fn get_raw(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>, MetaError> {
        self.get(cf, key)
    }
    fn db(&self) -> &DB {
        self.db_ref()
    }
}

pub(crate) fn inode<G: Get>(g: &G, ino: u64) -> Result<Option<Inode>, MetaError> {
    g.inode(ino)
}

pub(crate) fn must_inode<G: Get>(g: &G, ino: u64) -> Result<Inode, MetaError> {
    inode(g, ino)?.ok_or_else(|| crate::error::corrupt(format!("inode {ino}"), "missing"))
}

pub(crate) fn lookup<G: Get>(
    g: &G,
    parent: u64,
    name: &[u8],
) -> Result<Option<(EntryKind, u64)>, MetaError> {
    match g.get_raw(Cf::Dentry, &dentry_key(parent, name))? {
        Some(raw) => Ok(Some(decode_dentry(&raw)?)),
        None => Ok(None),
    }
}

/// Walk `path` from the root as `who`: search permission on every
/// directory walked through (`perm.rs`).
pub(crate) fn resolve<G: Get>(g: &G, path: &NsPath, who: &Identity) -> Result<Inode, MetaError> {
    resolve_with(g, path, None, who)
}

/// Walk `path` from the root as `who`; with `cache`, directory lookups
/// (and the owner, group and mode of the directories found) are served
/// from, and added to, the reader-side directory cache.
pub(crate) fn resolve_with<G: Get>(
    g: &G,
    path: &NsPath,
    cache: Option<&crate::dircache::DirCache>,
    who: &Identity,
) -> Result<Inode, MetaError> {
    let check = !who.is_root();
    let mut ino = ROOT_INO;
    let mut perm: Option<Perm> = None;
    let mut kind = EntryKind::Directory;
    for (depth, name) in path.components().enumerate() {
        if kind != EntryKind::Directory {
            return Err(MetaError::NotADirectory(path.display()));
        }
        if check {
            let p = match perm {
                Some(p) => p,
                None => dir_perm(g, cache, ino)?,
            };
            if !perm::may_search(g, who, ino, &p)? {
                return Err(perm::refused(who, &prefix(path, depth), &p));
            }
        }
        if let Some((i, p)) = cache.and_then(|c| c.get(ino, name)) {
            ino = i;
            perm = Some(p);
            continue;
        }
        let gen = cache.map(|c| c.generation());
        match lookup(g, ino, name)? {
            Some((k, i)) => {
                perm = None;
                if let (Some(c), Some(gen), EntryKind::Directory) = (cache, gen, k) {
                    let p = Perm::of(&must_inode(g, i)?);
                    c.put(gen, ino, name, i, p);
                    perm = Some(p);
                }
                kind = k;
                ino = i;
            }
            None => return Err(MetaError::NotFound(path.display())),
        }
    }
    must_inode(g, ino)
}

/// The owner, group and mode of directory `ino` (the root's from the
/// directory cache when there is one).
fn dir_perm<G: Get>(
    g: &G,
    cache: Option<&crate::dircache::DirCache>,
    ino: u64,
) -> Result<Perm, MetaError> {
    let Some(c) = cache.filter(|_| ino == ROOT_INO) else {
        return Ok(Perm::of(&must_inode(g, ino)?));
    };
    if let Some((_, p)) = c.get(0, b"") {
        return Ok(p);
    }
    let gen = c.generation();
    let p = Perm::of(&must_inode(g, ino)?);
    c.put(gen, 0, b"", ino, p);
    Ok(p)
}

/// The first `depth` components of `path`, for a message.
fn prefix(path: &NsPath, depth: usize) -> String {
    let mut out = String::new();
    for c in path.components().take(depth) {
        out.push('/');
        out.push_str(&String::from_utf8_lossy(c));
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// Resolve the parent of `path` (which must be a directory) as `who` and
/// return it with the last name; the root has no parent. The name is to
/// be looked up in the parent, so `who` needs search permission there
/// too.
pub(crate) fn resolve_parent<'p, G: Get>(
    g: &G,
    path: &'p NsPath,
    who: &Identity,
) -> Result<(Inode, &'p [u8]), MetaError> {
    let (parent, name) = path
        .split_last()
        .ok_or_else(|| MetaError::Busy("the root cannot be changed this way".into()))?;
    let dir = resolve(g, &parent, who)?;
    if !dir.is_dir() {
        return Err(MetaError::NotADirectory(parent.display()));
    }
    let p = Perm::of(&dir);
    if !perm::may_search(g, who, dir.ino, &p)? {
        return Err(perm::refused(who, &parent.display(), &p));
    }
    Ok((dir, name))
}

/// Up to `limit` entries of directory `dir`, in name (byte) order, strictly
/// after `after`.
pub(crate) fn list_children<G: Get>(
    g: &G,
    dir: u64,
    after: Option<&[u8]>,
    limit: usize,
) -> Result<Vec<Inode>, MetaError> {
    let db = g.db();
    let h = db.cf_handle(CF_DENTRY).expect("cf exists");
    let start = dentry_key(dir, after.unwrap_or(b""));
    let mut ro = rocksdb::ReadOptions::default();
    ro.set_iterate_upper_bound(prefix_end(dir));
    let it = db.iterator_cf_opt(
        h,
        ro,
        rocksdb::IteratorMode::From(&start, rocksdb::Direction::Forward),
    );
    let mut inos = Vec::new();
    for item in it {
        let (k, v) = item?;
        if after.is_some() && *k == *start {
            continue;
        }
        let (_, ino) = decode_dentry(&v)?;
        inos.push(ino);
        if inos.len() >= limit {
            break;
        }
    }
    let hi = db.cf_handle(CF_INODE).expect("cf exists");
    let keys: Vec<_> = inos.iter().map(|i| (hi, ino_key(*i))).collect();
    let mut out = Vec::with_capacity(inos.len());
    for (ino, r) in inos.iter().zip(db.multi_get_cf(keys)) {
        let raw = r?.ok_or_else(|| crate::error::corrupt(format!("inode {ino}"), "missing"))?;
        out.push(decode_inode(*ino, &raw)?);
    }
    Ok(out)
}

/// The path of an inode, by walking parents.
pub(crate) fn path_of<G: Get>(g: &G, mut ino: u64) -> Result<NsPath, MetaError> {
    let mut names: Vec<Vec<u8>> = Vec::new();
    while ino != ROOT_INO {
        let i = must_inode(g, ino)?;
        names.push(i.name);
        ino = i.parent;
        if names.len() > tessera_types::MAX_PATH_LEN {
            return Err(crate::error::corrupt(
                "tree",
                "parent chain too long (cycle?)",
            ));
        }
    }
    let mut raw = Vec::new();
    for n in names.iter().rev() {
        raw.push(b'/');
        raw.extend_from_slice(n);
    }
    Ok(NsPath::parse(raw)?)
}

/// True if `anc` is `ino` or one of its ancestors.
pub(crate) fn is_ancestor<G: Get>(g: &G, anc: u64, mut ino: u64) -> Result<bool, MetaError> {
    let mut steps = 0usize;
    loop {
        if ino == anc {
            return Ok(true);
        }
        if ino == ROOT_INO {
            return Ok(false);
        }
        ino = must_inode(g, ino)?.parent;
        steps += 1;
        if steps > tessera_types::MAX_PATH_LEN {
            return Err(crate::error::corrupt(
                "tree",
                "parent chain too long (cycle?)",
            ));
        }
    }
}

impl MetaStore {
    /// Reader-side resolution as `who`, with directory lookups served from
    /// the directory cache when it can.
    pub(crate) fn resolve_read(&self, who: &Identity, path: &NsPath) -> Result<Inode, MetaError> {
        resolve_with(&self.reader(), path, Some(&self.dircache), who)
    }

    /// The entry `path` names, as `who` reaches it: EACCES when a
    /// directory on the way may not be searched by `who`.
    pub fn stat(&self, who: &Identity, path: &NsPath) -> Result<Inode, MetaError> {
        self.resolve_read(who, path)
    }

    /// `stat` from memory only (the reader caches, RocksDB's memtables and
    /// block cache), so that it never waits for a disk: `Ok(None)` when
    /// the answer needs a read from storage (then `stat` gives it).
    pub fn stat_nowait(&self, who: &Identity, path: &NsPath) -> Result<Option<Inode>, MetaError> {
        nowait(resolve_with(
            &self.reader_nowait(),
            path,
            Some(&self.dircache),
            who,
        ))
    }

    /// `stat` straight from RocksDB, without the directory and reader
    /// caches and without permission checks (tests compare the two).
    #[doc(hidden)]
    pub fn stat_uncached(&self, path: &NsPath) -> Result<Inode, MetaError> {
        resolve(&self.uncached(), path, &Identity::root("internal"))
    }

    pub fn stat_ino(&self, ino: u64) -> Result<Inode, MetaError> {
        inode(&self.reader(), ino)?.ok_or_else(|| MetaError::NotFound(format!("inode {ino}")))
    }

    pub fn path_of(&self, ino: u64) -> Result<NsPath, MetaError> {
        path_of(&self.reader(), ino)
    }

    /// One page of a directory listing: up to `limit` entries after `after`
    /// in byte order of names. Pass the last name of a page to get the next.
    /// `who` needs search permission on the way and the right to list the
    /// directory (its ACL's `x`, else read permission).
    pub fn list(
        &self,
        who: &Identity,
        path: &NsPath,
        after: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<Inode>, MetaError> {
        let dir = self.resolve_read(who, path)?;
        if !dir.is_dir() {
            return Err(MetaError::NotADirectory(path.display()));
        }
        if !self.may_list(who, &dir)? {
            return Err(MetaError::PermissionDenied(format!(
                "{} may not list {} (uid {} gid {}, mode {:o})",
                who.name,
                path.display(),
                dir.uid,
                dir.gid,
                dir.mode
            )));
        }
        list_children(&self.reader(), dir.ino, after, limit.max(1))
    }

    pub fn xattr_get(
        &self,
        who: &Identity,
        path: &NsPath,
        name: &[u8],
    ) -> Result<Vec<u8>, MetaError> {
        let g = self.reader();
        let i = self.resolve_read(who, path)?;
        match g.get_raw(Cf::Xattr, &xattr_key(i.ino, name))? {
            Some(raw) => decode_xattr(&raw),
            None => Err(MetaError::NotFound(format!(
                "no attribute {} on {}",
                String::from_utf8_lossy(name),
                path.display()
            ))),
        }
    }

    pub fn xattr_list(&self, who: &Identity, path: &NsPath) -> Result<crate::Xattrs, MetaError> {
        let i = self.resolve_read(who, path)?;
        xattrs_of(&self.db, i.ino)
    }

    /// The attributes of inode `ino` (no path to resolve: a write's
    /// reservation already names its directory).
    pub fn xattr_list_of(&self, ino: u64) -> Result<crate::Xattrs, MetaError> {
        xattrs_of(&self.db, ino)
    }

    /// Namespace size from the project records (cheap: one record per node).
    pub fn ns_stats(&self) -> Result<NsStats, MetaError> {
        let h = self.db.cf_handle(CF_QUOTA).expect("cf exists");
        let mut s = NsStats::default();
        let mut last_node = None;
        for item in self.db.iterator_cf(h, rocksdb::IteratorMode::Start) {
            let (k, v) = item?;
            let Some((node, code, _)) = split_quota_key(&k) else {
                continue;
            };
            if last_node != Some(node) {
                s.quota_nodes += 1;
                last_node = Some(node);
            }
            if code == b'p' {
                let r = decode_quota(&v)?;
                s.inodes += r.used_inodes;
                s.bytes += r.used_bytes;
            }
        }
        s.open_reservations = self.lock().reservations.len() as u64;
        Ok(s)
    }
}

/// Every committed key of column family `cf` that starts with `ino(8)`.
pub(crate) fn prefix_iter<'a>(
    db: &'a DB,
    cf: &str,
    ino: u64,
) -> rocksdb::DBIteratorWithThreadMode<'a, DB> {
    let h = db.cf_handle(cf).expect("cf exists");
    let mut ro = rocksdb::ReadOptions::default();
    ro.set_iterate_upper_bound(prefix_end(ino));
    db.iterator_cf_opt(
        h,
        ro,
        rocksdb::IteratorMode::From(&ino_key(ino), rocksdb::Direction::Forward),
    )
}

pub(crate) fn xattrs_of(db: &DB, ino: u64) -> Result<crate::Xattrs, MetaError> {
    let mut out = Vec::new();
    for item in prefix_iter(db, CF_XATTR, ino) {
        let (k, v) = item?;
        let (_, name) = split_prefixed(&k).ok_or_else(|| crate::error::corrupt("xattr", "key"))?;
        out.push((name.to_vec(), decode_xattr(&v)?));
    }
    Ok(out)
}

/// Bytes inode `ino`'s committed `user.*` attributes (WebDAV dead
/// properties among them) take in its owner's byte quota: names and
/// values. `sys.*` attributes, which only admins set, are not charged.
pub(crate) fn charged_xattr_bytes(db: &DB, ino: u64) -> Result<u64, MetaError> {
    let mut n = 0u64;
    for item in prefix_iter(db, CF_XATTR, ino) {
        let (k, v) = item?;
        let (_, name) = split_prefixed(&k).ok_or_else(|| crate::error::corrupt("xattr", "key"))?;
        if name.starts_with(b"user.") {
            n += (name.len() + v.len().saturating_sub(1)) as u64;
        }
    }
    Ok(n)
}

impl MetaStore {
    /// Up to `limit` files with a data layout, in inode order, after `after`
    /// (for fsck, repair and drain scans).
    pub fn scan_files(&self, after: u64, limit: usize) -> Result<Vec<Inode>, MetaError> {
        let h = self.db.cf_handle(CF_INODE).expect("cf exists");
        let start = ino_key(after.saturating_add(1));
        let it = self.db.iterator_cf(
            h,
            rocksdb::IteratorMode::From(&start, rocksdb::Direction::Forward),
        );
        let mut out = Vec::new();
        for item in it {
            let (k, v) = item?;
            let ino = u64::from_be_bytes(
                k[..]
                    .try_into()
                    .map_err(|_| crate::error::corrupt("inode key", "length"))?,
            );
            let i = decode_inode(ino, &v)?;
            if i.kind == EntryKind::File && !i.layout.is_empty() {
                out.push(i);
                if out.len() >= limit {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// Ids of the writes in progress (their temporary stripes are not orphans).
    pub fn open_write_ids(&self) -> Vec<u64> {
        self.lock().reservations.keys().copied().collect()
    }

    /// File ids the writes in progress will get.
    pub fn open_write_inos(&self) -> Vec<u64> {
        self.lock().reservations.values().map(|r| r.ino).collect()
    }
}
