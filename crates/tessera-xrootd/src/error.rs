//! Errors of the gateway, and how every failure maps onto the client's own
//! `kXR_error` number (with the errno spelled in the message).

use crate::proto::err;
use tessera_core::CoreError;
use tessera_types::ErrorKind;

/// What a request handler answers when it fails.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("[{code}] {msg}")]
pub struct XrdError {
    pub code: i32,
    pub msg: String,
}

impl XrdError {
    pub fn new(code: i32, msg: impl Into<String>) -> XrdError {
        XrdError {
            code,
            msg: msg.into(),
        }
    }

    pub fn invalid(msg: impl Into<String>) -> XrdError {
        XrdError::new(err::ARG_INVALID, msg)
    }

    pub fn is_directory(path: &tessera_types::NsPath) -> XrdError {
        XrdError::new(
            err::IS_DIRECTORY,
            format!("{} is a directory (errno 21)", path.display()),
        )
    }

    pub fn bad_handle() -> XrdError {
        XrdError::new(err::FILE_NOT_OPEN, "invalid file handle")
    }
}

/// The `kXR_error` number for an error kind (see `XProtocol::mapError`).
pub fn code_of(kind: ErrorKind) -> i32 {
    match kind {
        ErrorKind::NotFound => err::NOT_FOUND,
        ErrorKind::AlreadyExists => err::ITEM_EXISTS,
        ErrorKind::NotEmpty => err::FS_ERROR,
        ErrorKind::NotADirectory => err::NOT_FILE,
        ErrorKind::IsADirectory => err::IS_DIRECTORY,
        ErrorKind::PermissionDenied | ErrorKind::NotPermitted | ErrorKind::Unauthenticated => {
            err::NOT_AUTHORIZED
        }
        ErrorKind::QuotaExceeded => err::OVER_QUOTA,
        ErrorKind::NoSpace => err::NO_SPACE,
        ErrorKind::InvalidArgument => err::ARG_INVALID,
        ErrorKind::NameTooLong => err::ARG_TOO_LONG,
        ErrorKind::CrossDevice => err::UNSUPPORTED,
        ErrorKind::Busy => err::FS_ERROR,
        ErrorKind::Unavailable => err::SERVER_ERROR,
        ErrorKind::Corrupt => err::IO_ERROR,
        ErrorKind::Io => err::IO_ERROR,
        ErrorKind::Unsupported => err::UNSUPPORTED,
        ErrorKind::NoMemory => err::NO_MEMORY,
    }
}

impl From<tessera_xrdproto::DecodeError> for XrdError {
    fn from(e: tessera_xrdproto::DecodeError) -> XrdError {
        XrdError::new(e.code, e.msg)
    }
}

impl From<CoreError> for XrdError {
    fn from(e: CoreError) -> XrdError {
        let kind = e.kind();
        if e.has_internal_detail() {
            tracing::warn!("request failed: {e}");
        }
        XrdError::new(
            code_of(kind),
            format!("{} (errno {})", e.client_message(), kind.errno()),
        )
    }
}

impl From<tessera_route::RouteError> for XrdError {
    fn from(e: tessera_route::RouteError) -> XrdError {
        match e {
            tessera_route::RouteError::Core(c) => c.into(),
            tessera_route::RouteError::Refused { kind, msg } => XrdError::new(code_of(kind), msg),
            tessera_route::RouteError::ViewWrite(w) => {
                let code = match w {
                    tessera_fed::WriteRefused::NotConfigured => err::UNSUPPORTED,
                    _ => err::NO_SERVER,
                };
                XrdError::new(code, w.to_string())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_codes_clients_branch_on() {
        assert_eq!(code_of(ErrorKind::NotFound), 3011);
        assert_eq!(code_of(ErrorKind::PermissionDenied), 3010);
        assert_eq!(code_of(ErrorKind::QuotaExceeded), 3021);
        assert_eq!(code_of(ErrorKind::IsADirectory), 3016);
        assert_eq!(code_of(ErrorKind::AlreadyExists), 3018);
    }
}
