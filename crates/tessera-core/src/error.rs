//! `CoreError`: what any core call can fail with, its kind (the edges map
//! kinds to their protocol's codes) and the message a client may see
//! (never the server's own paths).

use tessera_backend::BackendError;
use tessera_data::DataError;
use tessera_meta::MetaError;
use tessera_types::ErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    #[error(transparent)]
    Meta(#[from] MetaError),
    #[error(transparent)]
    Data(#[from] DataError),
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error("invalid argument: {0}")]
    Invalid(String),
    #[error("permission denied: {0}")]
    Denied(String),
    #[error("not found: {0}")]
    NotFound(String),
    /// The data written does not match the digest its sender announced.
    #[error("checksum mismatch: {0}")]
    Mismatch(String),
    #[error("internal task failed: {0}")]
    Task(String),
    /// The memory budget could not take what the request needs in time.
    #[error("{0}")]
    NoMemory(String),
    /// Reported before: by the metadata service to a data gateway, or by
    /// an upload's first failure to every later step on it.
    #[error("{msg}")]
    Remote { kind: ErrorKind, msg: String },
}

/// A backend error as a client may see it: what failed, not where (no
/// mount points or stripe file names).
fn backend_public(e: &BackendError) -> String {
    match e {
        BackendError::NotFound(_) => "stripe not found".into(),
        BackendError::Exists(_) => "stripe already exists".into(),
        BackendError::Unavailable(_) => "storage unavailable".into(),
        BackendError::TimedOut(_) => "storage unresponsive".into(),
        BackendError::BadLocator(_) => "storage misconfigured".into(),
        BackendError::Io { source, .. } => format!("storage I/O error: {source}"),
    }
}

impl CoreError {
    /// The message for a client: the server's own paths (stripe files,
    /// mount points) stay in its logs. Everything else as `Display`.
    pub fn client_message(&self) -> String {
        match self {
            CoreError::Data(DataError::Backend { index, source }) => {
                format!("stripe {index}: {}", backend_public(source))
            }
            CoreError::Backend(b) => backend_public(b),
            other => other.to_string(),
        }
    }

    /// Whether `client_message` leaves something out that the server's
    /// log should keep.
    pub fn has_internal_detail(&self) -> bool {
        matches!(
            self,
            CoreError::Data(DataError::Backend { .. }) | CoreError::Backend(_)
        )
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            CoreError::Meta(e) => e.kind(),
            CoreError::Data(e) => e.kind(),
            CoreError::Backend(e) => e.kind(),
            CoreError::Invalid(_) => ErrorKind::InvalidArgument,
            CoreError::Denied(_) => ErrorKind::PermissionDenied,
            CoreError::NotFound(_) => ErrorKind::NotFound,
            CoreError::Mismatch(_) => ErrorKind::Corrupt,
            CoreError::Task(_) => ErrorKind::Io,
            CoreError::NoMemory(_) => ErrorKind::NoMemory,
            CoreError::Remote { kind, .. } => *kind,
        }
    }
}

/// How a result is logged and counted: its status word and errno.
pub(crate) fn outcome<T>(res: &Result<T, CoreError>) -> (&'static str, i32) {
    match res {
        Ok(_) => ("ok", 0),
        Err(e) => (e.kind().as_str(), e.kind().errno()),
    }
}
