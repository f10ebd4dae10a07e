//! Which remote endpoints this server may be made to connect to (the
//! active side of a third-party copy): one decision for every front-end,
//! from `[https] tpc_allow` / `tpc_deny` (networks in CIDR form, or host
//! names, `*.example.org` for a domain). A deny entry refuses; an allow
//! entry admits; with allow entries configured, nothing else is admitted;
//! without them, anything but this host's own and link-local networks
//! (loopback, link-local, unspecified, multicast and broadcast addresses)
//! is admitted, and those only for root, so that a user cannot turn the
//! server into a probe of services only it can reach. The addresses a
//! name resolves to are checked, all of them, and are the ones connected
//! to (no second resolution to rebind).

use ipnet::IpNet;
use std::net::IpAddr;
use tessera_types::Identity;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Rule {
    Net(IpNet),
    /// Lower case; `*.d` matches every name ending in `.d`.
    Host(String),
}

impl Rule {
    fn parse(s: &str) -> Result<Rule, String> {
        let s = s.trim();
        if let Ok(n) = s.parse::<IpNet>() {
            return Ok(Rule::Net(n));
        }
        if let Ok(ip) = s.parse::<IpAddr>() {
            return Ok(Rule::Net(IpNet::from(ip)));
        }
        let name = s.to_ascii_lowercase();
        let bare = name.strip_prefix("*.").unwrap_or(&name);
        let ok = !bare.is_empty()
            && bare
                .split('.')
                .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
        if !ok {
            return Err(format!("{s:?} is neither a network nor a host name"));
        }
        Ok(Rule::Host(name))
    }

    fn matches_host(&self, host: &str) -> bool {
        match self {
            Rule::Host(h) => match h.strip_prefix("*.") {
                Some(domain) => host.ends_with(&format!(".{domain}")),
                None => host == h,
            },
            Rule::Net(_) => false,
        }
    }

    fn contains(&self, ip: IpAddr) -> bool {
        match self {
            Rule::Net(n) => n.contains(&ip.to_canonical()),
            Rule::Host(_) => false,
        }
    }
}

/// The remote-endpoint policy (see the module documentation).
#[derive(Debug, Clone, Default)]
pub struct RemotePolicy {
    allow: Vec<Rule>,
    deny: Vec<Rule>,
}

/// Addresses nobody but root may have the server connect to by default.
fn local_only(ip: IpAddr) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(a) => {
            a.is_loopback()
                || a.is_link_local()
                || a.is_unspecified()
                || a.is_multicast()
                || a.is_broadcast()
        }
        IpAddr::V6(a) => {
            a.is_loopback()
                || a.is_unspecified()
                || a.is_multicast()
                || (a.segments()[0] & 0xffc0) == 0xfe80
        }
    }
}

impl RemotePolicy {
    pub fn new(allow: &[String], deny: &[String]) -> Result<RemotePolicy, String> {
        let parse = |v: &[String]| {
            v.iter()
                .map(|s| Rule::parse(s))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(RemotePolicy {
            allow: parse(allow)?,
            deny: parse(deny)?,
        })
    }

    /// May `who` have this server connect to `host`, which resolved to
    /// `addrs`? `Err` says why (for the log: the client is told less).
    pub fn check(&self, who: &Identity, host: &str, addrs: &[IpAddr]) -> Result<(), String> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        if addrs.is_empty() {
            return Err(format!("{host} has no address"));
        }
        if let Some(r) = self
            .deny
            .iter()
            .find(|r| r.matches_host(&host) || addrs.iter().any(|&a| r.contains(a)))
        {
            return Err(format!("{host} is denied by tpc_deny ({r:?})"));
        }
        let allowed = self.allow.iter().any(|r| r.matches_host(&host))
            || addrs
                .iter()
                .all(|&a| self.allow.iter().any(|r| r.contains(a)));
        if allowed && !self.allow.is_empty() {
            return Ok(());
        }
        if !self.allow.is_empty() {
            return Err(format!("{host} is not in tpc_allow"));
        }
        match addrs.iter().find(|&&a| local_only(a)) {
            Some(a) if !who.is_root() => Err(format!(
                "{host} ({a}) is this host's own or link-local: allow it in tpc_allow"
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn defaults_allow_and_deny() {
        let user = Identity::user(1000, 1000, "alice", "https");
        let root = Identity::root("https");
        let p = RemotePolicy::default();
        assert!(p
            .check(&user, "storage.example.org", &[ip("192.0.2.7")])
            .is_ok());
        assert!(
            p.check(&user, "10.1.2.3", &[ip("10.1.2.3")]).is_ok(),
            "site networks"
        );
        for local in [
            "127.0.0.1",
            "127.9.9.9",
            "::1",
            "169.254.169.254",
            "fe80::1",
            "0.0.0.0",
            "::ffff:127.0.0.1",
            "224.0.0.1",
        ] {
            assert!(p.check(&user, "x", &[ip(local)]).is_err(), "{local}");
            assert!(p.check(&root, "x", &[ip(local)]).is_ok(), "root: {local}");
        }
        // One bad address of several refuses the name (no rebinding).
        assert!(p
            .check(&user, "x", &[ip("192.0.2.7"), ip("127.0.0.1")])
            .is_err());
        assert!(p.check(&user, "x", &[]).is_err());

        let p = RemotePolicy::new(
            &["127.0.0.0/8".into(), "*.cern.ch".into(), "::1".into()],
            &["127.0.0.9".into(), "bad.cern.ch".into()],
        )
        .unwrap();
        assert!(p
            .check(&user, "localhost", &[ip("127.0.0.1"), ip("::1")])
            .is_ok());
        assert!(p.check(&user, "eos.cern.ch", &[ip("192.0.2.1")]).is_ok());
        assert!(p.check(&user, "EOS.CERN.CH.", &[ip("192.0.2.1")]).is_ok());
        assert!(p
            .check(&user, "cern.ch.evil.org", &[ip("192.0.2.1")])
            .is_err());
        assert!(p.check(&user, "bad.cern.ch", &[ip("192.0.2.1")]).is_err());
        assert!(
            p.check(&root, "x", &[ip("127.0.0.9")]).is_err(),
            "deny binds root too"
        );
        assert!(
            p.check(&user, "elsewhere.org", &[ip("192.0.2.1")]).is_err(),
            "not allowed"
        );
        for bad in ["", "a..b", "1.2.3.4/40", "exa mple.org", "*."] {
            assert!(RemotePolicy::new(&[bad.into()], &[]).is_err(), "{bad:?}");
        }
    }
}
