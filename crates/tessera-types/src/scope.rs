//! What a bearer token lets its holder do: WLCG `storage.*` and SciTokens
//! `read:`/`write:` scopes, resolved to namespace paths under the issuer's
//! base path. Validating tokens is `tessera-auth`'s job; this is the
//! result the core service checks every request against.

use crate::NsPath;

/// An operation class a scope grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// Read data, stat, list (`storage.read`, `read:`).
    Read,
    /// Create new files and directories, never replace or delete
    /// (`storage.create`).
    Create,
    /// Create, overwrite, delete, truncate, change attributes
    /// (`storage.modify`, `write:`).
    Modify,
    /// Stage from tape (`storage.stage`): not read.
    Stage,
}

impl Access {
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Create => "create",
            Access::Modify => "modify",
            Access::Stage => "stage",
        }
    }

    /// The access class `as_str` names.
    pub fn from_name(name: &str) -> Option<Access> {
        Some(match name {
            "read" => Access::Read,
            "create" => Access::Create,
            "modify" => Access::Modify,
            "stage" => Access::Stage,
            _ => return None,
        })
    }

    /// Whether a scope of kind `self` grants `want`.
    fn grants(self, want: Access) -> bool {
        self == want || (self == Access::Modify && want == Access::Create)
    }
}

/// One scope: an access class on a namespace subtree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeGrant {
    pub access: Access,
    /// Absolute namespace path (the issuer's base path joined with the
    /// scope's path).
    pub path: NsPath,
    /// The scope path ended in `/`: it names a directory, so the path
    /// itself is not a file the scope can create.
    pub dir_only: bool,
}

/// A validated token: who presented it and what it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenGrant {
    pub issuer: String,
    pub subject: String,
    pub scopes: Vec<ScopeGrant>,
    /// Seconds since the epoch.
    pub expires: u64,
}

impl TokenGrant {
    /// May the bearer do `want` on `path`? Paths match by whole
    /// components (`/foo` never grants `/foobar`).
    pub fn allows(&self, want: Access, path: &NsPath) -> bool {
        self.scopes.iter().any(|s| {
            s.access.grants(want)
                && path.starts_with(&s.path)
                && !(s.dir_only && want != Access::Read && path == &s.path)
        })
    }

    /// May the bearer stat or list `path`? Any scope on it or below it
    /// (stat of the parents of a scope path, as xrootd allows), or a read
    /// scope above it.
    pub fn may_look(&self, path: &NsPath) -> bool {
        self.scopes
            .iter()
            .any(|s| path.starts_with(&s.path) || s.path.starts_with(path))
    }

    /// May the bearer make directory `path`? A create scope on it or
    /// below it (the missing parents of a scope path may be made).
    pub fn may_mkdir(&self, path: &NsPath) -> bool {
        self.scopes.iter().any(|s| {
            s.access.grants(Access::Create)
                && (path.starts_with(&s.path) || s.path.starts_with(path))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> NsPath {
        NsPath::parse(s).unwrap()
    }

    fn grant(scopes: &[(Access, &str, bool)]) -> TokenGrant {
        TokenGrant {
            issuer: "https://issuer.example".into(),
            subject: "alice".into(),
            scopes: scopes
                .iter()
                .map(|(a, path, d)| ScopeGrant {
                    access: *a,
                    path: p(path),
                    dir_only: *d,
                })
                .collect(),
            expires: u64::MAX,
        }
    }

    #[test]
    fn whole_components_and_access_classes() {
        let g = grant(&[
            (Access::Read, "/data", false),
            (Access::Create, "/up", false),
            (Access::Modify, "/mine", false),
        ]);
        assert!(g.allows(Access::Read, &p("/data")));
        assert!(g.allows(Access::Read, &p("/data/x/y")));
        assert!(!g.allows(Access::Read, &p("/database")));
        assert!(!g.allows(Access::Read, &p("/")));
        assert!(!g.allows(Access::Create, &p("/data/new")));
        assert!(g.allows(Access::Create, &p("/up/new")));
        assert!(!g.allows(Access::Modify, &p("/up/new")));
        assert!(!g.allows(Access::Read, &p("/up/new")));
        assert!(g.allows(Access::Create, &p("/mine/f")));
        assert!(g.allows(Access::Modify, &p("/mine/f")));
        // Parents of a scope path may be looked at and made.
        assert!(g.may_look(&p("/")));
        assert!(!g.may_look(&p("/other")));
        let deep = grant(&[(Access::Create, "/a/b/c", false)]);
        assert!(deep.may_mkdir(&p("/a/b")));
        assert!(!deep.may_mkdir(&p("/a/x")));
    }

    #[test]
    fn a_trailing_slash_means_a_directory() {
        let g = grant(&[(Access::Create, "/foo/bar", true)]);
        assert!(!g.allows(Access::Create, &p("/foo/bar")));
        assert!(g.allows(Access::Create, &p("/foo/bar/f")));
        let root = grant(&[(Access::Read, "/", false)]);
        assert!(root.allows(Access::Read, &p("/anything/at/all")));
        assert!(!root.allows(Access::Stage, &p("/x")));
        let stage = grant(&[(Access::Stage, "/", false)]);
        assert!(!stage.allows(Access::Read, &p("/x")), "stage is not read");
    }
}
