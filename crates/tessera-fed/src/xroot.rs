//! `kXR_stat` and `kXR_dirlist` against an XRootD endpoint (`root://`): a
//! connection with the handshake and `kXR_protocol`, `kXR_login` (and
//! `unix` credentials when the server asks for them), then the request,
//! all within the caller's deadline. A stat reuses a logged-in connection
//! the endpoint's last stats left idle (one round trip instead of four). Enough to know whether a file is
//! there and its size, and what a directory holds; XRootD clients are then
//! redirected to the endpoint itself.

use std::time::{Duration, Instant};
use tessera_xrdproto::{encode, err, sflags, status};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A `root://host:port//path` base, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootBase {
    pub host: String,
    pub port: u16,
    /// The path prefix (from `/`, no trailing `/`).
    pub path: String,
    idle: crate::client::Pool<TcpStream>,
}

impl RootBase {
    pub fn parse(url: &str) -> Result<RootBase, String> {
        let u = tessera_httpc::Url::parse(url, &[tessera_httpc::Scheme::Root])?;
        // `//path` and `/path` both name /path.
        let path = format!("/{}", u.path().trim_start_matches('/'));
        Ok(RootBase {
            host: u.host,
            port: u.port,
            path: path.trim_end_matches('/').to_string(),
            idle: Default::default(),
        })
    }

    /// The URL of `rel` (from `/`) under the base.
    pub fn url(&self, rel: &str) -> String {
        let host = tessera_httpc::url_host(&self.host);
        format!("root://{host}:{}/{}{rel}", self.port, self.path)
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

/// Stat `rel` (percent-encoded) under `base` within `deadline` (a request's failure to get
/// an answer is an error; "no such file" is `found: false`).
pub async fn stat(base: &RootBase, rel: &str, deadline: Duration) -> Result<Stat, String> {
    let start = Instant::now();
    let path = format!("{}{}", base.path, crate::decode(rel));
    let work = async {
        if let Some(mut s) = base.idle.take() {
            // One the endpoint closed meanwhile fails: a new one then.
            if let Ok(r) = stat_on(&mut s, &path).await {
                base.idle.put(s);
                return Ok(r);
            }
        }
        let mut s = session(base).await?;
        let r = stat_on(&mut s, &path).await?;
        base.idle.put(s);
        Ok(r)
    };
    match tokio::time::timeout(deadline, work).await {
        Ok(Ok((found, size))) => Ok(Stat {
            found,
            size,
            elapsed: start.elapsed(),
        }),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(format!("no answer within {deadline:?}")),
    }
}

/// List directory `rel` under `base` within `deadline` (with `kXR_dstat`):
/// its entries (names percent-encoded), `None` when it is not there or not
/// a directory.
pub async fn dirlist(
    base: &RootBase,
    rel: &str,
    deadline: Duration,
) -> Result<Option<Vec<crate::Child>>, String> {
    let path = format!("{}{}", base.path, crate::decode(rel.trim_end_matches('/')));
    let work = async {
        let mut s = session(base).await?;
        let req = encode::dirlist(STREAM, &path, true);
        s.write_all(&req).await.map_err(|e| e.to_string())?;
        let mut all = Vec::new();
        loop {
            let (st, body) = reply(&mut s, MAX_LISTING).await?;
            match st {
                status::OKSOFAR | status::OK => all.extend_from_slice(&body),
                // No directory here.
                status::ERROR
                    if matches!(
                        encode::error_code(&body),
                        Some(err::NOT_FOUND | err::NOT_FILE | err::IS_DIRECTORY)
                    ) =>
                {
                    return Ok(None)
                }
                other => return Err(format!("dirlist answered {other} ({})", text(&body))),
            }
            if all.len() > MAX_LISTING {
                return Err("a listing over 64 MiB".into());
            }
            if st == status::OK {
                return Ok(Some(entries(&all)));
            }
        }
    };
    tokio::time::timeout(deadline, work)
        .await
        .map_err(|_| format!("no answer within {deadline:?}"))?
}

/// The entries of a `kXR_dstat` listing: after the lead-in `".\n0 0 0 0\n"`,
/// `name\nid size flags mtime\n` pairs (the last `\n` a NUL).
fn entries(body: &[u8]) -> Vec<crate::Child> {
    let text = String::from_utf8_lossy(body);
    let text = text.trim_end_matches('\0');
    let mut lines = text.split('\n').filter(|l| !l.is_empty()).peekable();
    if lines.peek() == Some(&".") {
        lines.next();
        lines.next();
    }
    let mut out = Vec::new();
    while let (Some(name), Some(st)) = (lines.next(), lines.next()) {
        let f: Vec<&str> = st.split_whitespace().collect();
        let size = f.get(1).and_then(|v| v.parse().ok());
        let flags: u32 = f.get(2).and_then(|v| v.parse().ok()).unwrap_or(0);
        let dir = flags & sflags::IS_DIR != 0;
        out.push((
            crate::s3::encode(name),
            dir,
            (!dir).then_some(size).flatten(),
        ));
    }
    out
}

fn text(body: &[u8]) -> String {
    String::from_utf8_lossy(body.get(4..).unwrap_or(&[]))
        .trim_end_matches('\0')
        .to_string()
}

/// The one stream id of our sequential requests.
const STREAM: [u8; 2] = [0, 1];
/// Largest listing read from an endpoint.
const MAX_LISTING: usize = crate::client::MAX_BODY;

/// One reply: status and body (at most `max` bytes).
async fn reply(s: &mut TcpStream, max: usize) -> Result<(u16, Vec<u8>), String> {
    let mut h = [0u8; 8];
    s.read_exact(&mut h).await.map_err(|e| e.to_string())?;
    let (_, st, n) = encode::reply_header(&h);
    if n > max {
        return Err(format!("a reply of {n} bytes"));
    }
    let mut b = vec![0u8; n];
    s.read_exact(&mut b).await.map_err(|e| e.to_string())?;
    Ok((st, b))
}

/// A logged-in connection to `base`.
async fn session(base: &RootBase) -> Result<TcpStream, String> {
    let mut s = TcpStream::connect((base.host.as_str(), base.port))
        .await
        .map_err(|e| format!("connecting: {e}"))?;
    let _ = s.set_nodelay(true);
    let mut first = encode::handshake();
    first.extend(encode::protocol(STREAM, false));
    s.write_all(&first).await.map_err(|e| e.to_string())?;
    let mut hs = [0u8; 16];
    s.read_exact(&mut hs).await.map_err(|e| e.to_string())?;
    reply(&mut s, SMALL).await?; // kXR_protocol
    let login = encode::login(STREAM, std::process::id(), "tessfed");
    s.write_all(&login).await.map_err(|e| e.to_string())?;
    let (st, body) = reply(&mut s, SMALL).await?;
    if st != status::OK {
        return Err(format!("login refused ({st})"));
    }
    if String::from_utf8_lossy(&body).contains("&P=unix") {
        let cred = b"unix\0nobody\0nogroup\0";
        let auth = encode::auth(STREAM, "unix", cred);
        s.write_all(&auth).await.map_err(|e| e.to_string())?;
        if reply(&mut s, SMALL).await?.0 != status::OK {
            return Err("unix credentials refused".into());
        }
    }
    Ok(s)
}

/// Largest reply to a login or a stat.
const SMALL: usize = 64 << 10;

async fn stat_on(s: &mut TcpStream, path: &str) -> Result<(bool, Option<u64>), String> {
    s.write_all(&encode::stat(STREAM, path))
        .await
        .map_err(|e| e.to_string())?;
    let (st, body) = reply(s, SMALL).await?;
    match st {
        status::OK => {
            // "id size flags mtime"
            let text = String::from_utf8_lossy(&body);
            let size = text.split_whitespace().nth(1).and_then(|v| v.parse().ok());
            Ok((true, size))
        }
        // kXR_NotFound: not there; any other error: not usable here.
        status::ERROR if encode::error_code(&body) == Some(err::NOT_FOUND) => Ok((false, None)),
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
        assert_eq!(
            RootBase::parse("root://[::1]:1095//d").unwrap().url("/f"),
            "root://[::1]:1095//d/f"
        );
    }

    #[test]
    fn dstat_listings() {
        let body = b".\n0 0 0 0\nsub\n12 4096 19 1700000000\na b\n13 5 16 1700000001\0";
        assert_eq!(
            entries(body),
            vec![
                ("sub".to_string(), true, None),
                ("a%20b".to_string(), false, Some(5))
            ]
        );
        assert!(entries(b"").is_empty());
    }
}
