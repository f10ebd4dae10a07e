//! Compact JWS (RFC 7515) as WLCG tokens use it: `header.payload.sig`,
//! RS256 (RSASSA-PKCS1-v1_5 with SHA-256, keys of 2048 to 8192 bits) or
//! ES256 (P-256, the 64-byte `r || s` form), verified with aws-lc. Keys
//! come from a JWKS and are parsed once, when loaded; nothing else is
//! accepted (`none`, HMAC, other curves, `crit` headers).

use crate::AuthError;
use aws_lc_rs::signature::{self, ParsedPublicKey};
use base64::Engine;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Arc;

/// Longest token looked at (the XRootD `ztn` credential is capped at
/// 16 KiB too).
pub const MAX_TOKEN: usize = 16 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alg {
    Rs256,
    Es256,
}

/// A public key, parsed once.
pub struct Key {
    pub alg: Alg,
    parsed: ParsedPublicKey,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Key({:?})", self.alg)
    }
}

/// The header fields we look at.
#[derive(Debug, Deserialize)]
pub struct Header {
    pub alg: Option<String>,
    pub kid: Option<String>,
    #[serde(default)]
    pub crit: Option<serde_json::Value>,
}

/// A token split into its parts, header decoded, signature not checked.
pub struct Parts<'a> {
    pub header: Header,
    /// The decoded payload (JSON bytes).
    pub payload: Vec<u8>,
    /// What the signature covers: `header.payload` as sent.
    signed: &'a [u8],
    sig: Vec<u8>,
}

pub fn b64(part: &str) -> Result<Vec<u8>, AuthError> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .map_err(|_| AuthError::Malformed("bad base64url".into()))
}

/// Split and decode a compact JWS.
pub fn split(token: &str) -> Result<Parts<'_>, AuthError> {
    if token.len() > MAX_TOKEN {
        return Err(AuthError::Malformed("longer than 16 KiB".into()));
    }
    let mut it = token.split('.');
    let (Some(h), Some(p), Some(s), None) = (it.next(), it.next(), it.next(), it.next()) else {
        return Err(AuthError::Malformed("not three dot-separated parts".into()));
    };
    let header: Header = serde_json::from_slice(&b64(h)?)
        .map_err(|e| AuthError::Malformed(format!("header: {e}")))?;
    Ok(Parts {
        header,
        payload: b64(p)?,
        signed: &token.as_bytes()[..h.len() + 1 + p.len()],
        sig: b64(s)?,
    })
}

impl Parts<'_> {
    /// The algorithm the header names, refused unless RS256 or ES256, and
    /// refused with any `crit` extension (none is understood).
    pub fn alg(&self) -> Result<Alg, AuthError> {
        if self.header.crit.is_some() {
            return Err(AuthError::Malformed("crit header not understood".into()));
        }
        match self.header.alg.as_deref() {
            Some("RS256") => Ok(Alg::Rs256),
            Some("ES256") => Ok(Alg::Es256),
            Some(other) => Err(AuthError::Algorithm(other.to_string())),
            None => Err(AuthError::Algorithm("(none given)".into())),
        }
    }

    /// Check the signature with `key`, whose algorithm must be the
    /// header's.
    pub fn verify(&self, key: &Key) -> Result<(), AuthError> {
        let alg = self.alg()?;
        if key.alg != alg {
            return Err(AuthError::Algorithm(format!(
                "{alg:?} with a {:?} key",
                key.alg
            )));
        }
        key.parsed
            .verify_sig(self.signed, &self.sig)
            .map_err(|_| AuthError::BadSignature)
    }
}

/// DER of an RSAPublicKey (RFC 8017): SEQUENCE { INTEGER n, INTEGER e }.
fn rsa_der(n: &[u8], e: &[u8]) -> Vec<u8> {
    fn len(out: &mut Vec<u8>, l: usize) {
        if l < 0x80 {
            out.push(l as u8);
        } else {
            let b = l.to_be_bytes();
            let skip = b.iter().take_while(|&&x| x == 0).count();
            out.push(0x80 | (b.len() - skip) as u8);
            out.extend_from_slice(&b[skip..]);
        }
    }
    fn int(out: &mut Vec<u8>, v: &[u8]) {
        let v = &v[v
            .iter()
            .take_while(|&&x| x == 0)
            .count()
            .min(v.len().saturating_sub(1))..];
        let pad = v.first().is_some_and(|&b| b & 0x80 != 0);
        out.push(0x02);
        len(out, v.len() + usize::from(pad));
        if pad {
            out.push(0);
        }
        out.extend_from_slice(v);
    }
    let mut body = Vec::with_capacity(n.len() + e.len() + 16);
    int(&mut body, n);
    int(&mut body, e);
    let mut out = vec![0x30];
    len(&mut out, body.len());
    out.extend(body);
    out
}

fn field<'a>(k: &'a serde_json::Value, name: &str) -> Option<&'a str> {
    k.get(name).and_then(|v| v.as_str())
}

/// One JWK, if usable: RSA (RS256) or EC P-256 (ES256), signing keys only.
fn key_of(k: &serde_json::Value) -> Result<Option<Key>, String> {
    if field(k, "use").is_some_and(|u| u != "sig") {
        return Ok(None);
    }
    let (alg, parsed) = match field(k, "kty") {
        Some("RSA") => {
            if field(k, "alg").is_some_and(|a| a != "RS256") {
                return Ok(None);
            }
            let (Some(n), Some(e)) = (field(k, "n"), field(k, "e")) else {
                return Err("RSA key without n or e".into());
            };
            let der = rsa_der(
                &b64(n).map_err(|e| e.to_string())?,
                &b64(e).map_err(|e| e.to_string())?,
            );
            (
                Alg::Rs256,
                ParsedPublicKey::new(&signature::RSA_PKCS1_2048_8192_SHA256, der),
            )
        }
        Some("EC") if field(k, "crv") == Some("P-256") => {
            if field(k, "alg").is_some_and(|a| a != "ES256") {
                return Ok(None);
            }
            let (Some(x), Some(y)) = (field(k, "x"), field(k, "y")) else {
                return Err("EC key without x or y".into());
            };
            let (x, y) = (
                b64(x).map_err(|e| e.to_string())?,
                b64(y).map_err(|e| e.to_string())?,
            );
            if x.len() != 32 || y.len() != 32 {
                return Err("P-256 coordinates are not 32 bytes".into());
            }
            let mut point = Vec::with_capacity(65);
            point.push(4);
            point.extend(x);
            point.extend(y);
            (
                Alg::Es256,
                ParsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point),
            )
        }
        _ => return Ok(None), // HMAC ("oct"), other curves, OKP: never
    };
    parsed
        .map(|parsed| Some(Key { alg, parsed }))
        .map_err(|e| format!("unusable key: {e}"))
}

/// The usable keys of a JWKS document, by `kid`.
pub fn parse_jwks(
    issuer: &str,
    set: &serde_json::Value,
) -> Result<HashMap<String, Arc<Key>>, AuthError> {
    let keys = set
        .get("keys")
        .and_then(|k| k.as_array())
        .ok_or_else(|| AuthError::Fetch("JWKS without a keys array".into()))?;
    let mut out = HashMap::new();
    for k in keys {
        let Some(kid) = field(k, "kid") else {
            continue;
        };
        match key_of(k) {
            Ok(Some(key)) => {
                out.insert(kid.to_string(), Arc::new(key));
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(%issuer, %kid, "{e}"),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lc_rs::signature::KeyPair;

    #[test]
    fn rsa_der_matches_aws_lc() {
        let kp = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
        let pk: aws_lc_rs::rsa::PublicKeyComponents<Vec<u8>> = kp.public_key().into();
        assert_eq!(rsa_der(&pk.n, &pk.e), kp.public_key().as_ref());
        // Leading zeros dropped, a high bit padded.
        assert_eq!(
            rsa_der(&[0, 0x80], &[1, 0, 1]),
            [0x30, 9, 2, 2, 0, 0x80, 2, 3, 1, 0, 1]
        );
    }

    #[test]
    fn refusals_before_any_key() {
        let h = |j: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(j);
        let t = format!("{}.{}.", h(r#"{"alg":"none"}"#), h("{}"));
        assert!(matches!(
            split(&t).unwrap().alg(),
            Err(AuthError::Algorithm(_))
        ));
        let t = format!("{}.{}.", h(r#"{"alg":"RS256","crit":["x"]}"#), h("{}"));
        assert!(matches!(
            split(&t).unwrap().alg(),
            Err(AuthError::Malformed(_))
        ));
        assert!(split("a.b").is_err());
        assert!(split(&"a".repeat(MAX_TOKEN + 1)).is_err());
        let jwks = serde_json::json!({"keys": [
            {"kty": "oct", "kid": "h", "k": "c2VjcmV0"},
            {"kty": "EC", "crv": "P-384", "kid": "p384", "x": "AA", "y": "AA"},
            {"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"},
        ]});
        assert!(parse_jwks("i", &jwks).unwrap().is_empty());
    }
}
