//! Stripe names: which file a stripe belongs to and where it lives in a
//! filesystem's directory tree (fanned out by file id).

use std::fmt;

/// Stripe `index` of file `fid`: `<fid >> 16 as 12 hex>/<fid as 16 hex>.<index>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StripeName {
    pub fid: u64,
    pub index: u8,
}

impl StripeName {
    pub fn new(fid: u64, index: u8) -> StripeName {
        StripeName { fid, index }
    }

    pub fn dir(&self) -> String {
        format!("{:012x}", self.fid >> 16)
    }

    pub fn file(&self) -> String {
        format!("{:016x}.{}", self.fid, self.index)
    }

    pub fn temp_file(&self, write_id: u64) -> String {
        format!("{}.tmp.{write_id}", self.file())
    }

    /// Parse a file name inside a fan-out directory: `(name, temp write id)`.
    pub fn parse(file: &str) -> Option<(StripeName, Option<u64>)> {
        let (fid, rest) = file.split_once('.')?;
        if fid.len() != 16 {
            return None;
        }
        let fid = u64::from_str_radix(fid, 16).ok()?;
        let (index, temp) = match rest.split_once(".tmp.") {
            Some((i, w)) => (i, Some(w.parse().ok()?)),
            None => (rest, None),
        };
        let index: u8 = index.parse().ok()?;
        Some((StripeName { fid, index }, temp))
    }
}

impl fmt::Display for StripeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.dir(), self.file())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let n = StripeName::new(0x1234_5678_9abc, 5);
        assert_eq!(n.dir(), "000012345678");
        assert_eq!(n.file(), "000012345678 9abc.5".replace(' ', ""));
        assert_eq!(StripeName::parse(&n.file()), Some((n, None)));
        assert_eq!(StripeName::parse(&n.temp_file(77)), Some((n, Some(77))));
        assert_eq!(StripeName::parse("junk"), None);
        assert_eq!(StripeName::parse("0000000000000001.x"), None);
    }
}
