//! Link-time settings of the `rocescope` binary.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu")
    {
        // A fixed-address executable: polars' vtables and tables give a
        // position-independent one about 226,000 relocations, which the
        // loader applies at every start by writing 3.6 MB of pages (a
        // third of `rocescope --version`). At a fixed address there is
        // nothing to relocate and those pages stay shared with the page
        // cache. The cost: no address randomisation of the binary itself.
        println!("cargo:rustc-link-arg-bins=-no-pie");
        // Should the link ever be position-independent again: the same
        // relocations in a 56 KB bitmap (DT_RELR, glibc 2.36+, binutils
        // 2.38+) instead of a 5.4 MB table.
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
