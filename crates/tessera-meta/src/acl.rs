//! EOS-style access control lists on directories. `sys.acl` (set by
//! admins) and `user.acl` (set by the directory's owner, honoured only
//! when the directory has `sys.eval.useracl`) govern the directory and the
//! entries in it. An entry is `u:<uid|name>:<rights>`,
//! `g:<gid|name>:<rights>` or `z:<rights>` (everyone), comma-separated. A
//! name matches the identity's user name or one of its group names (a
//! unix login's group, a token's `wlcg.groups`, the leading `/` optional);
//! a token's subject is a user through its issuer's map. Rights: `r` read files,
//! `w` create (and, unless denied, replace and delete), `x` browse (list),
//! `d` delete, `u` update (replace existing files: `u` without `w` is
//! update-only), `m` change mode; `!d`, `!u`, `!m` deny those. Evaluation,
//! for an identity that is not root: a deny in any matching entry refuses
//! (deny beats allow, and the owner too); else an allow in any matching
//! entry grants; else the mode bits decide. New subdirectories inherit
//! `sys.*` attributes, `sys.acl` included; files are governed by their
//! directory's lists.

use crate::error::MetaError;
use crate::keys::xattr_key;
use crate::read::Get;
use crate::records::decode_xattr;
use crate::txn::Cf;
use tessera_types::Identity;

/// What a request wants to do, as an ACL sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Read a file's data.
    Read,
    /// Create an entry.
    Write,
    /// Replace an existing file.
    Update,
    /// Remove an entry.
    Delete,
    /// List the directory.
    Browse,
    /// Change a mode.
    Chmod,
}

const R: u8 = 1;
const W: u8 = 2;
const X: u8 = 4;
const D: u8 = 8;
const U: u8 = 16;
const M: u8 = 32;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Subject {
    Uid(u32),
    User(String),
    Gid(u32),
    Group(String),
    Everyone,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    who: Subject,
    allow: u8,
    deny: u8,
}

/// A parsed list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Acl {
    entries: Vec<Entry>,
}

/// Parse an ACL value (for validation when it is set, and for use).
pub fn parse(text: &str) -> Result<Acl, MetaError> {
    let bad = |m: String| MetaError::Invalid(format!("ACL {text:?}: {m}"));
    let mut entries = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (who, rights) = match item.split_once(':') {
            Some(("z", r)) => (Subject::Everyone, r),
            Some(("u", rest)) | Some(("g", rest)) => {
                let (id, r) = rest
                    .split_once(':')
                    .ok_or_else(|| bad(format!("{item}: expected u:ID:RIGHTS")))?;
                let user = item.starts_with('u');
                let who = match (id.parse::<u32>(), user) {
                    (Ok(n), true) => Subject::Uid(n),
                    (Ok(n), false) => Subject::Gid(n),
                    (Err(_), true) if !id.is_empty() => Subject::User(id.to_string()),
                    (Err(_), false) if !id.trim_start_matches('/').is_empty() => {
                        Subject::Group(id.to_string())
                    }
                    _ => return Err(bad(format!("{item}: no user or group named"))),
                };
                (who, r)
            }
            _ => return Err(bad(format!("{item}: subjects are u:, g: or z:"))),
        };
        let (mut allow, mut deny) = (0u8, 0u8);
        let mut chars = rights.chars().peekable();
        while let Some(c) = chars.next() {
            let (neg, c) = if c == '!' {
                (
                    true,
                    chars
                        .next()
                        .ok_or_else(|| bad(format!("{item}: '!' alone")))?,
                )
            } else {
                (false, c)
            };
            let bit = match c {
                'r' => R,
                'w' => W,
                'x' => X,
                'd' => D,
                'u' => U,
                'm' => M,
                other => return Err(bad(format!("{item}: unknown right {other:?}"))),
            };
            if neg {
                if bit & (D | U | M) == 0 {
                    return Err(bad(format!("{item}: only !d, !u and !m deny")));
                }
                deny |= bit;
            } else {
                allow |= bit;
            }
        }
        entries.push(Entry { who, allow, deny });
    }
    Ok(Acl { entries })
}

impl Acl {
    fn matching<'a>(&'a self, who: &'a Identity) -> impl Iterator<Item = &'a Entry> + 'a {
        self.entries.iter().filter(move |e| match &e.who {
            Subject::Uid(u) => *u == who.uid,
            Subject::User(n) => *n == who.name,
            Subject::Gid(g) => who.in_group(*g),
            Subject::Group(n) => who.in_group_named(n),
            Subject::Everyone => true,
        })
    }

    /// Allowed, refused, or `None` (no matching entry says: mode bits).
    pub fn decide(&self, who: &Identity, a: Action) -> Option<bool> {
        let (want, denied_by) = match a {
            Action::Read => (R, 0),
            Action::Write => (W, 0),
            Action::Update => (U | W, U),
            Action::Delete => (D | W, D),
            Action::Browse => (X, 0),
            Action::Chmod => (M, M),
        };
        let mut granted = false;
        for e in self.matching(who) {
            if e.deny & denied_by != 0 {
                return Some(false);
            }
            granted |= e.allow & want != 0;
        }
        granted.then_some(true)
    }

    fn extend(&mut self, other: Acl) {
        self.entries.extend(other.entries);
    }
}

fn xattr<G: Get>(g: &G, ino: u64, name: &[u8]) -> Result<Option<String>, MetaError> {
    match g.get_raw(Cf::Xattr, &xattr_key(ino, name))? {
        Some(raw) => Ok(Some(
            String::from_utf8_lossy(&decode_xattr(&raw)?).into_owned(),
        )),
        None => Ok(None),
    }
}

/// The lists in force on directory `dir` (`sys.acl`, plus `user.acl` when
/// `sys.eval.useracl` is set); `None` when it has none.
pub(crate) fn of_dir<G: Get>(txn: &G, dir: u64) -> Result<Option<Acl>, MetaError> {
    let mut acl: Option<Acl> = None;
    if let Some(s) = xattr(txn, dir, b"sys.acl")? {
        acl = Some(parse(&s)?);
    }
    if xattr(txn, dir, b"sys.eval.useracl")?.is_some() {
        if let Some(u) = xattr(txn, dir, b"user.acl")? {
            acl.get_or_insert_with(Acl::default).extend(parse(&u)?);
        }
    }
    Ok(acl)
}

impl crate::store::MetaStore {
    /// May `who` read file `f`: its directory's ACL (`r`), else the mode
    /// bits.
    pub fn may_read(&self, who: &Identity, f: &crate::Inode) -> Result<bool, MetaError> {
        self.may_by(&self.reader(), who, f.parent, f, Action::Read, 4)
    }

    /// `may_read` from memory only: `Ok(None)` when the answer needs a
    /// read from storage (see [`crate::MetaStore::stat_nowait`]).
    pub fn may_read_nowait(
        &self,
        who: &Identity,
        f: &crate::Inode,
    ) -> Result<Option<bool>, MetaError> {
        crate::read::nowait(self.may_by(&self.reader_nowait(), who, f.parent, f, Action::Read, 4))
    }

    /// May `who` list directory `d`: its own ACL (`x`), else the mode bits.
    pub fn may_list(&self, who: &Identity, d: &crate::Inode) -> Result<bool, MetaError> {
        self.may_by(&self.reader(), who, d.ino, d, Action::Browse, 4)
    }

    fn may_by<G: Get>(
        &self,
        g: &G,
        who: &Identity,
        dir: u64,
        i: &crate::Inode,
        a: Action,
        want: u32,
    ) -> Result<bool, MetaError> {
        if who.is_root() {
            return Ok(true);
        }
        if let Some(d) = of_dir(g, dir)?.and_then(|l| l.decide(who, a)) {
            return Ok(d);
        }
        Ok(crate::may(who, i, want))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deny_beats_allow_and_subjects_match() {
        let alice = Identity::user(1000, 100, "alice", "t");
        let bob = Identity::user(1001, 200, "bob", "t");
        let acl = parse("u:1000:rwx, g:200:rx, z:!d").unwrap();
        assert_eq!(acl.decide(&alice, Action::Write), Some(true));
        assert_eq!(acl.decide(&alice, Action::Delete), Some(false), "z:!d wins");
        assert_eq!(acl.decide(&bob, Action::Read), Some(true));
        assert_eq!(acl.decide(&bob, Action::Write), None, "mode bits decide");
        let named = parse("u:alice:ru").unwrap();
        assert_eq!(named.decide(&alice, Action::Update), Some(true));
        assert_eq!(named.decide(&alice, Action::Write), None, "update-only");
        assert_eq!(
            parse("u:1000:w,u:1000:!u")
                .unwrap()
                .decide(&alice, Action::Update),
            Some(false)
        );
        let mut carol = Identity::user(1002, 300, "carol", "t");
        carol.group_names = vec!["/cms/production".into()];
        let grp = parse("g:cms/production:rw,g:/atlas:!d").unwrap();
        assert_eq!(grp.decide(&carol, Action::Write), Some(true));
        assert_eq!(grp.decide(&carol, Action::Delete), Some(true));
        assert_eq!(grp.decide(&bob, Action::Write), None);
        carol.group_names.push("atlas".into());
        assert_eq!(grp.decide(&carol, Action::Delete), Some(false));
        for bad in ["q:1:r", "u:1000", "u:1000:rz", "z:!r", "g::r", "g:/:r"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
