//! Layouts (plain, replica, RAIN k+m), their EOS names, the geometry of
//! groups and blocks, and the placement record kept in the namespace.

use crate::DataError;
use prost::Message;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutKind {
    Plain,
    Replica,
    Rain,
}

impl LayoutKind {
    pub fn code(self) -> u8 {
        match self {
            LayoutKind::Plain => 1,
            LayoutKind::Replica => 2,
            LayoutKind::Rain => 3,
        }
    }
    pub fn from_code(c: u8) -> Option<LayoutKind> {
        match c {
            1 => Some(LayoutKind::Plain),
            2 => Some(LayoutKind::Replica),
            3 => Some(LayoutKind::Rain),
            _ => None,
        }
    }
}

/// Default block size: 1 MiB.
pub const DEFAULT_BLOCK: u32 = 1 << 20;
/// Largest block size: 16 MiB.
pub const MAX_BLOCK: u32 = 16 << 20;
/// The checksum page of stripe format 2: each 4 KiB of a block has its
/// own CRC-32C (the pages of XRootD's `kXR_pgread`), so a short read
/// reads and verifies only the pages it touches.
pub const PAGE: u32 = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub kind: LayoutKind,
    /// Data stripes (1 for plain and replica).
    pub k: u8,
    /// Parity stripes (copies − 1 for replica).
    pub m: u8,
    pub block_size: u32,
    /// Bytes each block checksum covers: [`PAGE`] (stripe format 2), or 0
    /// for format 1 (one CRC-32C per block; files written before format 2
    /// keep it, their repairs too).
    pub page: u32,
}

impl Layout {
    pub fn plain() -> Layout {
        Layout {
            kind: LayoutKind::Plain,
            k: 1,
            m: 0,
            block_size: DEFAULT_BLOCK,
            page: PAGE,
        }
    }

    pub fn replica(copies: u8) -> Result<Layout, DataError> {
        if !(1..=16).contains(&copies) {
            return Err(DataError::Layout(format!(
                "replica needs 1 to 16 copies, not {copies}"
            )));
        }
        Ok(Layout {
            kind: LayoutKind::Replica,
            k: 1,
            m: copies - 1,
            block_size: DEFAULT_BLOCK,
            page: PAGE,
        })
    }

    pub fn rain(k: u8, m: u8) -> Result<Layout, DataError> {
        if k == 0 || m == 0 || k as usize + m as usize > tessera_ec::MAX_SHARDS {
            return Err(DataError::Layout(format!(
                "RAIN needs k >= 1, m >= 1, k + m <= {}: {k}+{m}",
                tessera_ec::MAX_SHARDS
            )));
        }
        Ok(Layout {
            kind: LayoutKind::Rain,
            k,
            m,
            block_size: DEFAULT_BLOCK,
            page: PAGE,
        })
    }

    pub fn with_block_size(mut self, bs: u64) -> Result<Layout, DataError> {
        if bs < 4096 || bs > MAX_BLOCK as u64 || !bs.is_multiple_of(4096) {
            return Err(DataError::Layout(format!(
                "block size must be a multiple of 4 KiB between 4 KiB and 16 MiB, not {bs}"
            )));
        }
        self.block_size = bs as u32;
        Ok(self)
    }

    /// From EOS directory attributes: `sys.forced.layout` (plain, replica,
    /// raid5, raid6, raiddp, archive, qrain), `sys.forced.nstripes` (total
    /// stripes) and `sys.forced.blocksize` (bytes; `4k`, `1M` accepted).
    pub fn from_eos(
        layout: &str,
        nstripes: Option<&str>,
        blocksize: Option<&str>,
    ) -> Result<Layout, DataError> {
        let n = match nstripes {
            Some(s) => Some(
                s.trim()
                    .parse::<u8>()
                    .map_err(|_| DataError::Layout(format!("sys.forced.nstripes: {s:?}")))?,
            ),
            None => None,
        };
        let rain = |parity: u8, default_total: u8| -> Result<Layout, DataError> {
            let total = n.unwrap_or(default_total);
            if total <= parity {
                return Err(DataError::Layout(format!(
                    "{layout} needs more than {parity} stripes, not {total}"
                )));
            }
            Layout::rain(total - parity, parity)
        };
        let l = match layout.trim() {
            "plain" => Layout::plain(),
            "replica" => Layout::replica(n.unwrap_or(2))?,
            "raid5" => rain(1, 5)?,
            "raid6" => rain(2, 6)?,
            "raiddp" => {
                if n.is_some_and(|n| n != 6) {
                    return Err(DataError::Layout("raiddp is always 4+2".into()));
                }
                Layout::rain(4, 2)?
            }
            "archive" => rain(3, 8)?,
            "qrain" => rain(4, 12)?,
            other => return Err(DataError::Layout(format!("unknown layout {other:?}"))),
        };
        match blocksize {
            Some(b) => {
                let bytes =
                    tessera_types::parse_size(&b.replace(['k', 'K'], "Ki").replace('M', "Mi"))
                        .map_err(|e| DataError::Layout(format!("sys.forced.blocksize: {e}")))?;
                l.with_block_size(bytes)
            }
            None => Ok(l),
        }
    }

    pub fn stripes(&self) -> usize {
        self.k as usize + self.m as usize
    }

    /// The stripe format this layout writes and reads (1 or 2).
    pub fn format(&self) -> u16 {
        if self.page == 0 {
            1
        } else {
            2
        }
    }

    /// Bytes of checksums that follow a block of `len` bytes: one CRC-32C
    /// per page and one for the block (format 2), or one for the block
    /// (format 1).
    pub fn sums_len(&self, len: usize) -> usize {
        match self.page {
            0 => 4,
            p => 4 * len.div_ceil(p as usize) + 4,
        }
    }

    /// Bytes of file data in one full group.
    pub fn group_bytes(&self) -> u64 {
        self.k as u64 * self.block_size as u64
    }

    pub fn name(&self) -> String {
        match self.kind {
            LayoutKind::Plain => "plain".into(),
            LayoutKind::Replica => format!("replica:{}", self.stripes()),
            LayoutKind::Rain => format!("rain:{}+{}", self.k, self.m),
        }
    }

    pub fn geometry(&self, size: u64) -> Geometry {
        Geometry {
            layout: *self,
            size,
        }
    }
}

/// Where the bytes of a file of `size` bytes are.
#[derive(Debug, Clone, Copy)]
pub struct Geometry {
    pub layout: Layout,
    pub size: u64,
}

impl Geometry {
    pub fn groups(&self) -> u64 {
        self.size.div_ceil(self.layout.group_bytes())
    }

    /// Block length of group `g` (every block of a group has this length).
    pub fn block_len(&self, g: u64) -> usize {
        let gb = self.layout.group_bytes();
        let full = self.size / gb;
        if g < full {
            self.layout.block_size as usize
        } else {
            let rem = self.size - full * gb;
            rem.div_ceil(self.layout.k as u64) as usize
        }
    }

    /// First file byte of group `g`.
    pub fn group_start(&self, g: u64) -> u64 {
        g * self.layout.group_bytes()
    }

    /// Offset of block `g` in a stripe file.
    pub fn block_offset(&self, g: u64) -> u64 {
        let bs = self.layout.block_size as usize;
        crate::format::HEADER_LEN as u64 + g * (bs + self.layout.sums_len(bs)) as u64
    }

    /// Bytes of checksums after block `g` (see [`Layout::sums_len`]).
    pub fn sums_len(&self, g: u64) -> usize {
        self.layout.sums_len(self.block_len(g))
    }

    /// Bytes block `g` takes in a stripe file, its checksums included.
    pub fn block_span(&self, g: u64) -> usize {
        self.block_len(g) + self.sums_len(g)
    }
}

/// What the namespace records for a file (the inode's opaque layout
/// bytes): the layout and the filesystem of each stripe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub layout: Layout,
    /// Filesystem id of stripe i.
    pub fsids: Vec<u32>,
}

#[derive(Clone, PartialEq, Message)]
struct PlacementRecord {
    #[prost(uint32, tag = "1")]
    kind: u32,
    #[prost(uint32, tag = "2")]
    k: u32,
    #[prost(uint32, tag = "3")]
    m: u32,
    #[prost(uint32, tag = "4")]
    block_size: u32,
    #[prost(uint32, repeated, tag = "5")]
    fsids: Vec<u32>,
    /// Checksum page (version 2 only).
    #[prost(uint32, tag = "6")]
    page: u32,
}

/// Placement record versions: 1 for stripe format 1, 2 for format 2
/// (the same fields and the checksum page: a reader that predates it
/// refuses the record instead of misreading the stripes).
const PLACEMENT_V1: u8 = 1;
const PLACEMENT_V2: u8 = 2;

impl Placement {
    pub fn encode(&self) -> Vec<u8> {
        let m = PlacementRecord {
            kind: self.layout.kind.code() as u32,
            k: self.layout.k as u32,
            m: self.layout.m as u32,
            block_size: self.layout.block_size,
            fsids: self.fsids.clone(),
            page: self.layout.page,
        };
        let version = match self.layout.page {
            0 => PLACEMENT_V1,
            _ => PLACEMENT_V2,
        };
        let mut out = vec![version];
        m.encode(&mut out).expect("Vec has room");
        out
    }

    pub fn decode(raw: &[u8]) -> Result<Placement, DataError> {
        let version = match raw.first() {
            Some(&v) if v == PLACEMENT_V1 || v == PLACEMENT_V2 => v,
            Some(v) => return Err(DataError::Placement(format!("unknown version {v}"))),
            None => return Err(DataError::Placement("empty".into())),
        };
        let m =
            PlacementRecord::decode(&raw[1..]).map_err(|e| DataError::Placement(e.to_string()))?;
        let page = if version == PLACEMENT_V1 { 0 } else { m.page };
        if version == PLACEMENT_V2
            && (page < 512 || !page.is_power_of_two() || m.block_size % page != 0)
        {
            return Err(DataError::Placement(format!("checksum page {page}")));
        }
        let kind = LayoutKind::from_code(m.kind as u8)
            .ok_or_else(|| DataError::Placement(format!("layout kind {}", m.kind)))?;
        let layout = Layout {
            kind,
            k: m.k as u8,
            m: m.m as u8,
            block_size: m.block_size,
            page,
        };
        if m.fsids.len() != layout.stripes() || layout.k == 0 || layout.block_size == 0 {
            return Err(DataError::Placement(
                "stripe count does not match the layout".into(),
            ));
        }
        Ok(Placement {
            layout,
            fsids: m.fsids,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eos_names() {
        assert_eq!(
            Layout::from_eos("raid6", Some("6"), None).expect("ok"),
            Layout::rain(4, 2).expect("ok")
        );
        assert_eq!(
            Layout::from_eos("raiddp", None, None).expect("ok").name(),
            "rain:4+2"
        );
        assert_eq!(
            Layout::from_eos("raid5", Some("3"), None)
                .expect("ok")
                .name(),
            "rain:2+1"
        );
        assert_eq!(
            Layout::from_eos("archive", Some("11"), None)
                .expect("ok")
                .name(),
            "rain:8+3"
        );
        assert_eq!(
            Layout::from_eos("qrain", Some("20"), None)
                .expect("ok")
                .name(),
            "rain:16+4"
        );
        assert_eq!(
            Layout::from_eos("replica", Some("3"), None)
                .expect("ok")
                .name(),
            "replica:3"
        );
        assert_eq!(
            Layout::from_eos("plain", None, Some("4k"))
                .expect("ok")
                .block_size,
            4096
        );
        assert!(Layout::from_eos("raid6", Some("2"), None).is_err());
        assert!(Layout::from_eos("raid7", None, None).is_err());
        assert!(Layout::from_eos("plain", None, Some("5000")).is_err());
        assert!(Layout::rain(30, 3).is_err());
    }

    #[test]
    fn placement_records_carry_the_stripe_format() {
        let p2 = Placement {
            layout: Layout::rain(4, 2).expect("ok"),
            fsids: vec![1, 2, 3, 4, 5, 6],
        };
        let raw = p2.encode();
        assert_eq!(raw[0], 2, "format 2 layouts are version 2 records");
        assert_eq!(Placement::decode(&raw).expect("decode"), p2);
        let mut l1 = Layout::plain();
        l1.page = 0;
        let p1 = Placement {
            layout: l1,
            fsids: vec![7],
        };
        let raw = p1.encode();
        assert_eq!(raw[0], 1, "format 1 stays a version 1 record");
        assert_eq!(Placement::decode(&raw).expect("decode"), p1);
        let g = l1.geometry(3 << 20);
        assert_eq!(g.block_offset(2), 4096 + 2 * ((1 << 20) + 4));
        let g = Layout::plain().geometry(3 << 20);
        assert_eq!(g.block_offset(2), 4096 + 2 * ((1 << 20) + 1024 + 4));
        assert_eq!(Layout::plain().geometry(5000).sums_len(0), 12);
    }

    #[test]
    fn geometry() {
        let l = Layout::rain(4, 2)
            .expect("ok")
            .with_block_size(4096)
            .expect("ok");
        let g = l.geometry(4 * 4096 * 2 + 10);
        assert_eq!(g.groups(), 3);
        assert_eq!(g.block_len(0), 4096);
        assert_eq!(g.block_len(2), 3); // ceil(10 / 4)
        assert_eq!(l.geometry(0).groups(), 0);
        assert_eq!(g.block_offset(1), 4096 + 4096 + 8); // one page CRC, the block CRC
    }

    #[test]
    fn placement_round_trip() {
        let p = Placement {
            layout: Layout::rain(4, 2).expect("ok"),
            fsids: vec![1, 2, 3, 4, 5, 6],
        };
        assert_eq!(Placement::decode(&p.encode()).expect("ok"), p);
        let mut bad = p.encode();
        bad[0] = 9;
        assert!(Placement::decode(&bad).is_err());
    }
}
