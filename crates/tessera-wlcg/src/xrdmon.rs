//! The XRootD monitoring stream's packets (`xrd.monitor` in XRootD 5, as
//! `XrdXrootdMonData.hh` lays them out and WLCG's collectors and the OSG
//! shoveler read them): every integer big-endian; an 8-byte header (code,
//! sequence, length, the server's start time); map records (`=` server
//! identification, `u` user login, `d` path) of a dictionary id and text;
//! the `f` stream of a time record then file open, close and disconnect
//! records, each advancing by its own size. Checked byte for byte against
//! packets Debian's xrootd 5.5.3 sent (the tests below).

/// A packet's header.
pub fn header(code: u8, pseq: u8, plen: u16, stod: u32) -> [u8; 8] {
    let mut h = [0u8; 8];
    h[0] = code;
    h[1] = pseq;
    h[2..4].copy_from_slice(&plen.to_be_bytes());
    h[4..8].copy_from_slice(&stod.to_be_bytes());
    h
}

/// A map packet (`=`, `u`, `d`): header, dictionary id, text (no NUL).
pub fn map(code: u8, pseq: u8, stod: u32, dictid: u32, info: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(12 + info.len());
    p.extend_from_slice(&header(code, pseq, (12 + info.len()) as u16, stod));
    p.extend_from_slice(&dictid.to_be_bytes());
    p.extend_from_slice(info);
    p
}

/// A client's (or the server's) identification:
/// `<prot>/<user>.<pid>:<sid>@<host>`.
pub fn userid(prot: &str, user: &str, pid: u32, sid: u64, host: &str) -> String {
    // The collectors split at '/', '.', ':' and '@': a name must not add
    // any of them.
    let clean: String = user
        .chars()
        .map(|c| {
            if "/.:@&".contains(c) || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    format!("{prot}/{clean}.{pid}:{sid}@{host}")
}

/// Operation counts and sizes of a closed file (`XrdXrootdMonStatOPS`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ops {
    pub read: i32,
    pub readv: i32,
    pub write: i32,
    pub rs_min: i16,
    pub rs_max: i16,
    pub rsegs: i64,
    pub rd_min: i32,
    pub rd_max: i32,
    pub rv_min: i32,
    pub rv_max: i32,
    pub wr_min: i32,
    pub wr_max: i32,
}

/// One record of the `f` stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// A file opened (`isOpen`): its size then, whether for writing, and
    /// (with the path) the user's dictionary id.
    Open {
        file: u32,
        size: u64,
        write: bool,
        user: u32,
        lfn: Option<Vec<u8>>,
    },
    /// A file closed (`isClose`): bytes read, by vector reads, written;
    /// `forced` when the client went away with it open.
    Close {
        file: u32,
        read: u64,
        readv: u64,
        write: u64,
        ops: Option<Ops>,
        forced: bool,
    },
    /// A user's session ended (`isDisc`).
    Disc { user: u32 },
}

const IS_CLOSE: u8 = 0;
const IS_OPEN: u8 = 1;
const IS_TIME: u8 = 2;
const IS_DISC: u8 = 4;

fn rec_head(out: &mut Vec<u8>, kind: u8, flag: u8, size: usize, id: u32) {
    out.extend_from_slice(&[kind, flag]);
    out.extend_from_slice(&(size as u16).to_be_bytes());
    out.extend_from_slice(&id.to_be_bytes());
}

impl Record {
    /// Append the record's bytes to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Record::Open {
                file,
                size,
                write,
                user,
                lfn,
            } => {
                let rw = if *write { 0x02 } else { 0 };
                match lfn {
                    None => {
                        rec_head(out, IS_OPEN, rw, 16, *file);
                        out.extend_from_slice(&size.to_be_bytes());
                    }
                    Some(lfn) => {
                        // 5 to 8 NULs: a multiple of 4, as XRootD pads.
                        let r = 20 + lfn.len();
                        let total = (r + 8) & !3;
                        rec_head(out, IS_OPEN, rw | 0x01, total, *file);
                        out.extend_from_slice(&size.to_be_bytes());
                        out.extend_from_slice(&user.to_be_bytes());
                        out.extend_from_slice(lfn);
                        out.resize(out.len() + total - r, 0);
                    }
                }
            }
            Record::Close {
                file,
                read,
                readv,
                write,
                ops,
                forced,
            } => {
                let flag = u8::from(*forced) | if ops.is_some() { 0x02 } else { 0 };
                let size = if ops.is_some() { 80 } else { 32 };
                rec_head(out, IS_CLOSE, flag, size, *file);
                for v in [read, readv, write] {
                    out.extend_from_slice(&v.to_be_bytes());
                }
                if let Some(o) = ops {
                    for v in [o.read, o.readv, o.write] {
                        out.extend_from_slice(&v.to_be_bytes());
                    }
                    out.extend_from_slice(&o.rs_min.to_be_bytes());
                    out.extend_from_slice(&o.rs_max.to_be_bytes());
                    out.extend_from_slice(&o.rsegs.to_be_bytes());
                    for v in [o.rd_min, o.rd_max, o.rv_min, o.rv_max, o.wr_min, o.wr_max] {
                        out.extend_from_slice(&v.to_be_bytes());
                    }
                }
            }
            Record::Disc { user } => rec_head(out, IS_DISC, 0, 8, *user),
        }
    }
}

/// An `f` packet: header, the time record (`records` counted, none of
/// them transfer records; `t_beg` when the first was made, `t_end` now,
/// the server's id), then the encoded `records`.
pub fn fstream(pseq: u8, stod: u32, t: (u32, u32), sid: u64, n: u16, records: &[u8]) -> Vec<u8> {
    let plen = 8 + 24 + records.len();
    let mut p = Vec::with_capacity(plen);
    p.extend_from_slice(&header(b'f', pseq, plen as u16, stod));
    p.extend_from_slice(&[IS_TIME, 0x01]);
    p.extend_from_slice(&24u16.to_be_bytes());
    p.extend_from_slice(&0u16.to_be_bytes());
    p.extend_from_slice(&n.to_be_bytes());
    p.extend_from_slice(&t.0.to_be_bytes());
    p.extend_from_slice(&t.1.to_be_bytes());
    p.extend_from_slice(&(sid & ((1 << 48) - 1)).to_be_bytes());
    p.extend_from_slice(records);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    const STOD: u32 = 1_796_467_749;
    const SID: u64 = 120_620_484_399_880;

    /// Packets Debian's xrootd 5.5.3 sent (`xrootd.monitor all auth flush
    /// 5s ident 5s fstat 2 lfn ops xfr 1 dest fstat info user files`),
    /// for an xrdcp upload then download of `/up.bin` (100,000 bytes).
    #[test]
    fn captured_xrootd_packets() {
        let ident = hex(
            "3d00005b6b13ec25000000003d2f726f6f742e383939333a313230363230343834333939383830\
            40766d0a26736974653d26706f72743d323130393426696e73743d6d6f6e2670676d3d78726f6f7464\
            267665723d76352e352e33",
        );
        let info =
            b"=/root.8993:120620484399880@vm\n&site=&port=21094&inst=mon&pgm=xrootd&ver=v5.5.3";
        assert_eq!(map(b'=', 0, STOD, 0, info), ident);
        let uid = userid("xroot", "root", 9050, SID, "[::ffff:127.0.0.1]");
        let login = format!("{uid}\n&R=v5.5.3&x=xrdcp&y=&I=4");
        let u = hex(
            "750100576b13ec250000000178726f6f742f726f6f742e393035303a313230363230343834333939\
            383830405b3a3a666666663a3132372e302e302e315d0a26523d76352e352e3326783d787264637026\
            793d26493d34",
        );
        assert_eq!(map(b'u', 1, STOD, 1, login.as_bytes()), u);
        let d = hex(
            "640200466b13ec250000000278726f6f742f726f6f742e393035303a313230363230343834333939\
            383830405b3a3a666666663a3132372e302e302e315d0a2f75702e62696e",
        );
        assert_eq!(
            map(b'd', 2, STOD, 2, format!("{uid}\n/up.bin").as_bytes()),
            d
        );
        let max = i32::MAX;
        let recs = [
            Record::Open {
                file: 2,
                size: 0,
                write: true,
                user: 1,
                lfn: Some(b"/up.bin".to_vec()),
            },
            Record::Close {
                file: 2,
                read: 0,
                readv: 0,
                write: 100_100,
                forced: false,
                ops: Some(Ops {
                    write: 1,
                    wr_min: max,
                    ..Ops::default()
                }),
            },
            Record::Disc { user: 1 },
            Record::Open {
                file: 4,
                size: 100_000,
                write: false,
                user: 3,
                lfn: Some(b"/up.bin".to_vec()),
            },
            Record::Close {
                file: 4,
                read: 100_000,
                readv: 0,
                write: 0,
                forced: false,
                ops: Some(Ops {
                    read: 1,
                    rd_min: max,
                    ..Ops::default()
                }),
            },
            Record::Disc { user: 3 },
        ];
        let mut body = Vec::new();
        for r in &recs {
            r.encode(&mut body);
        }
        let f = fstream(0, STOD, (1_796_467_754, 1_796_467_755), SID, 6, &body);
        let want = hex(concat!(
            "660001106b13ec2502010018000000066b13ec2a6b13ec2b00006db4252013080103002000000002",
            "0000000000000000000000012f75702e62696e000000000000020050000000020000000000000000",
            "00000000000000000000000000018704000000000000000000000001000000000000000000000000",
            "000000000000000000000000000000007fffffff0000000004000008000000010101002000000004",
            "00000000000186a0000000032f75702e62696e0000000000000200500000000400000000000186a0",
            "00000000000000000000000000000000000000010000000000000000000000000000000000000000",
            "7fffffff00000000000000000000000000000000000000000400000800000003",
        ));
        assert_eq!(f, want);
        assert_eq!(f.len(), 272);
    }
}
