//! Token scopes, checked before the store is touched (so a refusal has no
//! side effect). An identity without a token passes; with one, the
//! operation must be within its scopes, and then the namespace's own
//! permission checks (mode bits) apply to the identity the token maps to.

use tessera_meta::{MetaError, Overwrite};
use tessera_types::{Access, Identity, NsPath, TokenGrant};

fn need(
    who: &Identity,
    ok: impl FnOnce(&TokenGrant) -> bool,
    what: &str,
    path: &NsPath,
) -> Result<(), MetaError> {
    match &who.token {
        None => Ok(()),
        Some(g) if ok(g) => Ok(()),
        // The read-only grant of a request without credentials.
        Some(g) if g.issuer == "(anonymous)" => Err(MetaError::PermissionDenied(format!(
            "{what} {} needs credentials (a bearer token): without them, clients may only \
             read and list",
            path.display()
        ))),
        Some(g) if g.issuer == tessera_types::LIMITED_PROXY => {
            Err(MetaError::PermissionDenied(format!(
                "{what} {} refused: a limited proxy (of {}) may only read and list",
                path.display(),
                g.subject
            )))
        }
        Some(g) => Err(MetaError::PermissionDenied(format!(
            "the token of {} (issuer {}) does not allow {what} on {}",
            g.subject,
            g.issuer,
            path.display()
        ))),
    }
}

/// Read data or list: `storage.read`.
pub(crate) fn read(who: &Identity, path: &NsPath) -> Result<(), MetaError> {
    need(who, |g| g.allows(Access::Read, path), "reading", path)
}

/// Stat: any scope on the path, below it or above it.
pub(crate) fn look(who: &Identity, path: &NsPath) -> Result<(), MetaError> {
    need(who, |g| g.may_look(path), "looking at", path)
}

/// Make a directory (parents of a create scope's path included).
pub(crate) fn mkdir(who: &Identity, path: &NsPath) -> Result<(), MetaError> {
    need(who, |g| g.may_mkdir(path), "making a directory", path)
}

/// Create something new: `storage.create` (or modify).
pub(crate) fn create(who: &Identity, path: &NsPath) -> Result<(), MetaError> {
    need(who, |g| g.allows(Access::Create, path), "creating", path)
}

/// Change or delete what exists: `storage.modify`.
pub(crate) fn modify(who: &Identity, path: &NsPath) -> Result<(), MetaError> {
    need(who, |g| g.allows(Access::Modify, path), "modifying", path)
}

/// Write a file: a create scope at least. What the write may then do
/// with a file that exists (now or when it commits) is the returned
/// [`Overwrite`]: replacing needs modify, so a create-only token that
/// asked to replace gets `NotPermitted`, which the store enforces
/// atomically at the open and again at the commit.
pub(crate) fn write(
    who: &Identity,
    path: &NsPath,
    overwrite: bool,
) -> Result<Overwrite, MetaError> {
    let Some(g) = &who.token else {
        return Ok(overwrite.into());
    };
    create(who, path)?;
    Ok(if !overwrite {
        Overwrite::No
    } else if g.allows(Access::Modify, path) {
        Overwrite::Yes
    } else {
        Overwrite::NotPermitted
    })
}

/// Whether a rename may replace its destination: without a modify
/// scope on it, the store refuses an existing one (atomically).
pub(crate) fn may_replace(who: &Identity, path: &NsPath) -> bool {
    who.token
        .as_ref()
        .is_none_or(|g| g.allows(Access::Modify, path))
}
