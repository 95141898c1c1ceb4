//! `rawko acp` driven by a client no one here wrote: the official ACP TypeScript SDK
//! (`@agentclientprotocol/sdk`, pinned in tests/acp_sdk/package-lock.json) runs
//! tests/acp_sdk/client.mjs against the real binary: modes, the plan in order, streamed chunks,
//! a permission answered both ways with the effect on disk, a diff, cancel mid-turn, and
//! `session/load` after a SIGKILL of `rawko acp`.
//!
//! The SDK is installed by scripts/install-acp-sdk.sh (scripts/test.sh runs it). Without it the
//! test is skipped, except under CI, where it fails; `RAWKO_ACP_SDK_E2E=0` skips it on purpose.

use std::path::{Path, PathBuf};
use std::process::Command;

fn sdk_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/acp_sdk")
}

/// Whether the test can run; panics under CI when it cannot. A skip is said on stderr.
#[allow(clippy::print_stderr)]
fn available() -> bool {
    if std::env::var("RAWKO_ACP_SDK_E2E").is_ok_and(|v| v == "0") {
        eprintln!("SKIPPED acp_sdk: RAWKO_ACP_SDK_E2E=0");
        return false;
    }
    let installed = sdk_dir()
        .join("node_modules/@agentclientprotocol/sdk/package.json")
        .is_file();
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if installed && node {
        return true;
    }
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    assert!(
        !ci,
        "acp_sdk: node or the ACP SDK is missing, and under CI this test must not be skipped: \
         run scripts/install-acp-sdk.sh (scripts/test.sh does), or set RAWKO_ACP_SDK_E2E=0"
    );
    eprintln!(
        "SKIPPED acp_sdk: {}. To run it: scripts/install-acp-sdk.sh && cargo test -p rawko --test acp_sdk",
        if node {
            "the ACP SDK is not installed"
        } else {
            "node is not installed"
        }
    );
    false
}

#[test]
fn the_official_typescript_sdk_drives_rawko_acp() {
    if !available() {
        return;
    }
    let tmp = tempfile::TempDir::new().expect("tempdir");
    let root = std::fs::canonicalize(tmp.path()).expect("canonical");
    let (project, home) = (root.join("project"), root.join("home"));
    std::fs::create_dir_all(&project).expect("mkdir");
    let init = Command::new(env!("CARGO_BIN_EXE_rawko"))
        .arg("init")
        .current_dir(&project)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("PI_CODING_AGENT_DIR", home.join(".pi"))
        .output()
        .expect("rawko init");
    assert!(init.status.success(), "{init:?}");
    std::fs::write(project.join("README.md"), "# a project\n").expect("write");
    let out = Command::new("node")
        .arg("client.mjs")
        .arg(env!("CARGO_BIN_EXE_rawko"))
        .arg(&project)
        .arg(&home)
        .current_dir(sdk_dir())
        .env_remove("RAWKO_LOG")
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the SDK's client failed ({}):\n{stdout}\n--- stderr ---\n{stderr}",
        out.status
    );
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.ends_with(" passed, 0 failed") && !last.starts_with("0 passed"),
        "{stdout}"
    );
}
