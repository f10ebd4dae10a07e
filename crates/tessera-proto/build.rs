fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    let files = [
        "tessera/admin/v1/namespace.proto",
        "tessera/admin/v1/quota.proto",
        "tessera/admin/v1/fs.proto",
        "tessera/admin/v1/fsck.proto",
    ];
    let paths: Vec<_> = files.iter().map(|f| root.join(f)).collect();
    for p in &paths {
        println!("cargo:rerun-if-changed={}", p.display());
    }
    tonic_prost_build::configure().compile_protos(&paths, &[root])?;
    Ok(())
}
