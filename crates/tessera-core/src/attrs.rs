//! Attributes that steer the server (`sys.forced.*`, EOS's names, and
//! `sys.stall.unavailable`): checked when they are set, so that a
//! directory never carries a layout no upload could be written with.

use crate::{Core, CoreError, DEFAULT_SPACE};
use tessera_data::Layout;
use tessera_meta::FsConfigStatus;
use tessera_types::{Identity, NsPath};

/// The layout and space new files get from a directory's attributes.
pub(crate) fn layout_from(attrs: &tessera_meta::Xattrs) -> Result<(Layout, String), CoreError> {
    let get = |k: &str| {
        attrs
            .iter()
            .find(|(n, _)| n == k.as_bytes())
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
    };
    let layout = match get("sys.forced.layout") {
        Some(l) => Layout::from_eos(
            &l,
            get("sys.forced.nstripes").as_deref(),
            get("sys.forced.blocksize").as_deref(),
        )?,
        None => Layout::plain(),
    };
    let space = get("sys.forced.space").unwrap_or_else(|| DEFAULT_SPACE.to_string());
    Ok((layout, space))
}

/// One attribute's value on its own.
fn check_value(name: &[u8], value: &[u8]) -> Result<(), CoreError> {
    let v = || {
        std::str::from_utf8(value)
            .map_err(|_| CoreError::Invalid("layout attributes are text".into()))
    };
    let bad = |e: tessera_data::DataError| CoreError::Invalid(e.to_string());
    match name {
        b"sys.forced.layout" => Layout::from_eos(v()?, None, None).map(|_| ()).map_err(bad),
        b"sys.forced.nstripes" => {
            let n = v()?;
            match n.trim().parse::<u8>() {
                Ok(1..) => Ok(()),
                _ => Err(CoreError::Invalid(format!(
                    "sys.forced.nstripes must be 1 to 255, not {n:?}"
                ))),
            }
        }
        b"sys.forced.blocksize" => Layout::from_eos("plain", None, Some(v()?))
            .map(|_| ())
            .map_err(bad),
        n if n == crate::STALL_ATTR.as_bytes() => {
            let s = v()?;
            match s.trim().parse::<u32>() {
                Ok(_) => Ok(()),
                _ => Err(CoreError::Invalid(format!(
                    "{} must be a number of seconds, not {s:?}",
                    crate::STALL_ATTR
                ))),
            }
        }
        _ => Ok(()),
    }
}

impl Core {
    /// Refuse an attribute that would leave `path` with a layout no upload
    /// can be written with: a bad value, a combination that is no layout
    /// (a RAIN layout with no more stripes than parity), or more stripes
    /// than the space has failure domains to put them in.
    pub(crate) async fn check_attr(
        &self,
        who: &Identity,
        path: &NsPath,
        name: &[u8],
        value: &[u8],
    ) -> Result<(), CoreError> {
        check_value(name, value)?;
        if !name.starts_with(b"sys.forced.") {
            return Ok(());
        }
        let (meta, p, w) = (std::sync::Arc::clone(&self.meta), path.clone(), who.clone());
        let mut attrs = crate::blocking(move || meta.xattr_list(&w, &p)).await??;
        attrs.retain(|(n, _)| n != name);
        attrs.push((name.to_vec(), value.to_vec()));
        let (layout, space) = layout_from(&attrs).map_err(|e| {
            CoreError::Invalid(format!(
                "{} with the directory's other sys.forced attributes: {e}",
                String::from_utf8_lossy(name)
            ))
        })?;
        // The configuration, not the health of the moment: a filesystem
        // down now is back later.
        let domains: std::collections::HashSet<String> = self
            .fs
            .opened()
            .into_iter()
            .filter(|(r, _)| r.space == space && r.status == FsConfigStatus::Rw)
            .map(|(r, _)| r.domain)
            .collect();
        if layout.stripes() > domains.len() {
            return Err(CoreError::Invalid(format!(
                "layout {} needs {} stripes in distinct failure domains; space {space:?} has {} \
                 with a writable filesystem: add filesystems, or lower sys.forced.nstripes first",
                layout.name(),
                layout.stripes(),
                domains.len()
            )));
        }
        Ok(())
    }
}
