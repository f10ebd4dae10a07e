//! The authorization decisions a front-end or a capability signer asks for
//! without doing the operation: the same checks, in the same order, as the
//! operation itself makes (token scopes here, then the store's ACL and
//! mode bits), so that a metadata service signs a capability exactly when
//! the write would be allowed on a single server.

use crate::{Core, CoreError};
use tessera_types::{Identity, NsPath};

impl Core {
    /// May `who` open `path` for writing (`overwrite`: replacing a file
    /// that is there)? Blocking; nothing is reserved or changed. The open
    /// itself ([`Core::plan_write`]) decides again, and so does its commit.
    pub fn authorize_write(
        &self,
        who: &Identity,
        path: &NsPath,
        overwrite: bool,
    ) -> Result<(), CoreError> {
        if path.split_last().is_none() {
            return Err(CoreError::Invalid("cannot write /".into()));
        }
        let overwrite = crate::scopes::write(who, path, overwrite)?;
        Ok(self.meta.check_write(path, who, overwrite)?)
    }

    /// May `who` read `path` by its token (an identity without one
    /// passes)? What a federated view asks before it redirects: its files
    /// are other sites', so only the token's scopes apply, not this
    /// namespace's modes.
    pub fn token_allows_read(&self, who: &Identity, path: &NsPath) -> Result<(), CoreError> {
        Ok(crate::scopes::read(who, path)?)
    }

    /// May `who` create `path` by its token (an identity without one
    /// passes)? What a federated view asks before it redirects a write:
    /// `Ok(true)` when the token may also replace a file there (modify),
    /// `Ok(false)` when it may only create.
    pub fn token_allows_create(&self, who: &Identity, path: &NsPath) -> Result<bool, CoreError> {
        crate::scopes::write(who, path, false)?;
        Ok(crate::scopes::may_replace(who, path))
    }

    /// [`Core::authorize_write`] for an async caller (on the blocking pool).
    pub async fn may_write(
        &self,
        who: &Identity,
        path: &NsPath,
        overwrite: bool,
    ) -> Result<(), CoreError> {
        let (core, who, path) = (self.clone(), who.clone(), path.clone());
        crate::blocking(move || core.authorize_write(&who, &path, overwrite)).await?
    }
}
