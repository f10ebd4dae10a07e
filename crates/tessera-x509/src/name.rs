//! Distinguished names in the slash form grid tools print and
//! grid-mapfiles hold (`/DC=ch/DC=cern/OU=Users/CN=alice`), the OpenSSL
//! "oneline" form XRootD, dCache and VOMS compare.

use x509_parser::x509::X509Name;

/// The short name OpenSSL uses for an attribute type, else its dotted OID.
fn short(oid: &str) -> &str {
    match oid {
        "2.5.4.3" => "CN",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.9" => "street",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.4" => "SN",
        "2.5.4.5" => "serialNumber",
        "2.5.4.12" => "title",
        "2.5.4.42" => "GN",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        "1.2.840.113549.1.9.1" => "emailAddress",
        other => other,
    }
}

/// `/A=v/B=w...` for a name; values that are not strings are shown as hex.
pub fn dn(name: &X509Name<'_>) -> String {
    let mut out = String::new();
    for rdn in name.iter_rdn() {
        for (i, atv) in rdn.iter().enumerate() {
            out.push(if i == 0 { '/' } else { '+' });
            out.push_str(short(&atv.attr_type().to_id_string()));
            out.push('=');
            match atv.as_str() {
                Ok(s) => out.push_str(s),
                Err(_) => {
                    for b in atv.as_slice() {
                        out.push_str(&format!("{b:02x}"));
                    }
                }
            }
        }
    }
    out
}

/// Each RDN of a name as (type, value bytes) pairs, for exact comparisons.
pub fn rdns(name: &X509Name<'_>) -> Vec<Vec<(String, Vec<u8>)>> {
    name.iter_rdn()
        .map(|rdn| {
            rdn.iter()
                .map(|a| (a.attr_type().to_id_string(), a.as_slice().to_vec()))
                .collect()
        })
        .collect()
}

/// Whether a name is `issuer` plus exactly one more RDN, a single CN:
/// the subject rule of every proxy (RFC 3820 §3.4; Globus legacy proxies
/// too). Returns that CN's value.
pub fn proxy_cn(subject: &X509Name<'_>, issuer: &X509Name<'_>) -> Option<String> {
    let (s, i) = (rdns(subject), rdns(issuer));
    if s.len() != i.len() + 1 || s[..i.len()] != i[..] {
        return None;
    }
    let last = s.last()?;
    if last.len() != 1 || last[0].0 != "2.5.4.3" {
        return None;
    }
    Some(String::from_utf8_lossy(&last[0].1).into_owned())
}
