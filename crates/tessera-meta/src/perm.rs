//! The POSIX rules above a file: to look a name up in a directory, a
//! request needs search permission (`x`) on that directory, so reaching
//! `/a/b/f` needs `x` on `/`, `/a` and `/a/b` (root passes). A directory's
//! ACL may grant what its mode bits refuse (`x`, browse), never the other
//! way round: the ACL has no search denial, so the mode bits are asked
//! first and the ACL only when they refuse. The sticky bit (`S_ISVTX`) on
//! a directory lets only the owner of an entry, the owner of the directory
//! or root remove or rename that entry (EPERM otherwise).
//!
//! Every resolution of a path for a request walks through
//! [`crate::read::resolve_as`], which applies the rule; a commit that
//! knows only its directory's inode checks the chain upwards with
//! [`search_up`].

use crate::acl::Action;
use crate::dircache::Perm;
use crate::error::MetaError;
use crate::read::{must_inode, Get};
use crate::records::Inode;
use crate::store::ROOT_INO;
use crate::write::X;
use tessera_types::Identity;

const S_ISVTX: u32 = 0o1000;

/// The mode-bit triple of `perm` that applies to `who`.
fn bits(who: &Identity, perm: &Perm) -> u32 {
    if who.uid == perm.uid {
        (perm.mode >> 6) & 7
    } else if who.in_group(perm.gid) {
        (perm.mode >> 3) & 7
    } else {
        perm.mode & 7
    }
}

/// May `who` look names up in directory `dir` (whose owner, group and
/// mode are `perm`): its mode bits, else its ACL's browse right.
pub(crate) fn may_search<G: Get>(
    g: &G,
    who: &Identity,
    dir: u64,
    perm: &Perm,
) -> Result<bool, MetaError> {
    if who.is_root() || bits(who, perm) & X == X {
        return Ok(true);
    }
    Ok(crate::acl::of_dir(g, dir)?.and_then(|l| l.decide(who, Action::Browse)) == Some(true))
}

/// The refusal of a search of the directory `shown` names.
pub(crate) fn refused(who: &Identity, shown: &str, perm: &Perm) -> MetaError {
    MetaError::PermissionDenied(format!(
        "{} may not search {shown} (uid {} gid {}, mode {:o})",
        who.name, perm.uid, perm.gid, perm.mode
    ))
}

/// Search permission on directory `dir` and on every directory above it
/// (a commit that knows only its directory: rights withdrawn on an
/// ancestor during a write refuse it).
pub(crate) fn search_up<G: Get>(g: &G, who: &Identity, dir: u64) -> Result<(), MetaError> {
    if who.is_root() {
        return Ok(());
    }
    let mut ino = dir;
    for _ in 0..=tessera_types::MAX_PATH_LEN {
        let d = must_inode(g, ino)?;
        let perm = Perm::of(&d);
        if !may_search(g, who, ino, &perm)? {
            let shown = crate::read::path_of(g, ino)
                .map(|p| p.display())
                .unwrap_or_else(|_| format!("directory {ino}"));
            return Err(refused(who, &shown, &perm));
        }
        if ino == ROOT_INO {
            return Ok(());
        }
        ino = d.parent;
    }
    Err(crate::error::corrupt(
        "tree",
        "parent chain too long (cycle?)",
    ))
}

/// The sticky-directory rule for removing or renaming `victim` out of
/// `dir`: with `S_ISVTX` on `dir`, only root, the directory's owner or the
/// entry's owner.
pub(crate) fn sticky_allows(who: &Identity, dir: &Inode, victim: &Inode) -> Result<(), MetaError> {
    if dir.mode & S_ISVTX == 0 || who.is_root() || who.uid == dir.uid || who.uid == victim.uid {
        return Ok(());
    }
    Err(MetaError::NotPermitted(format!(
        "{} may not remove or rename another user's entry in a sticky directory",
        who.name
    )))
}
