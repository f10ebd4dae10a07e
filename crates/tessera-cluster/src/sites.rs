//! Which site a client is at, from its address: the metadata service's
//! `cluster.client_sites` maps networks (CIDR) to site names, and a
//! redirect prefers a gateway of the client's site.

use std::net::IpAddr;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Net {
    addr: IpAddr,
    len: u8,
}

impl Net {
    fn parse(s: &str) -> Result<Net, String> {
        let (a, l) = s.split_once('/').unwrap_or((s, ""));
        let addr: IpAddr = a.trim().parse().map_err(|_| format!("bad network {s:?}"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = if l.is_empty() {
            max
        } else {
            l.trim()
                .parse()
                .map_err(|_| format!("bad prefix length in {s:?}"))?
        };
        if len > max {
            return Err(format!("prefix length {len} too long in {s:?}"));
        }
        Ok(Net { addr, len })
    }

    fn contains(&self, ip: IpAddr) -> bool {
        let ip = match (self.addr, ip) {
            // An IPv4 client seen on an IPv6 socket.
            (IpAddr::V4(_), IpAddr::V6(v6)) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            _ => ip,
        };
        let (a, b, bits) = match (self.addr, ip) {
            (IpAddr::V4(a), IpAddr::V4(b)) => (u32::from(a) as u128, u32::from(b) as u128, 32),
            (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), 128),
            _ => return false,
        };
        if self.len == 0 {
            return true;
        }
        let shift = bits - u32::from(self.len);
        (a >> shift) == (b >> shift)
    }
}

/// Networks to site names; the longest matching prefix wins.
#[derive(Debug, Clone, Default)]
pub struct SiteMap {
    nets: Vec<(Net, String)>,
}

impl SiteMap {
    /// From `site -> [network, ...]`.
    pub fn new<'a>(
        sites: impl IntoIterator<Item = (&'a String, &'a Vec<String>)>,
    ) -> Result<SiteMap, String> {
        let mut nets = Vec::new();
        for (site, list) in sites {
            for n in list {
                nets.push((Net::parse(n)?, site.clone()));
            }
        }
        nets.sort_by_key(|(n, _)| std::cmp::Reverse(n.len));
        Ok(SiteMap { nets })
    }

    pub fn site_of(&self, ip: IpAddr) -> Option<&str> {
        self.nets
            .iter()
            .find(|(n, _)| n.contains(ip))
            .map(|(_, s)| s.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn longest_prefix_wins() {
        let mut m = BTreeMap::new();
        m.insert(
            "cern".to_string(),
            vec!["10.0.0.0/8".to_string(), "2001:db8::/32".into()],
        );
        m.insert("desy".to_string(), vec!["10.7.0.0/16".to_string()]);
        let s = SiteMap::new(&m).expect("parse");
        assert_eq!(s.site_of("10.7.1.2".parse().unwrap()), Some("desy"));
        assert_eq!(s.site_of("10.8.1.2".parse().unwrap()), Some("cern"));
        assert_eq!(s.site_of("::ffff:10.8.1.2".parse().unwrap()), Some("cern"));
        assert_eq!(s.site_of("2001:db8::1".parse().unwrap()), Some("cern"));
        assert_eq!(s.site_of("192.168.0.1".parse().unwrap()), None);
        assert!(SiteMap::new(&BTreeMap::from([(
            "x".to_string(),
            vec!["1.2.3.4/33".to_string()]
        )]))
        .is_err());
    }
}
