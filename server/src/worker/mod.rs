//! The team's faces on NATS (issue 37, docs/team.md): `rawko worker` takes queued tasks of its
//! repository and runs each through the task service exactly as `rawko serve` runs its own, with
//! its log stored in JetStream before anything of it is announced and its checkpoints pushed to
//! the task's branch; [`watch`] shows the team's tasks and blocked calls in a face beside its own
//! (`rawko serve --nats`, `rawko web --nats`).
//!
//! A task runs in a clone of its own (`<state dir>/work/<task id>`) on the branch
//! `rawko/<task id>` of the shared repository, so a worker runs several at once and another
//! worker can take one over: it fetches the branch (the last checkpoint, pushed before the call
//! it follows was recorded complete), writes the log from JetStream into its store, and resumes
//! the task from it like a local resume.

mod definitions;
mod events;
pub mod watch;

pub use events::{answer_of, crumbs_json};

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::{oneshot, watch as tokio_watch, Semaphore};

use crate::engine::now_millis;
use crate::engine::tasks::{Opening, Route, StartRequest, Tasks};
use crate::store::replica::Replica;
use crate::team::records::{
    get_json, put_json, JobSpec, TaskEntry, WorkerBeat, ANSWERS_BUCKET, ASKS_BUCKET,
    DEFINITIONS_BUCKET, TASKS_BUCKET, WORKERS_BUCKET,
};
use crate::team::{self, Job, LogWriter, Queue, QueueConfig, Team};

/// How a worker is started (`rawko worker`).
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    pub connection: team::Connection,
    /// The operator's clone: its `origin` is the repository served.
    pub workspace: PathBuf,
    pub name: String,
    pub max_tasks: usize,
    pub ack_wait: Duration,
    /// The worker's store and the tasks' clones.
    pub state_dir: PathBuf,
}

/// What the worker's jobs share.
struct Ctx {
    team: Team,
    name: String,
    repo: String,
    clone: PathBuf,
    state_dir: PathBuf,
    store: PathBuf,
    tasks: async_nats::jetstream::kv::Store,
    asks: async_nats::jetstream::kv::Store,
    answers: async_nats::jetstream::kv::Store,
    definitions: async_nats::jetstream::kv::Store,
    /// The definition digests this worker has stored in the team's bucket.
    uploaded: Mutex<HashSet<String>>,
    running: Mutex<HashSet<String>>,
    say: Box<dyn Fn(String) + Send + Sync>,
    stop: tokio_watch::Receiver<bool>,
}

/// The URL of `dir`'s `origin` remote, as git reads it.
pub async fn origin_of(dir: &Path) -> Result<String, String> {
    let out = git(dir, &["remote", "get-url", "origin"]).await?;
    let url = out.trim().to_owned();
    if url.is_empty() {
        return Err(format!(
            "{} has no `origin` remote: a worker serves the repository its clone came from",
            dir.display()
        ));
    }
    Ok(url)
}

/// Runs `git ARGS` in `dir` with no hooks, pager or prompt, and returns its stdout.
async fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = tokio::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
        ])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "git {} failed: {}",
            args.join(" "),
            stderr.lines().next().unwrap_or("").trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs a worker until `stop` turns true (SIGINT, SIGTERM): then the tasks it holds go back to
/// the queue at once, for other workers.
pub async fn run(
    options: WorkerOptions,
    say: Box<dyn Fn(String) + Send + Sync>,
    stop: tokio_watch::Receiver<bool>,
) -> Result<(), String> {
    let repo = origin_of(&options.workspace).await?;
    let team = Team::connect_with(
        &options.connection,
        &format!("rawko-worker-{}", options.name),
    )
    .await
    .map_err(|e| e.to_string())?;
    let heartbeat = (options.ack_wait / 6).max(Duration::from_millis(200));
    let queue = Queue::open(
        &team,
        &repo,
        QueueConfig {
            ack_wait: options.ack_wait,
            heartbeat,
            update_consumer: true,
            ..Default::default()
        },
    )
    .await
    .map_err(|e| e.to_string())?;
    // The log stream exists before the first task needs it.
    team.log_stream().await.map_err(|e| e.to_string())?;
    let bucket = |name: &'static str| {
        let team = team.clone();
        async move { team.bucket(name).await.map_err(|e| e.to_string()) }
    };
    let store = options.state_dir.join("store");
    std::fs::create_dir_all(options.state_dir.join("work"))
        .map_err(|e| format!("{}: {e}", options.state_dir.display()))?;
    let ctx = Arc::new(Ctx {
        tasks: bucket(TASKS_BUCKET).await?,
        asks: bucket(ASKS_BUCKET).await?,
        answers: bucket(ANSWERS_BUCKET).await?,
        definitions: bucket(DEFINITIONS_BUCKET).await?,
        team: team.clone(),
        name: options.name.clone(),
        repo: repo.clone(),
        clone: options.workspace.clone(),
        state_dir: options.state_dir.clone(),
        store,
        uploaded: Mutex::new(HashSet::new()),
        running: Mutex::new(HashSet::new()),
        say,
        stop: stop.clone(),
    });
    let workers = bucket(WORKERS_BUCKET).await?;
    (ctx.say)(format!(
        "rawko worker {}: serving {repo} ({} slots, ack wait {} s)",
        options.name,
        options.max_tasks,
        options.ack_wait.as_secs_f64()
    ));
    // The worker's beat: who is alive, and what each holds.
    let beat_ctx = ctx.clone();
    let max_tasks = options.max_tasks;
    let beat = tokio::spawn(async move {
        loop {
            let tasks: Vec<String> = beat_ctx
                .running
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .cloned()
                .collect();
            let beat = WorkerBeat {
                name: beat_ctx.name.clone(),
                repo: beat_ctx.repo.clone(),
                tasks,
                max_tasks,
                at: now_millis(),
            };
            if let Ok(body) = serde_json::to_vec(&beat) {
                let _ = workers.put(&beat_ctx.name, body.into()).await;
            }
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
    });
    let slots = Arc::new(Semaphore::new(options.max_tasks.max(1)));
    let mut jobs = tokio::task::JoinSet::new();
    let mut stop_rx = stop.clone();
    loop {
        if *stop_rx.borrow() {
            break;
        }
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => p.map_err(|e| e.to_string())?,
            _ = stop_rx.changed() => break,
        };
        let taken = tokio::select! {
            t = queue.take(Duration::from_secs(5)) => t,
            _ = stop_rx.changed() => break,
        };
        match taken {
            Ok(Some(job)) => {
                let ctx = ctx.clone();
                jobs.spawn(async move {
                    run_job(ctx, job).await;
                    drop(permit);
                });
            }
            Ok(None) => {}
            Err(e) => {
                (ctx.say)(format!("warning: taking a task from the queue: {e}"));
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
        while jobs.try_join_next().is_some() {}
    }
    let held = ctx.running.lock().unwrap_or_else(|e| e.into_inner()).len();
    if held > 0 {
        (ctx.say)(format!("stopping: giving {held} task(s) back to the queue"));
    }
    // Each job sees the stop, gives its task back and returns.
    let _ = tokio::time::timeout(Duration::from_secs(15), async {
        while jobs.join_next().await.is_some() {}
    })
    .await;
    beat.abort();
    Ok(())
}

/// The outcome a task's log ends with, when its last record is `finished`.
fn finished_outcome(records: &[Bytes]) -> Option<String> {
    let last: Value = serde_json::from_slice(records.last()?).ok()?;
    let event = last.get("event")?;
    (event.get("type")?.as_str()? == "finished")
        .then(|| event.get("outcome")?.as_str().map(str::to_owned))
        .flatten()
}

/// Whether `id` is a task id a worker uses in paths and refs: letters, digits, `-` and `_`
/// (what `rawko submit` makes), at most 200 characters.
fn plain_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 200
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
}

async fn run_job(ctx: Arc<Ctx>, job: Job) {
    let id = job.task_id().to_owned();
    if !plain_id(&id) {
        (ctx.say)(format!(
            "warning: a queued message names no task id rawko makes ({:?}); dropped",
            crate::clip::clip(&id)
        ));
        let _ = job.done().await;
        return;
    }
    let spec: JobSpec = match serde_json::from_slice(job.payload()) {
        Ok(spec) => spec,
        Err(e) => {
            (ctx.say)(format!(
                "warning: task {id}: its queued message is not a task ({e}); dropped"
            ));
            let _ = job.done().await;
            return;
        }
    };
    if spec.task_id != id
        || spec.repo != ctx.repo && team::repo_hash(&spec.repo) != team::repo_hash(&ctx.repo)
    {
        (ctx.say)(format!(
            "warning: task {id}: its queued message names task {} of {}; dropped",
            spec.task_id, spec.repo
        ));
        let _ = job.done().await;
        return;
    }
    ctx.running
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id.clone());
    let result = run_task(&ctx, &job, &spec).await;
    ctx.running
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&id);
    crate::store::replica::unregister(&id);
    crate::checkpoint::stop_pushing(&id);
    let work = ctx.state_dir.join("work").join(&id);
    let _ = tokio::fs::remove_dir_all(&work).await;
    match result {
        Ok(Ended::Done(outcome)) => {
            (ctx.say)(format!("ended {id}: {outcome}"));
            if let Err(e) = job.done().await {
                (ctx.say)(format!("warning: task {id}: acknowledging it: {e}"));
            }
        }
        Ok(Ended::Settled(outcome)) => {
            (ctx.say)(format!(
                "settled {id}: its log ended ({outcome}) before its worker could acknowledge it"
            ));
            let _ = job.done().await;
        }
        Ok(Ended::Failed(e)) => fail(&ctx, &spec, job, e).await,
        Err(e) if job.delivered() < MAX_PREPARE_ATTEMPTS => {
            (ctx.say)(format!(
                "could not run {id} ({e}); giving it back to try again"
            ));
            let mut entry = entry_of(&ctx, &spec).await;
            entry.state = "queued".to_owned();
            entry.worker = None;
            entry.updated_at = now_millis();
            let _ = put_json(&ctx.tasks, &id, &entry).await;
            tokio::time::sleep(Duration::from_secs(1)).await;
            let _ = job.release().await;
        }
        Err(e) => fail(&ctx, &spec, job, e).await,
        Ok(Ended::GivenBack) => {
            (ctx.say)(format!("gave {id} back"));
            let _ = job.release().await;
        }
        Ok(Ended::Fenced) => {
            (ctx.say)(format!(
                "task {id} was taken over by another worker: this one stopped it"
            ));
            // The other worker holds the message now.
            drop(job);
        }
    }
}

/// A task that cannot run: failed, with the reason as its breadcrumb, and acknowledged.
async fn fail(ctx: &Ctx, spec: &JobSpec, job: Job, why: String) {
    (ctx.say)(format!("task {} failed to run: {why}", spec.task_id));
    let mut entry = entry_of(ctx, spec).await;
    entry.state = "finished".to_owned();
    entry.outcome = Some("failed".to_owned());
    entry.breadcrumb = why;
    entry.updated_at = now_millis();
    let _ = put_json(&ctx.tasks, &spec.task_id, &entry).await;
    let _ = job.done().await;
}

enum Ended {
    Done(String),
    /// Its log had ended already (its worker was lost after the last record, before it
    /// acknowledged the task): nothing ran here.
    Settled(String),
    /// It could not start (an unknown workflow, a bad provider): it failed.
    Failed(String),
    GivenBack,
    Fenced,
}

/// How many times a task that could not be prepared (a clone or fetch that failed, NATS
/// unreachable) is given back to try again before it counts as failed.
const MAX_PREPARE_ATTEMPTS: i64 = 5;

async fn entry_of(ctx: &Ctx, spec: &JobSpec) -> TaskEntry {
    get_json::<TaskEntry>(&ctx.tasks, &spec.task_id)
        .await
        .unwrap_or_else(|| TaskEntry {
            task_id: spec.task_id.clone(),
            state: "queued".to_owned(),
            repo: spec.repo.clone(),
            description: spec.description.clone(),
            workflow: spec.workflow.clone(),
            submitted_at: spec.submitted_at,
            updated_at: now_millis(),
            ..Default::default()
        })
}

async fn run_task(ctx: &Arc<Ctx>, job: &Job, spec: &JobSpec) -> Result<Ended, String> {
    let id = spec.task_id.clone();
    let (records, last) = read_log_retrying(&ctx.team, &id).await?;
    if let Some(outcome) = finished_outcome(&records) {
        // It ended before its worker could say so: nothing runs again.
        let mut entry = entry_of(ctx, spec).await;
        entry.state = "finished".to_owned();
        entry.outcome = Some(outcome.clone());
        entry.updated_at = now_millis();
        put_json(&ctx.tasks, &id, &entry)
            .await
            .map_err(|e| e.to_string())?;
        return Ok(Ended::Settled(outcome));
    }
    let takeover = !records.is_empty();
    let mut entry = entry_of(ctx, spec).await;
    entry.worker = Some(ctx.name.clone());
    entry.state = "running".to_owned();
    entry.attempts += 1;
    entry.updated_at = now_millis();
    put_json(&ctx.tasks, &id, &entry)
        .await
        .map_err(|e| e.to_string())?;
    if takeover {
        (ctx.say)(format!(
            "resumed {id} (delivery {}, {} records)",
            job.delivered(),
            records.len()
        ));
    } else {
        (ctx.say)(format!("took {id}"));
    }

    // The task's own clone, on its branch.
    let work = ctx.state_dir.join("work").join(&id);
    let _ = tokio::fs::remove_dir_all(&work).await;
    let branch = format!("rawko/{id}");
    let branch_ref = format!("refs/heads/{branch}");
    let parent = ctx.state_dir.join("work");
    let clone = ctx.clone.to_string_lossy().into_owned();
    let work_s = work.to_string_lossy().into_owned();
    // `--no-local`: a local repository is read through git's transport, never by copying its
    // object files, which a push landing meanwhile moves under the copy.
    git(
        &parent,
        &[
            "clone",
            "--quiet",
            "--no-checkout",
            "--no-local",
            "--reference-if-able",
            &clone,
            &ctx.repo,
            &work_s,
        ],
    )
    .await?;
    let on_branch = git(&work, &["ls-remote", "origin", &branch_ref])
        .await?
        .contains(&branch_ref);
    let commit = if on_branch {
        git(
            &work,
            &[
                "fetch",
                "--quiet",
                "origin",
                &format!("+{branch_ref}:refs/remotes/origin/{branch}"),
            ],
        )
        .await?;
        git(
            &work,
            &["rev-parse", &format!("refs/remotes/origin/{branch}")],
        )
        .await?
    } else {
        git(&work, &["rev-parse", "HEAD"]).await?
    };
    let commit = commit.trim().to_owned();
    git(&work, &["checkout", "--quiet", "-B", &branch, &commit]).await?;
    // Checkpoints chain to the branch's last commit.
    let latest = format!("{}/latest", crate::checkpoint::ref_prefix(&id));
    git(&work, &["update-ref", &latest, &commit]).await?;
    if !on_branch {
        git(
            &work,
            &[
                "push",
                "--quiet",
                "--no-verify",
                "origin",
                &format!("{commit}:{branch_ref}"),
            ],
        )
        .await?;
    }

    // The store: the log as the team has it, and the definitions it names.
    let task_dir = crate::store::TaskFiles::dir_of(&ctx.store, &id);
    let _ = tokio::fs::remove_dir_all(&task_dir).await;
    if takeover {
        definitions::download_definitions(ctx).await?;
        tokio::fs::create_dir_all(&task_dir)
            .await
            .map_err(|e| format!("{}: {e}", task_dir.display()))?;
        let mut text = Vec::new();
        for r in &records {
            text.extend_from_slice(r);
            text.push(b'\n');
        }
        tokio::fs::write(task_dir.join("events.jsonl"), text)
            .await
            .map_err(|e| format!("{}: {e}", task_dir.display()))?;
    }
    let script = match &spec.script {
        Some(contents) => {
            let dir = ctx.state_dir.join("scripts").join(&id);
            tokio::fs::create_dir_all(&dir)
                .await
                .map_err(|e| format!("{}: {e}", dir.display()))?;
            let name = spec
                .script_name
                .as_deref()
                .and_then(|n| Path::new(n).file_name())
                .map_or_else(|| OsString::from("script.yaml"), |n| n.to_owned());
            let path = dir.join(name);
            tokio::fs::write(&path, contents)
                .await
                .map_err(|e| format!("{}: {e}", path.display()))?;
            Some(path)
        }
        None => None,
    };

    // The log's replica in JetStream, and the branch the checkpoints go to.
    let fenced = Arc::new(tokio::sync::Notify::new());
    let on_fenced = {
        let fenced = fenced.clone();
        Box::new(move || fenced.notify_one()) as Box<dyn FnOnce() + Send>
    };
    let uploader: team::BeforePublish = {
        let ctx = ctx.clone();
        Arc::new(move |line: Bytes| {
            let ctx = ctx.clone();
            Box::pin(async move {
                if definitions::names_definitions(&line) {
                    definitions::upload_definitions(&ctx).await;
                }
            })
        })
    };
    let writer = LogWriter::start(
        ctx.team.clone(),
        &id,
        last,
        format!("{}.{}", ctx.name, job.delivered()),
        Some(uploader),
        on_fenced,
    );
    crate::store::replica::register(&id, writer.clone());
    crate::checkpoint::push_to(
        &id,
        crate::checkpoint::PushTarget {
            url: ctx.repo.clone(),
            branch_ref,
        },
    );

    // The task, through the task service, its events to the team.
    let (ended_tx, ended_rx) = oneshot::channel::<String>();
    let ended_tx = Arc::new(Mutex::new(Some(ended_tx)));
    let sink_ctx = ctx.clone();
    let main_id = id.clone();
    let route = Route::new(Arc::new(move |task_id: String, events| {
        let ctx = sink_ctx.clone();
        let ended = (task_id == main_id).then(|| ended_tx.clone());
        tokio::spawn(events::follow(ctx, task_id, events, ended));
    }));
    let env = |name: &str| std::env::var_os(name);
    let opened = Tasks::open(
        Opening::new(work.clone(), &env)
            .store(Some(ctx.store.clone()))
            .route(route.clone()),
    );
    for p in opened.found.problems {
        (ctx.say)(format!("warning: task {id}: config {p}"));
    }
    let tasks = opened.tasks;
    let started = if takeover {
        tasks.resume_with(&id, route.clone()).await.map(|_| ())
    } else {
        let request = StartRequest {
            description: spec.description.clone(),
            workflow: spec.workflow.clone(),
            agent: None,
            provider: spec.provider.clone(),
            model: spec.model.clone(),
            script,
            base_url: spec.base_url.clone(),
            agent_command: None,
        };
        tasks
            .start_as(&id, request, route.clone())
            .await
            .map(|_| ())
    };
    if let Err(e) = started {
        return Ok(Ended::Failed(e.to_string()));
    }
    let mut stop = ctx.stop.clone();
    let ended = tokio::select! {
        outcome = ended_rx => Ended::Done(outcome.unwrap_or_else(|_| "failed".to_owned())),
        () = fenced.notified() => Ended::Fenced,
        _ = stop.wait_for(|s| *s) => Ended::GivenBack,
    };
    match &ended {
        Ended::Done(outcome) => {
            // Everything it logged is in the team's log before the job is acknowledged.
            writer.flush().await;
            let mut entry = entry_of(ctx, spec).await;
            entry.state = "finished".to_owned();
            entry.outcome = Some(outcome.clone());
            entry.worker = Some(ctx.name.clone());
            entry.updated_at = now_millis();
            put_json(&ctx.tasks, &id, &entry)
                .await
                .map_err(|e| e.to_string())?;
        }
        Ended::Settled(_) | Ended::Failed(_) => {}
        Ended::Fenced | Ended::GivenBack => {
            // Nothing more of it reaches the team: the next worker goes on from the log.
            writer.stop();
            let _ = tasks.cancel(&id);
            if matches!(ended, Ended::GivenBack) {
                let mut entry = entry_of(ctx, spec).await;
                entry.state = "queued".to_owned();
                entry.worker = None;
                entry.updated_at = now_millis();
                let _ = put_json(&ctx.tasks, &id, &entry).await;
            }
        }
    }
    Ok(ended)
}

async fn read_log_retrying(team: &Team, id: &str) -> Result<(Vec<Bytes>, u64), String> {
    let mut last = String::new();
    for attempt in 0..60u32 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        match team::read_log(team, id).await {
            Ok(r) => return Ok(r),
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}
