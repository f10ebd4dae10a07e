//! Namespace paths.
//!
//! An [`NsPath`] is always absolute and normalised: no empty components, no
//! `.`, no `..`. Normalisation resolves `..` lexically and clamps it at the
//! root, so no input can ever name anything above `/`. Front-ends decode
//! their own escapes (percent-encoding, CGI) *before* building an `NsPath`,
//! so an encoded `%2e%2e` arrives here as a real `..` and is clamped too.

use std::fmt;

/// Longest single name (POSIX `NAME_MAX`).
pub const MAX_NAME_LEN: usize = 255;
/// Longest normalised path (POSIX `PATH_MAX`).
pub const MAX_PATH_LEN: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("path contains a NUL byte")]
    Nul,
    #[error("name longer than {MAX_NAME_LEN} bytes")]
    NameTooLong,
    #[error("path longer than {MAX_PATH_LEN} bytes")]
    PathTooLong,
    #[error("invalid name {0:?}")]
    InvalidName(String),
}

impl PathError {
    pub fn kind(&self) -> crate::ErrorKind {
        match self {
            PathError::Nul | PathError::InvalidName(_) => crate::ErrorKind::InvalidArgument,
            PathError::NameTooLong | PathError::PathTooLong => crate::ErrorKind::NameTooLong,
        }
    }
}

/// A normalised absolute path inside the namespace.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NsPath {
    /// `/` or `/a/b` (never a trailing slash, never `//`, `.` or `..`).
    raw: Vec<u8>,
}

impl NsPath {
    pub fn root() -> NsPath {
        NsPath { raw: b"/".to_vec() }
    }

    /// Parse and normalise raw bytes as sent by a client.
    pub fn parse(input: impl AsRef<[u8]>) -> Result<NsPath, PathError> {
        let input = input.as_ref();
        if input.contains(&0) {
            return Err(PathError::Nul);
        }
        let mut parts: Vec<&[u8]> = Vec::new();
        for comp in input.split(|b| *b == b'/') {
            match comp {
                b"" | b"." => {}
                b".." => {
                    parts.pop();
                }
                name => {
                    if name.len() > MAX_NAME_LEN {
                        return Err(PathError::NameTooLong);
                    }
                    parts.push(name);
                }
            }
        }
        let mut raw = Vec::with_capacity(input.len() + 1);
        if parts.is_empty() {
            raw.push(b'/');
        }
        for p in parts {
            raw.push(b'/');
            raw.extend_from_slice(p);
        }
        if raw.len() > MAX_PATH_LEN {
            return Err(PathError::PathTooLong);
        }
        Ok(NsPath { raw })
    }

    /// Check that `name` is usable as one directory entry.
    pub fn validate_name(name: &[u8]) -> Result<(), PathError> {
        if name.contains(&0) {
            return Err(PathError::Nul);
        }
        if name.is_empty() || name == b"." || name == b".." || name.contains(&b'/') {
            return Err(PathError::InvalidName(
                String::from_utf8_lossy(name).into_owned(),
            ));
        }
        if name.len() > MAX_NAME_LEN {
            return Err(PathError::NameTooLong);
        }
        Ok(())
    }

    pub fn is_root(&self) -> bool {
        self.raw == b"/"
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.raw
    }

    /// The path as text (lossy for non-UTF-8 names).
    pub fn display(&self) -> String {
        String::from_utf8_lossy(&self.raw).into_owned()
    }

    /// Components from the root down; empty for `/`.
    pub fn components(&self) -> impl Iterator<Item = &[u8]> {
        self.raw[1..]
            .split(|b| *b == b'/')
            .filter(|c| !c.is_empty())
    }

    /// The parent path and the last name; `None` for the root.
    pub fn split_last(&self) -> Option<(NsPath, &[u8])> {
        if self.is_root() {
            return None;
        }
        let idx = self.raw.iter().rposition(|b| *b == b'/').unwrap_or(0);
        let parent = if idx == 0 {
            NsPath::root()
        } else {
            NsPath {
                raw: self.raw[..idx].to_vec(),
            }
        };
        Some((parent, &self.raw[idx + 1..]))
    }

    pub fn name(&self) -> Option<&[u8]> {
        self.split_last().map(|(_, n)| n)
    }

    /// `self` joined with one more (validated) name.
    pub fn join(&self, name: &[u8]) -> Result<NsPath, PathError> {
        NsPath::validate_name(name)?;
        let mut raw = self.raw.clone();
        if !self.is_root() {
            raw.push(b'/');
        } else {
            raw.clear();
            raw.push(b'/');
        }
        raw.extend_from_slice(name);
        if raw.len() > MAX_PATH_LEN {
            return Err(PathError::PathTooLong);
        }
        Ok(NsPath { raw })
    }

    /// True if `self` is `other` or lies below it.
    pub fn starts_with(&self, other: &NsPath) -> bool {
        if other.is_root() {
            return true;
        }
        self.raw.starts_with(&other.raw)
            && (self.raw.len() == other.raw.len() || self.raw[other.raw.len()] == b'/')
    }
}

impl fmt::Debug for NsPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NsPath({})", self.display())
    }
}

impl fmt::Display for NsPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display())
    }
}

/// Percent-decode `s` (`%2F` → `/`); `None` on a malformed escape. URL
/// paths, query values and token scope paths all decode this way.
pub fn percent_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let h = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(h, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(s: &str) -> String {
        NsPath::parse(s).expect("valid").display()
    }

    #[test]
    fn normalises() {
        assert_eq!(p(""), "/");
        assert_eq!(p("/"), "/");
        assert_eq!(p("//a//b/"), "/a/b");
        assert_eq!(p("/a/./b/."), "/a/b");
        assert_eq!(p("/a/../b"), "/b");
        assert_eq!(p("/../../etc/passwd"), "/etc/passwd");
        assert_eq!(p("a/b"), "/a/b");
        assert_eq!(p("/a/b/../.."), "/");
        assert_eq!(p("/..."), "/...");
    }

    #[test]
    fn refuses_bad_input() {
        assert_eq!(NsPath::parse(b"/a\0b"), Err(PathError::Nul));
        let long = format!("/{}", "x".repeat(256));
        assert_eq!(NsPath::parse(long), Err(PathError::NameTooLong));
        let deep = "/abcdefgh".repeat(600);
        assert_eq!(NsPath::parse(deep), Err(PathError::PathTooLong));
        assert!(NsPath::validate_name(b"..").is_err());
        assert!(NsPath::validate_name(b"a/b").is_err());
        assert!(NsPath::validate_name(b"").is_err());
    }

    #[test]
    fn split_join_prefix() {
        let a = NsPath::parse("/a/bc").expect("valid");
        let (parent, name) = a.split_last().expect("not root");
        assert_eq!(parent.display(), "/a");
        assert_eq!(name, b"bc");
        assert_eq!(parent.join(b"bc").expect("valid"), a);
        assert!(a.starts_with(&NsPath::parse("/a").expect("valid")));
        assert!(!a.starts_with(&NsPath::parse("/a/b").expect("valid")));
        assert!(a.starts_with(&NsPath::root()));
        assert_eq!(NsPath::root().split_last(), None);
        assert_eq!(NsPath::root().join(b"x").expect("valid").display(), "/x");
    }

    proptest! {
        // Whatever a client sends, the result is absolute, normalised and
        // stays inside the root: re-parsing is the identity and no
        // component is `.`, `..` or empty.
        #[test]
        fn never_escapes_root(parts in proptest::collection::vec(
            prop_oneof![
                Just("..".to_string()), Just(".".to_string()), Just("".to_string()),
                "[a-z%.]{1,6}",
            ], 0..24)) {
            let input = parts.join("/");
            let path = NsPath::parse(&input).expect("only short names");
            let raw = path.as_bytes();
            prop_assert_eq!(raw[0], b'/');
            prop_assert_eq!(NsPath::parse(raw).expect("idempotent"), path.clone());
            for c in path.components() {
                prop_assert!(c != b"." && c != b".." && !c.is_empty());
            }
            // The lexical depth never goes negative: count it ourselves.
            let mut depth: i64 = 0;
            for c in input.split('/') {
                match c { "" | "." => {}, ".." => depth = (depth - 1).max(0), _ => depth += 1 }
            }
            prop_assert_eq!(path.components().count() as i64, depth);
        }
    }
}
