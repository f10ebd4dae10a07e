//! Grid certificates, verified by Tessera itself (rustls/webpki refuse
//! proxy chains): the IGTF trust store ([`Trust`]), end-entity and proxy
//! chains ([`chain::verify`]: RFC 3820 and legacy Globus proxies, limited
//! proxies, path lengths, lifetimes, CRLs), VOMS attribute certificates
//! ([`voms::attributes`]) and the mapping files sites already have
//! ([`mapping`]: grid-mapfile, dCache-style VOMS role map). Parsing by
//! x509-parser/asn1-rs, signatures by aws-lc-rs: no OpenSSL. Nothing here
//! knows an `Identity`; tessera-auth turns a [`chain::Verified`] into one.

pub mod chain;
mod der;
mod error;
pub mod mapping;
pub mod name;
mod store;
pub mod voms;
mod vomsdir;

pub use error::X509Error;
pub use store::{Ca, Crl, Trust, TrustStore};
pub use vomsdir::{Lsc, VomsDir};

/// Seconds since the epoch, now.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The public key of a certificate's subject, as TLS signature checks
/// want it: the `AlgorithmIdentifier`'s content (what webpki calls the
/// key's algorithm id) and the key bits. For the handshake signature of a
/// client whose certificate webpki will not parse (proxies carry a
/// critical extension it does not know).
pub fn subject_key(cert_der: &[u8]) -> Result<(Vec<u8>, Vec<u8>), X509Error> {
    use x509_parser::prelude::{FromDer, X509Certificate};
    let (_, c) =
        X509Certificate::from_der(cert_der).map_err(|e| X509Error::Malformed(e.to_string()))?;
    let spki = der::single(c.public_key().raw).map_err(X509Error::Malformed)?;
    let parts = spki.items().map_err(X509Error::Malformed)?;
    let [alg, bits] = parts.as_slice() else {
        return Err(X509Error::Malformed("bad subject public key info".into()));
    };
    let key = bits.data();
    if bits.tag() != 3 || key.first() != Some(&0) {
        return Err(X509Error::Malformed("bad subject public key".into()));
    }
    Ok((alg.data().to_vec(), key[1..].to_vec()))
}
