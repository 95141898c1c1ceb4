//! The task service on its own: what it refuses (and as which error), and a task it starts
//! running to its end with its events at the sink.

use std::path::Path;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::{Opening, Override, Route, Sink, StartRequest, TaskError, Tasks};
use crate::engine::TaskEvent;

/// No environment: the workspace's own roots only, no user config.
fn no_env(_: &str) -> Option<std::ffi::OsString> {
    None
}

/// The opening of `dir` the tests share: fixed settings with a short countdown and a key.
fn opening<'a>(dir: &Path, store: Option<&Path>) -> Opening<'a> {
    Opening::new(dir.to_path_buf(), &no_env)
        .store(store.map(Path::to_path_buf))
        .fixed(|settings| {
            settings.countdown_tick = std::time::Duration::from_millis(1);
            // Keys live in the settings only: the provider must be built with them.
            settings
                .api_keys
                .0
                .insert("anthropic".to_owned(), "sk-from-config".to_owned());
        })
}

type Streams = mpsc::UnboundedReceiver<(String, crate::engine::EventReceiver)>;

/// A route whose task streams come out of the receiver.
fn route() -> (Route, Streams) {
    let (tx, rx) = mpsc::unbounded_channel();
    let sink: Sink = Arc::new(move |id, events| {
        let _ = tx.send((id, events));
    });
    (Route::new(sink), rx)
}

fn service(
    dir: &Path,
    store: Option<&Path>,
) -> (
    Arc<Tasks>,
    mpsc::UnboundedReceiver<(String, crate::engine::EventReceiver)>,
) {
    let (route, rx) = route();
    let tasks = Tasks::open(opening(dir, store).route(route)).tasks;
    (tasks, rx)
}

fn request(description: &str) -> StartRequest {
    StartRequest {
        description: description.to_owned(),
        script: Some("s.yaml".into()),
        ..StartRequest::default()
    }
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("s.yaml"),
        "turns:\n  - text: \"All done.\"\n",
    )
    .unwrap();
    let wf = dir.path().join(".rawko/workflows/feature");
    std::fs::create_dir_all(&wf).unwrap();
    std::fs::write(
        wf.join("workflow.yaml"),
        "name: Feature\ncommandName: feature\ninitialMessage: \"Do {description}\"\nphases:\n  - build.md\n",
    )
    .unwrap();
    std::fs::write(
        wf.join("build.md"),
        "---\nid: build\nname: Build\nemoji: \"🔨\"\n---\nBuild it.\n",
    )
    .unwrap();
    dir
}

#[tokio::test]
async fn bad_start_requests_are_refused_with_the_error_a_face_maps() {
    let dir = project();
    let (tasks, _sink) = service(dir.path(), None);
    let too_long = "x".repeat(super::MAX_MESSAGE_BYTES + 1);
    type Case = (StartRequest, fn(&TaskError) -> bool, &'static str);
    let cases: Vec<Case> = vec![
        (
            request("   "),
            |e| matches!(e, TaskError::Invalid(_)),
            "description is empty",
        ),
        (
            request(&too_long),
            |e| matches!(e, TaskError::Invalid(_)),
            "longer than 1 MiB",
        ),
        (
            StartRequest {
                workflow: Some("nope".into()),
                ..request("x")
            },
            |e| matches!(e, TaskError::UnknownWorkflow(_)),
            "unknown workflow \"nope\"; available: feature",
        ),
        (
            StartRequest {
                agent: Some("nobody".into()),
                ..request("x")
            },
            |e| matches!(e, TaskError::UnknownAgent(_)),
            "unknown agent \"nobody\"; the agents are default",
        ),
        (
            StartRequest {
                provider: Some("gemini".into()),
                script: None,
                ..request("x")
            },
            |e| matches!(e, TaskError::Invalid(_)),
            "gemini",
        ),
        (
            StartRequest {
                script: Some("missing.yaml".into()),
                ..request("x")
            },
            |e| matches!(e, TaskError::CannotStart(_)),
            "missing.yaml",
        ),
    ];
    for (req, kind, needle) in cases {
        let shown = format!("{req:?}");
        let e = tasks.start(req).await.expect_err(&shown);
        assert!(kind(&e), "{shown}: {e:?}");
        assert!(e.to_string().contains(needle), "{shown}: {e}");
    }
    assert!(tasks.list_read().await.is_empty());
}

#[tokio::test]
async fn a_started_task_runs_to_its_end_and_its_events_reach_the_sink() {
    let dir = project();
    let (tasks, mut sink) = service(dir.path(), None);
    let started = tasks
        .start(StartRequest {
            workflow: Some("feature".into()),
            ..request("Build it")
        })
        .await
        .expect("start");
    let (id, mut events) = sink.recv().await.expect("the task's events");
    assert_eq!(id, started.id);
    let mut outcome = None;
    while let Some(e) = events.recv().await {
        if let TaskEvent::Finished { outcome: o, .. } = e {
            outcome = Some(o);
        }
    }
    assert!(outcome.is_some(), "the stream ends after Finished");
    let listed = tasks.list_read().await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].task_id, started.id);
    assert_eq!(listed[0].workflow.as_deref(), Some("feature"));
    let got = tasks.get(&started.id).await.expect("get");
    assert!(got.state.is_finished(), "{:?}", got.state);
    // Commands for a finished task conflict.
    assert!(matches!(
        tasks.cancel(&started.id),
        Err(TaskError::Conflict(_))
    ));
    assert!(matches!(
        tasks.send_message(&started.id, "more".into()),
        Err(TaskError::Conflict(_))
    ));
}

#[tokio::test]
async fn unknown_tasks_are_unknown_everywhere() {
    let dir = project();
    let state = tempfile::tempdir().unwrap();
    let (tasks, _sink) = service(dir.path(), Some(state.path()));
    let id = "task-1-1";
    assert!(matches!(tasks.cancel(id), Err(TaskError::UnknownTask(_))));
    assert!(matches!(
        tasks.interrupt(id),
        Err(TaskError::UnknownTask(_))
    ));
    assert!(matches!(
        tasks.get(id).await,
        Err(TaskError::UnknownTask(_))
    ));
    assert!(matches!(
        tasks.resume(id).await,
        Err(TaskError::UnknownTask(_))
    ));
    assert!(matches!(
        tasks.override_task(id, Override::Retry).await,
        Err(TaskError::UnknownTask(_))
    ));
    assert!(matches!(
        tasks.set_workflow(id, "feature").await,
        Err(TaskError::UnknownTask(_))
    ));
    // Without a store nothing can be resumed, and the user is told why.
    let (memory_only, _sink) = service(dir.path(), None);
    let e = memory_only.resume(id).await.expect_err("no store");
    assert!(
        matches!(&e, TaskError::Conflict(m) if m.contains("not persisted")),
        "{e:?}"
    );
}

#[tokio::test]
async fn the_provider_is_built_with_the_keys_of_the_settings() {
    let dir = project();
    let (tasks, _sink) = service(dir.path(), None);
    // An unreachable base URL: the task fails at its first turn, but it starts, so the key of
    // the settings was found (the environment of a test may have none).
    let started = tasks
        .start(StartRequest {
            provider: Some("anthropic".into()),
            model: Some("claude-test".into()),
            script: None,
            base_url: Some("http://127.0.0.1:9".into()),
            ..request("x")
        })
        .await
        .expect("the key comes from the settings");
    assert!(!started.id.is_empty());
    tasks.cancel(&started.id).ok();
}

/// `setWorkflow` (an external agent's session picks its workflow after it started) pins the
/// workflow before the task starts it: the session's task, continued by a restarted rawko,
/// runs the phase it pinned, not the file as rewritten since.
#[tokio::test]
async fn a_workflow_set_later_is_pinned_before_the_task_starts_it() {
    let dir = project();
    let state = tempfile::tempdir().unwrap();
    let (tasks, _sink) = service(dir.path(), Some(state.path()));
    let session = tasks
        .external_session("session-1", None, Some("Build"))
        .await
        .expect("the session's task");
    let id = session.task_id.clone();
    let text = tasks.set_workflow(&id, "feature").await.expect("set");
    assert!(text.contains("Feature"), "{text}");
    tasks.cancel(&id).expect("cancel");
    for _ in 0..500 {
        if tasks.handle(&id).is_none() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    crate::store::journal().flush().await;

    // The log names the pinned workflow before the workflow's first record. Cut after that
    // record, it is the log of a rawko killed there.
    let task_dir = state.path().join("tasks").join(&id);
    let log = std::fs::read_to_string(task_dir.join("events.jsonl")).expect("the task's log");
    let kinds: Vec<String> = log
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["event"]["type"].as_str().unwrap_or_default().to_owned()
        })
        .collect();
    let pinned = kinds
        .iter()
        .position(|k| k == "pinned")
        .expect("a pinned record");
    let workflow = kinds
        .iter()
        .position(|k| k == "workflow")
        .expect("a workflow record");
    assert!(pinned < workflow, "{kinds:?}");
    let cut: Vec<&str> = log.lines().take(workflow + 1).collect();
    std::fs::write(task_dir.join("events.jsonl"), cut.join("\n") + "\n").unwrap();
    for cache in ["snapshot.json", "history.json"] {
        let _ = std::fs::remove_file(task_dir.join(cache));
    }

    std::fs::write(
        dir.path().join(".rawko/workflows/feature/build.md"),
        "---\nid: build\nname: Build\nemoji: \"🔨\"\n---\nRewritten.\n",
    )
    .unwrap();
    let (restarted, _sink) = service(dir.path(), Some(state.path()));
    let again = restarted
        .external_session("session-1", None, None)
        .await
        .expect("the session's task again");
    assert_eq!(again.task_id, id, "the stored task goes on");
    let prompt = restarted.phase_prompt(&id, 0).await.expect("phase prompt");
    assert!(
        prompt.prompt.contains("Build it.") && !prompt.prompt.contains("Rewritten"),
        "{}",
        prompt.prompt
    );
    restarted.cancel(&id).ok();
}

/// Reads a task's events to their end.
async fn drain(mut events: crate::engine::EventReceiver) {
    while events.recv().await.is_some() {}
}

/// Two sessions of a face share one service (`rawko acp` in one folder): each task's events go by
/// the route it was started with, not the other's nor the service's, and a reset of a task
/// found in the store goes by its route again, until the face releases the route.
#[tokio::test]
async fn each_task_goes_by_its_own_route_and_keeps_it_when_it_runs_again() {
    let dir = project();
    let state = tempfile::tempdir().unwrap();
    let (tasks, mut own) = service(dir.path(), Some(state.path()));
    let (a, mut at_a) = route();
    let (b, mut at_b) = route();
    let first = tasks
        .start_with(request("The task of A"), a.clone())
        .await
        .expect("start A");
    let second = tasks
        .start_with(request("The task of B"), b.clone())
        .await
        .expect("start B");
    let (id, events) = at_a.recv().await.expect("A's task");
    assert_eq!(id, first.id);
    drain(events).await;
    let (id, events) = at_b.recv().await.expect("B's task");
    assert_eq!(id, second.id);
    drain(events).await;
    assert!(own.try_recv().is_err(), "nothing by the service's route");

    tasks
        .override_task(&first.id, Override::Reset)
        .await
        .expect("reset");
    let (id, events) = at_a.recv().await.expect("A's task again");
    assert_eq!(id, first.id);
    drain(events).await;
    assert!(at_b.try_recv().is_err() && own.try_recv().is_err());

    tasks.release(&a);
    tasks
        .override_task(&first.id, Override::Reset)
        .await
        .expect("reset");
    let (id, events) = own.recv().await.expect("by the service's route");
    assert_eq!(id, first.id);
    drain(events).await;
    assert!(at_a.try_recv().is_err());
}

/// A workspace whose config brings a hook, so there is something to trust.
fn hooked_project() -> tempfile::TempDir {
    let dir = project();
    std::fs::write(
        dir.path().join(".rawko/config.json"),
        r#"{"hooks": {"Stop": [{"type": "command", "command": "true"}]}}"#,
    )
    .unwrap();
    dir
}

/// The opening finds the trust; a face that asks hands the service the answer, which the next
/// opening finds recorded; a face that cannot ask leaves an untrusted workspace's hooks out at
/// once; the editor's folder is opened again by `reopen`.
#[tokio::test]
async fn the_opening_finds_the_trust_and_the_face_hands_over_the_answer() {
    use crate::hooks::trust::Trust;
    let config = tempfile::tempdir().unwrap();
    let config_home = config.path().to_path_buf();
    let env = move |k: &str| (k == "XDG_CONFIG_HOME").then(|| config_home.clone().into());
    let dir = hooked_project();

    let asking = Tasks::open(Opening::new(dir.path().to_path_buf(), &env).asks_trust());
    assert_eq!(asking.found.trust, Trust::Untrusted);
    assert_eq!(asking.tasks.trust(), None, "new tasks wait for the answer");
    asking
        .tasks
        .answer_trust(true)
        .expect("the yes is recorded");
    assert_eq!(asking.tasks.trust(), Some(true));

    let again = Tasks::open(Opening::new(dir.path().to_path_buf(), &env).store(None));
    assert_eq!(again.found.trust, Trust::Trusted, "the yes was recorded");
    assert_eq!(again.tasks.trust(), Some(true));

    let other = hooked_project();
    let silent = Tasks::open(Opening::new(other.path().to_path_buf(), &env).store(None));
    assert_eq!(silent.found.trust, Trust::Untrusted);
    assert_eq!(silent.tasks.trust(), Some(false), "nobody is asked");

    // The editor's folder: the service moves there and finds its trust.
    let found = silent
        .tasks
        .reopen(dir.path().to_path_buf(), None, &env, true);
    assert_eq!(found.trust, Trust::Trusted);
    assert_eq!(
        silent.tasks.workspace(),
        std::fs::canonicalize(dir.path()).unwrap()
    );
    assert_eq!(silent.tasks.trust(), Some(true));
}
