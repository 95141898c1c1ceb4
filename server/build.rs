//! Links the `rawko` binary as a non-PIE executable. A PIE of this size carries ~25,000 relative
//! relocations that the dynamic loader applies at every start (about 1 ms here, copy-on-write
//! faults across .data.rel.ro); `rawko hook` starts once per tool call of an external agent, so
//! start-up time matters. The objects stay position-independent; only the final link changes.
fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.contains("linux") {
        println!("cargo:rustc-link-arg-bin=rawko=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
