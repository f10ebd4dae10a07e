//! DER walking for the structures x509-parser does not know (the proxy
//! certificate information, VOMS attribute certificates): one TLV at a
//! time with asn1-rs, raw bytes kept where signatures need them.

use asn1_rs::{Any, Class, FromDer};

/// One element: its header, its content and its whole encoding.
pub struct Tlv<'a> {
    pub any: Any<'a>,
    pub raw: &'a [u8],
}

impl<'a> Tlv<'a> {
    pub fn tag(&self) -> u32 {
        self.any.header.tag().0
    }
    pub fn class(&self) -> Class {
        self.any.header.class()
    }
    pub fn data(&self) -> &'a [u8] {
        self.any.data
    }
    /// Universal `tag`, else an error naming `what`.
    pub fn expect(self, tag: u32, what: &str) -> Result<Tlv<'a>, String> {
        if self.class() == Class::Universal && self.tag() == tag {
            Ok(self)
        } else {
            Err(format!("{what}: unexpected element (tag {})", self.tag()))
        }
    }
    /// Context-specific `[n]`.
    pub fn is_ctx(&self, n: u32) -> bool {
        self.class() == Class::ContextSpecific && self.tag() == n
    }
    /// The elements inside a constructed element.
    pub fn items(&self) -> Result<Vec<Tlv<'a>>, String> {
        items(self.any.data)
    }
}

pub const SEQUENCE: u32 = 16;
pub const INTEGER: u32 = 2;
pub const OCTET_STRING: u32 = 4;
pub const OID: u32 = 6;
pub const GENERALIZED_TIME: u32 = 24;

/// The first element of `i` and what follows it.
pub fn next(i: &[u8]) -> Result<(Tlv<'_>, &[u8]), String> {
    let (rest, any) = Any::from_der(i).map_err(|e| format!("bad DER: {e}"))?;
    let raw = &i[..i.len() - rest.len()];
    Ok((Tlv { any, raw }, rest))
}

/// Every element of a concatenation (the content of a SEQUENCE or SET).
pub fn items(mut i: &[u8]) -> Result<Vec<Tlv<'_>>, String> {
    let mut out = Vec::new();
    while !i.is_empty() {
        if out.len() >= 1024 {
            return Err("too many elements".into());
        }
        let (t, rest) = next(i)?;
        out.push(t);
        i = rest;
    }
    Ok(out)
}

/// Exactly one element filling `i`.
pub fn single(i: &[u8]) -> Result<Tlv<'_>, String> {
    let (t, rest) = next(i)?;
    if !rest.is_empty() {
        return Err("trailing bytes after an element".into());
    }
    Ok(t)
}

/// An OBJECT IDENTIFIER's content in dotted form.
pub fn oid_string(t: &Tlv<'_>) -> Result<String, String> {
    if t.class() != Class::Universal || t.tag() != OID {
        return Err("expected an object identifier".into());
    }
    let oid = asn1_rs::Oid::new(std::borrow::Cow::Borrowed(t.data()));
    Ok(oid.to_id_string())
}

/// A small non-negative INTEGER.
pub fn small_uint(t: &Tlv<'_>) -> Result<u64, String> {
    let d = t.data();
    if t.tag() != INTEGER || d.is_empty() || d.len() > 8 || d[0] & 0x80 != 0 {
        return Err("expected a small non-negative integer".into());
    }
    Ok(d.iter().fold(0u64, |a, b| (a << 8) | u64::from(*b)))
}

/// A GeneralizedTime `YYYYMMDDHHMMSSZ` as seconds since the epoch.
pub fn generalized_time(t: &Tlv<'_>) -> Result<i64, String> {
    if t.tag() != GENERALIZED_TIME {
        return Err("expected a GeneralizedTime".into());
    }
    let s = std::str::from_utf8(t.data()).map_err(|_| "bad time".to_string())?;
    let s = s.strip_suffix('Z').ok_or("time not in UTC")?;
    let s = s.split('.').next().unwrap_or(s);
    if s.len() != 14 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("bad time {s}"));
    }
    let n = |a: usize, b: usize| s[a..b].parse::<i64>().unwrap_or(0);
    let (y, mo, d) = (n(0, 4), n(4, 6), n(6, 8));
    let (h, mi, se) = (n(8, 10), n(10, 12), n(12, 14));
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return Err(format!("bad time {s}"));
    }
    let days = tessera_types::civil::days_from_civil(y, mo as u32, d as u32);
    Ok(days * 86400 + h * 3600 + mi * 60 + se)
}
