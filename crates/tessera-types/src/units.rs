//! One human-readable form for durations and sizes in configuration
//! files: `"30s"`, `"5m"`, `"1h"`, `"2d"`, `"500ms"`; `"2GiB"`,
//! `"512MiB"` (as TiKV's readable types). A plain number is still taken
//! (seconds, MiB) but written back in the readable form. Serde helpers for
//! `#[serde(with = ...)]`: [`duration`] and [`opt_duration`] for
//! `std::time::Duration` fields; [`secs`], [`opt_millis`] and [`opt_mib`]
//! for the integer fields that predate them.

use serde::{Deserialize, Deserializer, Serializer};

/// A duration or size as written in the file.
#[derive(Deserialize)]
#[serde(untagged)]
enum Raw {
    Int(u64),
    Text(String),
}

/// Milliseconds of a duration text.
pub fn parse_millis(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("{s:?}: give a unit (ms, s, m, h, d)"))?;
    let (n, unit) = t.split_at(split);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("{s:?}: a number, then ms, s, m, h or d"))?;
    let ms = match unit.trim() {
        "ms" => 1,
        "s" => 1000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        u => return Err(format!("{s:?}: unknown unit {u:?} (ms, s, m, h or d)")),
    };
    n.checked_mul(ms).ok_or_else(|| format!("{s:?}: too long"))
}

/// A duration written back: the largest unit that says it exactly.
pub fn show_millis(ms: u64) -> String {
    for (unit, n) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1000),
    ] {
        if ms >= n && ms.is_multiple_of(n) {
            return format!("{}{unit}", ms / n);
        }
    }
    if ms == 0 {
        "0s".into()
    } else {
        format!("{ms}ms")
    }
}

fn millis_of<'de, D: Deserializer<'de>>(d: D, int_unit_ms: u64) -> Result<u64, D::Error> {
    match Raw::deserialize(d)? {
        Raw::Int(n) => Ok(n.saturating_mul(int_unit_ms)),
        Raw::Text(s) => parse_millis(&s).map_err(serde::de::Error::custom),
    }
}

/// Whole seconds (`u64`).
pub mod secs {
    use super::*;

    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&show_millis(v.saturating_mul(1000)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        Ok(millis_of(d, 1000)?.div_ceil(1000))
    }
}

/// Milliseconds, optional.
pub mod opt_millis {
    use super::*;

    pub fn serialize<S: Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_str(&show_millis(*v)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        millis_of(d, 1).map(Some)
    }
}

/// A size in MiB, optional: written `"2GiB"`, `"320MiB"` (a plain number
/// is MiB).
pub mod opt_mib {
    use super::*;

    pub fn serialize<S: Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(m) if *m >= 1024 && m.is_multiple_of(1024) => {
                s.serialize_str(&format!("{}GiB", m / 1024))
            }
            Some(m) => s.serialize_str(&format!("{m}MiB")),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(Some(n)),
            Raw::Text(t) => {
                let bytes = crate::parse_size(&t).map_err(serde::de::Error::custom)?;
                Ok(Some(bytes.div_ceil(1 << 20)))
            }
        }
    }
}

/// A `Duration` (to the millisecond).
pub mod duration {
    use super::*;
    use std::time::Duration;

    pub fn serialize<S: Serializer>(v: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&show_millis(
            u64::try_from(v.as_millis()).unwrap_or(u64::MAX),
        ))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        millis_of(d, 1000).map(Duration::from_millis)
    }
}

/// A `Duration`, optional (`None`: the built-in default).
pub mod opt_duration {
    use super::*;
    use std::time::Duration;

    pub fn serialize<S: Serializer>(v: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => super::duration::serialize(v, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        super::duration::deserialize(d).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_both_ways() {
        for (t, ms) in [
            ("30s", 30_000),
            ("5m", 300_000),
            ("1h", 3_600_000),
            ("2d", 172_800_000),
            ("500ms", 500),
            (" 90 s", 90_000),
        ] {
            assert_eq!(parse_millis(t), Ok(ms), "{t}");
        }
        for bad in ["30", "s", "3x", "-1s", "99999999999999999999d"] {
            assert!(parse_millis(bad).is_err(), "{bad}");
        }
        assert_eq!(show_millis(90_000), "90s");
        assert_eq!(show_millis(3_600_000), "1h");
        assert_eq!(show_millis(1500), "1500ms");
        assert_eq!(show_millis(0), "0s");
    }
}
