//! Who a client is. Until tokens are validated (their own issue), the
//! `unix` security protocol names a user, which the server either trusts
//! (looked up in the local password and group files) or maps to `nobody`.

use std::path::Path;
use tessera_types::Identity;

/// How `unix` credentials are mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnixPolicy {
    /// Trust the user name the client sends (closed sites).
    Trust,
    /// Everyone is `nobody`.
    Anonymous,
    /// Everyone may read and list, nothing else (tokens write).
    ReadOnly,
    /// Trust only this uid's user (dev mode: the server's own user);
    /// everyone else is as with `ReadOnly`.
    Owner(u32),
}

pub const NOBODY: u32 = 65534;

pub fn anonymous() -> Identity {
    Identity::user(NOBODY, NOBODY, "nobody", "xroot")
}

/// Who a session is before it authenticates.
pub fn initial(policy: UnixPolicy) -> Identity {
    match policy {
        UnixPolicy::Trust | UnixPolicy::Anonymous => anonymous(),
        UnixPolicy::ReadOnly | UnixPolicy::Owner(_) => Identity::read_only_anonymous("xroot"),
    }
}

/// The identity for a `unix` credential: `user[ group]`.
pub fn from_unix(policy: UnixPolicy, user: &str, group: Option<&str>) -> Identity {
    match policy {
        UnixPolicy::Anonymous => return anonymous(),
        UnixPolicy::ReadOnly => return Identity::read_only_anonymous("xroot"),
        UnixPolicy::Trust | UnixPolicy::Owner(_) => {}
    }
    let Some((uid, mut gid)) = lookup_user(Path::new("/etc/passwd"), user) else {
        return anonymous();
    };
    if let Some(g) = group.and_then(|g| lookup_group(Path::new("/etc/group"), g)) {
        gid = g;
    }
    if let UnixPolicy::Owner(owner) = policy {
        if uid != owner {
            return Identity::read_only_anonymous("xroot");
        }
    }
    if uid == 0 {
        let mut r = Identity::root("xroot");
        r.gid = gid;
        return r;
    }
    let mut id = Identity::user(uid, gid, user, "xroot");
    id.group_names = group_name(Path::new("/etc/group"), gid)
        .into_iter()
        .collect();
    id
}

/// Parse a `unix` credential body (after the `unix\0` tag): `user[ group]`.
pub fn parse_unix(cred: &[u8]) -> Option<(String, Option<String>)> {
    let body = cred.strip_prefix(b"unix\0").unwrap_or(cred);
    let text: String = String::from_utf8_lossy(body)
        .chars()
        .map(|c| if c == '\0' { ' ' } else { c })
        .collect();
    let mut it = text.split_whitespace();
    let user = it.next()?.to_string();
    Some((user, it.next().map(str::to_string)))
}

fn lookup_user(passwd: &Path, name: &str) -> Option<(u32, u32)> {
    let text = std::fs::read_to_string(passwd).ok()?;
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() >= 4 && f[0] == name).then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
    })
}

fn lookup_group(group: &Path, name: &str) -> Option<u32> {
    let text = std::fs::read_to_string(group).ok()?;
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() >= 3 && f[0] == name).then(|| f[2].parse().ok())?
    })
}

fn group_name(group: &Path, gid: u32) -> Option<String> {
    let text = std::fs::read_to_string(group).ok()?;
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() >= 3 && f[2].parse() == Ok(gid)).then(|| f[0].to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_credentials() {
        assert_eq!(
            parse_unix(b"unix\0alice atlas\0"),
            Some(("alice".into(), Some("atlas".into())))
        );
        assert_eq!(parse_unix(b"unix\0bob\0"), Some(("bob".into(), None)));
        assert_eq!(parse_unix(b"unix\0\0"), None);
        assert!(from_unix(UnixPolicy::Trust, "root", None).is_root());
        let daemon = from_unix(UnixPolicy::Trust, "daemon", None);
        assert_eq!(daemon.uid, 1, "Debian's daemon user");
        assert!(daemon.in_group_named("daemon"));
        assert_eq!(from_unix(UnixPolicy::Anonymous, "root", None).uid, NOBODY);
        assert_eq!(
            from_unix(UnixPolicy::Trust, "no-such-user-here", None).uid,
            NOBODY
        );
    }
}
