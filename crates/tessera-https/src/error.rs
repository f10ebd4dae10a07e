//! How failures reach HTTP clients: one table from error kinds to status
//! codes (as davix and gfal2 read them), a short text body.

use tessera_core::CoreError;
use tessera_types::ErrorKind;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {msg}", status.as_u16())]
pub struct HttpError {
    /// Always a 4xx or 5xx (`new` makes anything else a 500): a failure
    /// never goes out as a success.
    pub status: hyper::StatusCode,
    pub msg: String,
    /// The kind of the core's failure it came from, if it did.
    pub kind: Option<ErrorKind>,
}

impl HttpError {
    pub fn new(status: u16, msg: impl Into<String>) -> HttpError {
        let status = hyper::StatusCode::from_u16(status)
            .ok()
            .filter(|s| s.is_client_error() || s.is_server_error())
            .unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
        HttpError {
            status,
            msg: msg.into(),
            kind: None,
        }
    }

    /// An authorization refusal (the identity may not), as opposed to a
    /// 403 for what is refused whoever asks (a finite PROPFIND depth, a
    /// copy onto itself).
    pub fn is_denial(&self) -> bool {
        matches!(
            self.kind,
            Some(ErrorKind::PermissionDenied | ErrorKind::NotPermitted)
        )
    }
}

/// The status for an error kind.
pub fn status_of(kind: ErrorKind) -> u16 {
    match kind {
        ErrorKind::NotFound => 404,
        ErrorKind::AlreadyExists => 409,
        ErrorKind::NotEmpty => 409,
        ErrorKind::NotADirectory => 409,
        ErrorKind::IsADirectory => 409,
        ErrorKind::PermissionDenied | ErrorKind::NotPermitted => 403,
        ErrorKind::Unauthenticated => 401,
        ErrorKind::QuotaExceeded | ErrorKind::NoSpace => 507,
        ErrorKind::InvalidArgument | ErrorKind::NameTooLong => 400,
        ErrorKind::CrossDevice => 502,
        ErrorKind::Busy => 423,
        ErrorKind::Unavailable | ErrorKind::NoMemory => 503,
        ErrorKind::Corrupt | ErrorKind::Io => 500,
        ErrorKind::Unsupported => 501,
    }
}

impl From<tessera_route::RouteError> for HttpError {
    fn from(e: tessera_route::RouteError) -> HttpError {
        match e {
            tessera_route::RouteError::Core(c) => c.into(),
            tessera_route::RouteError::Refused { kind, msg } => HttpError {
                kind: Some(kind),
                ..HttpError::new(status_of(kind), msg)
            },
            tessera_route::RouteError::ViewWrite(w) => {
                use tessera_fed::WriteRefused as No;
                let status = match &w {
                    No::NotConfigured => 405,
                    No::Exists => 412,
                    No::MustBeConditional => 428,
                    No::Unavailable(_) | No::Lookup(_) => 503,
                };
                HttpError::new(status, w.to_string())
            }
        }
    }
}

impl From<CoreError> for HttpError {
    fn from(e: CoreError) -> HttpError {
        let kind = e.kind();
        if e.has_internal_detail() {
            tracing::warn!("request failed: {e}");
        }
        HttpError {
            kind: Some(kind),
            ..HttpError::new(
                status_of(kind),
                format!("{} (errno {})", e.client_message(), kind.errno()),
            )
        }
    }
}
