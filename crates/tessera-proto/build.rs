fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Read at run time: a build-script binary cached from a clone at
    // another path must not point there.
    let manifest = std::env::var("CARGO_MANIFEST_DIR")?;
    let root = std::path::Path::new(&manifest).join("../../proto");
    let files = [
        "tessera/admin/v1/namespace.proto",
        "tessera/admin/v1/quota.proto",
        "tessera/admin/v1/fs.proto",
        "tessera/admin/v1/fsck.proto",
        "tessera/admin/v1/federation.proto",
        "tessera/admin/v1/access.proto",
        "tessera/admin/v1/recycle.proto",
        "tessera/admin/v1/versions.proto",
        "tessera/admin/v1/balance.proto",
        "tessera/admin/v1/report.proto",
        "tessera/internal/v1/cluster.proto",
    ];
    let paths: Vec<_> = files.iter().map(|f| root.join(f)).collect();
    for p in &paths {
        println!("cargo:rerun-if-changed={}", p.display());
    }
    tonic_prost_build::configure().compile_protos(&paths, &[root])?;
    Ok(())
}
