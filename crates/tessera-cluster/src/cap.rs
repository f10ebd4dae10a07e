//! Capabilities: what the metadata service grants a client for exactly one
//! file and one mode, for a short time, signed with the cluster secret
//! (HMAC-SHA256) so that any gateway can check it without asking back.
//! A capability carries the whole identity the metadata service decided
//! for (uid, groups, group names, the token's scopes), so that the gateway
//! and the metadata service's `BeginWrite` act as exactly that identity;
//! the client address it was granted to (a gateway serves it to no other);
//! and, for a write, a one-time number the metadata service accepts once.
//! Wire form (a CGI value): `hex(json) "." hex(mac)`.

use aws_lc_rs::{constant_time, hmac};
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tessera_types::{Identity, NsPath, ScopeGrant, TokenGrant};

/// Format version inside the signed payload (2: identity, client, nonce).
pub const CAP_VERSION: u32 = 2;

/// How long a capability is good for by default: long enough for a
/// client to follow a redirect, short enough that a leaked URL is soon
/// worthless (`cluster.cap_ttl_secs`).
pub const DEFAULT_TTL_SECS: u64 = 20;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    Read,
    Write,
}

/// The file a read capability opens (what a gateway needs without the
/// namespace).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileFacts {
    pub ino: u64,
    pub size: u64,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    /// The data layer's placement record, hex.
    pub layout: String,
    /// The stored checksum, `kind:hex` (HTTP `Digest` on a gateway).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crc32c: Option<u32>,
}

/// One scope of the token a capability was granted under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapScope {
    /// `read`, `create`, `modify` or `stage`.
    pub access: String,
    pub path: String,
    #[serde(default)]
    pub dir: bool,
}

/// The token a capability was granted under (what the core checks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapToken {
    pub iss: String,
    pub sub: String,
    pub exp: u64,
    pub scopes: Vec<CapScope>,
}

impl CapToken {
    fn of(g: &TokenGrant) -> CapToken {
        CapToken {
            iss: g.issuer.clone(),
            sub: g.subject.clone(),
            exp: g.expires,
            scopes: g
                .scopes
                .iter()
                .map(|s| CapScope {
                    access: s.access.as_str().to_string(),
                    path: s.path.display(),
                    dir: s.dir_only,
                })
                .collect(),
        }
    }

    /// The grant again; `None` if a scope does not decode (refused).
    fn grant(&self) -> Option<TokenGrant> {
        let scopes = self
            .scopes
            .iter()
            .map(|s| {
                Some(ScopeGrant {
                    access: tessera_types::Access::from_name(&s.access)?,
                    path: NsPath::parse(&s.path).ok()?,
                    dir_only: s.dir,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(TokenGrant {
            issuer: self.iss.clone(),
            subject: self.sub.clone(),
            scopes,
            expires: self.exp,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capability {
    pub v: u32,
    pub access: Access,
    /// The namespace path, as the open named it.
    pub path: String,
    /// Who it was granted to: the whole identity the decision was for.
    pub uid: u32,
    pub gid: u32,
    #[serde(default)]
    pub groups: Vec<u32>,
    #[serde(default)]
    pub group_names: Vec<String>,
    pub name: String,
    /// The protocol the client came by (`xroot`, `https`).
    pub proto: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<CapToken>,
    /// The client address it was granted to.
    pub client: IpAddr,
    /// Writes: a random number the metadata service accepts once.
    #[serde(default)]
    pub nonce: u64,
    /// Seconds since the epoch after which it is refused (never after the
    /// token's own expiry).
    pub expires: u64,
    /// Reads: the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<FileFacts>,
    /// Writes: mode, replace an existing file, expected size.
    #[serde(default)]
    pub mode: u32,
    #[serde(default)]
    pub overwrite: bool,
}

impl FileFacts {
    /// What a gateway needs of `i` to read it.
    pub fn of(i: &tessera_core::Inode) -> FileFacts {
        FileFacts {
            ino: i.ino,
            size: i.size,
            mode: i.mode,
            uid: i.uid,
            gid: i.gid,
            mtime_ns: i.mtime_ns,
            ctime_ns: i.ctime_ns,
            layout: hex(&i.layout),
            checksum: i
                .checksum
                .as_ref()
                .map(|c| format!("{}:{}", c.kind, c.hex())),
            crc32c: i.crc32c,
        }
    }

    /// The inode a gateway opens (named `name`); `None` if the facts do
    /// not decode.
    pub fn inode(&self, name: Vec<u8>) -> Option<tessera_core::Inode> {
        let checksum = match &self.checksum {
            None => None,
            Some(c) => {
                let (kind, h) = c.split_once(':')?;
                Some(tessera_core::Checksum {
                    kind: kind.to_string(),
                    value: unhex(h)?,
                })
            }
        };
        Some(tessera_core::Inode {
            ino: self.ino,
            kind: tessera_core::EntryKind::File,
            parent: 0,
            name,
            uid: self.uid,
            gid: self.gid,
            mode: self.mode,
            ctime_ns: self.ctime_ns,
            mtime_ns: self.mtime_ns,
            size: self.size,
            checksum,
            crc32c: self.crc32c,
            layout: unhex(&self.layout)?,
            quota_node: false,
            nchildren: 0,
        })
    }
}

/// `ip` in one form whatever the socket family (`::ffff:a.b.c.d` is
/// `a.b.c.d`).
pub fn canonical(ip: IpAddr) -> IpAddr {
    ip.to_canonical()
}

fn protocol(name: &str) -> &'static str {
    match name {
        "https" => "https",
        "xroot" => "xroot",
        _ => "cap",
    }
}

fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // A failure leaves zeros, which BeginWrite refuses as a nonce.
    let _ = aws_lc_rs::rand::fill(&mut b);
    u64::from_le_bytes(b)
}

impl Capability {
    fn new(access: Access, path: &NsPath, who: &Identity, client: IpAddr, ttl: u64) -> Capability {
        let mut expires = now_secs() + ttl;
        if let Some(t) = &who.token {
            expires = expires.min(t.expires);
        }
        Capability {
            v: CAP_VERSION,
            access,
            path: path.display(),
            uid: who.uid,
            gid: who.gid,
            groups: who.groups.clone(),
            group_names: who.group_names.clone(),
            name: who.name.clone(),
            proto: who.protocol.to_string(),
            token: who.token.as_deref().map(CapToken::of),
            client: canonical(client),
            nonce: 0,
            expires,
            file: None,
            mode: 0,
            overwrite: false,
        }
    }

    /// The identity it was granted to, exactly (what a gateway serves the
    /// file as, and what `BeginWrite` decides for); `None` if its token
    /// part does not decode.
    pub fn holder(&self) -> Option<Identity> {
        let proto = protocol(&self.proto);
        let mut who = if self.uid == 0 {
            Identity::root(proto)
        } else {
            Identity::user(self.uid, self.gid, self.name.clone(), proto)
        };
        who.gid = self.gid;
        who.name.clone_from(&self.name);
        who.groups.clone_from(&self.groups);
        who.group_names.clone_from(&self.group_names);
        who.token = match &self.token {
            None => None,
            Some(t) => Some(Arc::new(t.grant()?)),
        };
        Some(who)
    }

    /// Read `file` (at `path`) as `who` from `client`, for `ttl` seconds.
    pub fn read(
        path: &NsPath,
        who: &Identity,
        file: &tessera_core::Inode,
        client: IpAddr,
        ttl: u64,
    ) -> Capability {
        let mut c = Capability::new(Access::Read, path, who, client, ttl);
        c.file = Some(FileFacts::of(file));
        c
    }

    /// Write `path` as `who` from `client` (a new file gets `mode`;
    /// `overwrite` lets it replace one), once, within `ttl` seconds.
    pub fn write(
        path: &NsPath,
        who: &Identity,
        mode: u32,
        overwrite: bool,
        client: IpAddr,
        ttl: u64,
    ) -> Capability {
        let mut c = Capability::new(Access::Write, path, who, client, ttl);
        c.mode = mode;
        c.overwrite = overwrite;
        c.nonce = random_u64();
        c
    }

    /// Refuse it unless it names `path` and was granted to `client`.
    pub fn check_target(&self, path: &NsPath, client: IpAddr) -> Result<(), CapError> {
        if self.path != path.display() {
            return Err(CapError::WrongTarget(self.path.clone()));
        }
        if self.client != canonical(client) {
            return Err(CapError::WrongClient);
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CapError {
    #[error("malformed capability")]
    Malformed,
    #[error("capability signature does not match")]
    BadSignature,
    #[error("capability expired")]
    Expired,
    #[error("capability is for {0}, not this request")]
    WrongTarget(String),
    #[error("capability was granted to another client")]
    WrongClient,
    #[error("capability was already used")]
    Used,
}

/// The cluster secret, ready to sign and verify.
#[derive(Clone)]
pub struct CapKey {
    key: hmac::Key,
}

impl std::fmt::Debug for CapKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CapKey(..)")
    }
}

pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl CapKey {
    pub fn new(secret: &[u8]) -> CapKey {
        CapKey {
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
        }
    }

    pub fn sign(&self, cap: &Capability) -> String {
        let body = serde_json::to_vec(cap).expect("capability serializes");
        let tag = hmac::sign(&self.key, &body);
        format!("{}.{}", hex(&body), hex(tag.as_ref()))
    }

    /// Check the signature and the expiry; the caller checks the target.
    pub fn verify(&self, text: &str) -> Result<Capability, CapError> {
        let (b, t) = text.split_once('.').ok_or(CapError::Malformed)?;
        let body = unhex(b).ok_or(CapError::Malformed)?;
        let tag = unhex(t).ok_or(CapError::Malformed)?;
        let want = hmac::sign(&self.key, &body);
        if constant_time::verify_slices_are_equal(want.as_ref(), &tag).is_err() {
            return Err(CapError::BadSignature);
        }
        let cap: Capability = serde_json::from_slice(&body).map_err(|_| CapError::Malformed)?;
        if cap.v != CAP_VERSION {
            return Err(CapError::Malformed);
        }
        if cap.expires < now_secs() {
            return Err(CapError::Expired);
        }
        Ok(cap)
    }
}

pub fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(expires: u64) -> Capability {
        let who = Identity::user(1000, 1000, "alice", "xroot");
        let p = NsPath::parse("/a/b").unwrap();
        let mut c = Capability::write(&p, &who, 0o644, false, [127, 0, 0, 1].into(), 60);
        c.expires = expires;
        c
    }

    #[test]
    fn sign_verify_tamper_expire() {
        let k = CapKey::new(b"secret-of-the-cluster");
        let c = cap(now_secs() + 60);
        let s = k.sign(&c);
        assert_eq!(k.verify(&s), Ok(c.clone()));
        // Another key, a changed body, a changed tag, garbage.
        assert_eq!(
            CapKey::new(b"other").verify(&s),
            Err(CapError::BadSignature)
        );
        let mut forged = c.clone();
        forged.path = "/a/c".into();
        let body = hex(&serde_json::to_vec(&forged).unwrap());
        let tag = s.split_once('.').unwrap().1;
        assert_eq!(
            k.verify(&format!("{body}.{tag}")),
            Err(CapError::BadSignature)
        );
        assert_eq!(k.verify("zz.zz"), Err(CapError::Malformed));
        assert_eq!(k.verify("nodot"), Err(CapError::Malformed));
        // Version 1 capabilities (no identity, no client) are refused.
        let mut v1 = serde_json::to_value(&c).unwrap();
        v1["v"] = 1.into();
        let body = serde_json::to_vec(&v1).unwrap();
        let tag = hmac::sign(&k.key, &body);
        assert_eq!(
            k.verify(&format!("{}.{}", hex(&body), hex(tag.as_ref()))),
            Err(CapError::Malformed)
        );
        assert_eq!(
            k.verify(&k.sign(&cap(now_secs() - 1))),
            Err(CapError::Expired)
        );
    }
}

#[cfg(test)]
mod identity_tests {
    use super::*;
    use tessera_types::Access as A;

    #[test]
    fn the_holder_is_the_identity_decided_for() {
        let mut who = Identity::user(1000, 1001, "alice", "https");
        who.groups = vec![2000, 2001];
        who.group_names = vec!["/cms".into(), "/cms/prod".into()];
        who.token = Some(Arc::new(TokenGrant {
            issuer: "https://iss".into(),
            subject: "alice-sub".into(),
            scopes: vec![ScopeGrant {
                access: A::Create,
                path: NsPath::parse("/data/up").unwrap(),
                dir_only: true,
            }],
            expires: now_secs() + 5,
        }));
        let p = NsPath::parse("/data/up/f").unwrap();
        let c = Capability::write(
            &p,
            &who,
            0o600,
            true,
            "::ffff:127.0.0.2".parse().unwrap(),
            60,
        );
        assert!(c.expires <= now_secs() + 5, "never outlives the token");
        assert_ne!(c.nonce, 0);
        let k = CapKey::new(b"k");
        let back = k.verify(&k.sign(&c)).unwrap();
        assert_eq!(back.holder().unwrap(), who);
        assert!(back.check_target(&p, [127, 0, 0, 2].into()).is_ok());
        assert_eq!(
            back.check_target(&p, [127, 0, 0, 1].into()),
            Err(CapError::WrongClient)
        );
        let other = NsPath::parse("/data/up/g").unwrap();
        assert!(matches!(
            back.check_target(&other, [127, 0, 0, 2].into()),
            Err(CapError::WrongTarget(_))
        ));
        let root = Capability::read(
            &p,
            &Identity::root("xroot"),
            &file(),
            [127, 0, 0, 1].into(),
            9,
        );
        assert!(root.holder().unwrap().is_root());
        assert_eq!(root.nonce, 0, "reads carry no nonce");
    }

    fn file() -> tessera_core::Inode {
        tessera_core::Inode {
            ino: 7,
            parent: 1,
            name: b"f".to_vec(),
            mode: 0o644,
            size: 3,
            layout: vec![1, 2],
            ..Default::default()
        }
    }
}
