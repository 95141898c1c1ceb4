//! The team's commands on NATS (docs/team.md): `rawko worker`, `rawko submit`, and `rawko tasks
//! list | show --nats`. Where NATS is and how to reach it come from the command line or the
//! user's config (`team.nats` in `~/.config/rawko/config.json`), never from a workspace's files.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use serde_json::{json, Value};

use super::{Context, ExitCode, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE};
use crate::engine::now_millis;
use crate::team::records::{get_json, JobSpec, TaskEntry, TASKS_BUCKET};
use crate::team::{self, Connection, Queue, QueueConfig, Team};
use crate::workflow::texts::iso_timestamp;

/// Where the team's NATS is: `--nats` and its credentials and TLS.
#[derive(Debug, Args, Clone, Default)]
pub struct NatsArgs {
    /// The team's NATS server: one URL or a comma-separated list, e.g.
    /// nats://a:4222,nats://b:4222 [default: team.nats.url of ~/.config/rawko/config.json]
    #[arg(long, value_name = "URLS")]
    pub nats: Option<String>,
    /// A NATS credentials file (.creds: JWT and nkey seed)
    #[arg(long, value_name = "FILE")]
    pub nats_creds: Option<PathBuf>,
    /// A file holding an nkey user seed (SU…)
    #[arg(long, value_name = "FILE")]
    pub nats_nkey: Option<PathBuf>,
    /// The CA certificate (PEM) the servers' certificates are checked against; TLS is required
    #[arg(long, value_name = "FILE")]
    pub nats_tls_ca: Option<PathBuf>,
    /// A client certificate (PEM) for mutual TLS, with --nats-tls-key
    #[arg(long, value_name = "FILE")]
    pub nats_tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --nats-tls-cert
    #[arg(long, value_name = "FILE")]
    pub nats_tls_key: Option<PathBuf>,
}

impl NatsArgs {
    /// Whether any NATS option was given.
    pub fn given(&self) -> bool {
        self.nats.is_some()
    }

    /// The connection: the command line's options over the user's config `team.nats`
    /// (`{"team": {"nats": {"url", "creds", "nkey", "tlsCa", "tlsCert", "tlsKey"}}}`).
    pub fn connection(&self, env: &dyn Fn(&str) -> Option<OsString>) -> Result<Connection, String> {
        let user = user_team_config(env)?;
        let path = |key: &str| {
            user.get(key)
                .and_then(Value::as_str)
                .map(|p| expand_home(p, env))
        };
        let nats = self
            .nats
            .clone()
            .or_else(|| user.get("url").and_then(Value::as_str).map(str::to_owned))
            .ok_or_else(|| {
                "say where the team's NATS is: --nats URL (or team.nats.url in ~/.config/rawko/config.json)".to_owned()
            })?;
        team::parse_urls(&nats).map_err(|e| e.to_string())?;
        Ok(Connection {
            nats,
            creds: self.nats_creds.clone().or_else(|| path("creds")),
            nkey: self.nats_nkey.clone().or_else(|| path("nkey")),
            tls_ca: self.nats_tls_ca.clone().or_else(|| path("tlsCa")),
            tls_cert: self.nats_tls_cert.clone().or_else(|| path("tlsCert")),
            tls_key: self.nats_tls_key.clone().or_else(|| path("tlsKey")),
        })
    }
}

/// `--nats` and its options as a connection, or `None` once the problem is said.
fn connection_of(ctx: &mut Context<'_>, nats: &NatsArgs) -> io::Result<Option<Connection>> {
    match nats.connection(ctx.env) {
        Ok(c) => Ok(Some(c)),
        Err(e) => {
            writeln!(ctx.err, "error: {e}")?;
            Ok(None)
        }
    }
}

fn expand_home(p: &str, env: &dyn Fn(&str) -> Option<OsString>) -> PathBuf {
    match (p.strip_prefix("~/"), env("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(p),
    }
}

/// `team.nats` of the user's config (never a workspace's): `{}` when there is none.
fn user_team_config(
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<serde_json::Map<String, Value>, String> {
    let non_empty = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let Some(dir) =
        non_empty("XDG_CONFIG_HOME").or_else(|| non_empty("HOME").map(|h| h.join(".config")))
    else {
        return Ok(Default::default());
    };
    let file = dir.join("rawko").join("config.json");
    let Ok(text) = std::fs::read_to_string(&file) else {
        return Ok(Default::default());
    };
    let value: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", file.display()))?;
    match value.pointer("/team/nats") {
        None | Some(Value::Null) => Ok(Default::default()),
        Some(Value::Object(map)) => Ok(map.clone()),
        Some(_) => Err(format!(
            "{}: team.nats must be an object (url, creds, nkey, tlsCa, tlsCert, tlsKey)",
            file.display()
        )),
    }
}

fn runtime() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}

/// The id of the first NATS process name, for connection names.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".to_owned())
}

/// What `rawko worker` was given.
pub struct WorkerArgs {
    pub nats: NatsArgs,
    pub name: Option<String>,
    pub max_tasks: usize,
    pub ack_wait: u64,
    pub state_dir: Option<PathBuf>,
}

/// `rawko worker`: takes queued tasks of the workspace's repository until SIGINT or SIGTERM.
pub fn worker(ctx: &mut Context<'_>, args: WorkerArgs) -> io::Result<ExitCode> {
    let Some(connection) = connection_of(ctx, &args.nats)? else {
        return Ok(EXIT_USAGE);
    };
    if !(1..=64).contains(&args.max_tasks) {
        writeln!(ctx.err, "error: --max-tasks must be 1 to 64")?;
        return Ok(EXIT_USAGE);
    }
    if !(2..=3600).contains(&args.ack_wait) {
        writeln!(
            ctx.err,
            "error: --ack-wait must be 2 to 3600 seconds (keep it above 20 on a cluster: a node's loss pauses the queue for up to 12 s)"
        )?;
        return Ok(EXIT_USAGE);
    }
    if !ctx.workspace.join(".git").exists() {
        writeln!(
            ctx.err,
            "error: {} is not a git clone: a worker serves the repository of its clone's origin (rawko worker --workspace CLONE)",
            ctx.workspace.display()
        )?;
        return Ok(EXIT_USAGE);
    }
    let name = args
        .name
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| format!("{}-{}", host_name(), std::process::id()));
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
    {
        writeln!(
            ctx.err,
            "error: --name may hold letters, digits, - and _ only"
        )?;
        return Ok(EXIT_USAGE);
    }
    let state_dir = match args
        .state_dir
        .or_else(|| crate::store::state_dir(ctx.env).map(|d| d.join("workers").join(&name)))
    {
        Some(d) => d,
        None => {
            writeln!(
                ctx.err,
                "error: no state directory: set XDG_STATE_HOME or HOME, or pass --state-dir"
            )?;
            return Ok(EXIT_USAGE);
        }
    };
    let options = crate::worker::WorkerOptions {
        connection,
        workspace: ctx.workspace.clone(),
        name,
        max_tasks: args.max_tasks,
        ack_wait: Duration::from_secs(args.ack_wait),
        state_dir,
    };
    let runtime = runtime()?;
    let err = &mut *ctx.err;
    let result = runtime.block_on(async move {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut int), Ok(mut term)) = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) else {
                return;
            };
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            let _ = stop_tx.send(true);
        });
        // The worker's lines are written here, on the thread that holds stderr.
        let (lines_tx, mut lines) = tokio::sync::mpsc::unbounded_channel::<String>();
        let say: Box<dyn Fn(String) + Send + Sync> = Box::new(move |line| {
            let _ = lines_tx.send(line);
        });
        let work = crate::worker::run(options, say, stop_rx);
        tokio::pin!(work);
        let result = loop {
            tokio::select! {
                result = &mut work => break result,
                Some(line) = lines.recv() => {
                    let _ = writeln!(err, "{line}");
                    let _ = err.flush();
                }
            }
        };
        while let Ok(line) = lines.try_recv() {
            let _ = writeln!(err, "{line}");
        }
        result
    });
    // Its tasks' processes are gone; the runtime is not waited for.
    runtime.shutdown_timeout(Duration::from_secs(2));
    match result {
        Ok(()) => Ok(EXIT_OK),
        Err(e) => {
            writeln!(ctx.err, "error: {e}")?;
            Ok(EXIT_PROBLEMS)
        }
    }
}

/// What `rawko submit` was given.
pub struct SubmitArgs {
    pub task: String,
    pub nats: NatsArgs,
    pub workflow: Option<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub script: Option<PathBuf>,
    pub base_url: Option<String>,
    pub repo: Option<String>,
}

/// `rawko submit`: queues a task for the workers of a repository and prints its id.
pub fn submit(ctx: &mut Context<'_>, args: SubmitArgs) -> io::Result<ExitCode> {
    let description = args.task.trim().to_owned();
    if description.is_empty() {
        writeln!(
            ctx.err,
            "error: say what the task is: rawko submit \"TASK\" --nats URL"
        )?;
        return Ok(EXIT_USAGE);
    }
    if description.len() > crate::engine::tasks::MAX_MESSAGE_BYTES {
        writeln!(ctx.err, "error: the task is longer than 1 MiB")?;
        return Ok(EXIT_USAGE);
    }
    let Some(connection) = connection_of(ctx, &args.nats)? else {
        return Ok(EXIT_USAGE);
    };
    let repo = match args.repo.clone() {
        Some(r) if !r.trim().is_empty() => r.trim().to_owned(),
        _ => match origin_blocking(&ctx.workspace) {
            Ok(r) => r,
            Err(e) => {
                writeln!(
                    ctx.err,
                    "error: {e} (or name the repository with --repo URL)"
                )?;
                return Ok(EXIT_USAGE);
            }
        },
    };
    let (script, script_name) = match &args.script {
        Some(path) => {
            let path = if path.is_absolute() {
                path.clone()
            } else {
                std::env::current_dir().unwrap_or_default().join(path)
            };
            match std::fs::read_to_string(&path) {
                Ok(text) if text.len() <= 512 * 1024 => (
                    Some(text),
                    path.file_name().map(|n| n.to_string_lossy().into_owned()),
                ),
                Ok(_) => {
                    writeln!(
                        ctx.err,
                        "error: {}: a script travels with its task and may be 512 KiB at most",
                        path.display()
                    )?;
                    return Ok(EXIT_USAGE);
                }
                Err(e) => {
                    writeln!(
                        ctx.err,
                        "error: cannot read the script {}: {e}",
                        path.display()
                    )?;
                    return Ok(EXIT_USAGE);
                }
            }
        }
        None => (None, None),
    };
    let provider = args
        .provider
        .clone()
        .or_else(|| script.as_ref().map(|_| "scripted".to_owned()));
    let task_id = team::new_task_id();
    let spec = JobSpec {
        task_id: task_id.clone(),
        repo: repo.clone(),
        description: description.clone(),
        workflow: args.workflow.clone(),
        provider,
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        script,
        script_name,
        submitted_at: now_millis(),
    };
    let runtime = runtime()?;
    let queued = runtime.block_on(async {
        let team = Team::connect_with(&connection, "rawko-submit")
            .await
            .map_err(|e| e.to_string())?;
        let queue = Queue::open(&team, &repo, QueueConfig::default())
            .await
            .map_err(|e| e.to_string())?;
        let tasks = team.bucket(TASKS_BUCKET).await.map_err(|e| e.to_string())?;
        let entry = TaskEntry {
            task_id: task_id.clone(),
            state: "queued".to_owned(),
            repo: repo.clone(),
            description: description.clone(),
            workflow: spec.workflow.clone(),
            submitted_at: spec.submitted_at,
            updated_at: spec.submitted_at,
            ..Default::default()
        };
        // Listed before any worker can take it.
        crate::team::records::put_json(&tasks, &task_id, &entry)
            .await
            .map_err(|e| e.to_string())?;
        let payload = serde_json::to_vec(&spec).map_err(|e| e.to_string())?;
        queue
            .submit_with_id(&task_id, payload.into())
            .await
            .map_err(|e| e.to_string())
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
    match queued {
        Ok(_) if ctx.json => writeln!(ctx.out, "{}", json!({"taskId": task_id}))?,
        Ok(_) => writeln!(ctx.out, "{task_id}")?,
        Err(e) => {
            writeln!(ctx.err, "error: {e}")?;
            return Ok(EXIT_PROBLEMS);
        }
    }
    Ok(EXIT_OK)
}

fn origin_blocking(dir: &Path) -> Result<String, String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["remote", "get-url", "origin"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    let url = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !out.status.success() || url.is_empty() {
        return Err(format!(
            "{} is not a clone with an `origin` remote",
            dir.display()
        ));
    }
    Ok(url)
}

fn entry_json(e: &TaskEntry) -> Value {
    json!({
        "taskId": e.task_id,
        "state": e.state,
        "breadcrumb": e.breadcrumb,
        "worker": e.worker,
        "outcome": e.outcome,
        "repo": e.repo,
        "description": e.description,
        "workflow": e.workflow,
        "submittedAt": e.submitted_at,
        "updatedAt": e.updated_at,
        "attempts": e.attempts,
    })
}

async fn all_entries(team: &Team) -> Result<Vec<TaskEntry>, String> {
    use futures::StreamExt;
    let tasks = team.bucket(TASKS_BUCKET).await.map_err(|e| e.to_string())?;
    let mut keys = tasks.keys().await.map_err(|e| e.to_string())?;
    let mut names = Vec::new();
    while let Some(key) = keys.next().await {
        if let Ok(key) = key {
            names.push(key);
        }
    }
    let mut entries = Vec::with_capacity(names.len());
    for key in names {
        if let Some(entry) = get_json::<TaskEntry>(&tasks, &key).await {
            entries.push(entry);
        }
    }
    entries.sort_by_key(|e| std::cmp::Reverse(e.submitted_at));
    Ok(entries)
}

/// `rawko tasks list --nats`: the team's tasks, newest first.
pub fn list(ctx: &mut Context<'_>, nats: &NatsArgs) -> io::Result<ExitCode> {
    let Some(connection) = connection_of(ctx, nats)? else {
        return Ok(EXIT_USAGE);
    };
    let runtime = runtime()?;
    let entries = runtime.block_on(async {
        let team = Team::connect_with(&connection, "rawko-tasks")
            .await
            .map_err(|e| e.to_string())?;
        all_entries(&team).await
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
    let entries = match entries {
        Ok(e) => e,
        Err(e) => {
            writeln!(ctx.err, "error: {e}")?;
            return Ok(EXIT_PROBLEMS);
        }
    };
    if ctx.json {
        let list: Vec<Value> = entries.iter().map(entry_json).collect();
        writeln!(ctx.out, "{}", Value::Array(list))?;
        return Ok(EXIT_OK);
    }
    if entries.is_empty() {
        writeln!(
            ctx.out,
            "no team tasks yet: `rawko submit \"TASK\" --nats URL` queues one"
        )?;
        return Ok(EXIT_OK);
    }
    for e in &entries {
        let state = match &e.outcome {
            Some(o) if e.state == "finished" => o.clone(),
            _ => e.state.clone(),
        };
        let worker = e.worker.as_deref().unwrap_or("-");
        let mut line = format!(
            "{}  {:<16}  {:<10}  {}  {}",
            e.task_id,
            state,
            worker,
            iso_timestamp(e.submitted_at),
            crate::clip::clip(&e.description)
        );
        if !e.breadcrumb.is_empty() && e.state != "finished" {
            line.push_str(&format!("  [{}]", e.breadcrumb));
        }
        writeln!(ctx.out, "{line}")?;
    }
    Ok(EXIT_OK)
}

/// `rawko tasks show ID --nats`: a team task's whole history, from its log in JetStream.
pub fn show(ctx: &mut Context<'_>, id: &str, nats: &NatsArgs) -> io::Result<ExitCode> {
    let Some(connection) = connection_of(ctx, nats)? else {
        return Ok(EXIT_USAGE);
    };
    if id.is_empty()
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
    {
        writeln!(
            ctx.err,
            "error: \"{}\" is not a task id",
            crate::clip::clip(id)
        )?;
        return Ok(EXIT_USAGE);
    }
    let runtime = runtime()?;
    let found = runtime.block_on(async {
        let team = Team::connect_with(&connection, "rawko-tasks")
            .await
            .map_err(|e| e.to_string())?;
        let tasks = team.bucket(TASKS_BUCKET).await.map_err(|e| e.to_string())?;
        let entry = get_json::<TaskEntry>(&tasks, id).await;
        let (records, _) = team::read_log(&team, id).await.map_err(|e| e.to_string())?;
        Ok::<_, String>((entry, records))
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
    let (entry, records) = match found {
        Ok(f) => f,
        Err(e) => {
            writeln!(ctx.err, "error: {e}")?;
            return Ok(EXIT_PROBLEMS);
        }
    };
    let Some(entry) = entry else {
        writeln!(
            ctx.err,
            "error: unknown team task \"{id}\"; `rawko tasks list --nats URL` shows them"
        )?;
        return Ok(EXIT_PROBLEMS);
    };
    let parsed: Vec<Value> = records
        .iter()
        .filter_map(|r| serde_json::from_slice(r).ok())
        .collect();
    if ctx.json {
        let mut v = entry_json(&entry);
        v["records"] = Value::Array(parsed);
        writeln!(ctx.out, "{v}")?;
        return Ok(EXIT_OK);
    }
    let state = match &entry.outcome {
        Some(o) if entry.state == "finished" => format!("finished ({o})"),
        _ => entry.state.clone(),
    };
    writeln!(ctx.out, "task:      {}", entry.task_id)?;
    writeln!(ctx.out, "about:     {}", entry.description)?;
    if let Some(w) = &entry.workflow {
        writeln!(ctx.out, "workflow:  {w}")?;
    }
    writeln!(ctx.out, "state:     {state}")?;
    if !entry.breadcrumb.is_empty() {
        writeln!(ctx.out, "position:  {}", entry.breadcrumb)?;
    }
    writeln!(
        ctx.out,
        "repo:      {} (branch rawko/{})",
        entry.repo, entry.task_id
    )?;
    if let Some(w) = &entry.worker {
        writeln!(ctx.out, "worker:    {w} (taken {} time(s))", entry.attempts)?;
    }
    writeln!(ctx.out, "submitted: {}", iso_timestamp(entry.submitted_at))?;
    writeln!(ctx.out)?;
    writeln!(ctx.out, "history ({} records):", parsed.len())?;
    for (i, r) in parsed.iter().enumerate() {
        let at = r["at"].as_i64().unwrap_or(0);
        let event = &r["event"];
        let kind = event["type"].as_str().unwrap_or("?");
        let detail = match kind {
            "tool_started" => format!(
                "{} {}",
                event["name"].as_str().unwrap_or_default(),
                event["id"].as_str().unwrap_or_default()
            ),
            "machine" => format!(
                "{} → {}",
                event["from"].as_str().unwrap_or_default(),
                event["to"].as_str().unwrap_or_default()
            ),
            "approval" => format!(
                "{} {} {}",
                event["answer"].as_str().unwrap_or_default(),
                event["tool"].as_str().unwrap_or_default(),
                event["id"].as_str().unwrap_or_default()
            ),
            "tool_finished" => format!(
                "{}{}",
                event["id"].as_str().unwrap_or_default(),
                if event["isError"].as_bool() == Some(true) {
                    " (error)"
                } else {
                    ""
                }
            ),
            "finished" => event["outcome"].as_str().unwrap_or_default().to_owned(),
            "checkpoint" => event["commit"]
                .as_str()
                .map(|c| c.chars().take(12).collect())
                .unwrap_or_default(),
            _ => String::new(),
        };
        writeln!(
            ctx.out,
            "{:>4}  {}  {kind}  {detail}",
            i + 1,
            iso_timestamp(at)
        )?;
    }
    Ok(EXIT_OK)
}
