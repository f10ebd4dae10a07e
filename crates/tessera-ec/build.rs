fn main() {
    if std::env::var_os("CARGO_FEATURE_ISAL").is_some() {
        println!("cargo:rustc-link-lib=dylib=isal");
    }
}
