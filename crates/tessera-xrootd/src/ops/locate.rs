//! `kXR_locate`: where a path can be served. Every gateway sees every
//! filesystem, so the answer is this server, read-write:
//! `Sw<host>:<port>`. A leading `*` (xrdfs ls) asks for any location.

use crate::error::XrdError;
use crate::session::{Session, Target};
use tessera_types::Identity;

pub async fn locate(s: &Session, who: &Identity, p: &[u8]) -> Result<Vec<u8>, XrdError> {
    let (any, rest) = match p.strip_prefix(b"*") {
        Some(r) => (true, r),
        None => (false, p),
    };
    if !any || !(rest.is_empty() || rest == b"\0") {
        let t = Target::parse(rest)?;
        s.core()?.stat(who, t.path).await?;
    }
    let host = match s.local.ip() {
        std::net::IpAddr::V4(a) => a.to_string(),
        std::net::IpAddr::V6(a) => format!("[{a}]"),
    };
    let mut b = format!("Sw{host}:{}", s.local.port()).into_bytes();
    b.push(0);
    Ok(b)
}
