//! Local users and groups, through the C library's name service switch
//! (so LDAP and SSSD users are found as well as `/etc/passwd` ones), by
//! the maintained `uzers` crate rather than our own FFI or a parser of
//! `/etc/passwd` that misses every non-file source.

/// A local account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalUser {
    pub uid: u32,
    pub gid: u32,
    pub name: String,
    /// The name of its primary group, when it has one.
    pub group: Option<String>,
}

/// The account called `name`, if any.
pub fn user_by_name(name: &str) -> Option<LocalUser> {
    if name.is_empty() || name.contains('\0') {
        return None;
    }
    let u = uzers::get_user_by_name(name)?;
    Some(LocalUser {
        uid: u.uid(),
        gid: u.primary_group_id(),
        name: u.name().to_string_lossy().into_owned(),
        group: group_name(u.primary_group_id()),
    })
}

/// The account with `uid`, if any.
pub fn user_by_uid(uid: u32) -> Option<LocalUser> {
    let u = uzers::get_user_by_uid(uid)?;
    Some(LocalUser {
        uid,
        gid: u.primary_group_id(),
        name: u.name().to_string_lossy().into_owned(),
        group: group_name(u.primary_group_id()),
    })
}

/// The name of user `uid`.
pub fn user_name(uid: u32) -> Option<String> {
    uzers::get_user_by_uid(uid).map(|u| u.name().to_string_lossy().into_owned())
}

/// The groups account `u` is in, (gid, name), its primary group first.
pub fn groups_of(u: &LocalUser) -> Vec<(u32, String)> {
    let mut out: Vec<(u32, String)> = vec![(u.gid, u.group.clone().unwrap_or_default())];
    for g in uzers::get_user_groups(u.name.as_str(), u.gid).unwrap_or_default() {
        if g.gid() != u.gid {
            out.push((g.gid(), g.name().to_string_lossy().into_owned()));
        }
    }
    out.retain(|(_, n)| !n.is_empty());
    out
}

/// The identity of local account `u` over `protocol`, in its groups
/// (`group`, when the account is in it, as its primary group): the one
/// mapping from a local account to an `Identity` every login uses.
pub fn local_identity(
    u: &LocalUser,
    group: Option<&str>,
    protocol: &'static str,
) -> tessera_types::Identity {
    use tessera_types::Identity;
    let member_of = groups_of(u);
    let gid = group
        .and_then(|g| member_of.iter().find(|(_, n)| n == g))
        .map_or(u.gid, |(gid, _)| *gid);
    let mut id = if u.uid == 0 {
        Identity::root(protocol)
    } else {
        Identity::user(u.uid, gid, u.name.clone(), protocol)
    };
    id.gid = gid;
    id.groups = member_of
        .iter()
        .map(|(g, _)| *g)
        .filter(|&g| g != gid)
        .collect();
    id.group_names = member_of.into_iter().map(|(_, n)| n).collect();
    id
}

/// The gid of the group called `name`.
pub fn group_id(name: &str) -> Option<u32> {
    if name.is_empty() || name.contains('\0') {
        return None;
    }
    uzers::get_group_by_name(name).map(|g| g.gid())
}

/// The name of group `gid`.
pub fn group_name(gid: u32) -> Option<String> {
    uzers::get_group_by_gid(gid).map(|g| g.name().to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debian_base_accounts() {
        let root = user_by_name("root").expect("root");
        assert_eq!(
            (root.uid, root.gid, root.group.as_deref()),
            (0, 0, Some("root"))
        );
        let daemon = user_by_name("daemon").expect("daemon");
        assert_eq!(daemon.uid, 1, "Debian's daemon user");
        assert_eq!(user_by_uid(1).map(|u| u.name), Some("daemon".into()));
        assert_eq!(group_id("daemon"), Some(1));
        assert_eq!(group_name(0).as_deref(), Some("root"));
        assert_eq!(user_by_name("no-such-user-here"), None);
        assert_eq!(user_by_name("ro\0ot"), None);
        assert_eq!(user_by_name(""), None);
    }
}
