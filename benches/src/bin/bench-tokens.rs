//! Token validation cost (not a test), for RS256 and ES256 tokens of the
//! development issuer's format, keys already cached (loaded from its
//! JWKS, as after the first fetch): the first use of each token
//! (signature, claims, scopes) and repeated use (the per-token cache),
//! per token. The reference, in the same run: the bare signature check
//! of the same tokens with aws-lc (what no validator can go below).
//!   bench-tokens [--tokens N] [--repeat R]

use aws_lc_rs::signature;
use base64::Engine;
use clap::Parser;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use tessera_auth::dev::{DevIssuer, IssuerInfo, KeyAlg};
use tessera_auth::{IssuerConfig, Validator};
use tessera_types::NsPath;

#[derive(Parser)]
struct Args {
    #[arg(long, default_value_t = 2000)]
    tokens: usize,
    #[arg(long, default_value_t = 5)]
    repeat: usize,
}

/// A bare signature check: (signed bytes, signature) → verified.
type Verify = dyn Fn(&[u8], &[u8]) -> bool;

fn b64d(s: &serde_json::Value) -> Vec<u8> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s.as_str().unwrap_or_default())
        .unwrap_or_default()
}

/// Best time of `repeat` runs of `f`, seconds.
fn best(repeat: usize, mut f: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<f64> {
    let mut b = f64::MAX;
    for _ in 0..repeat {
        let t = Instant::now();
        f()?;
        b = b.min(t.elapsed().as_secs_f64());
    }
    Ok(b)
}

fn run(a: &Args, alg: KeyAlg) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let key = DevIssuer::load_or_create_with(dir.path(), alg)?;
    let info = IssuerInfo {
        issuer: "https://issuer.bench".into(),
        kid: key.kid.clone(),
        audience: "https://storage.bench".into(),
    };
    // A validator with the issuer's keys already cached.
    let validator = || -> anyhow::Result<Arc<Validator>> {
        let tls = Arc::new(
            tokio_rustls::rustls::ClientConfig::builder()
                .with_root_certificates(tokio_rustls::rustls::RootCertStore::empty())
                .with_no_client_auth(),
        );
        let v = Validator::new(
            vec![IssuerConfig {
                issuer: info.issuer.clone(),
                audiences: vec![info.audience.clone()],
                base_path: NsPath::parse("/data")?,
                default_identity: (1000, 1000, "vo".into()),
                subjects: HashMap::new(),
                groups: HashMap::new(),
                may_create: true,
                local_users: false,
            }],
            tls,
        );
        v.load_jwks(&info.issuer, key.jwks())?;
        Ok(v)
    };
    let tokens: Vec<String> = (0..a.tokens)
        .map(|i| {
            key.issue(
                &info,
                &format!("user{i}"),
                "storage.read:/ storage.create:/up storage.modify:/mine",
                3600,
            )
        })
        .collect::<Result<_, _>>()?;
    // The reference: the signature alone, public key parsed once.
    let jwk = &key.jwks()["keys"][0];
    let verifier: Box<Verify> = match alg {
        KeyAlg::Rs256 => {
            let pk = signature::RsaPublicKeyComponents {
                n: b64d(&jwk["n"]),
                e: b64d(&jwk["e"]),
            };
            Box::new(move |m, s| {
                pk.verify(&signature::RSA_PKCS1_2048_8192_SHA256, m, s)
                    .is_ok()
            })
        }
        KeyAlg::Es256 => {
            let mut point = vec![4u8];
            point.extend(b64d(&jwk["x"]));
            point.extend(b64d(&jwk["y"]));
            let pk = signature::ParsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            Box::new(move |m, s| pk.verify_sig(m, s).is_ok())
        }
    };
    let split: Vec<(&[u8], Vec<u8>)> = tokens
        .iter()
        .map(|t| {
            let dot = t.rfind('.').unwrap_or(0);
            let sig = serde_json::Value::String(t[dot + 1..].to_string());
            (&t.as_bytes()[..dot], b64d(&sig))
        })
        .collect();
    let floor = best(a.repeat, || {
        for (m, s) in &split {
            anyhow::ensure!(verifier(m, s), "signature does not verify");
        }
        Ok(())
    })?;
    // First use: every token verified (fresh validators, best of R).
    let mut fresh: Vec<Arc<Validator>> = (0..a.repeat)
        .map(|_| validator())
        .collect::<Result<_, _>>()?;
    let first = best(a.repeat, || {
        let v = fresh.pop().expect("one per run");
        for tok in &tokens {
            v.validate_cached(tok)?;
        }
        Ok(())
    })?;
    // Repeated use: the cache.
    let v = validator()?;
    for tok in &tokens {
        v.validate_cached(tok)?;
    }
    let again = best(a.repeat, || {
        for tok in &tokens {
            v.validate_cached(tok)?;
        }
        Ok(())
    })?;
    // What an XRootD session that logged in with a token pays on every
    // request: is its token still good (one clock read)?
    const CHECKS: usize = 1_000_000;
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs()
        + 3600;
    let session = best(a.repeat, || {
        for _ in 0..CHECKS {
            anyhow::ensure!(v.still_valid(std::hint::black_box(exp)), "expired");
        }
        Ok(())
    })?;
    let us = |s: f64| s / a.tokens as f64 * 1e6;
    println!(
        "bench-tokens: {} {} tokens, best of {}: first use {:.1} us/token (signature alone {:.1}), cached {:.2} us/token, session expiry check {:.1} ns/request",
        a.tokens,
        key.alg(),
        a.repeat,
        us(first),
        us(floor),
        us(again),
        session / CHECKS as f64 * 1e9
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    run(&a, KeyAlg::Rs256)?;
    run(&a, KeyAlg::Es256)
}
