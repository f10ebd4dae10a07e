//! WebDAV dead properties (RFC 4918 §4) kept as extended attributes in
//! their own namespace: `{ns}local` is `user.dav.<ns percent-encoded>.<local>`
//! (the namespace's dots are encoded, so the first dot after it ends it;
//! an empty namespace is allowed). The value is the property's content
//! as XML (`davxml`). Properties in `DAV:` and `LCGDM:` are live: never
//! stored, refused by PROPPATCH.

use crate::davxml::PropName;
use crate::error::HttpError;
use crate::Ctx;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC};
use tessera_types::NsPath;

pub const PREFIX: &str = "user.dav.";

/// What a namespace URI escapes in an attribute name.
const NS: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b':')
    .remove(b'/')
    .remove(b'-')
    .remove(b'_')
    .remove(b'~');

/// Whether `{ns}` holds live properties (the server's own).
pub fn protected(ns: &str) -> bool {
    ns == "DAV:" || ns == "LCGDM:"
}

/// The attribute that holds property `name`; `None` when its name is
/// longer than an attribute name may be (255 bytes).
pub fn attr_name(name: &PropName) -> Option<Vec<u8>> {
    let n = format!(
        "{PREFIX}{}.{}",
        percent_encoding::utf8_percent_encode(&name.0, NS),
        name.1
    );
    (n.len() <= 255).then(|| n.into_bytes())
}

/// The property an attribute holds, if it is one.
pub fn prop_of(attr: &[u8]) -> Option<PropName> {
    let rest = std::str::from_utf8(attr).ok()?.strip_prefix(PREFIX)?;
    let (ns, local) = rest.split_once('.')?;
    let ns = percent_encoding::percent_decode_str(ns)
        .decode_utf8()
        .ok()?;
    Some((ns.into_owned(), local.to_string()))
}

/// The dead properties among attributes `attrs`, with their values.
fn props_of(attrs: Vec<(Vec<u8>, Vec<u8>)>) -> Vec<(PropName, String)> {
    attrs
        .into_iter()
        .filter_map(|(n, v)| Some((prop_of(&n)?, String::from_utf8(v).ok()?)))
        .collect()
}

/// The dead properties of `p`, with their values.
pub async fn of(ctx: &Ctx, p: &NsPath) -> Result<Vec<(PropName, String)>, HttpError> {
    Ok(props_of(ctx.core.xattr_list(&ctx.who, p.clone()).await?))
}

/// The dead properties of each entry (path, inode) of a listing of `dir`
/// (one core call for all of them; an entry that cannot be read has
/// none).
pub async fn of_each(
    core: &tessera_core::Core,
    who: &tessera_types::Identity,
    dir: &NsPath,
    children: Vec<(NsPath, u64)>,
) -> Result<Vec<Vec<(PropName, String)>>, HttpError> {
    let all = core.xattr_list_children(who, dir.clone(), children).await?;
    Ok(all
        .into_iter()
        .map(|r| r.map(props_of).unwrap_or_default())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (ns, local) in [
            ("http://example.com/neon/litmus/", "prop0"),
            ("", "nonamespace"),
            ("urn:x.y%z", "a.b-c"),
        ] {
            let n = (ns.to_string(), local.to_string());
            let a = attr_name(&n).expect("short enough");
            assert!(a.starts_with(b"user.dav."));
            assert_eq!(prop_of(&a), Some(n));
        }
        assert_eq!(prop_of(b"user.other"), None);
        let long = ("x".repeat(300), "p".to_string());
        assert_eq!(attr_name(&long), None);
        assert!(protected("DAV:") && !protected("http://x/"));
    }
}
