//! `kXR_stat` against an XRootD endpoint (`root://`): a connection per
//! request, the handshake and `kXR_protocol`, `kXR_login` (and `unix`
//! credentials when the server asks for them), one stat, all within the
//! caller's deadline. Enough to know whether a file is there and its size;
//! XRootD clients are then redirected to the endpoint itself.

use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A `root://host:port//path` base, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootBase {
    pub host: String,
    pub port: u16,
    /// The path prefix (from `/`, no trailing `/`).
    pub path: String,
}

impl RootBase {
    pub fn parse(url: &str) -> Result<RootBase, String> {
        let bad = || format!("not a root:// URL: {url}");
        let rest = url
            .strip_prefix("root://")
            .or_else(|| url.strip_prefix("xroot://"))
            .ok_or_else(bad)?;
        let (auth, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = match auth.rsplit_once(':') {
            Some((h, p)) => (h, p.parse().map_err(|_| bad())?),
            None => (auth, 1094),
        };
        if host.is_empty() {
            return Err(bad());
        }
        // `//path` and `/path` both name /path.
        let path = format!("/{}", path.trim_start_matches('/'));
        Ok(RootBase {
            host: host.to_string(),
            port,
            path: path.trim_end_matches('/').to_string(),
        })
    }

    /// The URL of `rel` (from `/`) under the base.
    pub fn url(&self, rel: &str) -> String {
        format!("root://{}:{}/{}{rel}", self.host, self.port, self.path)
    }
}

/// What a stat found: whether the file is there, its size, and how long
/// the whole exchange took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stat {
    pub found: bool,
    pub size: Option<u64>,
    pub elapsed: Duration,
}

/// Stat `rel` under `base` within `deadline` (a request's failure to get
/// an answer is an error; "no such file" is `found: false`).
pub async fn stat(base: &RootBase, rel: &str, deadline: Duration) -> Result<Stat, String> {
    let start = Instant::now();
    let path = format!("{}{rel}", base.path);
    match tokio::time::timeout(deadline, exchange(base, &path)).await {
        Ok(Ok((found, size))) => Ok(Stat {
            found,
            size,
            elapsed: start.elapsed(),
        }),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(format!("no answer within {deadline:?}")),
    }
}

const OK: u16 = 0;
const ERROR: u16 = 4003;

fn request(code: u16, params: &[(usize, &[u8])], payload: &[u8]) -> Vec<u8> {
    let mut r = vec![0u8; 24];
    r[0..2].copy_from_slice(&[0, 1]);
    r[2..4].copy_from_slice(&code.to_be_bytes());
    for (at, b) in params {
        r[*at..*at + b.len()].copy_from_slice(b);
    }
    r[20..24].copy_from_slice(&(payload.len() as i32).to_be_bytes());
    r.extend_from_slice(payload);
    r
}

/// One reply: status and body (at most 64 KiB).
async fn reply(s: &mut TcpStream) -> Result<(u16, Vec<u8>), String> {
    let mut h = [0u8; 8];
    s.read_exact(&mut h).await.map_err(|e| e.to_string())?;
    let n = u32::from_be_bytes(h[4..8].try_into().expect("4 bytes")) as usize;
    if n > 64 << 10 {
        return Err(format!("a reply of {n} bytes"));
    }
    let mut b = vec![0u8; n];
    s.read_exact(&mut b).await.map_err(|e| e.to_string())?;
    Ok((u16::from_be_bytes([h[2], h[3]]), b))
}

async fn exchange(base: &RootBase, path: &str) -> Result<(bool, Option<u64>), String> {
    let mut s = TcpStream::connect((base.host.as_str(), base.port))
        .await
        .map_err(|e| format!("connecting: {e}"))?;
    let _ = s.set_nodelay(true);
    let mut first = vec![0u8; 20];
    first[12..16].copy_from_slice(&4i32.to_be_bytes());
    first[16..20].copy_from_slice(&2012i32.to_be_bytes());
    first.extend(request(3006, &[(4, &0x511i32.to_be_bytes())], &[]));
    s.write_all(&first).await.map_err(|e| e.to_string())?;
    let mut hs = [0u8; 16];
    s.read_exact(&mut hs).await.map_err(|e| e.to_string())?;
    reply(&mut s).await?; // kXR_protocol
    let login = request(
        3007,
        &[(4, &std::process::id().to_be_bytes()), (8, b"tessfed\0")],
        &[],
    );
    s.write_all(&login).await.map_err(|e| e.to_string())?;
    let (st, body) = reply(&mut s).await?;
    if st != OK {
        return Err(format!("login refused ({st})"));
    }
    if String::from_utf8_lossy(&body).contains("&P=unix") {
        let cred = b"unix\0nobody\0nogroup\0";
        let auth = request(3000, &[(16, b"unix")], cred);
        s.write_all(&auth).await.map_err(|e| e.to_string())?;
        if reply(&mut s).await?.0 != OK {
            return Err("unix credentials refused".into());
        }
    }
    s.write_all(&request(3017, &[], path.as_bytes()))
        .await
        .map_err(|e| e.to_string())?;
    let (st, body) = reply(&mut s).await?;
    match st {
        OK => {
            // "id size flags mtime"
            let text = String::from_utf8_lossy(&body);
            let size = text.split_whitespace().nth(1).and_then(|v| v.parse().ok());
            Ok((true, size))
        }
        // kXR_NotFound: not there; any other error: not usable here.
        ERROR
            if body.len() >= 4 && i32::from_be_bytes(body[..4].try_into().expect("4")) == 3011 =>
        {
            Ok((false, None))
        }
        other => Err(format!("stat answered {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases() {
        let b = RootBase::parse("root://site-a:1095//store/data/").unwrap();
        assert_eq!((b.port, b.path.as_str()), (1095, "/store/data"));
        assert_eq!(b.url("/f"), "root://site-a:1095//store/data/f");
        assert_eq!(
            RootBase::parse("root://h").unwrap().url("/x"),
            "root://h:1094//x"
        );
        assert!(RootBase::parse("https://h/x").is_err());
    }
}
