//! Requests decoded once, at the edge (the server's side of the codec): one type per request with its
//! header fields named and typed (as `XProtocol.hh` lays them out) and its
//! payload parsed (paths with their CGI, readv lists, credentials).
//! Handlers take these types and never read header bytes by offset; the
//! fuzzer runs this decoder on arbitrary bytes (`decode::fuzz`).

use crate::readv::Element;
use crate::target::Target;
use crate::{err, pflags, query as q, req, DecodeError, Header};

/// A file handle (`kXR_open`'s answer).
pub type Fh = [u8; 4];

/// `kXR_protocol`.
#[derive(Debug, Clone, Copy)]
pub struct Protocol {
    /// The client asks to switch to TLS.
    pub want_tls: bool,
}

/// `kXR_open`.
pub struct Open {
    /// Permission bits for a new file (0: the default).
    pub mode: u32,
    /// `kXR_open` option bits (`proto::open`).
    pub options: u16,
    pub target: Target,
}

impl Open {
    /// Whether it opens for writing (create, replace, update, append).
    pub fn writes(&self) -> bool {
        use crate::open as o;
        self.options & (o::NEW | o::DELETE | o::UPDATE | o::APPEND | o::WRITE_ONLY) != 0
    }

    /// The permission bits a new file gets (0644 when the client sends
    /// none).
    pub fn file_mode(&self) -> u32 {
        match self.mode {
            0 => 0o644,
            m => m,
        }
    }
}

/// `kXR_read`.
#[derive(Debug, Clone, Copy)]
pub struct Read {
    pub fh: Fh,
    pub offset: u64,
    pub len: usize,
}

/// What a `kXR_stat` is about.
pub enum Stat {
    /// `kXR_vfs`: the space.
    Vfs,
    Handle(Fh),
    Path(Target),
}

/// `kXR_truncate`.
pub enum Truncate {
    Handle(Fh, u64),
    Path(Target, u64),
}

/// `kXR_query`.
pub enum Query {
    Checksum(Target),
    ChecksumScan,
    Config(Vec<u8>),
    Stats,
    Space,
    Other(u16),
}

/// Every request, decoded.
pub enum Request {
    /// A repeated `kXR_protocol` (the first one, which may switch to TLS,
    /// is the connection's: `Protocol::decode`).
    Protocol,
    Login {
        /// The client's process id (for monitoring).
        pid: u32,
        user: String,
        /// `xrd.appname` of the login's CGI (XrdCl sends the program's
        /// name: `xrdcp`, `xrdfs`, `python3`), empty without one.
        app: String,
    },
    Auth {
        credtype: String,
        cred: Vec<u8>,
    },
    /// `kXR_ping`, `kXR_endsess`, `kXR_set`, `kXR_prepare`: answered ok.
    Noop,
    Open(Open),
    Read(Read),
    Readv(Vec<Element>),
    Write {
        fh: Fh,
        offset: u64,
        data: Vec<u8>,
    },
    /// `kXR_pgread` (`retry`: `kXR_pgRetry`, a page the client found bad).
    PgRead {
        read: Read,
        retry: bool,
    },
    /// `kXR_pgwrite`: `payload` is pages, each `[crc32c][data]`.
    PgWrite {
        fh: Fh,
        offset: u64,
        retry: bool,
        payload: Vec<u8>,
    },
    Sync(Fh),
    Close(Fh),
    Truncate(Truncate),
    Stat(Stat),
    /// One entry per newline-separated path (`None`: not a path).
    Statx(Vec<Option<Target>>),
    Dirlist {
        target: Target,
        with_stat: bool,
    },
    Mkdir {
        target: Target,
        parents: bool,
        mode: u32,
    },
    Chmod {
        target: Target,
        mode: u32,
    },
    Rm(Target),
    Rmdir(Target),
    Mv {
        src: Target,
        dst: Target,
    },
    Query(Query),
    /// `kXR_locate`; `None` for `*` alone (any location).
    Locate(Option<Target>),
    /// A request code we do not serve (answered `kXR_Unsupported`).
    Unsupported(u16),
}

/// `kXR_pgRetry` in a pgread's or pgwrite's request flags.
const PG_RETRY: u8 = 0x01;

/// Permission bits of a mode field (0 stays 0: the caller's default).
fn perm(m: u16) -> u32 {
    u32::from(m) & 0o7777
}

fn offset(v: i64, what: &str) -> Result<u64, DecodeError> {
    u64::try_from(v).map_err(|_| DecodeError::invalid(format!("negative {what}")))
}

/// A handle-only request's payload (none, or a lone NUL).
fn no_path(p: &[u8]) -> bool {
    p.is_empty() || p == b"\0"
}

/// Text of a NUL-padded header field.
/// `xrd.appname` from a login's CGI (`xrd.cc=..&xrd.appname=xrdcp&..`),
/// at most 64 characters of `[A-Za-z0-9._-]`.
fn login_app(p: &[u8]) -> String {
    let text = String::from_utf8_lossy(p);
    text.split('&')
        .find_map(|kv| kv.strip_prefix("xrd.appname="))
        .map(|v| {
            v.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "._-".contains(*c))
                .take(64)
                .collect()
        })
        .unwrap_or_default()
}

fn field(b: &[u8]) -> String {
    String::from_utf8_lossy(b)
        .trim_end_matches('\0')
        .to_string()
}

/// `kXR_mv`'s two paths: split at the length the header gives when a
/// space is there, else at the first space.
fn mv_split(arg1len: usize, p: &[u8]) -> Result<(Target, Target), DecodeError> {
    let at = if arg1len > 0 && arg1len < p.len() && p[arg1len] == b' ' {
        arg1len
    } else {
        p.iter()
            .position(|b| *b == b' ')
            .ok_or_else(|| DecodeError::invalid("mv needs a source and a destination"))?
    };
    Ok((Target::parse(&p[..at])?, Target::parse(&p[at + 1..])?))
}

impl Protocol {
    pub fn decode(h: &Header) -> Protocol {
        Protocol {
            want_tls: h.u8_at(8) & pflags::WANT_TLS != 0,
        }
    }
}

/// `kXR_pgread`: the read, and `kXR_pgRetry` from the optional
/// `{pathid, reqflags}` payload.
fn pgread(h: &Header, p: &[u8]) -> Result<Request, DecodeError> {
    let (off, len) = (h.i64_at(8), h.i32_at(16));
    if off < 0 || len <= 0 {
        return Err(DecodeError::invalid("pgread length is invalid"));
    }
    Ok(Request::PgRead {
        read: Read {
            fh: h.fhandle(),
            offset: off as u64,
            len: len as usize,
        },
        retry: p.get(1).is_some_and(|f| f & PG_RETRY != 0),
    })
}

/// Decode request `h` with payload `p`.
pub fn decode(h: &Header, p: Vec<u8>) -> Result<Request, DecodeError> {
    Ok(match h.code {
        req::PROTOCOL => Request::Protocol,
        req::LOGIN => Request::Login {
            pid: h.i32_at(4) as u32,
            user: field(h.at(8, 8)),
            app: login_app(&p),
        },
        req::AUTH => Request::Auth {
            credtype: field(h.at(16, 4)),
            cred: p,
        },
        req::PING | req::ENDSESS | req::SET | req::PREPARE => Request::Noop,
        req::OPEN => Request::Open(Open {
            mode: perm(h.u16_at(4)),
            options: h.u16_at(6),
            target: Target::parse(&p)?,
        }),
        req::READ => {
            let (off, len) = (h.i64_at(8), h.i32_at(16));
            if off < 0 || len < 0 {
                return Err(DecodeError::invalid("negative offset or length"));
            }
            Request::Read(Read {
                fh: h.fhandle(),
                offset: off as u64,
                len: len as usize,
            })
        }
        req::PGREAD => pgread(h, &p)?,
        req::PGWRITE => Request::PgWrite {
            fh: h.fhandle(),
            offset: offset(h.i64_at(8), "offset")?,
            retry: h.u8_at(17) & PG_RETRY != 0,
            payload: p,
        },
        req::READV => Request::Readv(crate::readv::parse(&p)?),
        req::WRITE => Request::Write {
            fh: h.fhandle(),
            offset: offset(h.i64_at(8), "offset")?,
            data: p,
        },
        req::SYNC => Request::Sync(h.fhandle()),
        req::CLOSE => Request::Close(h.fhandle()),
        req::TRUNCATE => {
            let size = offset(h.i64_at(8), "size")?;
            Request::Truncate(if no_path(&p) {
                Truncate::Handle(h.fhandle(), size)
            } else {
                Truncate::Path(Target::parse(&p)?, size)
            })
        }
        req::STAT => Request::Stat(if h.u8_at(4) & 1 != 0 {
            Stat::Vfs
        } else if no_path(&p) {
            Stat::Handle(h.at(16, 4).try_into().expect("4 bytes"))
        } else {
            Stat::Path(Target::parse(&p)?)
        }),
        req::STATX => Request::Statx(
            p.split(|b| *b == b'\n')
                .filter(|l| !l.is_empty() && *l != b"\0")
                .map(|l| Target::parse(l).ok())
                .collect(),
        ),
        req::DIRLIST => Request::Dirlist {
            target: Target::parse(&p)?,
            with_stat: h.u8_at(19) & 2 != 0,
        },
        req::MKDIR => Request::Mkdir {
            target: Target::parse(&p)?,
            parents: h.u8_at(4) & 1 != 0,
            mode: perm(h.u16_at(18)),
        },
        req::CHMOD => Request::Chmod {
            target: Target::parse(&p)?,
            mode: perm(h.u16_at(18)),
        },
        req::RM => Request::Rm(Target::parse(&p)?),
        req::RMDIR => Request::Rmdir(Target::parse(&p)?),
        req::MV => {
            let (src, dst) = mv_split(h.u16_at(18) as usize, &p)?;
            Request::Mv { src, dst }
        }
        req::QUERY => Request::Query(match h.u16_at(4) {
            q::CKSUM => Query::Checksum(Target::parse(&p)?),
            q::CKSCAN => Query::ChecksumScan,
            q::CONFIG => Query::Config(p),
            q::STATS => Query::Stats,
            q::SPACE => Query::Space,
            other => Query::Other(other),
        }),
        req::LOCATE => match p.strip_prefix(b"*") {
            Some(rest) if no_path(rest) => Request::Locate(None),
            Some(rest) => Request::Locate(Some(Target::parse(rest)?)),
            None => Request::Locate(Some(Target::parse(&p)?)),
        },
        code => Request::Unsupported(code),
    })
}

impl Request {
    /// The request's name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Request::Protocol => "protocol",
            Request::Login { .. } => "login",
            Request::Auth { .. } => "auth",
            Request::Noop => "ping",
            Request::Open(_) => "open",
            Request::Read(_) => "read",
            Request::Readv(_) => "readv",
            Request::Write { .. } => "write",
            Request::PgRead { .. } => "pgread",
            Request::PgWrite { .. } => "pgwrite",
            Request::Sync(_) => "sync",
            Request::Close(_) => "close",
            Request::Truncate(_) => "truncate",
            Request::Stat(_) => "stat",
            Request::Statx(_) => "statx",
            Request::Dirlist { .. } => "dirlist",
            Request::Mkdir { .. } => "mkdir",
            Request::Chmod { .. } => "chmod",
            Request::Rm(_) => "rm",
            Request::Rmdir(_) => "rmdir",
            Request::Mv { .. } => "mv",
            Request::Query(_) => "query",
            Request::Locate(_) => "locate",
            Request::Unsupported(_) => "unsupported",
        }
    }

    /// The raw `authz=` CGI value of the request's path(s), if any (the
    /// request then runs as that token's identity).
    pub fn authz(&self) -> Option<&str> {
        fn of(t: &Target) -> Option<&str> {
            t.cgi("authz")
        }
        match self {
            Request::Open(o) => of(&o.target),
            Request::Truncate(Truncate::Path(t, _))
            | Request::Stat(Stat::Path(t))
            | Request::Dirlist { target: t, .. }
            | Request::Mkdir { target: t, .. }
            | Request::Chmod { target: t, .. }
            | Request::Rm(t)
            | Request::Rmdir(t)
            | Request::Query(Query::Checksum(t))
            | Request::Locate(Some(t)) => of(t),
            Request::Mv { src, dst } => of(src).or_else(|| of(dst)),
            Request::Statx(ts) => ts.iter().flatten().find_map(of),
            _ => None,
        }
    }
}

/// The error a request gets when it has no place here.
pub fn unsupported(code: u16) -> DecodeError {
    DecodeError::new(err::UNSUPPORTED, format!("request {code} is not supported"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HEADER_LEN;

    fn header(code: u16, params: &[(usize, &[u8])]) -> Header {
        let mut b = [0u8; HEADER_LEN];
        b[2..4].copy_from_slice(&code.to_be_bytes());
        for (off, bytes) in params {
            b[*off..*off + bytes.len()].copy_from_slice(bytes);
        }
        Header::parse(&b)
    }

    #[test]
    fn fields_are_named_and_typed() {
        let h = header(
            req::READ,
            &[
                (4, b"abcd"),
                (8, &7i64.to_be_bytes()),
                (16, &9i32.to_be_bytes()),
            ],
        );
        let Ok(Request::Read(r)) = decode(&h, Vec::new()) else {
            panic!("a read")
        };
        assert_eq!((r.fh, r.offset, r.len), (*b"abcd", 7, 9));
        let neg = header(req::READ, &[(8, &(-1i64).to_be_bytes())]);
        assert!(decode(&neg, Vec::new()).is_err());
        let h = header(req::MKDIR, &[(4, &[1]), (18, &0o750u16.to_be_bytes())]);
        let Ok(Request::Mkdir {
            target,
            parents,
            mode,
        }) = decode(&h, b"/a/b\0".to_vec())
        else {
            panic!("a mkdir")
        };
        assert_eq!(
            (target.path.display().as_str(), parents, mode),
            ("/a/b", true, 0o750)
        );
        let h = header(req::STAT, &[]);
        assert!(matches!(
            decode(&h, b"\0".to_vec()),
            Ok(Request::Stat(Stat::Handle(_)))
        ));
        assert!(matches!(
            decode(&h, b"/x".to_vec()),
            Ok(Request::Stat(Stat::Path(_)))
        ));
        let h = header(req::LOCATE, &[]);
        assert!(matches!(
            decode(&h, b"*".to_vec()),
            Ok(Request::Locate(None))
        ));
        assert!(matches!(
            decode(&header(4242, &[]), Vec::new()),
            Ok(Request::Unsupported(4242))
        ));
    }

    /// The shared codec's encoders against this decoder: every request a
    /// client of ours sends reads back as what it said.
    #[test]
    fn encoded_requests_decode_to_what_was_encoded() {
        use crate::{encode as e, open as o};
        let back = |wire: Vec<u8>| {
            let h = Header::parse(wire[..HEADER_LEN].try_into().expect("header"));
            assert_eq!(h.dlen as usize, wire.len() - HEADER_LEN);
            (h, decode(&h, wire[HEADER_LEN..].to_vec()).expect("decodes"))
        };
        let (h, _) = back(e::protocol([0, 1], true));
        assert!(Protocol::decode(&h).want_tls);
        assert!(!Protocol::decode(&back(e::protocol([0, 1], false)).0).want_tls);
        let Request::Login { pid, user, app } = back(e::login([0, 2], 7, "tessfed")).1 else {
            panic!("login")
        };
        assert_eq!((pid, user.as_str(), app.as_str()), (7, "tessfed", ""));
        assert_eq!(
            login_app(b"xrd.cc=us&xrd.appname=xrdcp&xrd.info=x"),
            "xrdcp"
        );
        assert_eq!(login_app(b"xrd.appname=a b<script>"), "a");
        let Request::Auth { credtype, cred } = back(e::auth([0, 3], "unix", b"unix\0u\0g\0")).1
        else {
            panic!("auth")
        };
        assert_eq!(
            (credtype.as_str(), cred.as_slice()),
            ("unix", &b"unix\0u\0g\0"[..])
        );
        let Request::Stat(Stat::Path(t)) = back(e::stat([0, 4], "/a/b?x=1")).1 else {
            panic!("stat")
        };
        assert_eq!((t.path.display().as_str(), t.cgi("x")), ("/a/b", Some("1")));
        for dstat in [false, true] {
            let Request::Dirlist { target, with_stat } = back(e::dirlist([0, 5], "/d", dstat)).1
            else {
                panic!("dirlist")
            };
            assert_eq!((target.path.display().as_str(), with_stat), ("/d", dstat));
        }
        let Request::Open(op) = back(e::open([0, 6], "/f", 0, o::NEW | o::MKPATH)).1 else {
            panic!("open")
        };
        assert_eq!((op.options, op.writes()), (o::NEW | o::MKPATH, true));
        let Request::Open(op) = back(e::open_read([0, 6], "/f")).1 else {
            panic!("open")
        };
        assert!(!op.writes());
        let Request::Read(r) = back(e::read([0, 7], *b"fh01", 1 << 33, 4096)).1 else {
            panic!("read")
        };
        assert_eq!((r.fh, r.offset, r.len), (*b"fh01", 1 << 33, 4096));
        let Request::Write { fh, offset, data } = back(e::write([0, 8], *b"fh02", 5, b"abc")).1
        else {
            panic!("write")
        };
        assert_eq!((fh, offset, data.as_slice()), (*b"fh02", 5, &b"abc"[..]));
        assert!(matches!(back(e::close([0, 9], *b"fh03")).1, Request::Close(f) if f == *b"fh03"));
        assert!(matches!(back(e::ping([0, 10])).1, Request::Noop));
    }
}
