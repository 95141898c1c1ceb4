//! Links the `rawko` binary as a non-PIE executable. A PIE of this size carries ~25,000 relative
//! relocations that the dynamic loader applies at every start (about 1 ms here, copy-on-write
//! faults across .data.rel.ro); `rawko hook` starts once per tool call of an external agent, so
//! start-up time matters. The objects stay position-independent; only the final link changes.
//!
//! A release build linked by lld also places the functions a `rawko serve` runs from its start
//! to its first workflow listing first in .text, side by side, in the order of `startup.order`
//! (written by `scripts/startup-order.py`). Scattered over the 14 MB of .text, the start's
//! megabyte of code made the kernel map about 6 MB of it, a large page-cache folio around each
//! fault (RSS after initialize, docs/performance.md). A stale file costs only that: lld skips a
//! name the binary lacks and places a function the file lacks as before.
use std::process::Command;

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.contains("linux") {
        println!("cargo:rustc-link-arg-bin=rawko=-no-pie");
    }
    if std::env::var("PROFILE").as_deref() == Ok("release") && links_with_lld(&target) {
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        println!("cargo:rustc-link-arg-bin=rawko=-Wl,--symbol-ordering-file={dir}/startup.order");
        println!("cargo:rustc-link-arg-bin=rawko=-Wl,--no-warn-symbol-ordering");
        println!("cargo:rerun-if-changed=startup.order");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
}

/// Whether the link is rustc's own: rust-lld, the default on x86_64 Linux from Rust 1.90, with
/// no linker or linker flavour chosen in the flags or the environment (another linker may not
/// know `--symbol-ordering-file`).
fn links_with_lld(target: &str) -> bool {
    if target != "x86_64-unknown-linux-gnu"
        || std::env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some()
    {
        return false;
    }
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if ["linker", "link-self-contained", "link-arg=-fuse-ld"]
        .iter()
        .any(|f| flags.contains(f))
    {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let Ok(out) = Command::new(rustc).arg("--version").output() else {
        return false;
    };
    // "rustc 1.95.0 (…)": the minor version.
    let version = String::from_utf8_lossy(&out.stdout);
    let minor = version
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.split('.').nth(1))
        .and_then(|m| m.parse::<u32>().ok());
    minor.is_some_and(|m| m >= 90)
}
