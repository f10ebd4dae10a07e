//! Claims beyond what the JWT library checks (signature, `exp`, `nbf`,
//! `iss`, `aud`): the WLCG profile version, and the scopes, resolved to
//! namespace paths under the issuer's base path.

use crate::jws::{self, Header};
use crate::{AuthError, ANY_AUDIENCE};
use serde::Deserialize;
use tessera_types::{Access, NsPath, ScopeGrant};

/// The claims we read (all checked only after the signature verifies).
#[derive(Debug, Default, Deserialize)]
pub struct Claims {
    pub iss: Option<String>,
    pub sub: Option<String>,
    /// Seconds since the epoch (integers, or numbers some issuers write
    /// with a fraction).
    pub exp: Option<f64>,
    pub nbf: Option<f64>,
    pub iat: Option<f64>,
    /// A string or an array of strings.
    pub aud: Option<serde_json::Value>,
    #[serde(default)]
    pub scope: Option<String>,
    /// Non-standard, some old issuers: a string or an array.
    #[serde(default)]
    pub scp: Option<serde_json::Value>,
    #[serde(default, rename = "wlcg.ver")]
    pub wlcg_ver: Option<String>,
    /// WLCG groups (`/cms`, `/cms/production`): an array, or (some
    /// issuers) a comma- or space-separated string.
    #[serde(default, rename = "wlcg.groups")]
    pub wlcg_groups: Option<serde_json::Value>,
}

/// The token's `wlcg.groups`, at most 64 names of at most 255 bytes each.
pub fn groups(c: &Claims) -> Result<Vec<String>, AuthError> {
    let names: Vec<String> = match &c.wlcg_groups {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(serde_json::Value::String(s)) => s
            .split(|ch: char| ch == ',' || ch.is_whitespace())
            .filter(|g| !g.is_empty())
            .map(str::to_string)
            .collect(),
        Some(serde_json::Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| AuthError::Claims("wlcg.groups holds a non-string".into()))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(AuthError::Claims("wlcg.groups is not a list".into())),
    };
    if names.len() > 64 || names.iter().any(|g| g.len() > 255) {
        return Err(AuthError::Claims("wlcg.groups too long".into()));
    }
    Ok(names)
}

/// The token in an `authz=` value (HTTPS query, XRootD CGI) as sent:
/// percent-encoded or not, `+` for a space, with or without the `Bearer `
/// prefix (as the reference server takes it). `None` when empty.
pub fn authz_token(raw: &str) -> Option<String> {
    // `+` is a space in a query; tokens (base64url) never contain one.
    let raw = raw.replace('+', " ");
    let decoded = tessera_types::percent_decode(&raw)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or(raw);
    let t = decoded
        .strip_prefix("Bearer ")
        .or_else(|| decoded.strip_prefix("bearer "))
        .unwrap_or(&decoded)
        .trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// The header and the unverified payload of a compact JWS (for display).
pub fn peek(token: &str) -> Result<(Header, serde_json::Value), AuthError> {
    let parts = jws::split(token)?;
    let payload: serde_json::Value = serde_json::from_slice(&parts.payload)
        .map_err(|e| AuthError::Malformed(format!("payload: {e}")))?;
    Ok((parts.header, payload))
}

/// The time checks, at `now` (seconds) with `leeway`: `exp` required and
/// not past, `nbf` and `iat` not in the future.
pub fn check_times(c: &Claims, now: u64, leeway: u64) -> Result<u64, AuthError> {
    let now = now as f64;
    let leeway = leeway as f64;
    let exp = c.exp.ok_or_else(|| AuthError::Claims("no exp".into()))?;
    if exp + leeway < now {
        return Err(AuthError::Expired);
    }
    if c.nbf.is_some_and(|t| t > now + leeway) || c.iat.is_some_and(|t| t > now + leeway) {
        return Err(AuthError::NotYetValid);
    }
    Ok(exp.max(0.0) as u64)
}

/// `aud`, required: a string or an array with at least one value in
/// `accepted` or the WLCG "any" audience.
pub fn check_audience(c: &Claims, accepted: &[String]) -> Result<(), AuthError> {
    let ok = |a: &str| ANY_AUDIENCE.contains(&a) || accepted.iter().any(|x| x == a);
    match &c.aud {
        None => Err(AuthError::Claims("no aud".into())),
        Some(serde_json::Value::String(a)) if ok(a) => Ok(()),
        Some(serde_json::Value::Array(v)) if v.iter().filter_map(|a| a.as_str()).any(ok) => Ok(()),
        Some(_) => Err(AuthError::Audience),
    }
}

/// `wlcg.ver`: major version 1 (newer minors accepted).
pub fn check_version(c: &Claims) -> Result<(), AuthError> {
    match &c.wlcg_ver {
        None => Ok(()),
        Some(v) if v.split('.').next() == Some("1") => Ok(()),
        Some(v) => Err(AuthError::Claims(format!("wlcg.ver {v} is not supported"))),
    }
}

fn unescape(s: &str) -> Result<Vec<u8>, AuthError> {
    tessera_types::percent_decode(s)
        .ok_or_else(|| AuthError::Claims(format!("bad escape in scope path {s}")))
}

/// The scopes of a token, as grants under `base`. Storage scopes must
/// carry a path; scope paths are normalised on their own first (so `..`
/// cannot climb out of the base path), then joined under it. Scopes that
/// are not about storage are ignored. With `may_create` false, only read
/// and stage scopes are honoured.
pub fn scopes(c: &Claims, base: &NsPath, may_create: bool) -> Result<Vec<ScopeGrant>, AuthError> {
    // Space-separated, as the WLCG profile and RFC 8693 say: a tab is
    // not a separator, and a scope with a control character in it
    // refuses the token (an issuer that splits on spaces only meant
    // something else by it).
    let spaced = |s: &str| {
        s.split(' ')
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let mut text: Vec<String> = Vec::new();
    if let Some(s) = &c.scope {
        text.extend(spaced(s));
    }
    match &c.scp {
        Some(serde_json::Value::String(s)) => text.extend(spaced(s)),
        Some(serde_json::Value::Array(a)) => {
            text.extend(a.iter().filter_map(|v| v.as_str().map(str::to_string)))
        }
        _ => {}
    }
    if let Some(bad) = text.iter().find(|t| t.chars().any(char::is_control)) {
        return Err(AuthError::Claims(format!(
            "a control character in scope {bad:?} (scopes are separated by spaces)"
        )));
    }
    let mut out = Vec::new();
    for item in text {
        let (name, path) = match item.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (item.as_str(), None),
        };
        let access: &[Access] = match name {
            "storage.read" | "read" => &[Access::Read],
            "storage.create" => &[Access::Create],
            "storage.modify" => &[Access::Modify],
            "write" => &[Access::Modify],
            "storage.stage" => &[Access::Stage],
            _ => continue, // openid, offline_access, compute.*, ...
        };
        let path = match path {
            Some(p) if p.starts_with('/') => p,
            // WLCG: a storage scope without a path is not valid.
            _ => {
                return Err(AuthError::Claims(format!(
                    "scope {item} has no absolute path"
                )))
            }
        };
        let raw = unescape(path)?;
        check_scope_path(&item, path, &raw)?;
        let dir_only = raw.len() > 1 && raw.ends_with(b"/");
        let rel =
            NsPath::parse(&raw).map_err(|e| AuthError::Claims(format!("scope {item}: {e}")))?;
        let mut full = base.clone();
        for comp in rel.components() {
            full = full
                .join(comp)
                .map_err(|e| AuthError::Claims(format!("scope {item}: {e}")))?;
        }
        for a in access {
            if !may_create && matches!(a, Access::Create | Access::Modify) {
                continue;
            }
            out.push(ScopeGrant {
                access: *a,
                path: full.clone(),
                dir_only,
            });
        }
    }
    Ok(out)
}

/// A scope path must name its directory plainly: a `.` or `..`
/// component, an empty one (`//`), or a separator written as `%2F`
/// refuses the whole token rather than being normalised into something
/// its issuer may not have meant (a trailing `/` names a directory).
fn check_scope_path(item: &str, text: &str, raw: &[u8]) -> Result<(), AuthError> {
    let bad = |why: &str| Err(AuthError::Claims(format!("scope {item}: {why}")));
    let lower = text.to_ascii_lowercase();
    if lower.contains("%2f") || lower.contains("%5c") {
        return bad("a percent-encoded separator");
    }
    let body = raw.strip_prefix(b"/").unwrap_or(raw);
    let body = body.strip_suffix(b"/").unwrap_or(body);
    if body.is_empty() {
        return Ok(()); // `/`
    }
    for comp in body.split(|&b| b == b'/') {
        match comp {
            b"" => return bad("an empty path component (//)"),
            b"." | b".." => return bad("a . or .. path component"),
            _ => {}
        }
    }
    Ok(())
}

/// For the fuzzer (`fuzz/`): `data` as a token's `scope` claim under base
/// path `/vo`; what validates must name only clean paths under the base.
#[doc(hidden)]
pub fn fuzz_scope(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let c = Claims {
        scope: Some(text.to_string()),
        ..Claims::default()
    };
    let base = NsPath::parse("/vo").expect("base");
    if let Ok(grants) = scopes(&c, &base, true) {
        for g in grants {
            let shown = g.path.display();
            assert!(g.path.starts_with(&base), "{shown} escapes /vo");
            assert!(
                !shown.contains("/../") && !shown.ends_with("/..") && !shown.contains("//"),
                "{shown}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(scope: &str) -> Claims {
        Claims {
            iss: Some("https://i".into()),
            sub: Some("s".into()),
            scope: Some(scope.into()),
            wlcg_ver: Some("1.0".into()),
            ..Claims::default()
        }
    }

    fn paths(v: &[ScopeGrant]) -> Vec<(Access, String, bool)> {
        v.iter()
            .map(|g| (g.access, g.path.display(), g.dir_only))
            .collect()
    }

    #[test]
    fn scopes_under_the_base_path() {
        let base = NsPath::parse("/vo").unwrap();
        let g = scopes(
            &claims("openid storage.read:/ storage.create:/up/ storage.modify:/a%20b write:/w"),
            &base,
            true,
        )
        .unwrap();
        assert_eq!(
            paths(&g),
            vec![
                (Access::Read, "/vo".into(), false),
                (Access::Create, "/vo/up".into(), true),
                (Access::Modify, "/vo/a b".into(), false),
                (Access::Modify, "/vo/w".into(), false),
            ]
        );
        // Dot components, empty ones and encoded separators refuse the
        // whole token (never normalised).
        for bad in [
            "storage.read:/../../etc",
            "storage.read:/x/%2e%2e/%2e%2e/y",
            "storage.read:/x/./y",
            "storage.read:/x/.",
            "storage.modify:/x//y",
            "storage.modify://x",
            "storage.create:/x%2Fy",
            "storage.create:/x%2fy",
            "storage.read:/x%5c..%5cy",
            "openid storage.read:/ok storage.read:/a/../b",
        ] {
            assert!(scopes(&claims(bad), &base, true).is_err(), "{bad}");
        }
        let g = scopes(&claims("storage.read:/x/..y/.z/y.."), &base, true).unwrap();
        assert_eq!(g[0].path.display(), "/vo/x/..y/.z/y..");
        // A storage scope without a path is refused; creation can be off.
        assert!(scopes(&claims("storage.read"), &base, true).is_err());
        let g = scopes(&claims("storage.read:/ storage.modify:/"), &base, false).unwrap();
        assert_eq!(g.len(), 1);
        assert!(check_version(&claims("")).is_ok());
        let mut c = claims("");
        c.wlcg_ver = Some("2.0".into());
        assert!(check_version(&c).is_err());
    }

    #[test]
    fn times_and_audiences() {
        let mut c = claims("");
        assert!(matches!(
            check_times(&c, 1000, 60),
            Err(AuthError::Claims(_))
        ));
        c.exp = Some(950.0);
        assert_eq!(check_times(&c, 1000, 60), Ok(950), "within the leeway");
        c.exp = Some(930.5);
        assert_eq!(check_times(&c, 1000, 60), Err(AuthError::Expired));
        c.exp = Some(2000.0);
        c.nbf = Some(1050.0);
        assert!(check_times(&c, 1000, 60).is_ok());
        c.iat = Some(1100.0);
        assert_eq!(check_times(&c, 1000, 60), Err(AuthError::NotYetValid));
        let here = ["https://se".to_string()];
        assert!(matches!(
            check_audience(&c, &here),
            Err(AuthError::Claims(_))
        ));
        c.aud = Some(serde_json::json!("https://se"));
        assert!(check_audience(&c, &here).is_ok());
        c.aud = Some(serde_json::json!([
            "https://x",
            "https://wlcg.cern.ch/jwt/v1/any"
        ]));
        assert!(check_audience(&c, &here).is_ok());
        c.aud = Some(serde_json::json!(["https://x", 3]));
        assert_eq!(check_audience(&c, &here), Err(AuthError::Audience));
    }

    #[test]
    fn scopes_are_separated_by_spaces_only() {
        let base = NsPath::parse("/").unwrap();
        let g = scopes(&claims("  storage.read:/a   storage.read:/b "), &base, true).unwrap();
        assert_eq!(g.len(), 2);
        // A tab is no separator: an issuer splitting on spaces meant one
        // scope; the token is refused rather than read as two.
        for bad in [
            "storage.read:/a\tstorage.modify:/",
            "storage.read:/a\nstorage.modify:/",
        ] {
            assert!(scopes(&claims(bad), &base, true).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn authz_values() {
        assert_eq!(authz_token("Bearer%20abc.def").as_deref(), Some("abc.def"));
        assert_eq!(authz_token("bearer+abc").as_deref(), Some("abc"));
        assert_eq!(authz_token("abc").as_deref(), Some("abc"));
        assert_eq!(authz_token("Bearer%20"), None);
        assert_eq!(authz_token(""), None);
    }

    #[test]
    fn groups_as_array_or_string() {
        let mut c = claims("");
        assert!(groups(&c).unwrap().is_empty());
        c.wlcg_groups = Some(serde_json::json!(["/cms", "/cms/production"]));
        assert_eq!(groups(&c).unwrap(), ["/cms", "/cms/production"]);
        c.wlcg_groups = Some(serde_json::json!("/atlas, /atlas/prod"));
        assert_eq!(groups(&c).unwrap(), ["/atlas", "/atlas/prod"]);
        c.wlcg_groups = Some(serde_json::json!([1]));
        assert!(groups(&c).is_err());
        c.wlcg_groups = Some(serde_json::json!({"a": 1}));
        assert!(groups(&c).is_err());
    }
}
