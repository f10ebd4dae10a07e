//! `MetaError`: what the namespace store can fail with, and its kind.

use tessera_types::{ErrorKind, PathError};

/// Errors of the namespace store.
#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    #[error("no such file or directory: {0}")]
    NotFound(String),
    #[error("file exists: {0}")]
    AlreadyExists(String),
    #[error("directory not empty: {0}")]
    NotEmpty(String),
    #[error("not a directory: {0}")]
    NotADirectory(String),
    #[error("is a directory: {0}")]
    IsADirectory(String),
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// Only the owner or root may (EPERM).
    #[error("operation not permitted: {0}")]
    NotPermitted(String),
    #[error("quota exceeded: {0}")]
    QuotaExceeded(String),
    #[error("invalid argument: {0}")]
    Invalid(String),
    #[error("operation would cross quota nodes with too large a tree: {0}")]
    CrossDevice(String),
    #[error("resource busy: {0}")]
    Busy(String),
    #[error(transparent)]
    Path(#[from] PathError),
    #[error("corrupt record {what}: {detail}")]
    Corrupt { what: String, detail: String },
    #[error("unsupported record version {version} in {what} (this build reads up to {max})")]
    Version { what: String, version: u8, max: u8 },
    #[error("rocksdb: {0}")]
    Db(#[from] rocksdb::Error),
    /// This node may not change the namespace now (metadata HA: it does
    /// not hold the lease, or no longer can prove it).
    #[error("not the active metadata node: {0}")]
    NotActive(String),
}

impl MetaError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            MetaError::NotFound(_) => ErrorKind::NotFound,
            MetaError::AlreadyExists(_) => ErrorKind::AlreadyExists,
            MetaError::NotEmpty(_) => ErrorKind::NotEmpty,
            MetaError::NotADirectory(_) => ErrorKind::NotADirectory,
            MetaError::IsADirectory(_) => ErrorKind::IsADirectory,
            MetaError::PermissionDenied(_) => ErrorKind::PermissionDenied,
            MetaError::NotPermitted(_) => ErrorKind::NotPermitted,
            MetaError::QuotaExceeded(_) => ErrorKind::QuotaExceeded,
            MetaError::Invalid(_) => ErrorKind::InvalidArgument,
            MetaError::CrossDevice(_) => ErrorKind::CrossDevice,
            MetaError::Busy(_) => ErrorKind::Busy,
            MetaError::Path(p) => p.kind(),
            MetaError::Corrupt { .. } | MetaError::Version { .. } => ErrorKind::Corrupt,
            MetaError::Db(_) => ErrorKind::Io,
            MetaError::NotActive(_) => ErrorKind::Unavailable,
        }
    }
}

pub(crate) fn corrupt(what: impl Into<String>, detail: impl std::fmt::Display) -> MetaError {
    MetaError::Corrupt {
        what: what.into(),
        detail: detail.to_string(),
    }
}
