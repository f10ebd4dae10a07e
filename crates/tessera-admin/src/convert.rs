//! Between the core's types and the admin API's messages, and the one
//! table from error kinds to gRPC codes.

use tessera_core::{CoreError, EntryKind, Inode, QuotaKind, QuotaNodeReport, QuotaTarget};
use tessera_proto::admin::v1 as pb;
use tessera_types::{ErrorKind, NsPath};
use tonic::{Code, Status};

/// The one table from error kinds to gRPC codes.
pub fn code_of(kind: ErrorKind) -> Code {
    match kind {
        ErrorKind::NotFound => Code::NotFound,
        ErrorKind::AlreadyExists => Code::AlreadyExists,
        ErrorKind::PermissionDenied | ErrorKind::NotPermitted => Code::PermissionDenied,
        ErrorKind::QuotaExceeded | ErrorKind::NoSpace => Code::ResourceExhausted,
        ErrorKind::InvalidArgument | ErrorKind::NameTooLong => Code::InvalidArgument,
        ErrorKind::NotEmpty
        | ErrorKind::NotADirectory
        | ErrorKind::IsADirectory
        | ErrorKind::CrossDevice => Code::FailedPrecondition,
        ErrorKind::Busy => Code::Aborted,
        ErrorKind::Unavailable => Code::Unavailable,
        ErrorKind::Corrupt => Code::DataLoss,
        ErrorKind::Io => Code::Internal,
        ErrorKind::Unsupported => Code::Unimplemented,
        ErrorKind::NoMemory => Code::ResourceExhausted,
        ErrorKind::Unauthenticated => Code::Unauthenticated,
    }
}

pub fn status(kind: ErrorKind, msg: String) -> Status {
    let mut s = Status::new(code_of(kind), msg);
    let md = s.metadata_mut();
    if let Ok(v) = kind.errno().to_string().parse() {
        md.insert(tessera_proto::ERRNO_KEY, v);
    }
    if let Ok(v) = kind.as_str().parse() {
        md.insert(tessera_proto::ERROR_KIND_KEY, v);
    }
    s
}

pub fn err(e: CoreError) -> Status {
    status(e.kind(), e.to_string())
}

pub fn path(raw: &[u8]) -> Result<NsPath, Status> {
    NsPath::parse(raw).map_err(|e| status(e.kind(), e.to_string()))
}

pub fn entry(path: &NsPath, i: &Inode) -> pb::Entry {
    // An unreadable placement shows as no layout (fsck reports it).
    let placement = (!i.layout.is_empty())
        .then(|| tessera_core::Placement::decode(&i.layout).ok())
        .flatten();
    pb::Entry {
        path: path.as_bytes().to_vec(),
        name: i.name.clone(),
        id: i.ino,
        parent_id: i.parent,
        r#type: match i.kind {
            EntryKind::Directory => pb::EntryType::Directory as i32,
            EntryKind::File => pb::EntryType::File as i32,
        },
        uid: i.uid,
        gid: i.gid,
        mode: i.mode,
        ctime_ns: i.ctime_ns,
        mtime_ns: i.mtime_ns,
        size: i.size,
        checksum_type: i
            .checksum
            .as_ref()
            .map(|c| c.kind.clone())
            .unwrap_or_default(),
        checksum_hex: i.checksum.as_ref().map(|c| c.hex()).unwrap_or_default(),
        children: i.nchildren,
        quota_node: i.quota_node,
        layout: placement
            .as_ref()
            .map(|p| p.layout.name())
            .unwrap_or_default(),
        block_size: placement.as_ref().map_or(0, |p| p.layout.block_size),
        stripe_fsids: placement.map(|p| p.fsids).unwrap_or_default(),
    }
}

pub fn target(t: Option<pb::QuotaTarget>) -> Result<QuotaTarget, Status> {
    let t = t.ok_or_else(|| Status::invalid_argument("quota target required"))?;
    match pb::QuotaKind::try_from(t.kind) {
        Ok(pb::QuotaKind::User) => Ok(QuotaTarget::user(t.id)),
        Ok(pb::QuotaKind::Group) => Ok(QuotaTarget::group(t.id)),
        Ok(pb::QuotaKind::Project) => Ok(QuotaTarget::project()),
        _ => Err(Status::invalid_argument(
            "quota kind must be user, group or project",
        )),
    }
}

pub fn target_pb(t: QuotaTarget) -> pb::QuotaTarget {
    pb::QuotaTarget {
        kind: match t.kind {
            QuotaKind::User => pb::QuotaKind::User,
            QuotaKind::Group => pb::QuotaKind::Group,
            QuotaKind::Project => pb::QuotaKind::Project,
        } as i32,
        id: t.id,
    }
}

pub fn node(n: QuotaNodeReport) -> pb::QuotaNode {
    pb::QuotaNode {
        path: n.path.as_bytes().to_vec(),
        id: n.node,
        records: n
            .entries
            .into_iter()
            .map(|e| pb::QuotaRecord {
                target: Some(target_pb(e.target)),
                max_bytes: e.max_bytes,
                max_inodes: e.max_inodes,
                used_bytes: e.used_bytes,
                used_inodes: e.used_inodes,
                reserved_bytes: e.reserved_bytes,
                reserved_inodes: e.reserved_inodes,
            })
            .collect(),
    }
}
