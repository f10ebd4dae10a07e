//! The vomsdir: `<vomsdir>/<vo>/<host>.lsc`, each the DNs of a VOMS
//! server's certificate chain, its subject first and then each issuer,
//! one per line; alternative chains separated by a line of dashes
//! (`------ NEXT CHAIN ------`). An attribute certificate of VO `vo`
//! is accepted only when the certificate it carries matches such a file.

use std::collections::HashMap;
use std::path::Path;

/// One `.lsc` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lsc {
    pub host: String,
    /// Each chain: the server's DN, then its issuer's, and so on.
    pub chains: Vec<Vec<String>>,
}

/// Every `.lsc` of the vomsdir, by VO.
#[derive(Debug, Default, Clone)]
pub struct VomsDir {
    pub vos: HashMap<String, Vec<Lsc>>,
}

/// The chains of an `.lsc` file's text.
pub fn parse_lsc(text: &str) -> Vec<Vec<String>> {
    let mut chains = vec![Vec::new()];
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with("---") {
            chains.push(Vec::new());
            continue;
        }
        if let Some(c) = chains.last_mut() {
            c.push(line.to_string());
        }
    }
    chains.retain(|c| c.len() >= 2);
    chains
}

impl VomsDir {
    /// Read `dir`: one sub-directory per VO; other files are ignored.
    pub fn load(dir: &Path) -> Result<VomsDir, String> {
        let mut out = VomsDir::default();
        let rd = std::fs::read_dir(dir).map_err(|e| e.to_string())?;
        for vo in rd.filter_map(Result::ok) {
            let Ok(name) = vo.file_name().into_string() else {
                continue;
            };
            if !vo.path().is_dir() {
                continue;
            }
            let Ok(files) = std::fs::read_dir(vo.path()) else {
                continue;
            };
            let mut lscs = Vec::new();
            for f in files.filter_map(Result::ok) {
                let p = f.path();
                let Some(host) = p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_suffix(".lsc"))
                else {
                    continue;
                };
                match std::fs::read_to_string(&p) {
                    Ok(t) if t.len() <= 64 << 10 => {
                        let chains = parse_lsc(&t);
                        if chains.is_empty() {
                            tracing::warn!(file = %p.display(), "vomsdir: no chain in it");
                        }
                        lscs.push(Lsc {
                            host: host.to_string(),
                            chains,
                        });
                    }
                    _ => tracing::warn!(file = %p.display(), "vomsdir: unreadable or too big"),
                }
            }
            lscs.sort_by(|a, b| a.host.cmp(&b.host));
            out.vos.insert(name, lscs);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn lsc_chains() {
        let t = "/DC=org/CN=voms.example.org\n/DC=org/CN=CA\n------ NEXT CHAIN ------\n\
                 /DC=org/CN=voms2\n/DC=org/CN=CA2\n\n";
        let c = super::parse_lsc(t);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0], vec!["/DC=org/CN=voms.example.org", "/DC=org/CN=CA"]);
        assert_eq!(c[1][0], "/DC=org/CN=voms2");
        assert!(super::parse_lsc("/DC=org/CN=alone\n").is_empty());
    }
}
