//! Macaroons' wire and time forms: libmacaroons' version 2 binary
//! serialization (first-party caveats only), RFC 3339 times and ISO 8601
//! durations.

use super::{bad, MacaroonError};

/// An ISO 8601 duration (`PT60M`, `PT1H30M`, `P1D`, `PT3600S`), seconds.
pub fn iso_duration(s: &str) -> Option<u64> {
    let rest = s.trim().strip_prefix('P')?;
    let (days, time) = match rest.split_once('T') {
        Some((d, t)) => (d, t),
        None => (rest, ""),
    };
    let mut total = 0u64;
    let mut take = |part: &str, units: &[(char, u64)]| -> Option<()> {
        let mut n = String::new();
        for c in part.chars() {
            if c.is_ascii_digit() {
                n.push(c);
            } else {
                let mul = units.iter().find(|(u, _)| *u == c)?.1;
                total = total.checked_add(n.parse::<u64>().ok()?.checked_mul(mul)?)?;
                n.clear();
            }
        }
        n.is_empty().then_some(())
    };
    take(days, &[('D', 86_400), ('W', 604_800)])?;
    take(time, &[('H', 3_600), ('M', 60), ('S', 1)])?;
    (total > 0).then_some(total)
}

pub(super) fn rfc3339(t: u64) -> String {
    let days = (t / 86_400) as i64;
    let (y, m, d) = tessera_types::civil::civil_from_days(days);
    let s = t % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

pub(super) fn parse_rfc3339(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() != 20 || b[4] != b'-' || b[10] != b'T' || b[19] != b'Z' {
        return None;
    }
    let n = |a: usize, e: usize| s.get(a..e)?.parse::<i64>().ok();
    let days = tessera_types::civil::days_from_civil(n(0, 4)?, n(5, 7)? as u32, n(8, 10)? as u32);
    let secs = days * 86_400 + n(11, 13)? * 3600 + n(14, 16)? * 60 + n(17, 19)?;
    u64::try_from(secs).ok()
}

fn varint(mut n: usize, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

pub(super) fn field(tag: u8, v: &[u8], out: &mut Vec<u8>) {
    out.push(tag);
    varint(v.len(), out);
    out.extend_from_slice(v);
}

/// A V2 macaroon's fields: (location, identifier, caveats, signature).
pub(super) type Parsed = (Option<Vec<u8>>, Vec<u8>, Vec<Vec<u8>>, Vec<u8>);

pub(super) fn parse_v2(b: &[u8]) -> Result<Parsed, MacaroonError> {
    let mut i = 0usize;
    let byte = |i: &mut usize| -> Result<u8, MacaroonError> {
        let v = *b.get(*i).ok_or_else(|| bad("truncated"))?;
        *i += 1;
        Ok(v)
    };
    let value = |i: &mut usize| -> Result<Vec<u8>, MacaroonError> {
        let mut n = 0usize;
        for shift in (0..28).step_by(7) {
            let c = byte(i)?;
            n |= usize::from(c & 0x7f) << shift;
            if c & 0x80 == 0 {
                let v = b.get(*i..*i + n).ok_or_else(|| bad("truncated"))?.to_vec();
                *i += n;
                return Ok(v);
            }
        }
        Err(bad("bad length"))
    };
    if byte(&mut i)? != 2 {
        return Err(bad("not a version 2 macaroon"));
    }
    let mut tag = byte(&mut i)?;
    let mut location = None;
    if tag == 1 {
        location = Some(value(&mut i)?);
        tag = byte(&mut i)?;
    }
    if tag != 2 {
        return Err(bad("no identifier"));
    }
    let id = value(&mut i)?;
    if byte(&mut i)? != 0 {
        return Err(bad("unexpected field"));
    }
    let mut caveats = Vec::new();
    loop {
        match byte(&mut i)? {
            0 => break,
            2 => {
                caveats.push(value(&mut i)?);
                if byte(&mut i)? != 0 {
                    return Err(bad("third-party caveats are not taken"));
                }
            }
            _ => return Err(bad("third-party caveats are not taken")),
        }
        if caveats.len() > 64 {
            return Err(bad("too many caveats"));
        }
    }
    if byte(&mut i)? != 6 {
        return Err(bad("no signature"));
    }
    let sig = value(&mut i)?;
    if i != b.len() || sig.len() != 32 {
        return Err(bad("trailing bytes"));
    }
    Ok((location, id, caveats, sig))
}
