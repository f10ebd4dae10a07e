//! The development issuer: a signing key kept in the dev data directory
//! (`dev/issuer-key.pem`, created once; RS256 with a 2048-bit RSA key,
//! or ES256 with a P-256 key made by an earlier version), whose JWKS and
//! discovery document `tesserad --dev` serves on its HTTPS listener, and
//! which `tessera token issue` signs with, so that a new user can try
//! tokens at once. `dev/issuer.json` records the issuer URL and key id.
//! RS256 is the default: most WLCG issuers (INDIGO IAM) use it, and its
//! signatures verify about 3x faster than ES256 here
//! (`docs/benchmarks.md`, tokens).

use aws_lc_rs::signature::{self, KeyPair};
use base64::Engine;
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

/// The signature algorithm of a new development key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyAlg {
    Rs256,
    Es256,
}

enum Signer {
    Rs(signature::RsaKeyPair),
    Es(signature::EcdsaKeyPair),
}

pub struct DevIssuer {
    signer: Signer,
    /// The public key as a JWK (without `kid`).
    jwk: serde_json::Value,
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
    /// The key in `dev_dir`, made on first use (RS256; owner-only file).
    pub fn load_or_create(dev_dir: &Path) -> Result<DevIssuer, DevIssuerError> {
        DevIssuer::load_or_create_with(dev_dir, KeyAlg::Rs256)
    }

    /// As [`DevIssuer::load_or_create`], a new key being of kind `alg`
    /// (an existing key is used whatever its kind).
    pub fn load_or_create_with(dev_dir: &Path, alg: KeyAlg) -> Result<DevIssuer, DevIssuerError> {
        let path = dev_dir.join(KEY_FILE);
        let pem = match std::fs::read_to_string(&path) {
            Ok(p) => p,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let kp = match alg {
                    KeyAlg::Rs256 => rcgen::KeyPair::generate_for(&rcgen::PKCS_RSA_SHA256),
                    KeyAlg::Es256 => rcgen::KeyPair::generate(),
                }
                .map_err(|e| DevIssuerError::Key(e.to_string()))?;
                let pem = kp.serialize_pem();
                std::fs::create_dir_all(dev_dir)
                    .map_err(|e| DevIssuerError::Io(dev_dir.to_path_buf(), e))?;
                write_private(&path, pem.as_bytes())?;
                pem
            }
            Err(e) => return Err(DevIssuerError::Io(path, e)),
        };
        DevIssuer::from_pem(&pem)
    }

    fn from_pem(pem: &str) -> Result<DevIssuer, DevIssuerError> {
        let bad = |e: &dyn std::fmt::Display| DevIssuerError::Key(e.to_string());
        let kp = rcgen::KeyPair::from_pem(pem).map_err(|e| bad(&e))?;
        let der = kp.serialize_der();
        let (signer, jwk, tag) = if kp.algorithm() == &rcgen::PKCS_RSA_SHA256 {
            let rs = signature::RsaKeyPair::from_pkcs8(&der).map_err(|e| bad(&e))?;
            let pk: aws_lc_rs::rsa::PublicKeyComponents<Vec<u8>> = rs.public_key().into();
            let n = b64(&pk.n);
            let jwk = serde_json::json!({ "kty": "RSA", "alg": "RS256", "use": "sig",
                "n": n, "e": b64(&pk.e) });
            // The key id: a stable name from the public key.
            let tag = format!("rs-{}", &n[n.len() - 12..]);
            (Signer::Rs(rs), jwk, tag)
        } else if kp.algorithm() == &rcgen::PKCS_ECDSA_P256_SHA256 {
            let es = signature::EcdsaKeyPair::from_pkcs8(
                &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                &der,
            )
            .map_err(|e| bad(&e))?;
            let raw = es.public_key().as_ref();
            if raw.len() != 65 || raw[0] != 4 {
                return Err(bad(&"not an uncompressed P-256 point"));
            }
            let (x, y) = (b64(&raw[1..33]), b64(&raw[33..65]));
            let tag = x[..12].to_string();
            let jwk = serde_json::json!({ "kty": "EC", "crv": "P-256", "alg": "ES256",
                "use": "sig", "x": x, "y": y });
            (Signer::Es(es), jwk, tag)
        } else {
            return Err(bad(&"neither an RSA nor a P-256 key"));
        };
        Ok(DevIssuer {
            signer,
            jwk,
            kid: format!("dev-{tag}"),
        })
    }

    /// `RS256` or `ES256`.
    pub fn alg(&self) -> &'static str {
        match self.signer {
            Signer::Rs(_) => "RS256",
            Signer::Es(_) => "ES256",
        }
    }

    /// The JWKS document (public key only).
    pub fn jwks(&self) -> serde_json::Value {
        let mut k = self.jwk.clone();
        k["kid"] = serde_json::json!(self.kid);
        serde_json::json!({ "keys": [k] })
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
        let header = serde_json::json!({ "alg": self.alg(), "kid": self.kid, "typ": "JWT" });
        let msg = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let bad = |e: aws_lc_rs::error::Unspecified| DevIssuerError::Key(e.to_string());
        let sig = match &self.signer {
            Signer::Rs(k) => {
                let mut sig = vec![0u8; k.public_modulus_len()];
                k.sign(&signature::RSA_PKCS1_SHA256, &rng, msg.as_bytes(), &mut sig)
                    .map_err(bad)?;
                sig
            }
            Signer::Es(k) => k.sign(&rng, msg.as_bytes()).map_err(bad)?.as_ref().to_vec(),
        };
        Ok(format!("{msg}.{}", b64(&sig)))
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
