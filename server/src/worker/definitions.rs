//! The pinned definitions a team task runs under, shared through the team's bucket
//! `rawko-definitions` (by SHA-256): uploaded before the log record that names them, fetched by a
//! worker that takes the task over (each checked against its digest as it is stored).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;

use super::Ctx;

/// Whether a log record names pinned definitions (`started`, `pinned`).
pub(super) fn names_definitions(line: &[u8]) -> bool {
    serde_json::from_slice::<Value>(line)
        .ok()
        .and_then(|v| {
            v.get("event")?
                .get("type")?
                .as_str()
                .map(|t| t == "started" || t == "pinned")
        })
        .unwrap_or(false)
}

/// Stores every pinned definition of the worker's store the team's bucket lacks (before a
/// record naming them is published).
pub(super) async fn upload_definitions(ctx: &Arc<Ctx>) {
    let dir = crate::store::definitions::definitions(&ctx.store)
        .dir()
        .to_owned();
    let Ok(mut entries) = tokio::fs::read_dir(&dir).await else {
        return;
    };
    while let Ok(Some(entry)) = entries.next_entry().await {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !crate::store::definitions::is_digest(&name)
            || ctx
                .uploaded
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&name)
        {
            continue;
        }
        let Ok(bytes) = tokio::fs::read(entry.path()).await else {
            continue;
        };
        for attempt in 0..100u32 {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            if ctx
                .definitions
                .put(&name, bytes.clone().into())
                .await
                .is_ok()
            {
                ctx.uploaded
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(name.clone());
                break;
            }
        }
    }
}

/// Fetches the team's pinned definitions this worker's store lacks (each checked against its
/// digest as it is stored).
pub(super) async fn download_definitions(ctx: &Arc<Ctx>) -> Result<(), String> {
    let defs = crate::store::definitions::definitions(&ctx.store);
    let mut keys = ctx
        .definitions
        .keys()
        .await
        .map_err(|e| format!("listing the team's definitions: {e}"))?;
    let mut wanted = Vec::new();
    while let Some(key) = keys.next().await {
        let Ok(key) = key else { continue };
        if crate::store::definitions::is_digest(&key) && !defs.path(&key).is_file() {
            wanted.push(key);
        }
    }
    for key in wanted {
        let Ok(Some(bytes)) = ctx.definitions.get(&key).await else {
            continue;
        };
        let defs = defs.clone();
        let name = key.clone();
        let stored = tokio::task::spawn_blocking(move || defs.put(&[(name.as_str(), &bytes)]))
            .await
            .map_err(|e| e.to_string())?;
        match stored {
            Ok(()) => {
                // It is in the team's bucket already.
                ctx.uploaded
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(key);
            }
            Err(e) => (ctx.say)(format!(
                "warning: a definition from the team is refused: {e}"
            )),
        }
    }
    Ok(())
}
