//! `Range: bytes=...` (RFC 9110 §14): single and multiple ranges, suffix
//! and open-ended forms. Bogus or oversized headers are refused; ranges
//! that start past the end are dropped (all dropped: 416).

/// At most this many ranges in one request (davix keeps headers ≤ 3900
/// bytes; this bounds the work of a hostile one).
pub const MAX_RANGES: usize = 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ranges {
    /// No (or an ignorable) Range header: the whole file.
    Whole,
    /// Satisfiable ranges, inclusive `(first, last)`.
    Some(Vec<(u64, u64)>),
    /// Syntactically fine but nothing overlaps the file: 416.
    Unsatisfiable,
}

/// Parse a Range header for a file of `size` bytes. Another unit than
/// `bytes` is ignored (the whole file); a malformed `bytes=` list is an
/// `Err` (answered 416 rather than sending a whole file nobody asked for).
pub fn parse(header: &str, size: u64) -> Result<Ranges, String> {
    let h = header.trim();
    let Some(spec) = h.strip_prefix("bytes=") else {
        return Ok(Ranges::Whole); // another unit: ignore the header
    };
    let mut out = Vec::new();
    let parts: Vec<&str> = spec
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    if parts.is_empty() {
        return Err("empty byte range".into());
    }
    if parts.len() > MAX_RANGES {
        return Err(format!("more than {MAX_RANGES} ranges"));
    }
    for p in parts {
        let (a, b) = p
            .split_once('-')
            .ok_or_else(|| format!("bad range {p:?}"))?;
        let num = |s: &str| {
            s.trim()
                .parse::<u64>()
                .map_err(|_| format!("bad range {p:?}"))
        };
        let r = match (a.trim().is_empty(), b.trim().is_empty()) {
            (true, true) => return Err(format!("bad range {p:?}")),
            (true, false) => {
                // suffix: the last n bytes
                let n = num(b)?;
                if n == 0 || size == 0 {
                    continue;
                }
                (size.saturating_sub(n), size - 1)
            }
            (false, true) => {
                let f = num(a)?;
                if f >= size {
                    continue;
                }
                (f, size - 1)
            }
            (false, false) => {
                let (f, l) = (num(a)?, num(b)?);
                if l < f {
                    return Err(format!("bad range {p:?}"));
                }
                if f >= size {
                    continue;
                }
                (f, l.min(size - 1))
            }
        };
        out.push(r);
    }
    if out.is_empty() {
        return Ok(Ranges::Unsatisfiable);
    }
    Ok(Ranges::Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn forms() {
        assert_eq!(parse("bytes=0-0", 10), Ok(Ranges::Some(vec![(0, 0)])));
        assert_eq!(parse("bytes=6-10", 17), Ok(Ranges::Some(vec![(6, 10)])));
        assert_eq!(parse("bytes=5-", 10), Ok(Ranges::Some(vec![(5, 9)])));
        assert_eq!(parse("bytes=-3", 10), Ok(Ranges::Some(vec![(7, 9)])));
        assert_eq!(parse("bytes=-30", 10), Ok(Ranges::Some(vec![(0, 9)])));
        assert_eq!(
            parse("bytes=0-1, 6-8", 17),
            Ok(Ranges::Some(vec![(0, 1), (6, 8)]))
        );
        assert_eq!(parse("bytes=8-100", 10), Ok(Ranges::Some(vec![(8, 9)])));
        assert_eq!(parse("bytes=10-20", 10), Ok(Ranges::Unsatisfiable));
        assert_eq!(parse("items=1-2", 10), Ok(Ranges::Whole));
        for bad in [
            "bytes=",
            "bytes=a-b",
            "bytes=5-1",
            "bytes=-",
            "bytes=1",
            "bytes=--1",
        ] {
            assert!(parse(bad, 10).is_err(), "{bad}");
        }
        let many = format!("bytes={}", vec!["0-0"; MAX_RANGES + 1].join(","));
        assert!(parse(&many, 10).is_err());
    }

    proptest! {
        #[test]
        fn never_panics_and_stays_inside(h in ".{0,200}", size in 0u64..1000) {
            if let Ok(Ranges::Some(v)) = parse(&h, size) {
                for (f, l) in v {
                    prop_assert!(f <= l && l < size);
                }
            }
        }
    }
}
