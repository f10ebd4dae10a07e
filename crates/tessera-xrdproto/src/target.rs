//! A request's path and its CGI, from the payload: the path normalised
//! (it cannot name anything above `/`), the CGI split into pairs.

use crate::DecodeError;
use tessera_types::NsPath;

/// A request's path and its CGI (`path?k=v&k2=v2`), from the payload.
pub struct Target {
    pub path: NsPath,
    pub cgi: Vec<(String, String)>,
}

impl Target {
    pub fn parse(payload: &[u8]) -> Result<Target, DecodeError> {
        let p = match payload.iter().position(|b| *b == 0) {
            // One trailing NUL is tolerated; an embedded one is not.
            Some(i) if i + 1 == payload.len() => &payload[..i],
            Some(_) => return Err(DecodeError::invalid("path contains a NUL byte")),
            None => payload,
        };
        if p.is_empty() {
            return Err(DecodeError::new(crate::err::ARG_MISSING, "no path given"));
        }
        let (path, cgi) = match p.iter().position(|b| *b == b'?') {
            Some(i) => (&p[..i], &p[i + 1..]),
            None => (p, &b""[..]),
        };
        let path = NsPath::parse(path).map_err(|e| DecodeError::invalid(e.to_string()))?;
        let cgi = String::from_utf8_lossy(cgi)
            .split('&')
            .filter(|kv| !kv.is_empty())
            .map(|kv| match kv.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (kv.to_string(), String::new()),
            })
            .collect();
        Ok(Target { path, cgi })
    }

    pub fn cgi(&self, key: &str) -> Option<&str> {
        self.cgi
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        let t = Target::parse(b"/a/b?&oss.asize=10&authz=Bearer%20x").expect("parse");
        assert_eq!(t.path.display(), "/a/b");
        assert_eq!(t.cgi("oss.asize"), Some("10"));
        assert_eq!(t.cgi("authz"), Some("Bearer%20x"));
        assert!(Target::parse(b"/a\0").is_ok());
        assert!(Target::parse(b"/a\0b").is_err());
        assert!(Target::parse(b"").is_err());
        assert_eq!(
            Target::parse(b"/../../etc")
                .expect("clamped")
                .path
                .display(),
            "/etc"
        );
    }
}
