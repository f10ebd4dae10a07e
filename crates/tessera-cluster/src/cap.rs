//! Capabilities: what the metadata service grants a client for exactly one
//! file and one mode, for a short time, signed with the cluster secret
//! (HMAC-SHA256) so that any gateway can check it without asking back.
//! Wire form (a CGI value): `hex(json) "." hex(mac)`.

use aws_lc_rs::{constant_time, hmac};
use serde::{Deserialize, Serialize};
use std::time::{SystemTime, UNIX_EPOCH};

/// Format version inside the signed payload.
pub const CAP_VERSION: u32 = 1;

/// How long a capability is good for by default.
pub const DEFAULT_TTL_SECS: u64 = 120;

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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capability {
    pub v: u32,
    pub access: Access,
    /// The namespace path, as the open named it.
    pub path: String,
    /// Who it was granted to.
    pub uid: u32,
    pub gid: u32,
    pub name: String,
    /// Seconds since the epoch after which it is refused.
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

impl Capability {
    /// The identity it was granted to, as a request over `protocol` (what
    /// a gateway logs its files under).
    pub fn holder(&self, protocol: &'static str) -> tessera_types::Identity {
        tessera_types::Identity::user(self.uid, self.gid, self.name.clone(), protocol)
    }

    /// Read `file` (at `path`) as `who`, for `ttl` seconds.
    pub fn read(
        path: &tessera_types::NsPath,
        who: &tessera_types::Identity,
        file: &tessera_core::Inode,
        ttl: u64,
    ) -> Capability {
        Capability {
            v: CAP_VERSION,
            access: Access::Read,
            path: path.display(),
            uid: who.uid,
            gid: who.gid,
            name: who.name.clone(),
            expires: now_secs() + ttl,
            file: Some(FileFacts::of(file)),
            mode: 0,
            overwrite: false,
        }
    }

    /// Write `path` as `who` (a new file gets `mode`; `overwrite` lets it
    /// replace one), for `ttl` seconds.
    pub fn write(
        path: &tessera_types::NsPath,
        who: &tessera_types::Identity,
        mode: u32,
        overwrite: bool,
        ttl: u64,
    ) -> Capability {
        Capability {
            v: CAP_VERSION,
            access: Access::Write,
            path: path.display(),
            uid: who.uid,
            gid: who.gid,
            name: who.name.clone(),
            expires: now_secs() + ttl,
            file: None,
            mode,
            overwrite,
        }
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
        Capability {
            v: CAP_VERSION,
            access: Access::Write,
            path: "/a/b".into(),
            uid: 1000,
            gid: 1000,
            name: "alice".into(),
            expires,
            file: None,
            mode: 0o644,
            overwrite: false,
        }
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
        assert_eq!(
            k.verify(&k.sign(&cap(now_secs() - 1))),
            Err(CapError::Expired)
        );
    }
}
