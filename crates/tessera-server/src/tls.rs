//! The rustls server configuration from PEM files (certificate chain and
//! private key), shared by `roots://` and HTTPS.

use anyhow::Context;
use std::path::Path;
use std::sync::Arc;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{ClientConfig, ServerConfig};

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

/// The server configuration `[tls]` names, if it names one.
pub fn server_of(t: &crate::config::Tls) -> anyhow::Result<Option<Arc<ServerConfig>>> {
    match (&t.cert, &t.key) {
        (Some(c), Some(k)) => Ok(Some(server_config(c, k)?)),
        _ => Ok(None),
    }
}

/// The client configuration of third-party copies (and issuers, and
/// federation endpoints): the system CA bundle (when present) and `extra`
/// PEM files.
pub fn client_config(extra: &[std::path::PathBuf]) -> anyhow::Result<Arc<ClientConfig>> {
    tessera_fed::trust(extra).map_err(anyhow::Error::msg)
}
