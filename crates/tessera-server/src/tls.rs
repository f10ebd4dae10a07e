//! The rustls server configuration from PEM files (certificate chain and
//! private key), shared by `roots://` and HTTPS.

use anyhow::Context;
use std::path::Path;
use std::sync::Arc;
use tokio_rustls::rustls::client::danger::HandshakeSignatureValid;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{ClientConfig, DigitallySignedStruct, Error, ServerConfig};

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

/// The HTTPS server configuration: [`server_config`], asking clients for
/// a certificate (never requiring one) when grid certificates are on.
/// The handshake signature is checked here; the chain (proxies that
/// webpki refuses) by tessera-x509 when a request needs the identity.
pub fn https_server_of(
    t: &crate::config::Tls,
    client_certs: bool,
) -> anyhow::Result<Option<Arc<ServerConfig>>> {
    let (Some(cert), Some(key), true) = (&t.cert, &t.key, client_certs) else {
        return server_of(t);
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("reading {}", cert.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("parsing {}", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("reading the private key {}", key.display()))?;
    let cfg = ServerConfig::builder()
        .with_client_cert_verifier(Arc::new(GridClientCerts::new()))
        .with_single_cert(chain, key)
        .context("certificate and key do not match")?;
    Ok(Some(Arc::new(cfg)))
}

/// Asks for a client certificate and checks the handshake signature with
/// its key; takes any chain (tessera-x509 decides, with the reason).
#[derive(Debug)]
struct GridClientCerts {
    algs: tokio_rustls::rustls::crypto::WebPkiSupportedAlgorithms,
}

impl GridClientCerts {
    fn new() -> GridClientCerts {
        GridClientCerts {
            algs: tokio_rustls::rustls::crypto::aws_lc_rs::default_provider()
                .signature_verification_algorithms,
        }
    }

    fn check(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
        tls13: bool,
    ) -> Result<HandshakeSignatureValid, Error> {
        let (alg_id, key) = tessera_x509::subject_key(cert)
            .map_err(|e| Error::General(format!("client certificate: {e}")))?;
        let candidates = self
            .algs
            .mapping
            .iter()
            .find(|(s, _)| *s == dss.scheme)
            // TLS 1.3 binds a scheme to one curve: its first algorithm.
            .map(|(_, a)| if tls13 { &a[..a.len().min(1)] } else { *a })
            .ok_or_else(|| {
                Error::General(format!("signature scheme {:?} not taken", dss.scheme))
            })?;
        for alg in candidates {
            if alg.public_key_alg_id().as_ref() != alg_id.as_slice() {
                continue;
            }
            return alg
                .verify_signature(&key, message, dss.signature())
                .map(|()| HandshakeSignatureValid::assertion())
                .map_err(|_| Error::General("client certificate: bad handshake signature".into()));
        }
        Err(Error::General(
            "client certificate: its key does not fit the signature scheme".into(),
        ))
    }
}

impl tokio_rustls::rustls::server::danger::ClientCertVerifier for GridClientCerts {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[tokio_rustls::rustls::DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: tokio_rustls::rustls::pki_types::UnixTime,
    ) -> Result<tokio_rustls::rustls::server::danger::ClientCertVerified, Error> {
        // The chain is verified (with its reason) when a request needs it.
        Ok(tokio_rustls::rustls::server::danger::ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.check(message, cert, dss, false)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        use tokio_rustls::rustls::SignatureScheme as S;
        let legacy = [
            S::RSA_PKCS1_SHA1,
            S::ECDSA_SHA1_Legacy,
            S::RSA_PKCS1_SHA256,
            S::RSA_PKCS1_SHA384,
            S::RSA_PKCS1_SHA512,
        ];
        if legacy.contains(&dss.scheme) {
            return Err(Error::General(format!(
                "signature scheme {:?} is not for TLS 1.3",
                dss.scheme
            )));
        }
        self.check(message, cert, dss, true)
    }

    fn supported_verify_schemes(&self) -> Vec<tokio_rustls::rustls::SignatureScheme> {
        self.algs.supported_schemes()
    }
}
