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
