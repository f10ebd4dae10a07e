//! The rustls server configuration from PEM files (certificate chain and
//! private key), shared by `roots://` and HTTPS.

use anyhow::Context;
use std::path::Path;
use std::sync::Arc;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{ClientConfig, RootCertStore, ServerConfig};

pub fn server_config(cert: &Path, key: &Path) -> anyhow::Result<Arc<ServerConfig>> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("reading {}", cert.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("parsing {}", cert.display()))?;
    if chain.is_empty() {
        anyhow::bail!("{}: no certificate found", cert.display());
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("reading the private key {}", key.display()))?;
    let cfg = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .context("certificate and key do not match")?;
    Ok(Arc::new(cfg))
}

/// The client configuration of third-party copies: the system CA bundle
/// (when present) and `extra` PEM files.
pub fn client_config(extra: &[std::path::PathBuf]) -> anyhow::Result<Arc<ClientConfig>> {
    let mut roots = RootCertStore::empty();
    let system = Path::new("/etc/ssl/certs/ca-certificates.crt");
    let mut files: Vec<&Path> = extra.iter().map(|p| p.as_path()).collect();
    if system.exists() {
        files.push(system);
    }
    for f in files {
        for c in
            CertificateDer::pem_file_iter(f).with_context(|| format!("reading {}", f.display()))?
        {
            let c = c.with_context(|| format!("parsing {}", f.display()))?;
            // A bundle may hold certificates rustls rejects; skip those.
            let _ = roots.add(c);
        }
    }
    Ok(Arc::new(
        ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    ))
}
