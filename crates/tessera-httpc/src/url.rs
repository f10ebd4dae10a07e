//! URLs of the endpoints we talk to, split by `http::Uri`.

/// What a scheme is, for us.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `https`, `davs`.
    Https,
    /// `http`, `dav`.
    Http,
    /// `root`, `xroot` (XRootD; no TLS here).
    Root,
}

impl Scheme {
    fn of(s: &str) -> Option<Scheme> {
        Some(match s.to_ascii_lowercase().as_str() {
            "https" | "davs" => Scheme::Https,
            "http" | "dav" => Scheme::Http,
            "root" | "xroot" => Scheme::Root,
            _ => return None,
        })
    }

    fn default_port(self) -> u16 {
        match self {
            Scheme::Https => 443,
            Scheme::Http => 80,
            Scheme::Root => 1094,
        }
    }
}

/// A URL, split: scheme, host (an IPv6 address without its brackets),
/// port (the scheme's default when none), and the target (path and
/// query, `/` at least).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub scheme: Scheme,
    pub host: String,
    pub port: u16,
    pub target: String,
}

impl Url {
    /// `url` if its scheme is one of `allowed`.
    pub fn parse(url: &str, allowed: &[Scheme]) -> Result<Url, String> {
        let bad = |why: &str| format!("not a usable URL ({why}): {url}");
        let u: hyper::Uri = url.parse().map_err(|_| bad("unparsable"))?;
        let scheme = u
            .scheme_str()
            .and_then(Scheme::of)
            .filter(|s| allowed.contains(s))
            .ok_or_else(|| bad("scheme"))?;
        let authority = u.authority().ok_or_else(|| bad("no host"))?;
        if authority.as_str().contains('@') {
            // Credentials go in headers or files, never in a URL.
            return Err(bad("credentials in the URL"));
        }
        let host = authority.host();
        // A port that is there but not a number (`h:x`) is refused, not
        // defaulted.
        let after_host = authority
            .as_str()
            .rsplit_once(host)
            .map_or("", |(_, rest)| rest);
        let port = match (u.port_u16(), after_host) {
            (Some(p), _) => p,
            (None, "") => scheme.default_port(),
            (None, _) => return Err(bad("port")),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(bad("no host"));
        }
        Ok(Url {
            scheme,
            host: host.to_string(),
            port,
            target: u.path_and_query().map_or("/", |p| p.as_str()).to_string(),
        })
    }

    pub fn tls(&self) -> bool {
        self.scheme == Scheme::Https
    }

    /// `host:port` for a `Host` header or a URL (an IPv6 address in
    /// brackets).
    pub fn authority(&self) -> String {
        format!("{}:{}", url_host(&self.host), self.port)
    }

    /// The path alone (no query).
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("/")
    }
}

/// `host` as a URL writes it: an IPv6 address in brackets.
pub fn url_host(host: &str) -> std::borrow::Cow<'_, str> {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]").into()
    } else {
        host.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const WEB: &[Scheme] = &[Scheme::Https, Scheme::Http];

    #[test]
    fn urls_split_by_uri() {
        let u = Url::parse("davs://host.example:1094/a/b?copy_mode=pull", WEB).unwrap();
        assert_eq!(
            (u.tls(), u.host.as_str(), u.port, u.target.as_str()),
            (true, "host.example", 1094, "/a/b?copy_mode=pull")
        );
        assert_eq!(u.path(), "/a/b");
        assert_eq!(Url::parse("https://h", WEB).unwrap().port, 443);
        assert_eq!(Url::parse("https://h", WEB).unwrap().target, "/");
        let v6 = Url::parse("http://[::1]:8080/x", WEB).unwrap();
        assert_eq!(
            (v6.host.as_str(), v6.authority()),
            ("::1", "[::1]:8080".into())
        );
        assert!(Url::parse("https://user@h/p", WEB).is_err());
        let r = Url::parse("root://h//store/x", &[Scheme::Root]).unwrap();
        assert_eq!((r.port, r.target.as_str()), (1094, "//store/x"));
        for bad in [
            "ftp://h/x",
            "https://h:notaport/x",
            "https:///x",
            "h/x",
            "root://h//x",
        ] {
            assert!(Url::parse(bad, WEB).is_err(), "{bad}");
        }
    }
}
