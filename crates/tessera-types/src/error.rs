//! `ErrorKind`: the protocol-independent class of a failure, with its errno.

/// Protocol-independent classification of a failure.
///
/// Each library crate has its own error type with a `kind()` returning one of
/// these; each front-end owns exactly one table mapping a kind to its wire
/// form (errno + kXR code, HTTP status, gRPC code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    NotFound,
    AlreadyExists,
    NotEmpty,
    NotADirectory,
    IsADirectory,
    PermissionDenied,
    /// Only the owner (or root) may do this (chmod, a sticky directory's
    /// entries): POSIX's EPERM, refused like `PermissionDenied` on the wire.
    NotPermitted,
    QuotaExceeded,
    NoSpace,
    InvalidArgument,
    NameTooLong,
    CrossDevice,
    Busy,
    Unavailable,
    Corrupt,
    Io,
    Unsupported,
    /// The server is short of memory for now (the request may come back).
    NoMemory,
    /// What was asked needs a verified credential (a token, a macaroon, a
    /// certificate) and the request had none: HTTP's 401, where
    /// `PermissionDenied` is what the credential does not allow.
    Unauthenticated,
}

impl ErrorKind {
    /// The POSIX errno a client would expect for this kind.
    pub fn errno(self) -> i32 {
        match self {
            ErrorKind::NotFound => 2,          // ENOENT
            ErrorKind::AlreadyExists => 17,    // EEXIST
            ErrorKind::NotEmpty => 39,         // ENOTEMPTY
            ErrorKind::NotADirectory => 20,    // ENOTDIR
            ErrorKind::IsADirectory => 21,     // EISDIR
            ErrorKind::PermissionDenied => 13, // EACCES
            ErrorKind::NotPermitted => 1,      // EPERM
            ErrorKind::QuotaExceeded => 122,   // EDQUOT
            ErrorKind::NoSpace => 28,          // ENOSPC
            ErrorKind::InvalidArgument => 22,  // EINVAL
            ErrorKind::NameTooLong => 36,      // ENAMETOOLONG
            ErrorKind::CrossDevice => 18,      // EXDEV
            ErrorKind::Busy => 16,             // EBUSY
            ErrorKind::Unavailable => 11,      // EAGAIN
            ErrorKind::Corrupt => 5,           // EIO
            ErrorKind::Io => 5,                // EIO
            ErrorKind::Unsupported => 95,      // EOPNOTSUPP
            ErrorKind::NoMemory => 12,         // ENOMEM
            ErrorKind::Unauthenticated => 13,  // EACCES
        }
    }

    /// Stable short name, used in logs, metrics labels and `-m` output.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not_found",
            ErrorKind::AlreadyExists => "already_exists",
            ErrorKind::NotEmpty => "not_empty",
            ErrorKind::NotADirectory => "not_a_directory",
            ErrorKind::IsADirectory => "is_a_directory",
            ErrorKind::PermissionDenied => "permission_denied",
            ErrorKind::NotPermitted => "not_permitted",
            ErrorKind::QuotaExceeded => "quota_exceeded",
            ErrorKind::NoSpace => "no_space",
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::NameTooLong => "name_too_long",
            ErrorKind::CrossDevice => "cross_device",
            ErrorKind::Busy => "busy",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::Io => "io",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::NoMemory => "no_memory",
            ErrorKind::Unauthenticated => "unauthenticated",
        }
    }
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 19] = [
        ErrorKind::NotFound,
        ErrorKind::AlreadyExists,
        ErrorKind::NotEmpty,
        ErrorKind::NotADirectory,
        ErrorKind::IsADirectory,
        ErrorKind::PermissionDenied,
        ErrorKind::NotPermitted,
        ErrorKind::QuotaExceeded,
        ErrorKind::NoSpace,
        ErrorKind::InvalidArgument,
        ErrorKind::NameTooLong,
        ErrorKind::CrossDevice,
        ErrorKind::Busy,
        ErrorKind::Unavailable,
        ErrorKind::Corrupt,
        ErrorKind::Io,
        ErrorKind::Unsupported,
        ErrorKind::NoMemory,
        ErrorKind::Unauthenticated,
    ];

    /// The kind named by [`ErrorKind::as_str`] (errors that crossed a
    /// process boundary).
    pub fn from_name(name: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
