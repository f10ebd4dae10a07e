//! Human sizes as EOS admins write them: `10G`, `1.5T`, `500M`, `4096`.
//! Decimal suffixes (K, M, G, T, P, E = powers of 1000, as EOS) and binary
//! ones (Ki, Mi, Gi, Ti, Pi, Ei = powers of 1024); a trailing `B` is allowed.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid size {0:?} (examples: 4096, 10G, 1.5T, 512Mi)")]
pub struct SizeError(pub String);

pub fn parse_size(input: &str) -> Result<u64, SizeError> {
    let err = || SizeError(input.to_string());
    let s = input.trim();
    let s = s.strip_suffix(['B', 'b']).unwrap_or(s);
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    if num.is_empty() {
        return Err(err());
    }
    let mult: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" => 1,
        "k" => 1_000,
        "m" => 1_000_000,
        "g" => 1_000_000_000,
        "t" => 1_000_000_000_000,
        "p" => 1_000_000_000_000_000,
        "e" => 1_000_000_000_000_000_000,
        "ki" => 1 << 10,
        "mi" => 1 << 20,
        "gi" => 1 << 30,
        "ti" => 1 << 40,
        "pi" => 1 << 50,
        "ei" => 1 << 60,
        _ => return Err(err()),
    };
    if let Ok(n) = num.parse::<u64>() {
        return n.checked_mul(mult).ok_or_else(err);
    }
    let f: f64 = num.parse().map_err(|_| err())?;
    let v = f * mult as f64;
    if !v.is_finite() || v < 0.0 || v > u64::MAX as f64 {
        return Err(err());
    }
    Ok(v.round() as u64)
}

/// Decimal human form with one decimal: `1.5 GB`, `512 B`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1000.0 && i < UNITS.len() - 1 {
        v /= 1000.0;
        i += 1;
    }
    format!("{v:.2} {}", UNITS[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("10G"), Ok(10_000_000_000));
        assert_eq!(parse_size("10GB"), Ok(10_000_000_000));
        assert_eq!(parse_size("1.5T"), Ok(1_500_000_000_000));
        assert_eq!(parse_size("2Mi"), Ok(2 << 20));
        assert!(parse_size("").is_err());
        assert!(parse_size("G").is_err());
        assert!(parse_size("10X").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999E").is_err());
        assert_eq!(format_size(512), "512 B");
        assert_eq!(format_size(1_500_000_000), "1.50 GB");
    }
}
