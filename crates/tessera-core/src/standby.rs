//! Metadata HA (issue 27): what a standby metadata node knows of the
//! active one, for its front-ends to send clients there (XRootD
//! `kXR_redirect`, HTTPS 307), and how a node says where it is reached.

use std::sync::Arc;

/// Where clients reach a metadata node (`host:port` each), as it records
/// with its lease: `xrootd=h:p https=h:p admin=h:p`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Advert {
    pub xrootd: Option<String>,
    pub https: Option<String>,
    pub admin: Option<String>,
}

impl Advert {
    /// Words as `to_string` writes them; unknown words are skipped (a
    /// newer node may say more).
    pub fn parse(s: &str) -> Advert {
        let mut a = Advert::default();
        for w in s.split_whitespace() {
            match w.split_once('=') {
                Some(("xrootd", v)) => a.xrootd = Some(v.into()),
                Some(("https", v)) => a.https = Some(v.into()),
                Some(("admin", v)) => a.admin = Some(v.into()),
                _ => {}
            }
        }
        a
    }
}

impl std::fmt::Display for Advert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut words = Vec::new();
        for (k, v) in [
            ("xrootd", &self.xrootd),
            ("https", &self.https),
            ("admin", &self.admin),
        ] {
            if let Some(v) = v {
                words.push(format!("{k}={v}"));
            }
        }
        f.write_str(&words.join(" "))
    }
}

/// The active metadata node as a standby sees it now (`None`: none is
/// known, e.g. during a takeover), with its epoch.
#[derive(Clone)]
pub struct ActiveNode(Arc<dyn Fn() -> Option<(u64, Advert)> + Send + Sync>);

impl ActiveNode {
    pub fn new(f: impl Fn() -> Option<(u64, Advert)> + Send + Sync + 'static) -> ActiveNode {
        ActiveNode(Arc::new(f))
    }

    pub fn get(&self) -> Option<(u64, Advert)> {
        (self.0)()
    }
}

impl std::fmt::Debug for ActiveNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ActiveNode({:?})", self.get())
    }
}

/// Where a data gateway sends clients back to the metadata service: one
/// of its nodes' addresses, the first that takes connections (kept up to
/// date by the gateway; any live node will do, a standby sends clients on
/// to the active one).
#[derive(Clone, Debug)]
pub struct MgmAddr(Arc<std::sync::RwLock<String>>);

impl MgmAddr {
    pub fn new(addr: impl Into<String>) -> MgmAddr {
        MgmAddr(Arc::new(std::sync::RwLock::new(addr.into())))
    }

    pub fn get(&self) -> String {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether anything but this handle still uses the address (a task
    /// keeping it up to date ends when not).
    pub fn in_use(&self) -> bool {
        Arc::strong_count(&self.0) > 1
    }

    pub fn set(&self, addr: &str) {
        let mut a = self.0.write().unwrap_or_else(|p| p.into_inner());
        if *a != addr {
            *a = addr.to_string();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adverts_round_trip() {
        let a = Advert {
            xrootd: Some("h1:1094".into()),
            https: None,
            admin: Some("h1:9090".into()),
        };
        assert_eq!(a.to_string(), "xrootd=h1:1094 admin=h1:9090");
        assert_eq!(Advert::parse(&a.to_string()), a);
        assert_eq!(
            Advert::parse("later=x https=h:1"),
            Advert {
                https: Some("h:1".into()),
                ..Default::default()
            }
        );
    }
}
