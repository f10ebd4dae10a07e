//! VOMS attribute certificates (RFC 3281 ACs as VOMS issues them), found
//! in a proxy's extension 1.3.6.1.4.1.8005.100.100.5: the FQANs of the
//! first (primary) AC, taken only when its signature verifies with the
//! VOMS server certificate it carries, that certificate matches an
//! `.lsc` file of the vomsdir for its VO and chains to a trusted CA, the
//! AC is valid now, and it was issued to the chain's end-entity
//! certificate (holder issuer and serial).

use crate::chain::{verify_to_ca, CrlPolicy, Verified};
use crate::der::{self, Tlv};
use crate::store::TrustStore;
use crate::{name, X509Error};
use x509_parser::prelude::*;

const OID_VOMS_ATTRS: &str = "1.3.6.1.4.1.8005.100.100.4";
const OID_VOMS_CERTS: &str = "1.3.6.1.4.1.8005.100.100.10";

/// What a verified AC says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attributes {
    pub vo: String,
    /// As issued (`/cms/Role=production/Capability=NULL`), primary first.
    pub fqans: Vec<String>,
    /// The VOMS server's DN.
    pub server: String,
    pub not_after: i64,
}

fn bad(why: impl Into<String>) -> X509Error {
    X509Error::Voms(why.into())
}

/// Every AC inside the extension's value (SEQUENCE OF SEQUENCE OF AC).
fn acs<'a>(t: Tlv<'a>, depth: u32, out: &mut Vec<Tlv<'a>>) -> Result<(), X509Error> {
    if t.tag() != der::SEQUENCE || depth > 3 {
        return Ok(());
    }
    let items = t.items().map_err(bad)?;
    let is_ac = items.len() == 3
        && items[0].tag() == der::SEQUENCE
        && items[1].tag() == der::SEQUENCE
        && items[2].tag() == 3;
    if is_ac {
        out.push(t);
        return Ok(());
    }
    for i in items {
        acs(i, depth + 1, out)?;
    }
    Ok(())
}

/// The directory name inside GeneralNames (`[4] Name`), as a DN.
fn general_dn(names: &Tlv<'_>) -> Result<String, X509Error> {
    for n in names.items().map_err(bad)? {
        if n.is_ctx(4) {
            let (_, x) = X509Name::from_der(n.data()).map_err(|e| bad(e.to_string()))?;
            return Ok(name::dn(&x));
        }
    }
    Err(bad("no directory name where one is due"))
}

/// Every certificate nested in `t` (the AC's certificate extension).
fn certs_in<'a>(t: &Tlv<'a>, depth: u32, out: &mut Vec<&'a [u8]>) {
    if X509Certificate::from_der(t.raw).is_ok() {
        out.push(t.raw);
        return;
    }
    if depth < 4 && t.tag() == der::SEQUENCE {
        for i in t.items().unwrap_or_default() {
            certs_in(&i, depth + 1, out);
        }
    }
}

fn strip_zeros(b: &[u8]) -> &[u8] {
    let n = b.iter().take_while(|&&x| x == 0).count();
    &b[n.min(b.len().saturating_sub(1))..]
}

/// The first AC of the chain's newest VOMS extension, verified; `None`
/// when the chain carries none.
pub fn attributes(
    store: &TrustStore,
    chain: &Verified,
    now: i64,
    policy: CrlPolicy,
) -> Result<Option<Attributes>, X509Error> {
    let Some(ext) = chain.voms.first() else {
        return Ok(None);
    };
    let top = der::single(ext).map_err(bad)?;
    let mut found = Vec::new();
    acs(top, 0, &mut found)?;
    let ac = found
        .into_iter()
        .next()
        .ok_or_else(|| bad("the VOMS extension holds no attribute certificate"))?;
    verify_ac(store, chain, &ac, now, policy).map(Some)
}

fn verify_ac(
    store: &TrustStore,
    chain: &Verified,
    ac: &Tlv<'_>,
    now: i64,
    policy: CrlPolicy,
) -> Result<Attributes, X509Error> {
    let parts = ac.items().map_err(bad)?;
    let (info, sig_alg, sig) = (&parts[0], &parts[1], &parts[2]);
    let f = info.items().map_err(bad)?;
    if f.len() < 7 {
        return Err(bad("attribute certificate too short"));
    }
    // holder: [0] IssuerSerial { issuer GeneralNames, serial INTEGER }
    let holder = f[1].items().map_err(bad)?;
    let base = holder
        .iter()
        .find(|h| h.is_ctx(0))
        .ok_or_else(|| bad("no holder certificate named"))?;
    let base = base.items().map_err(bad)?;
    let (h_issuer, h_serial) = match base.as_slice() {
        [names, serial, ..] => (general_dn(names)?, serial.data()),
        _ => return Err(bad("bad holder")),
    };
    // VOMS servers name the end-entity certificate's issuer; voms-proxy-fake
    // (and some older servers) its subject. Either, with its serial.
    let named = h_issuer == chain.issuer || h_issuer == chain.dn;
    if !named || strip_zeros(h_serial) != strip_zeros(&chain.serial) {
        return Err(bad(format!(
            "issued to another certificate (serial of {h_issuer}), not to {}",
            chain.dn
        )));
    }
    // issuer: [0] V2Form { GeneralNames } (or v1: GeneralNames).
    let server = if f[2].is_ctx(0) {
        let v2 = f[2].items().map_err(bad)?;
        general_dn(v2.first().ok_or_else(|| bad("empty issuer"))?)?
    } else {
        general_dn(&f[2])?
    };
    // validity
    let times = f[5].items().map_err(bad)?;
    let [nb, na] = times.as_slice() else {
        return Err(bad("bad validity"));
    };
    let (nb, na) = (
        der::generalized_time(nb).map_err(bad)?,
        der::generalized_time(na).map_err(bad)?,
    );
    if now < nb {
        return Err(bad(format!("issued by {server}: not valid yet")));
    }
    if now > na {
        return Err(bad(format!("issued by {server}: expired")));
    }
    let (vo, fqans) = fqans(&f[6])?;
    let server_certs = server_certs(&f[7..])?;
    let parsed = server_certs
        .iter()
        .map(|d| X509Certificate::from_der(d).map(|(_, c)| c))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    let lead = &parsed[0];
    if name::dn(lead.subject()) != server {
        return Err(bad(format!(
            "the certificate it carries is not its issuer's ({server})"
        )));
    }
    lsc_match(store, &vo, &parsed)?;
    verify_to_ca(store, &parsed, 0, now, policy)
        .map_err(|e| bad(format!("VOMS server certificate: {e}")))?;
    let (_, alg) = AlgorithmIdentifier::from_der(sig_alg.raw).map_err(|e| bad(e.to_string()))?;
    let (_, bits) = asn1_rs::BitString::from_der(sig.raw).map_err(|e| bad(e.to_string()))?;
    x509_parser::verify::verify_signature(lead.public_key(), &alg, &bits, info.raw).map_err(
        |_| {
            bad(format!(
                "signature of {server} does not verify: forged or altered"
            ))
        },
    )?;
    Ok(Attributes {
        vo,
        fqans,
        server,
        not_after: na,
    })
}

/// The VOMS server's certificate (and its chain) from the AC's extensions.
fn server_certs<'a>(rest: &[Tlv<'a>]) -> Result<Vec<&'a [u8]>, X509Error> {
    let ext = rest
        .iter()
        .find(|t| t.tag() == der::SEQUENCE)
        .ok_or_else(|| bad("no VOMS server certificate in the attribute certificate"))?;
    let mut out = Vec::new();
    for e in ext.items().map_err(bad)? {
        let fields = e.items().map_err(bad)?;
        if fields
            .first()
            .and_then(|o| der::oid_string(o).ok())
            .as_deref()
            == Some(OID_VOMS_CERTS)
        {
            let value = fields.last().ok_or_else(|| bad("empty extension"))?;
            let inner = der::single(value.data()).map_err(bad)?;
            certs_in(&inner, 0, &mut out);
        }
    }
    if out.is_empty() {
        return Err(bad(
            "no VOMS server certificate in the attribute certificate",
        ));
    }
    Ok(out)
}

/// The VO (from the policy authority `vo://host:port`) and the FQANs.
fn fqans(attrs: &Tlv<'_>) -> Result<(String, Vec<String>), X509Error> {
    for a in attrs.items().map_err(bad)? {
        let parts = a.items().map_err(bad)?;
        let [oid, values] = parts.as_slice() else {
            continue;
        };
        if der::oid_string(oid).ok().as_deref() != Some(OID_VOMS_ATTRS) {
            continue;
        }
        let syntax = values.items().map_err(bad)?;
        let syntax = syntax.first().ok_or_else(|| bad("empty VOMS attribute"))?;
        let mut vo = None;
        let mut out = Vec::new();
        for part in syntax.items().map_err(bad)? {
            if part.is_ctx(0) {
                for gn in part.items().map_err(bad)? {
                    if gn.is_ctx(6) {
                        let uri = String::from_utf8_lossy(gn.data());
                        vo = uri.split_once("://").map(|(v, _)| v.to_string());
                    }
                }
            } else if part.tag() == der::SEQUENCE {
                for v in part.items().map_err(bad)? {
                    if v.tag() == der::OCTET_STRING || v.tag() == 12 {
                        let s = std::str::from_utf8(v.data()).map_err(|_| bad("FQAN not UTF-8"))?;
                        if !s.starts_with('/') || s.chars().any(char::is_control) {
                            return Err(bad(format!("malformed FQAN {s:?}")));
                        }
                        out.push(s.to_string());
                    }
                }
            }
        }
        let vo = vo
            .or_else(|| {
                out.first()
                    .and_then(|f| f.split('/').nth(1))
                    .map(str::to_string)
            })
            .ok_or_else(|| bad("no VO named"))?;
        if out.is_empty() {
            return Err(bad("no FQAN in the attribute certificate"));
        }
        return Ok((vo, out));
    }
    Err(bad("no VOMS attributes in the attribute certificate"))
}

/// The VOMS server's chain must match an `.lsc` of its VO.
fn lsc_match(store: &TrustStore, vo: &str, certs: &[X509Certificate<'_>]) -> Result<(), X509Error> {
    let Some(lscs) = store.voms.vos.get(vo) else {
        return Err(bad(format!("VO {vo} is not known here (no vomsdir entry)")));
    };
    let subject = name::dn(certs[0].subject());
    let issuer = name::dn(certs[0].issuer());
    let ok = lscs.iter().flat_map(|l| &l.chains).any(|ch| {
        ch[0] == subject
            && ch[1] == issuer
            && ch[2..]
                .iter()
                .enumerate()
                .all(|(i, dn)| certs.get(i + 1).is_none_or(|c| name::dn(c.issuer()) == *dn))
    });
    if ok {
        Ok(())
    } else {
        Err(bad(format!(
            "VOMS server {subject} (issuer {issuer}) is not listed for VO {vo} in the vomsdir"
        )))
    }
}

/// An FQAN without its null parts: `/cms/Role=NULL/Capability=NULL` is
/// `/cms`, `/cms/Role=production/Capability=NULL` is
/// `/cms/Role=production`.
pub fn short_fqan(f: &str) -> String {
    f.split('/')
        .filter(|p| !p.is_empty() && *p != "Role=NULL" && *p != "Capability=NULL")
        .fold(String::new(), |mut s, p| {
            s.push('/');
            s.push_str(p);
            s
        })
}

/// The group part of an FQAN (`/cms/higgs` of `/cms/higgs/Role=x`).
pub fn fqan_group(f: &str) -> String {
    f.split('/')
        .filter(|p| !p.is_empty() && !p.contains('='))
        .fold(String::new(), |mut s, p| {
            s.push('/');
            s.push_str(p);
            s
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn fqan_forms() {
        assert_eq!(short_fqan("/cms/Role=NULL/Capability=NULL"), "/cms");
        assert_eq!(
            short_fqan("/cms/Role=production/Capability=NULL"),
            "/cms/Role=production"
        );
        assert_eq!(
            fqan_group("/cms/higgs/Role=x/Capability=NULL"),
            "/cms/higgs"
        );
        assert_eq!(fqan_group("/atlas"), "/atlas");
    }
}
