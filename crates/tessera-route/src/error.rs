//! The typed failure of a routing decision: the core's own error, or a
//! refusal with its kind (a capability that does not verify, a gateway
//! asked for what only the metadata service serves, a view's write
//! policy).

use tessera_core::CoreError;
use tessera_types::ErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    #[error(transparent)]
    Core(#[from] CoreError),
    #[error("{msg}")]
    Refused { kind: ErrorKind, msg: String },
    /// A write into a federated view the view's policy refused (each
    /// front-end has its own answer for each reason).
    #[error("{0}")]
    ViewWrite(#[from] tessera_fed::WriteRefused),
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
            RouteError::ViewWrite(w) => match w {
                tessera_fed::WriteRefused::NotConfigured => ErrorKind::Unsupported,
                tessera_fed::WriteRefused::Exists => ErrorKind::AlreadyExists,
                tessera_fed::WriteRefused::MustBeConditional => ErrorKind::InvalidArgument,
                tessera_fed::WriteRefused::Unavailable(_)
                | tessera_fed::WriteRefused::Lookup(_) => ErrorKind::Unavailable,
            },
        }
    }
}
