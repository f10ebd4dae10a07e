//! The files that say who a certificate is: the grid-mapfile (`"DN"
//! user[,user…]`, the first user taken) and a VOMS role map in dCache's
//! `vorolemap` form (`"DN pattern" "FQAN pattern" user`, `*` matching
//! anything, the first line that matches one of the FQANs, in their
//! order, wins; `"FQAN pattern" user` alone is read as for any DN).
//! FQANs compare without their null parts (`/cms/Role=NULL` is `/cms`).

use crate::voms::short_fqan;

/// Split a line into fields: double-quoted ones (spaces kept) or words.
fn fields(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = line.trim();
    while !rest.is_empty() {
        if let Some(q) = rest.strip_prefix('"') {
            let end = q.find('"').ok_or("unterminated quote")?;
            out.push(q[..end].to_string());
            rest = q[end + 1..].trim_start();
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            out.push(rest[..end].to_string());
            rest = rest[end..].trim_start();
        }
    }
    Ok(out)
}

fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
}

/// DN → local user name.
#[derive(Debug, Default, Clone)]
pub struct GridMap {
    map: std::collections::HashMap<String, String>,
}

impl GridMap {
    pub fn parse(text: &str) -> Result<GridMap, String> {
        let mut map = std::collections::HashMap::new();
        for (n, l) in lines(text) {
            let f = fields(l).map_err(|e| format!("line {n}: {e}"))?;
            let [dn, users] = f.as_slice() else {
                return Err(format!("line {n}: expected \"DN\" user"));
            };
            let user = users.split(',').next().unwrap_or_default().trim();
            if !dn.starts_with('/') || user.is_empty() {
                return Err(format!("line {n}: expected \"/DN\" user"));
            }
            map.entry(dn.clone()).or_insert_with(|| user.to_string());
        }
        Ok(GridMap { map })
    }

    pub fn user(&self, dn: &str) -> Option<&str> {
        self.map.get(dn).map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// `*` anywhere, matching any run of characters.
pub fn glob(pattern: &str, s: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == s;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !s.starts_with(first) || !s[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &s[first.len()..s.len() - last.len()];
    for p in &parts[1..parts.len() - 1] {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    true
}

#[derive(Debug, Clone)]
struct RoleLine {
    dn: String,
    fqan: String,
    user: String,
}

/// (DN, FQAN) patterns → local user name.
#[derive(Debug, Default, Clone)]
pub struct VomsMap {
    lines: Vec<RoleLine>,
}

impl VomsMap {
    pub fn parse(text: &str) -> Result<VomsMap, String> {
        let mut out = Vec::new();
        for (n, l) in lines(text) {
            let f = fields(l).map_err(|e| format!("line {n}: {e}"))?;
            let (dn, fqan, user) = match f.as_slice() {
                [dn, fqan, user] => (dn.clone(), fqan.clone(), user.clone()),
                [fqan, user] => ("*".to_string(), fqan.clone(), user.clone()),
                _ => return Err(format!("line {n}: expected \"DN\" \"FQAN\" user")),
            };
            if !fqan.starts_with('/') && fqan != "*" {
                return Err(format!("line {n}: an FQAN pattern starts with /"));
            }
            out.push(RoleLine {
                dn,
                fqan: short_fqan(&fqan),
                user,
            });
        }
        Ok(VomsMap { lines: out })
    }

    /// The user of the first FQAN (in order) some line matches.
    pub fn user(&self, dn: &str, fqans: &[String]) -> Option<&str> {
        fqans.iter().find_map(|f| {
            let f = short_fqan(f);
            self.lines
                .iter()
                .find(|l| glob(&l.dn, dn) && (l.fqan == "/*" || glob(&l.fqan, &f)))
                .map(|l| l.user.as_str())
        })
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gridmap() {
        let m = GridMap::parse(
            "# comment\n\"/DC=org/CN=Alice Smith\" alice,alice2\n/DC=org/CN=bob bob\n",
        )
        .unwrap();
        assert_eq!(m.user("/DC=org/CN=Alice Smith"), Some("alice"));
        assert_eq!(m.user("/DC=org/CN=bob"), Some("bob"));
        assert_eq!(m.user("/DC=org/CN=Alice"), None);
        assert!(GridMap::parse("\"/DC=org/CN=x alice\n").is_err());
        assert!(GridMap::parse("alice\n").is_err());
    }

    #[test]
    fn rolemap() {
        let m = VomsMap::parse(
            "\"*\" \"/cms/Role=production\" cmsprod\n\"/DC=org/*\" \"/cms\" cmsuser\n\"/atlas*\" atlas\n",
        )
        .unwrap();
        let f = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let prod = f(&[
            "/cms/Role=production/Capability=NULL",
            "/cms/Role=NULL/Capability=NULL",
        ]);
        assert_eq!(m.user("/DC=x/CN=a", &prod), Some("cmsprod"));
        let plain = f(&["/cms/Role=NULL/Capability=NULL"]);
        assert_eq!(m.user("/DC=org/CN=a", &plain), Some("cmsuser"));
        assert_eq!(m.user("/DC=x/CN=a", &plain), None);
        assert_eq!(m.user("/DC=x/CN=a", &f(&["/atlas/higgs"])), Some("atlas"));
        assert!(glob("a*b*c", "axxbyyc") && !glob("a*b*c", "axxc") && glob("*", ""));
    }
}
