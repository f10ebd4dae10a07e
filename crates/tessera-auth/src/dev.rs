//! The development issuer: an ES256 key kept in the dev data directory
//! (`dev/issuer-key.pem`, created once), whose JWKS and discovery
//! document `tesserad --dev` serves on its HTTPS listener, and which
//! `tessera token issue` signs with, so that a new user can try tokens
//! at once. `dev/issuer.json` records the issuer URL and key id.

use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

const KEY_FILE: &str = "issuer-key.pem";
const INFO_FILE: &str = "issuer.json";
/// Where the JWKS is served (beside the discovery document).
pub const JWKS_PATH: &str = "/.well-known/jwks.json";
pub const DISCOVERY_PATH: &str = "/.well-known/openid-configuration";

#[derive(Debug, thiserror::Error)]
pub enum DevIssuerError {
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("issuer key: {0}")]
    Key(String),
    #[error("{0}: {1}")]
    Info(PathBuf, String),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IssuerInfo {
    pub issuer: String,
    pub kid: String,
    /// The audience tokens are minted for (the HTTPS endpoint).
    pub audience: String,
}

pub struct DevIssuer {
    key: EncodingKey,
    x: String,
    y: String,
    pub kid: String,
}

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl DevIssuer {
    /// The key in `dev_dir`, made on first use (owner-only file).
    pub fn load_or_create(dev_dir: &Path) -> Result<DevIssuer, DevIssuerError> {
        let path = dev_dir.join(KEY_FILE);
        let pem = match std::fs::read_to_string(&path) {
            Ok(p) => p,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let kp =
                    rcgen::KeyPair::generate().map_err(|e| DevIssuerError::Key(e.to_string()))?;
                let pem = kp.serialize_pem();
                std::fs::create_dir_all(dev_dir)
                    .map_err(|e| DevIssuerError::Io(dev_dir.to_path_buf(), e))?;
                write_private(&path, pem.as_bytes())?;
                pem
            }
            Err(e) => return Err(DevIssuerError::Io(path, e)),
        };
        DevIssuer::from_pem(pem)
    }

    fn from_pem(pem: String) -> Result<DevIssuer, DevIssuerError> {
        let kp = rcgen::KeyPair::from_pem(&pem).map_err(|e| DevIssuerError::Key(e.to_string()))?;
        let raw = kp.public_key_raw();
        if raw.len() != 65 || raw[0] != 4 {
            return Err(DevIssuerError::Key(
                "not an uncompressed P-256 point".into(),
            ));
        }
        let (x, y) = (b64(&raw[1..33]), b64(&raw[33..65]));
        // The key id: a digest-free stable name from the public point.
        let kid = format!("dev-{}", &x[..12]);
        Ok(DevIssuer {
            key: EncodingKey::from_ec_der(&kp.serialize_der()),
            x,
            y,
            kid,
        })
    }

    /// The JWKS document (public key only).
    pub fn jwks(&self) -> serde_json::Value {
        serde_json::json!({ "keys": [{
            "kty": "EC", "crv": "P-256", "x": self.x, "y": self.y,
            "kid": self.kid, "alg": "ES256", "use": "sig"
        }]})
    }

    /// The discovery document for issuer URL `iss`.
    pub fn discovery(iss: &str) -> serde_json::Value {
        serde_json::json!({
            "issuer": iss,
            "jwks_uri": format!("{}{JWKS_PATH}", iss.trim_end_matches('/')),
        })
    }

    /// Record where this issuer is served (for `tessera token issue`).
    pub fn write_info(
        &self,
        dev_dir: &Path,
        issuer: &str,
        audience: &str,
    ) -> Result<(), DevIssuerError> {
        let info = IssuerInfo {
            issuer: issuer.to_string(),
            kid: self.kid.clone(),
            audience: audience.to_string(),
        };
        let path = dev_dir.join(INFO_FILE);
        let text = serde_json::to_string_pretty(&info).expect("serializes");
        std::fs::write(&path, text).map_err(|e| DevIssuerError::Io(path, e))
    }

    pub fn read_info(dev_dir: &Path) -> Result<IssuerInfo, DevIssuerError> {
        let path = dev_dir.join(INFO_FILE);
        let text =
            std::fs::read_to_string(&path).map_err(|e| DevIssuerError::Io(path.clone(), e))?;
        serde_json::from_str(&text).map_err(|e| DevIssuerError::Info(path, e.to_string()))
    }

    /// A WLCG token from this issuer: `sub`, space-separated `scope`,
    /// valid for `lifetime` seconds from now.
    pub fn issue(
        &self,
        info: &IssuerInfo,
        sub: &str,
        scope: &str,
        lifetime: u64,
    ) -> Result<String, DevIssuerError> {
        self.issue_in_groups(info, sub, scope, &[], lifetime)
    }

    /// As [`DevIssuer::issue`], with `wlcg.groups` (none: no claim).
    pub fn issue_in_groups(
        &self,
        info: &IssuerInfo,
        sub: &str,
        scope: &str,
        groups: &[String],
        lifetime: u64,
    ) -> Result<String, DevIssuerError> {
        let t = now();
        let mut claims = serde_json::json!({
            "wlcg.ver": "1.0",
            "iss": info.issuer,
            "sub": sub,
            "aud": info.audience,
            "scope": scope,
            "iat": t,
            "nbf": t,
            "exp": t + lifetime,
            "jti": format!("{t:x}-{:x}", std::process::id()),
        });
        if !groups.is_empty() {
            claims["wlcg.groups"] = serde_json::json!(groups);
        }
        self.sign(&claims)
    }

    /// Sign arbitrary claims (tests build bad tokens with it).
    pub fn sign(&self, claims: &serde_json::Value) -> Result<String, DevIssuerError> {
        let mut h = Header::new(Algorithm::ES256);
        h.kid = Some(self.kid.clone());
        h.typ = Some("JWT".into());
        jsonwebtoken::encode(&h, claims, &self.key).map_err(|e| DevIssuerError::Key(e.to_string()))
    }
}

fn write_private(path: &Path, data: &[u8]) -> Result<(), DevIssuerError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| DevIssuerError::Io(path.to_path_buf(), e))?;
    f.write_all(data)
        .map_err(|e| DevIssuerError::Io(path.to_path_buf(), e))
}
