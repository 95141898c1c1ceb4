//! What the team's tests share: the nats-server to run (or why the test is skipped) and a
//! cluster on loopback started by scripts/nats-cluster.sh, stopped when dropped.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

const SCRIPT: &str = "scripts/nats-cluster.sh";

/// The nats-server binary, or `None` (with a note) when the test should be skipped.
#[allow(clippy::print_stderr)]
pub fn nats_server(test: &str) -> Option<PathBuf> {
    if std::env::var("RAWKO_TEAM_E2E").is_ok_and(|v| v == "0") {
        eprintln!("SKIPPED {test}: RAWKO_TEAM_E2E=0");
        return None;
    }
    if let Some(bin) = std::env::var_os("RAWKO_NATS_SERVER").filter(|v| !v.is_empty()) {
        let bin = PathBuf::from(bin);
        assert!(
            bin.is_file(),
            "RAWKO_NATS_SERVER={} is not a file; run scripts/install-nats.sh",
            bin.display()
        );
        return Some(bin);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))?;
    let installed = cache.join("rawko-test/nats/2.15.1/bin/nats-server");
    if installed.is_file() {
        return Some(installed);
    }
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    assert!(
        !ci,
        "{test}: RAWKO_NATS_SERVER is not set, and under CI this test must not be skipped: set it \
         to the last line of scripts/install-nats.sh (scripts/test.sh does), or RAWKO_TEAM_E2E=0 \
         to skip it"
    );
    eprintln!(
        "SKIPPED {test}: nats-server is not installed. To run it: \
         RAWKO_NATS_SERVER=$(scripts/install-nats.sh | tail -n 1) cargo test -p rawko --test {test}"
    );
    None
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A cluster started by the script, stopped when dropped.
pub struct Cluster {
    pub dir: tempfile::TempDir,
    pub urls: String,
}

impl Cluster {
    pub fn start(server: &Path, nodes: u32) -> Cluster {
        Cluster::start_at(server, nodes, 24222)
    }

    pub fn start_at(server: &Path, nodes: u32, port_base: u16) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(repo_root().join(SCRIPT))
            .arg("start")
            .arg(dir.path())
            .arg(nodes.to_string())
            .env("RAWKO_NATS_SERVER", server)
            // Away from a developer's own NATS and from the script's default.
            .env("RAWKO_NATS_PORT_BASE", port_base.to_string())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{SCRIPT} start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let urls = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .last()
            .unwrap()
            .to_owned();
        Cluster { dir, urls }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(repo_root().join(SCRIPT))
            .arg("stop")
            .arg(self.dir.path())
            .output();
    }
}
