//! Token validation cost (not a test): ES256 tokens of the development
//! issuer's format, keys already cached (loaded from its JWKS, as after
//! the first fetch). First use of each token (signature, claims, scopes)
//! and repeated use (the per-token cache), per token.
//!   bench-tokens [--tokens N] [--repeat R]

use clap::Parser;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use tessera_auth::dev::{DevIssuer, IssuerInfo};
use tessera_auth::{IssuerConfig, Validator};
use tessera_types::NsPath;

#[derive(Parser)]
struct Args {
    #[arg(long, default_value_t = 2000)]
    tokens: usize,
    #[arg(long, default_value_t = 5)]
    repeat: usize,
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let dir = tempfile::tempdir()?;
    let key = DevIssuer::load_or_create(dir.path())?;
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
            }],
            tls,
        );
        v.load_jwks(&info.issuer, key.jwks())?;
        Ok(v)
    };
    let v = validator()?;
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
    // First use: every token verified (fresh validators, best of R).
    let mut first = f64::MAX;
    for _ in 0..a.repeat {
        let v = validator()?;
        let t = Instant::now();
        for tok in &tokens {
            v.validate_cached(tok)?;
        }
        first = first.min(t.elapsed().as_secs_f64());
    }
    // Repeated use: the cache.
    for tok in &tokens {
        v.validate_cached(tok)?;
    }
    let mut again = f64::MAX;
    for _ in 0..a.repeat {
        let t = Instant::now();
        for tok in &tokens {
            v.validate_cached(tok)?;
        }
        again = again.min(t.elapsed().as_secs_f64());
    }
    let n = a.tokens as f64;
    println!(
        "bench-tokens: {} ES256 tokens, best of {}: first use {:.1} us/token, cached {:.2} us/token",
        a.tokens,
        a.repeat,
        first / n * 1e6,
        again / n * 1e6
    );
    Ok(())
}
