//! A client's certificate chain, verified: proxies (RFC 3820 and legacy
//! Globus) down to the end-entity certificate, that certificate up to a
//! CA of the trust store, every signature, lifetime and CRL on the way.
//!
//! The chain is as a client sends it: the newest proxy first, then each
//! issuer (`[proxyN, …, proxy1, EEC, intermediate CAs…]`). A proxy's
//! subject is its issuer's plus one CN, it is signed by its issuer's key,
//! it ends no later than its issuer, and it is no CA. A limited proxy
//! (legacy CN `limited proxy`, or the Globus limited policy language)
//! makes the whole chain limited: the caller refuses it for writes.
//! Independent proxies and policy languages we do not understand are
//! refused, as Globus and XRootD do.

use crate::der;
use crate::store::TrustStore;
use crate::{name, X509Error};
use x509_parser::prelude::*;

/// At most this many certificates in a chain.
pub const MAX_CERTS: usize = 12;
/// At most this many bytes in a chain.
pub const MAX_BYTES: usize = 64 << 10;

const OID_PROXY_INFO: &str = "1.3.6.1.5.5.7.1.14";
const OID_PROXY_INFO_DRAFT: &str = "1.3.6.1.4.1.3536.1.222";
const OID_INHERIT_ALL: &str = "1.3.6.1.5.5.7.21.1";
const OID_INDEPENDENT: &str = "1.3.6.1.5.5.7.21.2";
const OID_LIMITED: &str = "1.3.6.1.4.1.3536.1.1.1.9";
/// Where a VOMS proxy keeps its attribute certificates.
pub const OID_VOMS_ACS: &str = "1.3.6.1.4.1.8005.100.100.5";

/// What a site does with CRLs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CrlPolicy {
    /// Revoked certificates and expired CRLs are refused; a CA without a
    /// CRL is taken.
    #[default]
    Enforce,
    /// Like `Enforce`, but an expired CRL is still used (with a warning).
    Warn,
    /// Like `Enforce`, and a CA without a CRL is refused too.
    Require,
}

/// A chain that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The end-entity certificate's subject: who this is.
    pub dn: String,
    /// Its issuer (the CA), and its serial number (for VOMS holders).
    pub issuer: String,
    pub serial: Vec<u8>,
    /// How many proxies are above it.
    pub proxies: usize,
    /// A limited proxy is in the chain: reading only.
    pub limited: bool,
    /// The earliest end of any certificate of the chain (seconds).
    pub not_after: i64,
    /// The VOMS extensions found in the proxies (the newest first).
    pub voms: Vec<Vec<u8>>,
}

/// The proxy information of a certificate, when it is a proxy.
struct ProxyInfo {
    path_len: Option<u64>,
    limited: bool,
}

fn dn_of(c: &X509Certificate<'_>) -> String {
    name::dn(c.subject())
}

fn time_str(t: i64) -> String {
    ASN1Time::from_timestamp(t).map_or_else(|_| t.to_string(), |t| t.to_string())
}

/// The RFC 3820 (or draft) proxy information extension, parsed.
fn proxy_info(c: &X509Certificate<'_>) -> Result<Option<ProxyInfo>, X509Error> {
    let ext = c.extensions().iter().find(|e| {
        let oid = e.oid.to_id_string();
        oid == OID_PROXY_INFO || oid == OID_PROXY_INFO_DRAFT
    });
    let Some(ext) = ext else {
        return Ok(None);
    };
    let bad = |why: String| X509Error::Proxy(dn_of(c), format!("proxy information: {why}"));
    let seq = der::single(ext.value).map_err(bad)?;
    let seq = seq.expect(der::SEQUENCE, "ProxyCertInfo").map_err(bad)?;
    let mut info = ProxyInfo {
        path_len: None,
        limited: false,
    };
    let mut language = None;
    for item in seq.items().map_err(bad)? {
        if item.tag() == der::INTEGER && item.class() == asn1_rs::Class::Universal {
            info.path_len = Some(der::small_uint(&item).map_err(bad)?);
        } else if item.is_ctx(1) {
            // The draft's [1] EXPLICIT pCPathLenConstraint.
            let inner = der::single(item.data()).map_err(bad)?;
            info.path_len = Some(der::small_uint(&inner).map_err(bad)?);
        } else if item.tag() == der::SEQUENCE {
            let policy = item.items().map_err(bad)?;
            let first = policy.first().ok_or_else(|| bad("empty policy".into()))?;
            language = Some(der::oid_string(first).map_err(bad)?);
        }
    }
    match language.as_deref() {
        Some(OID_INHERIT_ALL) => {}
        Some(OID_LIMITED) => info.limited = true,
        Some(OID_INDEPENDENT) => {
            return Err(X509Error::Proxy(
                dn_of(c),
                "independent proxies carry none of their issuer's rights and are not taken".into(),
            ))
        }
        Some(other) => {
            return Err(X509Error::Proxy(
                dn_of(c),
                format!("proxy policy language {other} is not understood here"),
            ))
        }
        None => return Err(bad("no policy language".into())),
    }
    Ok(Some(info))
}

/// Whether `c` (issued by `issuer`) is a proxy, and what kind.
fn as_proxy(
    c: &X509Certificate<'_>,
    issuer: Option<&X509Certificate<'_>>,
) -> Result<Option<ProxyInfo>, X509Error> {
    if let Some(info) = proxy_info(c)? {
        return Ok(Some(info));
    }
    // Legacy Globus proxies: no extension, the subject is the issuer's
    // plus CN=proxy or CN=limited proxy.
    let Some(issuer) = issuer else {
        return Ok(None);
    };
    if c.is_ca() || name::dn(c.issuer()) != dn_of(issuer) {
        return Ok(None);
    }
    Ok(
        match name::proxy_cn(c.subject(), issuer.subject()).as_deref() {
            Some("proxy") => Some(ProxyInfo {
                path_len: None,
                limited: false,
            }),
            Some("limited proxy") => Some(ProxyInfo {
                path_len: None,
                limited: true,
            }),
            _ => None,
        },
    )
}

fn check_time(c: &X509Certificate<'_>, now: i64) -> Result<(), X509Error> {
    let v = c.validity();
    if now < v.not_before.timestamp() {
        return Err(X509Error::NotYetValid(dn_of(c), v.not_before.to_string()));
    }
    if now > v.not_after.timestamp() {
        return Err(X509Error::Expired(dn_of(c), v.not_after.to_string()));
    }
    Ok(())
}

fn check_signed_by(c: &X509Certificate<'_>, issuer: &X509Certificate<'_>) -> Result<(), X509Error> {
    c.verify_signature(Some(issuer.public_key()))
        .map_err(|_| X509Error::BadSignature(dn_of(c), dn_of(issuer)))
}

/// Is `serial`, issued by `issuer_dn`, revoked (by the site's policy)?
fn check_crl(
    store: &TrustStore,
    subject: &str,
    serial: &[u8],
    issuer_dn: &str,
    now: i64,
    policy: CrlPolicy,
) -> Result<(), X509Error> {
    let Some(crls) = store.crls.get(issuer_dn) else {
        if policy == CrlPolicy::Require {
            return Err(X509Error::CrlMissing(subject.into(), issuer_dn.into()));
        }
        return Ok(());
    };
    for crl in crls {
        if crl.revoked.contains(serial) {
            return Err(X509Error::Revoked(subject.into(), issuer_dn.into()));
        }
        if let Some(next) = crl.next_update.filter(|&n| n < now) {
            match policy {
                CrlPolicy::Warn => {
                    tracing::warn!(
                        ca = issuer_dn,
                        "CRL expired at {}; used anyway",
                        time_str(next)
                    )
                }
                _ => {
                    return Err(X509Error::CrlExpired(
                        subject.into(),
                        issuer_dn.into(),
                        time_str(next),
                    ))
                }
            }
        }
    }
    Ok(())
}

/// Verify `certs[at]`, a certificate that is no proxy, up to a trusted
/// CA: through the CAs that follow it in `certs` (not trusted by
/// themselves) and the store's. Returns the earliest end on the way.
pub fn verify_to_ca<'a>(
    store: &'a TrustStore,
    certs: &[X509Certificate<'a>],
    at: usize,
    now: i64,
    policy: CrlPolicy,
) -> Result<i64, X509Error> {
    let mut not_after = i64::MAX;
    // The certificate being checked: one of `certs` (by index), or a CA
    // of the store on the way up.
    let mut cur: (Option<usize>, Option<X509Certificate<'a>>) = (Some(at), None);
    for _ in 0..8 {
        let c = match &cur {
            (Some(i), _) => &certs[*i],
            (None, Some(ca)) => ca,
            (None, None) => unreachable!("a certificate is always being checked"),
        };
        check_time(c, now)?;
        not_after = not_after.min(c.validity().not_after.timestamp());
        let subject = dn_of(c);
        let issuer_dn = name::dn(c.issuer());
        // A CA of the store that signed it ends the walk (or goes on
        // to that CA's own issuer when it is not self-signed).
        let trusted = store.cas.get(&issuer_dn).and_then(|cas| {
            cas.iter().find_map(|ca| {
                let (_, parsed) = X509Certificate::from_der(&ca.der).ok()?;
                check_signed_by(c, &parsed).is_ok().then_some(parsed)
            })
        });
        if let Some(ca) = trusted {
            check_crl(store, &subject, c.raw_serial(), &issuer_dn, now, policy)?;
            if issuer_dn == subject {
                return Ok(not_after);
            }
            if dn_of(&ca) == name::dn(ca.issuer()) {
                check_time(&ca, now)?;
                return Ok(not_after.min(ca.validity().not_after.timestamp()));
            }
            cur = (None, Some(ca));
            continue;
        }
        if store.cas.contains_key(&issuer_dn) {
            return Err(X509Error::BadSignature(subject, issuer_dn));
        }
        // An intermediate CA the client sent.
        let next = cur
            .0
            .map(|i| i + 1)
            .filter(|&n| n < certs.len() && dn_of(&certs[n]) == issuer_dn && certs[n].is_ca());
        match next {
            Some(n) => {
                check_signed_by(c, &certs[n])?;
                check_crl(store, &subject, c.raw_serial(), &issuer_dn, now, policy)?;
                cur = (Some(n), None);
            }
            None => return Err(X509Error::Untrusted(subject, issuer_dn)),
        }
    }
    Err(X509Error::TooLong(certs.len() + 8, 8))
}

/// The rules of a proxy `c` issued by `issuer`, with `below` proxies
/// under it; its end (seconds).
fn check_proxy(
    c: &X509Certificate<'_>,
    issuer: &X509Certificate<'_>,
    below: usize,
    info: &ProxyInfo,
    now: i64,
) -> Result<i64, X509Error> {
    if name::proxy_cn(c.subject(), issuer.subject()).is_none()
        || name::dn(c.issuer()) != dn_of(issuer)
    {
        return Err(X509Error::Proxy(
            dn_of(c),
            format!(
                "its subject is not its issuer's ({}) plus one CN",
                dn_of(issuer)
            ),
        ));
    }
    if c.is_ca() {
        return Err(X509Error::Proxy(dn_of(c), "a proxy cannot be a CA".into()));
    }
    check_time(c, now)?;
    check_signed_by(c, issuer)?;
    let (end, issuer_end) = (
        c.validity().not_after.timestamp(),
        issuer.validity().not_after.timestamp(),
    );
    if end > issuer_end {
        return Err(X509Error::Proxy(
            dn_of(c),
            format!(
                "it outlives its issuer ({} after {})",
                time_str(end),
                time_str(issuer_end)
            ),
        ));
    }
    if let Some(max) = info.path_len {
        if below as u64 > max {
            return Err(X509Error::Proxy(
                dn_of(c),
                format!("{below} proxies below it, at most {max} allowed"),
            ));
        }
    }
    Ok(end)
}

/// Verify a client's chain (DER certificates, as sent) at `now`.
pub fn verify(
    store: &TrustStore,
    chain: &[Vec<u8>],
    now: i64,
    policy: CrlPolicy,
) -> Result<Verified, X509Error> {
    if chain.is_empty() {
        return Err(X509Error::Empty);
    }
    if chain.len() > MAX_CERTS {
        return Err(X509Error::TooLong(chain.len(), MAX_CERTS));
    }
    let bytes: usize = chain.iter().map(Vec::len).sum();
    if bytes > MAX_BYTES {
        return Err(X509Error::TooBig(bytes, MAX_BYTES));
    }
    let certs = chain
        .iter()
        .enumerate()
        .map(|(i, d)| {
            X509Certificate::from_der(d).map(|(_, c)| c).map_err(|e| {
                X509Error::Malformed(format!("certificate {} of the chain: {e}", i + 1))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut limited = false;
    let mut voms = Vec::new();
    let mut not_after = i64::MAX;
    let mut eec = None;
    for i in 0..certs.len() {
        let c = &certs[i];
        let Some(info) = as_proxy(c, certs.get(i + 1))? else {
            eec = Some(i);
            break;
        };
        let issuer = certs
            .get(i + 1)
            .ok_or_else(|| X509Error::Proxy(dn_of(c), "its issuer is not in the chain".into()))?;
        let end = check_proxy(c, issuer, i, &info, now)?;
        limited |= info.limited;
        not_after = not_after.min(end);
        for e in c.extensions() {
            if e.oid.to_id_string() == OID_VOMS_ACS {
                voms.push(e.value.to_vec());
            }
        }
    }
    let e = eec.ok_or_else(|| {
        X509Error::Proxy(
            dn_of(&certs[0]),
            "no end-entity certificate in the chain".into(),
        )
    })?;
    let ee = &certs[e];
    if ee.is_ca() {
        return Err(X509Error::Policy(
            dn_of(ee),
            "a CA certificate is not a client's certificate".into(),
        ));
    }
    not_after = not_after.min(verify_to_ca(store, &certs, e, now, policy)?);
    Ok(Verified {
        dn: dn_of(ee),
        issuer: name::dn(ee.issuer()),
        serial: ee.raw_serial().to_vec(),
        proxies: e,
        limited,
        not_after,
        voms,
    })
}
