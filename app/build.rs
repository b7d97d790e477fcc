//! Link-time settings of the `rocescope` binary.

fn main() {
    // Relative relocations packed (DT_RELR, glibc 2.36+, binutils 2.38+):
    // the binary has about 226,000 of them (polars' vtables and tables), a
    // 5.4 MB `.rela.dyn` that the loader read at every start.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu")
    {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
