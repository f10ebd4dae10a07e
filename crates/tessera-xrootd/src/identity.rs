//! Who a client is. The `unix` security protocol only claims a user name;
//! what a claim is worth depends on `[xrootd] unix`, and on loopback the
//! kernel's socket table says who really connected (`peer.rs`):
//! - `anonymous` (the default): everyone is `nobody`;
//! - `read-only`: everyone may read and list, nothing else;
//! - `owner` (the dev mode): a loopback client whose socket belongs to the
//!   server's own user is that user; everyone else, and every client the
//!   kernel cannot vouch for, has the anonymous (read-only) rights;
//! - `trust`: the claimed name is believed, as the reference server's
//!   `unix` protocol does, except that on loopback a claim the kernel
//!   contradicts, and any unknown name, gets the anonymous rights. Only for
//!   networks where the site administers every client host.
//!
//! Names are resolved through NSS (passwd, LDAP, SSSD); a claimed group is
//! taken only when the user is in it.

use tessera_auth::users;
use tessera_types::Identity;

/// How `unix` credentials are mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnixPolicy {
    /// Trust the user name the client sends (closed sites), unless the
    /// kernel says otherwise on loopback.
    Trust,
    /// Everyone is `nobody`.
    Anonymous,
    /// Everyone may read and list, nothing else (tokens write).
    ReadOnly,
    /// Trust only this uid's user, as the kernel identifies it on
    /// loopback (dev mode: the server's own user); everyone else is as
    /// with `ReadOnly`.
    Owner(u32),
}

pub const NOBODY: u32 = 65534;

pub fn anonymous() -> Identity {
    Identity::user(NOBODY, NOBODY, "nobody", "xroot")
}

/// Who a session is before it authenticates, and what a claim that
/// proves nothing gets: the policy's anonymous rights.
pub fn initial(policy: UnixPolicy) -> Identity {
    match policy {
        UnixPolicy::Trust | UnixPolicy::Anonymous => anonymous(),
        UnixPolicy::ReadOnly | UnixPolicy::Owner(_) => Identity::read_only_anonymous("xroot"),
    }
}

/// The identity for a `unix` credential `user[ group]`; `verified` is the
/// uid the kernel says owns the client's socket (loopback only).
pub fn from_unix(
    policy: UnixPolicy,
    user: &str,
    group: Option<&str>,
    verified: Option<u32>,
) -> Identity {
    let account = match policy {
        UnixPolicy::Anonymous | UnixPolicy::ReadOnly => return initial(policy),
        UnixPolicy::Owner(owner) => match verified {
            // The kernel's word, whatever name was claimed.
            Some(uid) if uid == owner => users::user_by_uid(uid),
            _ => None,
        },
        UnixPolicy::Trust => {
            users::user_by_name(user).filter(|u| verified.is_none_or(|v| v == u.uid))
        }
    };
    let Some(u) = account else {
        return initial(policy);
    };
    local_identity(&u, group)
}

/// The identity of local account `u`, in its groups (`group`, when the
/// account is in it, as its primary group).
fn local_identity(u: &users::LocalUser, group: Option<&str>) -> Identity {
    users::local_identity(u, group, "xroot")
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
        let t = UnixPolicy::Trust;
        assert!(from_unix(t, "root", None, None).is_root());
        assert!(from_unix(t, "root", None, Some(0)).is_root());
        let daemon = from_unix(t, "daemon", None, None);
        assert_eq!(daemon.uid, 1, "Debian's daemon user");
        assert!(daemon.in_group_named("daemon"));
        // A group the user is not in is not taken.
        assert_eq!(from_unix(t, "daemon", Some("root"), None).gid, 1);
        assert_eq!(
            from_unix(UnixPolicy::Anonymous, "root", None, Some(0)).uid,
            NOBODY
        );
        assert_eq!(from_unix(t, "no-such-user-here", None, None).uid, NOBODY);
        // The kernel contradicts the claim: anonymous rights.
        assert_eq!(from_unix(t, "root", None, Some(1000)), anonymous());
        // Owner: only the kernel's word counts.
        let o = UnixPolicy::Owner(0);
        assert!(from_unix(o, "daemon", None, Some(0)).is_root());
        assert_eq!(from_unix(o, "root", None, None), initial(o));
        assert_eq!(from_unix(o, "root", None, Some(1)), initial(o));
    }
}
