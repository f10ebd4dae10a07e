//! Extended attributes: set and remove, `sys.*` for admins, others for the
//! owner; names and sizes checked before the transaction.

use crate::error::MetaError;
use crate::keys::*;
use crate::quota::Deltas;
use crate::read::resolve;
use crate::records::*;
use crate::store::MetaStore;
use crate::store::{WriterState, ROOT_INO};
use crate::txn::{Cf, Txn};
use tessera_types::{Identity, NsPath};

/// Largest xattr value.
pub const MAX_XATTR_VALUE: usize = 64 * 1024;
/// `user.*` attributes (WebDAV dead properties among them) an entry may
/// have, and their names and values together, at most: what listing an
/// entry's attributes (a PROPFIND) answers is bounded by them; the bytes
/// they take are charged to the owner's byte quota, like a file's.
pub const MAX_USER_XATTRS: usize = 64;
pub const MAX_USER_XATTR_BYTES: usize = 64 * 1024;

/// Refuse a change that would leave inode `ino` with more `user.*`
/// attributes than [`MAX_USER_XATTRS`] or [`MAX_USER_XATTR_BYTES`]:
/// `ops` are the sets (`Some`) and removals (`None`) about to be made.
/// Returns how much the bytes charged for them change.
fn user_room(
    store: &MetaStore,
    ino: u64,
    ops: &[(&[u8], Option<&[u8]>)],
) -> Result<i128, MetaError> {
    if !ops.iter().any(|(n, _)| n.starts_with(b"user.")) {
        return Ok(0);
    }
    let mut user: std::collections::BTreeMap<Vec<u8>, usize> =
        crate::read::xattrs_of(&store.db, ino)?
            .into_iter()
            .filter(|(n, _)| n.starts_with(b"user."))
            .map(|(n, v)| (n, v.len()))
            .collect();
    let total = |m: &std::collections::BTreeMap<Vec<u8>, usize>| -> usize {
        m.iter().map(|(n, v)| n.len() + v).sum()
    };
    let before = total(&user);
    for (n, v) in ops.iter().filter(|(n, _)| n.starts_with(b"user.")) {
        match v {
            Some(v) => user.insert(n.to_vec(), v.len()),
            None => user.remove(*n),
        };
    }
    let bytes = total(&user);
    let grows = ops
        .iter()
        .any(|(n, v)| n.starts_with(b"user.") && v.is_some());
    if grows && (user.len() > MAX_USER_XATTRS || bytes > MAX_USER_XATTR_BYTES) {
        return Err(MetaError::QuotaExceeded(format!(
            "an entry holds at most {MAX_USER_XATTRS} user attributes (dead properties) of \
             {} KiB together; this change makes {} of {} bytes",
            MAX_USER_XATTR_BYTES >> 10,
            user.len(),
            bytes
        )));
    }
    Ok(bytes as i128 - before as i128)
}

/// Charge `delta` bytes of user attributes on `i` to its owner's byte
/// quota (refused past a limit when it grows). The root's own entry is
/// counted nowhere, as its inode is not.
fn charge(txn: &mut Txn<'_>, st: &WriterState, i: &Inode, delta: i128) -> Result<(), MetaError> {
    if delta == 0 || i.ino == ROOT_INO {
        return Ok(());
    }
    let mut d = Deltas::default();
    d.charge(
        crate::quota::node_of_dir(txn, i.parent)?,
        i.uid,
        i.gid,
        delta,
        0,
    );
    d.apply(txn, st, true)
}

impl MetaStore {
    /// Set (`Some`) and remove (`None`) several attributes in one
    /// transaction, in order (a later change to the same name wins; a
    /// removal of a missing one is no error): all of them or none.
    pub fn xattr_patch(
        &self,
        path: &NsPath,
        who: &Identity,
        ops: &[(Vec<u8>, Option<Vec<u8>>)],
    ) -> Result<(), MetaError> {
        for (name, value) in ops {
            check_xattr_name(name)?;
            check_xattr_value(value.as_deref().unwrap_or_default())?;
        }
        let seq = {
            let st = self.lock();
            let mut txn = self.txn();
            let i = resolve(&txn, path, who)?;
            for (name, value) in ops {
                xattr_permission(who, &i, name)?;
                let key = xattr_key(i.ino, name);
                match value {
                    Some(v) => txn.put(Cf::Xattr, &key, encode_xattr(v)),
                    None => txn.delete(Cf::Xattr, &key),
                }
            }
            let changes: Vec<(&[u8], Option<&[u8]>)> = ops
                .iter()
                .map(|(n, v)| (n.as_slice(), v.as_deref()))
                .collect();
            let delta = user_room(self, i.ino, &changes)?;
            charge(&mut txn, &st, &i, delta)?;
            self.commit(txn, &st)?
        };
        self.finish(seq)
    }

    /// Set an extended attribute. `sys.*` needs root; others the owner.
    pub fn xattr_set(
        &self,
        path: &NsPath,
        who: &Identity,
        name: &[u8],
        value: &[u8],
    ) -> Result<(), MetaError> {
        check_xattr_name(name)?;
        check_xattr_value(value)?;
        let seq = {
            let st = self.lock();
            let mut txn = self.txn();
            let i = resolve(&txn, path, who)?;
            xattr_permission(who, &i, name)?;
            let delta = user_room(self, i.ino, &[(name, Some(value))])?;
            charge(&mut txn, &st, &i, delta)?;
            // Access control lists are checked when set, not when used.
            if name == b"sys.acl" || name == b"user.acl" {
                crate::acl::parse(&String::from_utf8_lossy(value))?;
            }
            txn.put(Cf::Xattr, &xattr_key(i.ino, name), encode_xattr(value));
            self.commit(txn, &st)?
        };
        self.finish(seq)
    }

    pub fn xattr_rm(&self, path: &NsPath, who: &Identity, name: &[u8]) -> Result<(), MetaError> {
        check_xattr_name(name)?;
        let seq = {
            let st = self.lock();
            let mut txn = self.txn();
            let i = resolve(&txn, path, who)?;
            xattr_permission(who, &i, name)?;
            let key = xattr_key(i.ino, name);
            if txn.get(Cf::Xattr, &key)?.is_none() {
                return Err(MetaError::NotFound(format!(
                    "no attribute {} on {}",
                    String::from_utf8_lossy(name),
                    path.display()
                )));
            }
            txn.delete(Cf::Xattr, &key);
            let delta = user_room(self, i.ino, &[(name, None)])?;
            charge(&mut txn, &st, &i, delta)?;
            self.commit(txn, &st)?
        };
        self.finish(seq)
    }
}

fn check_xattr_value(value: &[u8]) -> Result<(), MetaError> {
    if value.len() > MAX_XATTR_VALUE {
        return Err(MetaError::Invalid(format!(
            "attribute value longer than {MAX_XATTR_VALUE} bytes"
        )));
    }
    Ok(())
}

fn check_xattr_name(name: &[u8]) -> Result<(), MetaError> {
    if name.is_empty() || name.len() > 255 || name.contains(&0) {
        return Err(MetaError::Invalid(
            "attribute names are 1 to 255 bytes without NUL".into(),
        ));
    }
    Ok(())
}

fn xattr_permission(who: &Identity, i: &Inode, name: &[u8]) -> Result<(), MetaError> {
    if name.starts_with(b"sys.") {
        if !who.is_root() {
            return Err(MetaError::PermissionDenied(
                "sys.* attributes are for admins".into(),
            ));
        }
    } else if !(who.is_root() || who.uid == i.uid) {
        return Err(MetaError::PermissionDenied(
            "only the owner may change attributes".into(),
        ));
    }
    Ok(())
}

impl MetaStore {
    /// The attributes of each of `children` (inodes of a listing of the
    /// directory `dir`), for `who`: search permission on `dir` and above
    /// checked once, then one iterator seeks each inode's attributes (a
    /// listing's dead properties: no path resolved per entry).
    pub fn xattr_list_children(
        &self,
        who: &Identity,
        dir: &NsPath,
        children: &[u64],
    ) -> Result<Vec<crate::Xattrs>, MetaError> {
        let d = self.resolve_read(who, dir)?;
        if !d.is_dir() {
            return Err(MetaError::NotADirectory(dir.display()));
        }
        crate::perm::search_up(&self.reader(), who, d.ino)?;
        let h = self.db.cf_handle(CF_XATTR).expect("cf exists");
        let mut it = self.db.raw_iterator_cf(h);
        let mut out = Vec::with_capacity(children.len());
        for &ino in children {
            let prefix = ino_key(ino);
            let mut attrs = Vec::new();
            it.seek(prefix);
            while let (Some(k), Some(v)) = (it.key(), it.value()) {
                if !k.starts_with(&prefix) {
                    break;
                }
                let (_, name) =
                    split_prefixed(k).ok_or_else(|| crate::error::corrupt("xattr", "key"))?;
                attrs.push((name.to_vec(), decode_xattr(v)?));
                it.next();
            }
            it.status()?;
            out.push(attrs);
        }
        Ok(out)
    }
}
