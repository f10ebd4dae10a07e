//! `Range: bytes=...` (RFC 9110 §14): single and multiple ranges, suffix
//! and open-ended forms. Bogus or oversized headers are refused; ranges
//! that start past the end are dropped (all dropped: 416). Overlapping and
//! adjacent ranges are coalesced (§14.2 allows it whatever their order), so
//! an answer never carries a byte twice: its data is at most the entity,
//! however many ranges overlap; a request that still needs more than
//! [`MAX_PARTS`] parts is answered with the whole entity (200), as §14.2
//! also allows.

/// At most this many ranges in one request (davix keeps headers ≤ 3900
/// bytes; this bounds the work of a hostile one).
pub const MAX_RANGES: usize = 1024;

/// At most this many parts in one `multipart/byteranges` answer (after
/// coalescing); more is answered with the whole entity.
pub const MAX_PARTS: usize = 256;

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
    let parts = coalesce(out);
    if parts.len() > MAX_PARTS {
        return Ok(Ranges::Whole);
    }
    Ok(Ranges::Some(parts))
}

/// The union of `v` as the fewest ranges: sorted, overlapping and
/// adjacent ones joined.
fn coalesce(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (f, l) in v {
        match out.last_mut() {
            Some(last) if f <= last.1.saturating_add(1) => last.1 = last.1.max(l),
            _ => out.push((f, l)),
        }
    }
    out
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

    #[test]
    fn overlapping_and_adjacent_ranges_are_one() {
        // 1,024 copies of the whole of a 1 MiB file: one part of 1 MiB.
        let mib = 1u64 << 20;
        let flood = format!("bytes={}", vec!["0-1048575"; MAX_RANGES].join(","));
        assert_eq!(parse(&flood, mib), Ok(Ranges::Some(vec![(0, mib - 1)])));
        let shifted: Vec<String> = (0..MAX_RANGES)
            .map(|i| format!("{i}-{}", i + 1000))
            .collect();
        assert_eq!(
            parse(&format!("bytes={}", shifted.join(",")), mib),
            Ok(Ranges::Some(vec![(0, 2023)]))
        );
        assert_eq!(
            parse("bytes=10-19,0-9,30-39,35-50,-5", 100),
            Ok(Ranges::Some(vec![(0, 19), (30, 50), (95, 99)]))
        );
        // Too many distinct parts: the whole entity.
        let sparse: Vec<String> = (0..=MAX_PARTS as u64)
            .map(|i| format!("{}-{}", i * 10, i * 10))
            .collect();
        assert_eq!(
            parse(&format!("bytes={}", sparse.join(",")), 1 << 20),
            Ok(Ranges::Whole)
        );
        let fits: Vec<String> = (0..MAX_PARTS as u64)
            .map(|i| format!("{}-{}", i * 10, i * 10))
            .collect();
        assert!(
            matches!(parse(&format!("bytes={}", fits.join(",")), 1 << 20), Ok(Ranges::Some(v)) if v.len() == MAX_PARTS)
        );
    }

    proptest! {
        #[test]
        fn coalesced_parts_cover_exactly_what_was_asked(
            v in prop::collection::vec((0u64..3000, 0u64..300), 1..60),
            size in 1u64..2500,
        ) {
            let h = format!("bytes={}", v.iter().map(|(f, n)| format!("{f}-{}", f + n)).collect::<Vec<_>>().join(","));
            let mut want = vec![false; size as usize];
            for (f, n) in &v {
                for b in *f..=(f + n).min(size - 1) {
                    if b < size { want[b as usize] = true; }
                }
            }
            let mut got = vec![false; size as usize];
            match parse(&h, size).unwrap() {
                Ranges::Some(parts) => for (f, l) in parts { for b in f..=l { got[b as usize] = true; } },
                Ranges::Unsatisfiable => {}
                Ranges::Whole => { got = vec![true; size as usize]; want = got.clone(); }
            }
            prop_assert_eq!(got, want);
        }

        #[test]
        fn never_panics_and_stays_inside(h in ".{0,200}", size in 0u64..1000) {
            if let Ok(Ranges::Some(v)) = parse(&h, size) {
                let total: u64 = v.iter().map(|(f, l)| l - f + 1).sum();
                prop_assert!(total <= size, "never more than the entity");
                for w in v.windows(2) {
                    prop_assert!(w[0].1 + 1 < w[1].0, "sorted, apart");
                }
                for (f, l) in v {
                    prop_assert!(f <= l && l < size);
                }
            }
        }
    }
}
