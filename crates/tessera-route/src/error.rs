//! The typed failure of a routing decision: the core's own error, or a
//! refusal with its kind (a capability that does not verify, a gateway
//! asked for what only the metadata service serves).

use tessera_core::CoreError;
use tessera_types::ErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    #[error(transparent)]
    Core(#[from] CoreError),
    #[error("{msg}")]
    Refused { kind: ErrorKind, msg: String },
}

impl RouteError {
    pub fn denied(msg: impl Into<String>) -> RouteError {
        RouteError::Refused {
            kind: ErrorKind::PermissionDenied,
            msg: msg.into(),
        }
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            RouteError::Core(e) => e.kind(),
            RouteError::Refused { kind, .. } => *kind,
        }
    }
}
