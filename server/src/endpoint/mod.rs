//! The local endpoint external agents reach while `rawko serve` runs: JSON-RPC (jsonrpsee) over
//! HTTP on 127.0.0.1, plus `POST /hooks/<Event>` for Claude Code's `http` hooks. Every request must
//! carry the endpoint's token (`Authorization: Bearer <token>`, or `?token=` for the hook URLs); the
//! token and the address are in a 0600 file under `$XDG_RUNTIME_DIR/rawko/` keyed by workspace,
//! which only the user can read.
//!
//! The server is `crate::loopback` (shared with the `acp` provider's task, for its agent's `rawko
//! mcp`); this face writes the file and answers through the task service ([`ExternalHost`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use sha2::{Digest, Sha256};

mod client;
mod host;
mod host_gemini;

pub use crate::loopback::{
    serve, BoxFuture, Host, Served, BODY_TIMEOUT, IDLE_TIMEOUT, MAX_HOOK_BODY, MAX_RPC_BODY,
};
pub use client::{call, find, request, CallError};
pub use host::ExternalHost;

/// Where a workspace's endpoint file is.
pub fn endpoint_file(runtime_dir: &Path, workspace: &Path) -> PathBuf {
    let canonical = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let digest = Sha256::digest(canonical.display().to_string().as_bytes());
    let key: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    runtime_dir
        .join("rawko")
        .join(format!("endpoint-{key}.json"))
}

pub use crate::external::runtime_dir;

/// A running endpoint; dropping it stops the server and removes its file.
pub struct Endpoint {
    pub url: String,
    pub token: String,
    pub file: PathBuf,
    stop: jsonrpsee::server::ServerHandle,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        let _ = self.stop.stop();
        // Only remove the file if it is still ours (another server may have replaced it).
        if let Ok(text) = std::fs::read_to_string(&self.file) {
            if text.contains(&self.token) {
                let _ = std::fs::remove_file(&self.file);
            }
        }
    }
}

/// Starts the endpoint for `workspace` and writes its file (0600, in a 0700 directory of the
/// user's alone: `runtime_dir` comes from [`crate::external::private_runtime_dir`]).
pub async fn start(
    host: Arc<dyn Host>,
    workspace: &Path,
    runtime_dir: &Path,
) -> std::io::Result<Endpoint> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let file = endpoint_file(runtime_dir, workspace);
    if let Some(dir) = file.parent() {
        // Made private to the user, or refused when someone else could see the token in it.
        if let Some(base) = dir.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(base)?;
        }
        crate::external::private_dir(dir, true).map_err(std::io::Error::other)?;
    }
    let served = serve(host).await?;
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        let body = json!({"url": served.url, "token": served.token, "pid": std::process::id(), "workspace": workspace.display().to_string()});
        f.write_all(body.to_string().as_bytes())?;
        std::fs::rename(&tmp, &file)
    })();
    if let Err(e) = written {
        served.stop();
        return Err(e);
    }
    Ok(Endpoint {
        url: served.url,
        token: served.token,
        file,
        stop: served.stop,
    })
}
