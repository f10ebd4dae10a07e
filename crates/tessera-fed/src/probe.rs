//! `tessera fed probe URL`: the checks a WLCG site runs against a storage
//! endpoint, with Nagios plugin output (a first line `FED PROBE <STATE> -
//! …`, one line per check) and exit codes (0 OK, 1 WARNING, 2 CRITICAL,
//! 3 UNKNOWN): reachable (and TLS valid), a probe file written with the
//! token, read back byte for byte, its adler32 as the endpoint reports it
//! (`Want-Digest`), and removed.

use crate::client::{request, Base};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_rustls::rustls::ClientConfig;

/// Nagios states.
pub const OK: u8 = 0;
pub const WARNING: u8 = 1;
pub const CRITICAL: u8 = 2;
pub const UNKNOWN: u8 = 3;

/// One check's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub state: u8,
    pub detail: String,
}

/// What a probe found: the checks in order, and the worst state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    pub fn state(&self) -> u8 {
        self.checks.iter().map(|c| c.state).max().unwrap_or(UNKNOWN)
    }

    /// The Nagios plugin output.
    pub fn text(&self) -> String {
        let word = ["OK", "WARNING", "CRITICAL", "UNKNOWN"][self.state().min(3) as usize];
        let names: Vec<String> = self
            .checks
            .iter()
            .map(|c| {
                format!(
                    "{} {}",
                    c.name,
                    ["ok", "warning", "critical", "unknown"][c.state.min(3) as usize]
                )
            })
            .collect();
        let mut t = format!("FED PROBE {word} - {}\n", names.join(", "));
        for c in &self.checks {
            t.push_str(&format!("{}: {}\n", c.name, c.detail));
        }
        t
    }
}

fn adler32(b: &[u8]) -> u32 {
    let mut a = simd_adler32::Adler32::new();
    a.write(b);
    a.finish()
}

/// The checksum check: the endpoint's adler32 of the probe file
/// (`Want-Digest`) against `want`.
async fn checksum(
    base: &Base,
    name: &str,
    h: &[(&str, &str)],
    tls: Option<&Arc<ClientConfig>>,
    deadline: Duration,
    want: &str,
) -> (u8, String) {
    let mut hd = h.to_vec();
    hd.push(("Want-Digest", "adler32"));
    let a = match request(base, "HEAD", name, &hd, Vec::new(), tls, deadline).await {
        Ok(a) => a,
        Err(e) => return (WARNING, e),
    };
    let got = a
        .headers
        .get_all("digest")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .find_map(|d| {
            let (k, v) = d.trim().split_once('=')?;
            k.eq_ignore_ascii_case("adler32")
                .then(|| v.trim().to_ascii_lowercase())
        });
    match got {
        Some(g) if g == want => (OK, format!("adler32 {g}")),
        Some(g) => (CRITICAL, format!("adler32 {g}, written {want}")),
        None => (WARNING, "no adler32 digest given".into()),
    }
}

/// Probe `url` (an https or http directory the token may write to).
pub async fn probe(
    url: &str,
    tls: Option<Arc<ClientConfig>>,
    token: Option<&str>,
    deadline: Duration,
) -> Report {
    let mut checks = Vec::new();
    let base = match Base::parse(url) {
        Ok(b) => b,
        Err(e) => {
            checks.push(Check {
                name: "url",
                state: UNKNOWN,
                detail: e,
            });
            return Report { checks };
        }
    };
    let tls = tls.as_ref();
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut h: Vec<(&str, &str)> = Vec::new();
    if let Some(a) = &auth {
        h.push(("Authorization", a));
    }
    let t0 = Instant::now();
    match request(&base, "HEAD", "/", &h, Vec::new(), tls, deadline).await {
        Ok(a) => checks.push(Check {
            name: "reachable",
            state: OK,
            detail: format!("HTTP {} in {} ms", a.status, t0.elapsed().as_millis()),
        }),
        Err(e) => {
            checks.push(Check {
                name: "reachable",
                state: CRITICAL,
                detail: e,
            });
            return Report { checks };
        }
    }
    let name = format!(
        "/.tessera-probe-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    let body: Vec<u8> = (0..65_536u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let put = request(&base, "PUT", &name, &h, body.clone(), tls, deadline).await;
    let (state, detail) = match &put {
        Ok(a) if (200..300).contains(&a.status) => (OK, format!("HTTP {}", a.status)),
        Ok(a) if a.status == 401 || a.status == 403 => (
            CRITICAL,
            format!("HTTP {}: the token was not accepted", a.status),
        ),
        Ok(a) => (CRITICAL, format!("HTTP {}", a.status)),
        Err(e) => (CRITICAL, e.clone()),
    };
    checks.push(Check {
        name: "write",
        state,
        detail,
    });
    if state != OK {
        return Report { checks };
    }
    let (state, detail) = match request(&base, "GET", &name, &h, Vec::new(), tls, deadline).await {
        Ok(a) if a.status == 200 && a.body == body => (OK, format!("{} bytes", a.body.len())),
        Ok(a) if a.status == 200 => (CRITICAL, "other bytes than written".into()),
        Ok(a) => (CRITICAL, format!("HTTP {}", a.status)),
        Err(e) => (CRITICAL, e),
    };
    checks.push(Check {
        name: "read",
        state,
        detail,
    });
    let want = format!("{:08x}", adler32(&body));
    let (state, detail) = checksum(&base, &name, &h, tls, deadline, &want).await;
    checks.push(Check {
        name: "checksum",
        state,
        detail,
    });
    let (state, detail) = match request(&base, "DELETE", &name, &h, Vec::new(), tls, deadline).await
    {
        Ok(a) if (200..300).contains(&a.status) => (OK, format!("HTTP {}", a.status)),
        Ok(a) => (WARNING, format!("HTTP {}: {name} left behind", a.status)),
        Err(e) => (WARNING, format!("{e}: {name} left behind")),
    };
    checks.push(Check {
        name: "delete",
        state,
        detail,
    });
    Report { checks }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adler32_and_report() {
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
        let r = Report {
            checks: vec![
                Check {
                    name: "reachable",
                    state: OK,
                    detail: "HTTP 200".into(),
                },
                Check {
                    name: "checksum",
                    state: WARNING,
                    detail: "none".into(),
                },
            ],
        };
        assert_eq!(r.state(), WARNING);
        assert!(r
            .text()
            .starts_with("FED PROBE WARNING - reachable ok, checksum warning\n"));
    }
}
