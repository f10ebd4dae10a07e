//! `kXR_query`: checksum (from the stored checksum), config (each value on
//! a line of its own, as the reference answers; unknown keys echoed, as
//! clients read an echo as "not supported"; `whoami` is the login's
//! identity), stats, space.

use crate::error::XrdError;
use crate::proto::err;
use crate::request::Query;
use crate::session::{Session, Target};
use tessera_types::Identity;

pub async fn query(s: &Session, who: &Identity, q: Query) -> Result<Vec<u8>, XrdError> {
    match q {
        Query::Checksum(t) => checksum(s, who, t).await,
        Query::ChecksumScan => Ok(Vec::new()),
        Query::Config(p) => Ok(config(s, who, &p)),
        Query::Stats => Ok(stats(s)),
        Query::Space => space(s).await,
        Query::Other(other) => Err(XrdError::new(
            err::UNSUPPORTED,
            format!("query type {other} is not supported"),
        )),
    }
}

/// `"adler32 <8 hex>\0"` (the default) or `"crc32c <8 hex>\0"` as
/// `cks.type` asks; another algorithm is refused (never answered with a
/// different one).
async fn checksum(s: &Session, who: &Identity, t: Target) -> Result<Vec<u8>, XrdError> {
    let alg = t.cgi("cks.type").unwrap_or("adler32").to_ascii_lowercase();
    if alg != "adler32" && alg != "crc32c" {
        return Err(XrdError::new(
            err::SERVER_ERROR,
            format!("{alg} checksum not supported."),
        ));
    }
    let i = s.core()?.readable_file(who, &t.path)?;
    let stored = tessera_core::stored_checksums(&i);
    let value = if alg == "adler32" {
        stored.adler32
    } else {
        stored.crc32c
    };
    let hex = value.map(|v| format!("{v:08x}")).ok_or_else(|| {
        XrdError::new(
            err::SERVER_ERROR,
            format!("no {alg} checksum stored for {}", t.path.display()),
        )
    })?;
    let mut b = format!("{alg} {hex}").into_bytes();
    b.push(0);
    Ok(b)
}

fn config(s: &Session, who: &Identity, p: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(p)
        .trim_end_matches('\0')
        .to_string();
    let mut out = String::new();
    for key in text.split_whitespace() {
        let v = match key {
            "chksum" => "0:adler32,1:crc32c".to_string(),
            "readv_iov_max" => super::readv::MAX_ELEMENTS.to_string(),
            "readv_ior_max" => super::readv::MAX_ELEMENT.to_string(),
            "version" => format!("tessera-{}", env!("CARGO_PKG_VERSION")),
            "role" => "server".to_string(),
            "sitename" => s.cfg.site.clone(),
            "bind_max" => "0".to_string(),
            "pio_max" => "0".to_string(),
            "cms" => "none|".to_string(),
            "whoami" => whoami(who),
            // Unknown (tpc, tpcdlg, ...): echoed, meaning unsupported.
            other => other.to_string(),
        };
        out.push_str(&v);
        out.push('\n');
    }
    // As the reference answers: every value ends with a newline, no NUL
    // (uproot parses each line with int(); a NUL made it fail).
    out.into_bytes()
}

/// `query config whoami`: who the login is taken to be, as CGI
/// (`name=bin&uid=2&...&dn=/DC=org/...&fqans=/cms/Role=production/...`;
/// `%`, `&` and line ends in values percent-encoded; a value runs from
/// its name's first `=`).
fn whoami(who: &Identity) -> String {
    who.whoami()
        .iter()
        .map(|(k, v)| {
            let mut e = String::with_capacity(v.len());
            for c in v.chars() {
                match c {
                    '%' | '&' | '\n' | '\r' => e.push_str(&format!("%{:02X}", c as u32)),
                    c => e.push(c),
                }
            }
            format!("{k}={e}")
        })
        .collect::<Vec<_>>()
        .join("&")
}

fn stats(s: &Session) -> Vec<u8> {
    let mut b = format!(
        "<statistics tod=\"{}\" ver=\"tessera-{}\" src=\"{}\"></statistics>",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        env!("CARGO_PKG_VERSION"),
        s.local
    )
    .into_bytes();
    b.push(0);
    b
}

/// Total and free bytes of all registered filesystems (`query space`,
/// `statvfs`).
pub fn space_totals(s: &Session) -> Result<(u64, u64), XrdError> {
    Ok(s.core()?
        .spaces()
        .iter()
        .fold((0, 0), |(t, f), sp| (t + sp.total_bytes, f + sp.free_bytes)))
}

/// `oss.*` CGI for the space of all registered filesystems.
async fn space(s: &Session) -> Result<Vec<u8>, XrdError> {
    let (total, free) = space_totals(s)?;
    let mut b = format!(
        "oss.cgroup=default&oss.space={total}&oss.free={free}&oss.maxf={free}&oss.used={}&oss.quota=-1",
        total.saturating_sub(free)
    )
    .into_bytes();
    b.push(0);
    Ok(b)
}
