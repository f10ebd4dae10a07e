//! A raw XRootD client (handshake, login, requests, replies as they come)
//! for attacks the stock clients cannot make: a chosen source address, a
//! redirect looked at instead of followed, a request that announces more
//! than it sends, a connection left idle.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::Duration;
use tessera_xrdproto::{encode, open, req};

pub use tessera_xrdproto::req::WRITE as KXR_WRITE;
pub use tessera_xrdproto::status::{ERROR, OK, REDIRECT};

/// kXR_new | kXR_open_updt (a new file, no mkpath, no async).
pub const OPEN_NEW: u16 = open::NEW | open::UPDATE;

/// The stream id of the requests after login.
const STREAM: [u8; 2] = [0, 1];

pub struct Raw {
    pub s: TcpStream,
}

/// One reply: status and body.
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Reply {
    /// `kXR_error`'s number (0 when it is not an error).
    pub fn errnum(&self) -> i32 {
        if self.status != ERROR || self.body.len() < 4 {
            return 0;
        }
        i32::from_be_bytes(self.body[..4].try_into().unwrap())
    }

    /// A redirect's target: (port, host, cgi).
    pub fn redirect(&self) -> (u16, String, String) {
        assert_eq!(self.status, REDIRECT, "{}", self.text());
        let port = i32::from_be_bytes(self.body[..4].try_into().unwrap()) as u16;
        let rest = String::from_utf8_lossy(&self.body[4..]).into_owned();
        let (host, cgi) = rest.split_once('?').unwrap_or((&rest, ""));
        (port, host.to_string(), cgi.to_string())
    }

    pub fn text(&self) -> String {
        match self.errnum() {
            0 => format!("{} {}", self.status, String::from_utf8_lossy(&self.body)),
            n => format!(
                "error {n}: {}",
                String::from_utf8_lossy(&self.body[4..]).trim_end_matches('\0')
            ),
        }
    }
}

impl Raw {
    /// Connect to `to` from `from` (an address of this host, e.g.
    /// 127.0.0.2: every 127/8 address is loopback) and say hello.
    pub fn connect_from(to: SocketAddr, from: Option<IpAddr>) -> std::io::Result<Raw> {
        let s = match from {
            None => TcpStream::connect(to)?,
            Some(ip) => {
                let sock = match ip {
                    IpAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
                    IpAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
                };
                sock.bind(SocketAddr::new(ip, 0))?;
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                let t = rt.block_on(sock.connect(to))?;
                t.into_std()?
            }
        };
        s.set_nonblocking(false)?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Raw { s })
    }

    /// Connected, handshake and `kXR_protocol` done, logged in as `user`
    /// with `unix` credentials (which grant nothing beyond anonymous).
    pub fn login(to: SocketAddr, from: Option<IpAddr>, user: &str) -> Raw {
        match Raw::try_login(to, from, user) {
            Ok(r) => r,
            Err(e) => panic!("login: {e}"),
        }
    }

    /// [`Raw::login`], or what the server answered instead (a refused
    /// connection's error, or that it closed).
    pub fn try_login(to: SocketAddr, from: Option<IpAddr>, user: &str) -> Result<Raw, String> {
        let mut r = Raw::connect_from(to, from).map_err(|e| format!("connect: {e}"))?;
        r.s.write_all(&hello_bytes()).map_err(|e| e.to_string())?;
        let mut first = [0u8; 16];
        r.s.read_exact(&mut first)
            .map_err(|e| format!("handshake: {e}"))?;
        let rep = r.try_reply().map_err(|e| format!("kXR_protocol: {e}"))?;
        if rep.status != OK {
            return Err(rep.text());
        }
        r.login_only(user)
    }

    fn login_only(mut self, user: &str) -> Result<Raw, String> {
        let r = &mut self;
        r.s.write_all(&encode::login([0, 0], 0, user)).unwrap();
        let rep = r.reply();
        assert_eq!(rep.status, OK, "kXR_login: {}", rep.text());
        let cred = format!("unix\0{user}\0");
        r.s.write_all(&encode::auth([0, 0], "unix", cred.as_bytes()))
            .unwrap();
        let rep = r.reply();
        if rep.status != OK {
            return Err(format!("kXR_auth: {}", rep.text()));
        }
        Ok(self)
    }

    /// The initial handshake and `kXR_protocol` (no login).
    pub fn hello(&mut self) {
        self.s.write_all(&hello_bytes()).unwrap();
        let mut first = [0u8; 16];
        self.s.read_exact(&mut first).unwrap();
        let rep = self.reply();
        assert_eq!(rep.status, OK, "kXR_protocol: {}", rep.text());
    }

    pub fn reply(&mut self) -> Reply {
        self.try_reply().expect("a reply")
    }

    pub fn try_reply(&mut self) -> std::io::Result<Reply> {
        let mut h = [0u8; 8];
        self.s.read_exact(&mut h)?;
        let mut body = vec![0u8; u32::from_be_bytes(h[4..8].try_into().unwrap()) as usize];
        self.s.read_exact(&mut body)?;
        Ok(Reply {
            status: u16::from_be_bytes([h[2], h[3]]),
            body,
        })
    }

    /// Send a whole request (header and payload) and read its reply.
    pub fn exchange(&mut self, request: &[u8]) -> Reply {
        self.s.write_all(request).unwrap();
        self.reply()
    }

    /// Send a request header (24 bytes: stream 1, `code`, `params` at
    /// bytes 4..20) with `payload`, and read its reply.
    pub fn call(&mut self, code: u16, params: [u8; 16], payload: &[u8]) -> Reply {
        self.send(code, params, payload.len() as i32, payload);
        self.reply()
    }

    /// Send a request whose header announces `dlen` payload bytes, and
    /// `payload` (perhaps fewer).
    pub fn send(&mut self, code: u16, params: [u8; 16], dlen: i32, payload: &[u8]) {
        let mut r = vec![0u8; 24];
        r[0..2].copy_from_slice(&1u16.to_be_bytes());
        r[2..4].copy_from_slice(&code.to_be_bytes());
        r[4..20].copy_from_slice(&params);
        r[20..24].copy_from_slice(&dlen.to_be_bytes());
        r.extend_from_slice(payload);
        self.s.write_all(&r).unwrap();
    }

    /// `kXR_open` of `path` (CGI included) with exactly `options`.
    pub fn open(&mut self, path: &str, options: u16, mode: u16) -> Reply {
        self.exchange(&encode::open(STREAM, path, mode, options))
    }

    /// `kXR_write` of `data` at `offset` on handle `fh`.
    pub fn write(&mut self, fh: [u8; 4], offset: u64, data: &[u8]) -> Reply {
        self.exchange(&encode::write(STREAM, fh, offset, data))
    }

    pub fn close(&mut self, fh: [u8; 4]) -> Reply {
        self.exchange(&encode::close(STREAM, fh))
    }
}

impl Raw {
    /// Whether the server closes the connection (or resets it) within
    /// `wait`; whatever it sends meanwhile is read and dropped.
    pub fn closed_within(&mut self, wait: Duration) -> bool {
        let until = std::time::Instant::now() + wait;
        let mut b = [0u8; 4096];
        loop {
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            self.s.set_read_timeout(Some(left)).unwrap();
            match self.s.read(&mut b) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    return false
                }
                Err(_) => return true,
            }
        }
    }
}

/// The client handshake and a `kXR_protocol` request.
fn hello_bytes() -> Vec<u8> {
    let mut m = encode::handshake();
    // Protocol version 5.0, as the tests were written against.
    let version = 0x500i32.to_be_bytes();
    m.extend(encode::request(
        [0, 0],
        req::PROTOCOL,
        &[(4, &version)],
        &[],
    ));
    m
}

/// The handle in an open's reply.
pub fn handle(r: &Reply) -> [u8; 4] {
    assert_eq!(r.status, OK, "open: {}", r.text());
    r.body[..4].try_into().unwrap()
}

/// `root://host:port` → its socket address.
pub fn addr_of(url: &str) -> SocketAddr {
    let hp = url
        .trim_start_matches("root://")
        .trim_start_matches("roots://")
        .replace("localhost", "127.0.0.1");
    hp.parse().expect("host:port")
}
