//! The server's two answers (see the crate's documentation). One
//! [`GsiServer`] per listener holds the host certificate and key; each
//! connection keeps a [`Pending`] between its two `kXR_auth` requests.

use crate::buffer::{kind, step, Buffer};
use crate::crypto::{self, Dh, PrivateKey, PublicKey};
use aws_lc_rs::cipher::{
    DecryptionContext, PaddedBlockDecryptingKey, UnboundCipherKey, AES_128, AES_256,
};
use base64::Engine;
use std::time::{Duration, Instant};
use x509_parser::pem::Pem;

/// Ciphers offered for the session key, the client takes the first it
/// knows; and digests (used after the handshake only for request
/// signing, which is not offered).
const CIPHERS: &str = "aes-128-cbc:aes-256-cbc";
const DIGESTS: &str = "sha256:sha1";
/// How long a client has between its two messages (the reference's
/// `TimeSkew`).
const HANDSHAKE_TTL: Duration = Duration::from_secs(300);

/// A refusal, worded as the reference words its own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Secgsi: {kind}: {msg}")]
pub struct GsiError {
    pub kind: &'static str,
    pub msg: String,
}

fn err(kind: &'static str, msg: impl Into<String>) -> GsiError {
    GsiError {
        kind,
        msg: msg.into(),
    }
}

fn parse_err(msg: impl Into<String>) -> GsiError {
    err("ErrParseBuffer", msg)
}

/// What a connection remembers between its two messages.
pub struct Pending {
    dh: Dh,
    rtag: Vec<u8>,
    padded: bool,
    options: i32,
    at: Instant,
}

/// What to answer.
#[derive(Debug)]
pub enum Outcome {
    /// `kXR_authmore` with this body.
    More(Vec<u8>),
    /// Authenticated: `kXR_ok`; the client's chain (DER, its last proxy
    /// first, as sent) for the caller to verify and map.
    Done { chain: Vec<Vec<u8>> },
}

/// The gsi service of a listener.
pub struct GsiServer {
    cert_pem: Vec<u8>,
    key: PrivateKey,
    ca: String,
}

fn pem_of(label: &str, der: &[u8]) -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut s = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        s.push_str(std::str::from_utf8(line).unwrap_or_default());
        s.push('\n');
    }
    s.push_str(&format!("-----END {label}-----\n"));
    s.into_bytes()
}

fn pems<'a>(bytes: &'a [u8], labels: &'a [&'a str]) -> impl Iterator<Item = Vec<u8>> + 'a {
    Pem::iter_from_buffer(bytes)
        .filter_map(Result::ok)
        .filter(move |p| labels.contains(&p.label.as_str()))
        .map(|p| p.contents)
}

fn rtag() -> Result<Vec<u8>, GsiError> {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789./";
    let mut r = [0u8; 8];
    aws_lc_rs::rand::fill(&mut r).map_err(|_| err("ErrError", "no randomness"))?;
    Ok(r.iter().map(|b| CHARS[usize::from(b & 63)]).collect())
}

impl GsiServer {
    /// From the host certificate (PEM; the first certificate is used) and
    /// its RSA key (PEM, PKCS#1 or PKCS#8, not encrypted).
    pub fn new(cert_pem: &[u8], key_pem: &[u8]) -> Result<GsiServer, String> {
        let cert = pems(cert_pem, &["CERTIFICATE"])
            .next()
            .ok_or("no certificate in the host certificate file")?;
        let key = pems(key_pem, &["PRIVATE KEY", "RSA PRIVATE KEY"])
            .next()
            .ok_or("no unencrypted private key in the host key file")?;
        let key = PrivateKey::from_der(&key)?;
        // The key must be the certificate's (a client would refuse our
        // signatures otherwise): sign and check with the certificate's key.
        let (_, bits) = tessera_x509::subject_key(&cert).map_err(|e| e.to_string())?;
        let probe = key.sign_raw(b"tessera gsi key check")?;
        if PublicKey::from_pkcs1(&bits)?.recover(&probe)? != b"tessera gsi key check" {
            return Err("the host key is not the host certificate's".into());
        }
        let (new, old) = crypto::issuer_hashes(&cert)?;
        let ca = if new == old {
            format!("{new:08x}.0")
        } else {
            format!("{new:08x}.0|{old:08x}.0")
        };
        Ok(GsiServer {
            cert_pem: pem_of("CERTIFICATE", &cert),
            key,
            ca,
        })
    }

    /// The login reply's parameters after `&P=`.
    pub fn login_param(&self) -> String {
        format!("gsi,v:{},c:ssl,ca:{}", crate::VERSION, self.ca)
    }

    /// Answer one `kXR_auth` body of protocol gsi. `pending` is the
    /// connection's state: set by the first message, taken by the second.
    pub fn step(&self, pending: &mut Option<Pending>, input: &[u8]) -> Result<Outcome, GsiError> {
        let buf = Buffer::parse(input).map_err(|e| err("ErrDecodeBuffer", e))?;
        match buf.step {
            step::CERTREQ => {
                *pending = None;
                let (p, out) = self.certreq(&buf)?;
                *pending = Some(p);
                Ok(Outcome::More(out))
            }
            step::CERT => {
                let p = pending
                    .take()
                    .ok_or_else(|| err("ErrBadOpt", "kXGC_cert without kXGC_certreq before it"))?;
                self.cert(p, &buf)
            }
            step::SIGPXY => Err(err(
                "ErrBadOpt",
                "proxy delegation is not taken here: kXGC_sigpxy",
            )),
            s => Err(err("ErrBadOpt", format!("unknown step {s}"))),
        }
    }

    fn certreq(&self, buf: &Buffer) -> Result<(Pending, Vec<u8>), GsiError> {
        let at = ": kXGC_certreq";
        let version = buf.get_i32(kind::VERSION).unwrap_or(crate::VERSION);
        if version < 10400 {
            return Err(parse_err(format!(
                "client gsi version {version} is too old (10400 or later signs its DH value){at}"
            )));
        }
        let modules = buf
            .get(kind::CRYPTOMOD)
            .ok_or_else(|| parse_err(format!("crypto module missing{at}")))?;
        let modules = String::from_utf8_lossy(modules);
        let module = modules
            .split('|')
            .find(|m| m.trim_end_matches("nopad") == "ssl")
            .ok_or_else(|| parse_err(format!("no common crypto module in {modules:?}{at}")))?;
        if buf.get(kind::ISSUER_HASH).is_none() {
            return Err(parse_err(format!("issuer hash missing{at}")));
        }
        let main = buf
            .get(kind::MAIN)
            .ok_or_else(|| parse_err(format!("main buffer missing{at}")))?;
        let inner = Buffer::parse(main).map_err(|e| parse_err(format!("main buffer: {e}{at}")))?;
        let their_tag = inner
            .get(kind::RTAG)
            .filter(|t| !t.is_empty() && t.len() <= 64)
            .ok_or_else(|| err("ErrNoRndmTag", format!("random tag missing{at}")))?;
        let dh = Dh::generate().map_err(|e| err("ErrNoPublic", e))?;
        let mut blob = crypto::FFDHE2048_PEM.as_bytes().to_vec();
        blob.extend_from_slice(b"---BPUB---");
        blob.extend_from_slice(
            dh.public_hex()
                .map_err(|e| err("ErrNoPublic", e))?
                .as_bytes(),
        );
        blob.extend_from_slice(b"---EPUB---");
        let ours = rtag()?;
        let mut reply_main = Buffer::new(step::SERVER_CERT);
        let signed = self
            .key
            .sign_raw(their_tag)
            .map_err(|e| err("ErrEncRndmTag", e))?;
        reply_main.push(kind::SIGNED_RTAG, signed);
        reply_main.push(kind::RTAG, ours.clone());
        let mut out = Buffer::new(step::SERVER_CERT);
        out.push(kind::CRYPTOMOD, b"ssl".to_vec());
        out.push(kind::MAIN, reply_main.serialize());
        let signed_blob = self
            .key
            .sign_raw(&blob)
            .map_err(|e| err("ErrExportPuK", e))?;
        out.push(kind::CIPHER, signed_blob);
        out.push(kind::CIPHER_ALG, CIPHERS.as_bytes().to_vec());
        out.push(kind::MD_ALG, DIGESTS.as_bytes().to_vec());
        out.push(kind::X509, self.cert_pem.clone());
        let pending = Pending {
            dh,
            rtag: ours,
            padded: !module.ends_with("nopad"),
            options: buf.get_i32(kind::CLNT_OPTS).unwrap_or(0),
            at: Instant::now(),
        };
        Ok((pending, out.serialize()))
    }

    fn cert(&self, p: Pending, buf: &Buffer) -> Result<Outcome, GsiError> {
        let at = ": kXGC_cert";
        if p.at.elapsed() > HANDSHAKE_TTL {
            return Err(parse_err(format!("handshake expired{at}")));
        }
        let (inner, peer, puk_bits) = open_main(&p, buf)?;
        if let Some(md) = buf.get(kind::MD_ALG) {
            let md = String::from_utf8_lossy(md);
            if !DIGESTS.split(':').any(|d| d == md) {
                return Err(parse_err(format!(
                    "unsupported MD chosen by the client: {md}{at}"
                )));
            }
        }
        let chain: Vec<Vec<u8>> = pems(
            inner
                .get(kind::X509)
                .ok_or_else(|| parse_err(format!("client certificate missing{at}")))?,
            &["CERTIFICATE"],
        )
        .take(tessera_x509::chain::MAX_CERTS + 1)
        .collect();
        let least = if p.options & 128 != 0 { 2 } else { 1 };
        if chain.len() < least {
            return Err(parse_err(format!(
                "wrong number of certificates in received bucket ({}){at}",
                chain.len()
            )));
        }
        let (_, end_key) = tessera_x509::subject_key(&chain[0])
            .map_err(|e| parse_err(format!("client certificate: {e}{at}")))?;
        if end_key != puk_bits {
            return Err(parse_err(format!(
                "client public key does not match the one from the bucket!{at}"
            )));
        }
        let signed = inner.get(kind::SIGNED_RTAG).ok_or_else(|| {
            err(
                "ErrBadRndmTag",
                format!("random tag missing - protocol error{at}"),
            )
        })?;
        let tag = peer.recover(signed).map_err(|_| {
            err(
                "ErrBadRndmTag",
                format!("error decrypting random tag with public key{at}"),
            )
        })?;
        if tag != p.rtag {
            return Err(err(
                "ErrBadRndmTag",
                format!("random tag content mismatch{at}"),
            ));
        }
        Ok(Outcome::Done { chain })
    }
}

/// The client's second message, opened: the session key agreed (its
/// DH value recovered with the proxy key it sends), the main buffer
/// decrypted. Returns it, the proxy key and that key's bits.
fn open_main(p: &Pending, buf: &Buffer) -> Result<(Buffer, PublicKey, Vec<u8>), GsiError> {
    let at = ": kXGC_cert";
    let alg = buf
        .get(kind::CIPHER_ALG)
        .ok_or_else(|| parse_err(format!("cipher algorithm missing{at}")))?;
    let alg = String::from_utf8_lossy(alg);
    let name = alg.split('#').next().unwrap_or_default();
    let (cipher, key_len) = match name {
        "aes-128-cbc" => (&AES_128, 16),
        "aes-256-cbc" => (&AES_256, 32),
        _ => {
            return Err(parse_err(format!(
                "unsupported cipher chosen by the client: {name}{at}"
            )))
        }
    };
    let puk = buf
        .get(kind::PUK)
        .ok_or_else(|| parse_err(format!("client public key missing{at}")))?;
    let puk_bits = public_key_bits(puk).ok_or_else(|| {
        parse_err(format!(
            "bucket with client public key carries an invalid key{at}"
        ))
    })?;
    let peer = PublicKey::from_pkcs1(&puk_bits).map_err(|e| parse_err(format!("{e}{at}")))?;
    let signed_blob = buf
        .get(kind::CIPHER)
        .ok_or_else(|| err("ErrNoCipher", format!("client DH value missing{at}")))?;
    let blob = peer
        .recover(signed_blob)
        .map_err(|_| parse_err(format!("decrypting client DH public parameters{at}")))?;
    let hex = between(&blob, b"---BPUB---", b"---EPUB--")
        .ok_or_else(|| parse_err(format!("client DH public value not found{at}")))?;
    let hex = std::str::from_utf8(hex).map_err(|_| parse_err(format!("bad DH value{at}")))?;
    let mut secret =
        p.dh.shared(hex)
            .map_err(|e| parse_err(format!("{e}{at}")))?;
    if !p.padded {
        let zeros = secret.iter().take_while(|&&b| b == 0).count();
        secret.drain(..zeros);
    }
    if secret.len() < key_len {
        return Err(parse_err(format!("DH secret too short{at}")));
    }
    let main = buf
        .get(kind::MAIN)
        .ok_or_else(|| parse_err(format!("main buffer missing{at}")))?;
    let plain = decrypt(cipher, &secret[..key_len], main).ok_or_else(|| {
        parse_err(format!(
            "error decrypting main buffer with session cipher{at}"
        ))
    })?;
    let inner = Buffer::parse(&plain).map_err(|e| parse_err(format!("main buffer: {e}{at}")))?;
    Ok((inner, peer, puk_bits))
}

/// The key bits of a PEM `PUBLIC KEY` (SubjectPublicKeyInfo) bucket.
fn public_key_bits(pem: &[u8]) -> Option<Vec<u8>> {
    use x509_parser::prelude::FromDer;
    let der = pems(pem, &["PUBLIC KEY"]).next()?;
    let (_, spki) = x509_parser::x509::SubjectPublicKeyInfo::from_der(&der).ok()?;
    Some(spki.subject_public_key.data.to_vec())
}

fn between<'a>(b: &'a [u8], start: &[u8], end: &[u8]) -> Option<&'a [u8]> {
    let s = b.windows(start.len()).position(|w| w == start)? + start.len();
    let e = b[s..].windows(end.len()).position(|w| w == end)? + s;
    Some(&b[s..e])
}

/// `iv(16) || AES-CBC(PKCS#7)` decrypted.
fn decrypt(
    cipher: &'static aws_lc_rs::cipher::Algorithm,
    key: &[u8],
    data: &[u8],
) -> Option<Vec<u8>> {
    let (iv, body) = (data.get(..16)?, data.get(16..)?);
    if body.is_empty() || !body.len().is_multiple_of(16) {
        return None;
    }
    let iv: [u8; 16] = iv.try_into().ok()?;
    let key = PaddedBlockDecryptingKey::cbc_pkcs7(UnboundCipherKey::new(cipher, key).ok()?).ok()?;
    let mut buf = body.to_vec();
    let n = key
        .decrypt(&mut buf, DecryptionContext::Iv128(iv.into()))
        .ok()?
        .len();
    buf.truncate(n);
    Some(buf)
}
