//! Helpers shared by the client test binaries (`xrootd/`, `https/`).

/// Deterministic test bytes.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    v
}

/// adler32 as the clients print it (8 lowercase hex digits).
pub fn adler32(b: &[u8]) -> String {
    let (mut a, mut s) = (1u32, 0u32);
    for chunk in b.chunks(5552) {
        for &x in chunk {
            a += x as u32;
            s += a;
        }
        a %= 65521;
        s %= 65521;
    }
    format!("{:08x}", (s << 16) | a)
}

/// The filesystem holding the first stripe of the file at `path`.
pub fn first_fsid(rt: &tokio::runtime::Runtime, core: &tessera_core::Core, path: &str) -> u32 {
    let root = tessera_types::Identity::root("test");
    let p = tessera_types::NsPath::parse(path).expect("path");
    let i = rt.block_on(core.stat(&root, p)).expect("stat");
    tessera_core::Placement::decode(&i.layout)
        .expect("placement")
        .fsids[0]
}

/// Set filesystem `id` to `status`, as an admin would.
pub fn set_fs_status(
    rt: &tokio::runtime::Runtime,
    core: &tessera_core::Core,
    id: u32,
    status: tessera_core::FsConfigStatus,
) {
    let c = tessera_core::FsChange {
        label: None,
        domain: None,
        space: None,
        status: Some(status),
    };
    let root = tessera_types::Identity::root("test");
    rt.block_on(core.fs_set(&root, id, c)).expect("fs set");
}
