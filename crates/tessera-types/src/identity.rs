//! `Identity`: who a request is evaluated as, and what its token grants.

/// Who a request is evaluated as.
///
/// Front-ends build one per request (from the unix login, a token, the admin
/// credential); the core service checks permissions and charges quota to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups.
    pub groups: Vec<u32>,
    /// Group names the identity is known by (a unix login's group, a
    /// token's `wlcg.groups`): ACL entries `g:<name>` match them.
    pub group_names: Vec<String>,
    /// Human-readable name for logs (`root`, a token subject, ...).
    pub name: String,
    /// The protocol the request arrived on (`grpc`, `xroot`, `https`).
    pub protocol: &'static str,
    /// The validated bearer token the request carried: every operation
    /// must also be within its scopes.
    pub token: Option<std::sync::Arc<crate::TokenGrant>>,
    /// The grid certificate the identity was mapped from, if any.
    pub x509: Option<std::sync::Arc<X509Subject>>,
}

/// Who a grid certificate (an X.509 proxy, with VOMS attributes) names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct X509Subject {
    /// The end-entity certificate's subject (`/DC=org/.../CN=Alice`).
    pub dn: String,
    /// The VOMS FQANs, primary first (empty without a valid AC).
    pub fqans: Vec<String>,
    /// A limited proxy: reading and listing only.
    pub limited: bool,
}

/// The issuer name of the read-only grant a limited proxy carries.
pub const LIMITED_PROXY: &str = "(limited proxy)";

impl Identity {
    /// The superuser: bypasses mode bits (never quotas).
    pub fn root(protocol: &'static str) -> Identity {
        Identity {
            uid: 0,
            gid: 0,
            groups: Vec::new(),
            group_names: Vec::new(),
            name: "root".to_string(),
            protocol,
            token: None,
            x509: None,
        }
    }

    pub fn user(uid: u32, gid: u32, name: impl Into<String>, protocol: &'static str) -> Identity {
        Identity {
            uid,
            gid,
            groups: Vec::new(),
            group_names: Vec::new(),
            name: name.into(),
            protocol,
            token: None,
            x509: None,
        }
    }

    /// An anonymous client that may read and list, nothing else: nobody,
    /// with a read scope on `/` (tokens or trusted logins write).
    pub fn read_only_anonymous(protocol: &'static str) -> Identity {
        let mut id = Identity::user(65534, 65534, "anonymous", protocol);
        id.token = Some(std::sync::Arc::new(crate::TokenGrant {
            issuer: "(anonymous)".into(),
            subject: "anonymous".into(),
            scopes: vec![crate::ScopeGrant {
                access: crate::Access::Read,
                path: crate::NsPath::root(),
                dir_only: false,
            }],
            expires: u64::MAX,
        }));
        id
    }

    /// Who the identity is for per-identity limits (memory shares,
    /// connection counts): a token's issuer and subject, else the uid.
    pub fn limit_key(&self) -> String {
        match (&self.token, &self.x509) {
            (Some(t), _) => format!("token:{}:{}", t.issuer, t.subject),
            (None, Some(x)) => format!("dn:{}", x.dn),
            (None, None) => format!("uid:{}", self.uid),
        }
    }

    pub fn is_root(&self) -> bool {
        self.uid == 0
    }

    /// Whether this is a client that presented no credentials: the
    /// anonymous fallback (`nobody`, or the read-only anonymous grant).
    pub fn is_anonymous(&self) -> bool {
        match &self.token {
            Some(t) => t.issuer == "(anonymous)",
            None => self.uid == 65534,
        }
    }

    pub fn in_group(&self, gid: u32) -> bool {
        self.gid == gid || self.groups.contains(&gid)
    }

    /// Whether the identity is in the group called `name`. WLCG group
    /// names carry a leading `/` (`/cms/production`); it is optional on
    /// either side.
    pub fn in_group_named(&self, name: &str) -> bool {
        let want = name.trim_start_matches('/');
        !want.is_empty()
            && self
                .group_names
                .iter()
                .any(|g| g.trim_start_matches('/') == want)
    }
}

impl Identity {
    /// How the identity was established, for people reading it: `x509`,
    /// `token` (a bearer token or macaroon), `anonymous` or `account` (a
    /// login the server trusted, such as XRootD `unix`).
    pub fn mechanism(&self) -> &'static str {
        if self.is_anonymous() {
            "anonymous"
        } else if self.x509.is_some() {
            "x509"
        } else if self.token.is_some() {
            "token"
        } else {
            "account"
        }
    }

    /// Whether the identity rests on a credential the server verified (a
    /// token, a macaroon or a certificate), rather than on a login name
    /// or nothing at all.
    pub fn verified(&self) -> bool {
        !self.is_anonymous() && (self.token.is_some() || self.x509.is_some())
    }

    /// What `whoami` shows (EOS's `eos whoami`, dCache's `/api/v1/user`):
    /// ordered names and values; empty values are left out. Each
    /// front-end writes them in its own form.
    pub fn whoami(&self) -> Vec<(&'static str, String)> {
        let join = |v: &[u32]| {
            v.iter()
                .map(|g| g.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let mut out = vec![
            ("name", self.name.clone()),
            ("uid", self.uid.to_string()),
            ("gid", self.gid.to_string()),
            ("gids", join(&self.groups)),
            ("groups", self.group_names.join(",")),
            ("auth", self.mechanism().to_string()),
            ("protocol", self.protocol.to_string()),
        ];
        if let Some(x) = &self.x509 {
            out.push(("dn", x.dn.clone()));
            out.push(("fqans", x.fqans.join(",")));
            if x.limited {
                out.push(("limited", "true".into()));
            }
        }
        if let Some(t) = self.token.as_ref().filter(|_| !self.is_anonymous()) {
            out.push(("issuer", t.issuer.clone()));
            out.push(("subject", t.subject.clone()));
            let scopes: Vec<String> = t
                .scopes
                .iter()
                .map(|s| format!("{}:{}", s.access.as_str(), s.path.display()))
                .collect();
            out.push(("scopes", scopes.join(" ")));
            if t.expires != u64::MAX {
                out.push(("expires", t.expires.to_string()));
            }
        }
        out.retain(|(_, v)| !v.is_empty());
        out
    }
}

#[cfg(test)]
mod whoami_tests {
    use super::*;

    #[test]
    fn whoami_names_the_certificate_and_the_mapping() {
        let mut id = Identity::user(2, 3001, "bin", "https");
        id.groups = vec![3001, 7];
        id.group_names = vec!["/cms".into(), "/cms/higgs".into()];
        id.x509 = Some(std::sync::Arc::new(X509Subject {
            dn: "/DC=org/CN=Alice".into(),
            fqans: vec!["/cms/Role=production/Capability=NULL".into()],
            limited: false,
        }));
        let w = id.whoami();
        let get = |k: &str| w.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("uid"), Some("2"));
        assert_eq!(get("gids"), Some("3001,7"));
        assert_eq!(get("groups"), Some("/cms,/cms/higgs"));
        assert_eq!(get("auth"), Some("x509"));
        assert_eq!(get("dn"), Some("/DC=org/CN=Alice"));
        assert_eq!(get("fqans"), Some("/cms/Role=production/Capability=NULL"));
        assert_eq!(get("issuer"), None);
        assert!(id.verified());
        let anon = Identity::read_only_anonymous("xroot");
        assert_eq!(anon.mechanism(), "anonymous");
        assert!(!anon.verified());
        assert!(anon.whoami().iter().all(|(k, _)| *k != "scopes"));
        assert!(!Identity::user(5, 5, "u", "xroot").verified());
    }
}
