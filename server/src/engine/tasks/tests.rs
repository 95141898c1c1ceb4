//! The task service on its own: what it refuses (and as which error), and a task it starts
//! running to its end with its events at the sink.

use std::path::Path;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::{Override, Place, Sink, StartRequest, TaskError, Tasks};
use crate::config::Settings;
use crate::engine::TaskEvent;

fn place(dir: &Path) -> Place {
    let mut settings = Settings {
        countdown_tick: std::time::Duration::from_millis(1),
        ..Settings::default()
    };
    // Keys live in the settings only: the provider must be built with them.
    settings
        .api_keys
        .0
        .insert("anthropic".to_owned(), "sk-from-config".to_owned());
    Place {
        workspace: dir.to_path_buf(),
        settings,
        workflow_roots: crate::workflow::default_roots(dir, |_| None),
        agent_roots: Vec::new(),
    }
}

fn service(
    dir: &Path,
    store: Option<&Path>,
) -> (
    Arc<Tasks>,
    mpsc::UnboundedReceiver<(String, crate::engine::EventReceiver)>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let sink: Sink = Arc::new(move |id, events| {
        let _ = tx.send((id, events));
    });
    let tasks = Tasks::new(place(dir), store.map(Path::to_path_buf), sink);
    tasks.set_trust(Some(true));
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
