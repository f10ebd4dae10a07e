//! Copies inside the namespace (WebDAV COPY): a file's bytes read and
//! written through the data path like any upload, checked against the
//! source's stored checksums before the copy becomes visible; a directory
//! made again with its `user.*` attributes (dead properties) and, for a
//! deep copy, everything under it, going on past members that fail.

use crate::{Core, CoreError, Expect};
use std::future::Future;
use std::pin::Pin;
use tessera_meta::Inode;
use tessera_types::{Identity, NsPath};

/// How much is read and written at a time.
const PART: usize = 8 << 20;

/// What a directory copy did.
#[derive(Debug, Default)]
pub struct TreeCopy {
    pub files: u64,
    pub dirs: u64,
    /// Members not copied, and why (the rest was).
    pub failed: Vec<(NsPath, CoreError)>,
}

/// The checksums stored for a file (an empty one, made by touch, has
/// none stored: adler32 1, CRC-32C 0), as a copy of it must reproduce them
/// and as the front-ends answer them.
pub fn stored_checksums(i: &Inode) -> Expect {
    let adler32 = match &i.checksum {
        Some(c) if c.kind == "adler32" => <[u8; 4]>::try_from(c.value.as_slice())
            .ok()
            .map(u32::from_be_bytes),
        None if i.size == 0 => Some(1),
        _ => None,
    };
    let crc32c = i.crc32c.or((i.size == 0).then_some(0));
    Expect { adler32, crc32c }
}

impl Core {
    /// Copy file `src` to `dst` (blocking): replaced when `overwrite`,
    /// else refused if it exists. Visible only once every byte is written
    /// and matches the source's checksums; its `user.*` attributes follow.
    pub fn copy_file(
        &self,
        who: &Identity,
        src: &NsPath,
        dst: &NsPath,
        overwrite: bool,
    ) -> Result<Inode, CoreError> {
        let rs = self.open_read(who, src)?;
        let inode = rs.inode().clone();
        let size = rs.size();
        let mut ws = self.open_write(who, dst, inode.mode & 0o777, overwrite, size)?;
        let mut off = 0u64;
        while off < size {
            let d = rs.read(off, PART.min((size - off) as usize))?;
            let Some(d) = d.filter(|d| !d.is_empty()) else {
                return Err(CoreError::Invalid(format!(
                    "{} ended at {off} of {size} bytes",
                    src.display()
                )));
            };
            for s in d.slices() {
                ws.write(s)?;
            }
            off += d.len() as u64;
        }
        let done = ws.close_expecting(stored_checksums(&inode))?;
        self.copy_user_attrs_blocking(who, src, dst)?;
        Ok(done)
    }

    /// Copy directory `src` as `dst` (which must not exist; its parent
    /// must): the directory with its `user.*` attributes, and with `deep`
    /// everything under it. Members that fail are named in `failed`; `Err`
    /// only when `dst` itself could not be made.
    pub async fn copy_tree(
        &self,
        who: &Identity,
        src: NsPath,
        dst: NsPath,
        deep: bool,
    ) -> Result<TreeCopy, CoreError> {
        let mut out = TreeCopy::default();
        self.copy_dir(who, &src, &dst, deep, &mut out, true).await?;
        Ok(out)
    }

    fn copy_dir<'a>(
        &'a self,
        who: &'a Identity,
        src: &'a NsPath,
        dst: &'a NsPath,
        deep: bool,
        out: &'a mut TreeCopy,
        top: bool,
    ) -> Pin<Box<dyn Future<Output = Result<(), CoreError>> + Send + 'a>> {
        Box::pin(async move {
            let me = self.stat(who, src.clone()).await?;
            if let Err(e) = self.mkdir(who, dst.clone(), me.mode & 0o7777, false).await {
                if top {
                    return Err(e);
                }
                out.failed.push((dst.clone(), e));
                return Ok(());
            }
            out.dirs += 1;
            let (core, w, s, d) = (self.clone(), who.clone(), src.clone(), dst.clone());
            let attrs = crate::blocking(move || core.copy_user_attrs_blocking(&w, &s, &d)).await?;
            if let Err(e) = attrs {
                out.failed.push((dst.clone(), e));
            }
            if !deep {
                return Ok(());
            }
            let mut after: Option<Vec<u8>> = None;
            loop {
                let page = match self.list(who, src.clone(), after.clone(), 512).await {
                    Ok(p) => p,
                    Err(e) => {
                        out.failed.push((src.clone(), e));
                        return Ok(());
                    }
                };
                let Some(last) = page.last() else {
                    return Ok(());
                };
                after = Some(last.name.clone());
                for child in page {
                    let bad = |e: tessera_types::PathError| CoreError::Invalid(e.to_string());
                    let s = src.join(&child.name).map_err(bad)?;
                    let d = dst.join(&child.name).map_err(bad)?;
                    if child.is_dir() {
                        self.copy_dir(who, &s, &d, true, out, false).await?;
                        continue;
                    }
                    let (core, w, d2) = (self.clone(), who.clone(), d.clone());
                    let r = crate::blocking(move || core.copy_file(&w, &s, &d2, false)).await?;
                    match r {
                        Ok(_) => out.files += 1,
                        Err(e) => out.failed.push((d, e)),
                    }
                }
            }
        })
    }

    /// Give `dst` the `user.*` attributes of `src` (blocking; one step).
    fn copy_user_attrs_blocking(
        &self,
        who: &Identity,
        src: &NsPath,
        dst: &NsPath,
    ) -> Result<(), CoreError> {
        crate::scopes::look(who, src)?;
        crate::scopes::create(who, dst)?;
        let ops: Vec<_> = self
            .meta
            .xattr_list(who, src)?
            .into_iter()
            .filter(|(n, _)| n.starts_with(b"user."))
            .map(|(n, v)| (n, Some(v)))
            .collect();
        if ops.is_empty() {
            return Ok(());
        }
        Ok(self.meta.xattr_patch(dst, who, &ops)?)
    }
}
