//! Which site a client is at, from its address: the metadata service's
//! `cluster.client_sites` maps networks (CIDR) to site names, and a
//! redirect prefers a gateway of the client's site.

use ipnet::IpNet;
use std::net::IpAddr;

/// A network (CIDR, or one address), by the `ipnet` crate (as the
/// remote-endpoint policy's).
fn parse_net(s: &str) -> Result<IpNet, String> {
    let s = s.trim();
    s.parse::<IpNet>()
        .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
        .map_err(|_| format!("bad network {s:?}"))
}

/// Networks to site names; the longest matching prefix wins.
#[derive(Debug, Clone, Default)]
pub struct SiteMap {
    nets: Vec<(IpNet, String)>,
}

impl SiteMap {
    /// From `site -> [network, ...]`.
    pub fn new<'a>(
        sites: impl IntoIterator<Item = (&'a String, &'a Vec<String>)>,
    ) -> Result<SiteMap, String> {
        let mut nets = Vec::new();
        for (site, list) in sites {
            for n in list {
                nets.push((parse_net(n)?, site.clone()));
            }
        }
        nets.sort_by_key(|(n, _)| std::cmp::Reverse(n.prefix_len()));
        Ok(SiteMap { nets })
    }

    pub fn site_of(&self, ip: IpAddr) -> Option<&str> {
        self.nets
            .iter()
            // An IPv4 client seen on an IPv6 socket is its IPv4 address.
            .find(|(n, _)| n.contains(&ip.to_canonical()))
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
