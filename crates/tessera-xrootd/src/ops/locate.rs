//! `kXR_locate`: where a path can be served. Every gateway sees every
//! filesystem, so the answer is this server, read-write:
//! `Sw<host>:<port>`. A leading `*` (xrdfs ls) asks for any location.

use crate::error::XrdError;
use crate::session::{Session, Target};
use tessera_types::Identity;

pub async fn locate(s: &Session, who: &Identity, t: Option<Target>) -> Result<Vec<u8>, XrdError> {
    if let Some(t) = t {
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
