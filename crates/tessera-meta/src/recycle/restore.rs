//! Restore: an entry goes back to where it was (or where asked), its
//! quota charged again and checked, in one transaction.

use super::moves::{move_into, Removal};
use super::{account, bin_of, drop_entry, load_entry, owner_or_root, RecycleEntry};
use crate::acl::Action;
use crate::error::MetaError;
use crate::quota::{self, Deltas, OwnerUsage};
use crate::read::{self, lookup, must_inode, resolve_parent};
use crate::records::Inode;
use crate::store::{now_ns, MetaStore};
use crate::txn::Txn;
use crate::write::{need, W, X};
use tessera_types::{Identity, NsPath};

/// What a restore did.
#[derive(Debug, Clone)]
pub struct Restored {
    pub entry: RecycleEntry,
    /// Where it is now.
    pub path: NsPath,
    /// A file a forced restore replaced and removed for good (no bin
    /// covers it): the data layer removes its stripes.
    pub replaced: Vec<Inode>,
}

/// Usage of a binned tree per owner, the top included (no checks: it was
/// checked when it went in).
fn binned_usage(txn: &Txn<'_>, top: &Inode) -> Result<OwnerUsage, MetaError> {
    let mut usage = OwnerUsage::new();
    usage.insert(
        (top.uid, top.gid),
        (top.size + txn.committed_xattr_bytes(top.ino)?, 1),
    );
    if !top.is_dir() {
        crate::versions::add_usage(txn, top.ino, &mut usage)?;
    }
    let mut stack = if top.is_dir() { vec![top.ino] } else { vec![] };
    while let Some(d) = stack.pop() {
        let mut after: Option<Vec<u8>> = None;
        loop {
            let page = read::list_children(txn, d, after.as_deref(), 1024)?;
            let Some(last) = page.last() else { break };
            after = Some(last.name.clone());
            for c in page {
                let e = usage.entry((c.uid, c.gid)).or_default();
                e.0 += c.size + txn.committed_xattr_bytes(c.ino)?;
                e.1 += 1;
                if c.is_dir() {
                    stack.push(c.ino);
                } else {
                    crate::versions::add_usage(txn, c.ino, &mut usage)?;
                }
            }
        }
    }
    Ok(usage)
}

impl MetaStore {
    /// Put entry `id` back at its original path, or at `to`. Its owner or
    /// root; the caller needs the right to create entries in the target
    /// directory, which must exist. An existing entry there is refused
    /// (`AlreadyExists`) unless `force`: then a file or an empty directory
    /// is deleted first (into its own bin when one covers it).
    // long-fn: one transaction; each step reads what the one before resolved.
    pub fn recycle_restore(
        &self,
        who: &Identity,
        id: u64,
        to: Option<&NsPath>,
        force: bool,
    ) -> Result<Restored, MetaError> {
        let (seq, out) = {
            let st = self.lock();
            let mut txn = self.txn();
            let entry = load_entry(&txn, id)?;
            owner_or_root(who, &entry)?;
            if entry.purging {
                return Err(MetaError::Busy(format!(
                    "recycle bin entry {id} is being purged"
                )));
            }
            let target = match to {
                Some(p) => p.clone(),
                None => NsPath::parse(entry.path.as_bytes())?,
            };
            if target.is_root() {
                return Err(MetaError::AlreadyExists("/".into()));
            }
            let (ddir, dname) = resolve_parent(&txn, &target, who).map_err(|e| match e {
                MetaError::NotFound(_) => MetaError::NotFound(format!(
                    "the directory {} was restored into does not exist (restore elsewhere with a target path)",
                    target.split_last().map(|(p, _)| p.display()).unwrap_or_default()
                )),
                e => e,
            })?;
            NsPath::validate_name(dname)?;
            need(
                &txn,
                who,
                ddir.ino,
                &ddir,
                W | X,
                Action::Write,
                "create entries here",
            )?;
            let mut replaced = Vec::new();
            if let Some((_, ino)) = lookup(&txn, ddir.ino, dname)? {
                if !force {
                    return Err(MetaError::AlreadyExists(format!(
                        "{} exists (restore with force to replace it)",
                        target.display()
                    )));
                }
                let old = must_inode(&txn, ino)?;
                if old.is_dir() && old.nchildren > 0 {
                    return Err(MetaError::NotEmpty(target.display()));
                }
                need(
                    &txn,
                    who,
                    ddir.ino,
                    &ddir,
                    W | X,
                    Action::Delete,
                    "replace entries here",
                )?;
                crate::perm::sticky_allows(who, &ddir, &old)?;
                replaced = self.replace(&mut txn, &st, who, (ddir.clone(), old), &target)?;
            }
            let mut top = must_inode(&txn, id)?;
            let usage = binned_usage(&txn, &top)?;
            let node = quota::node_of_dir(&txn, ddir.ino)?;
            let mut deltas = Deltas::default();
            for ((uid, gid), (b, i)) in &usage {
                deltas.charge(node, *uid, *gid, *b as i128, *i as i128);
            }
            let now = now_ns();
            top.parent = ddir.ino;
            top.name = dname.to_vec();
            top.ctime_ns = now;
            if top.is_dir() {
                txn.note_dir_change();
            }
            txn.put_inode(&top);
            txn.put_dentry(ddir.ino, dname, top.kind, top.ino);
            let mut d = txn.must_inode(ddir.ino)?;
            d.nchildren += 1;
            d.mtime_ns = now;
            txn.put_inode(&d);
            drop_entry(&mut txn, &entry);
            account(
                &mut txn,
                &entry.bin,
                -(entry.bytes as i128),
                -(entry.inodes as i128),
                -1,
            )?;
            deltas.apply(&mut txn, &st, true)?;
            let out = Restored {
                entry,
                path: target,
                replaced,
            };
            (self.commit(txn, &st)?, out)
        };
        self.finish(seq)?;
        Ok(out)
    }

    /// A forced restore's target goes: into its bin when one covers it,
    /// else for good (a file's inode and its versions' given back for
    /// their stripes).
    fn replace(
        &self,
        txn: &mut Txn<'_>,
        st: &crate::store::WriterState,
        who: &Identity,
        (mut dir, old): (Inode, Inode),
        target: &NsPath,
    ) -> Result<Vec<Inode>, MetaError> {
        if let Some(bin) = bin_of(&*txn, dir.ino)? {
            if let Removal::Binned { .. } =
                move_into(self, txn, st, who, (dir.clone(), old.clone()), target, &bin)?
            {
                return Ok(Vec::new());
            }
        }
        let node = quota::node_of_dir(&*txn, dir.ino)?;
        let mut deltas = Deltas::default();
        crate::write::drop_node_records(self, txn, st, &old)?;
        let gone = crate::versions::delete_file_charged(txn, &mut deltas, node, dir.ino, &old)?;
        dir.nchildren = dir.nchildren.saturating_sub(1);
        txn.put_inode(&dir);
        deltas.apply(txn, st, false)?;
        Ok(gone)
    }
}
