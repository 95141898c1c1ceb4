//! Table tests of the ACP face's mappings (`map.rs`): each row is a task event (or a choice of
//! the client) and the ACP message it becomes, compared as the JSON on the wire.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    ContentBlock, RequestPermissionOutcome, SelectedPermissionOutcome, SessionUpdate, StopReason,
    ToolKind,
};
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::map::{self, Mapper, SlashCommand};
use crate::engine::{
    ApprovalAnswer, ApprovalRequest, Crumb, Outcome, OutputKind, TaskEvent, TaskState, WorkflowName,
};
use crate::workflow::definition::{RootKind, WorkflowRoot, WorkflowSet};
use crate::workflow::step::StepAction;

/// The starter workflows `rawko init` writes: `feature` (Plan, Implement, Test, then the
/// `review` subworkflow's Static Analysis and Peer Review).
fn starter() -> Arc<WorkflowSet> {
    let root = WorkflowRoot {
        kind: RootKind::Project,
        path: Path::new(env!("CARGO_MANIFEST_DIR")).join("starter/workflows"),
    };
    let outcome = crate::workflow::load(&[root]);
    assert!(!outcome.has_errors(), "{:?}", outcome.diagnostics);
    Arc::new(outcome.workflows)
}

fn wire(update: &SessionUpdate) -> Value {
    serde_json::to_value(update).expect("serializes")
}

fn output(kind: OutputKind, text: &str) -> TaskEvent {
    TaskEvent::Output {
        kind,
        text: text.to_owned(),
        tool_call_id: None,
        tool: None,
        input: None,
        is_error: None,
    }
}

fn status(state: TaskState, crumbs: &[(usize, usize)], workflow: Option<&str>) -> TaskEvent {
    TaskEvent::Status {
        subagent: Default::default(),
        state,
        breadcrumb: crumbs
            .iter()
            .map(|&(index, total)| Crumb {
                name: String::new(),
                phase_name: String::new(),
                emoji: String::new(),
                index,
                total,
            })
            .collect(),
        text: String::new(),
        reason: None,
        workflow: workflow.map(|k| WorkflowName {
            key: k.to_owned(),
            name: k.to_owned(),
        }),
        breadcrumb_text: String::new(),
        phase_index: None,
        phases_done: None,
    }
}

fn mapper() -> Mapper {
    Mapper::new(starter(), PathBuf::from("/ws"))
}

#[test]
fn each_output_kind_becomes_its_update() {
    let rows: Vec<(&str, TaskEvent, Value)> = vec![
        (
            "streamed text is the agent's message",
            output(OutputKind::AssistantDelta, "Hel"),
            json!([{"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hel"}}]),
        ),
        (
            "context injection is one short thought line, not the prompt",
            output(
                OutputKind::ContextInjected,
                "\n[Workflow path: Feature ▸ Plan]\nline two\nline three",
            ),
            json!([{"sessionUpdate": "agent_thought_chunk", "content": {"type": "text",
                "text": "rawko injected the phase context (4 lines): [Workflow path: Feature ▸ Plan]\n"}}]),
        ),
        (
            "the reminder is a visible line",
            output(OutputKind::Reminder, "You are not done."),
            json!([{"sessionUpdate": "agent_message_chunk", "content": {"type": "text",
                "text": "\n🔔 rawko reminds the agent: You are not done.\n"}}]),
        ),
        (
            "each countdown tick is a visible line",
            TaskEvent::Countdown {
                seconds_left: 3,
                text: "Continuing in 3 s (interrupt to stop)".to_owned(),
                label: "Continuing in 3 s".to_owned(),
            },
            json!([{"sessionUpdate": "agent_message_chunk", "content": {"type": "text",
                "text": "\n⏳ Continuing in 3 s (interrupt to stop)\n"}}]),
        ),
        (
            "a hook's output is a thought",
            output(OutputKind::HookOutput, "formatted 2 files"),
            json!([{"sessionUpdate": "agent_thought_chunk", "content": {"type": "text",
                "text": "hook: formatted 2 files\n"}}]),
        ),
        (
            "the completion message is shown",
            output(OutputKind::Completion, "✅ Done"),
            json!([{"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "\n✅ Done\n"}}]),
        ),
        (
            "an error is shown with a warning sign",
            output(OutputKind::Error, "task failed: no key"),
            json!([{"sessionUpdate": "agent_message_chunk", "content": {"type": "text",
                "text": "\n⚠️ task failed: no key\n"}}]),
        ),
        (
            "a tool call: kind, status, absolute location, raw input",
            TaskEvent::Output {
                kind: OutputKind::ToolCall,
                text: "Read src/lib.rs".to_owned(),
                tool_call_id: Some("c1".to_owned()),
                tool: Some("Read".to_owned()),
                input: Some(json!({"file_path": "src/lib.rs", "offset": 10})),
                is_error: None,
            },
            json!([{"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read src/lib.rs",
                "kind": "read", "status": "in_progress",
                "locations": [{"path": "/ws/src/lib.rs", "line": 10}],
                "rawInput": {"file_path": "src/lib.rs", "offset": 10}}]),
        ),
        (
            "a tool's result completes its call",
            TaskEvent::Output {
                kind: OutputKind::ToolResult,
                text: "wrote 1 bytes".to_owned(),
                tool_call_id: Some("c2".to_owned()),
                tool: Some("Write".to_owned()),
                input: None,
                is_error: Some(false),
            },
            json!([{"sessionUpdate": "tool_call_update", "toolCallId": "c2", "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": "wrote 1 bytes"}}]}]),
        ),
        (
            "an error result fails its call",
            TaskEvent::Output {
                kind: OutputKind::ToolResult,
                text: "blocked".to_owned(),
                tool_call_id: Some("c3".to_owned()),
                tool: Some("Bash".to_owned()),
                input: None,
                is_error: Some(true),
            },
            json!([{"sessionUpdate": "tool_call_update", "toolCallId": "c3", "status": "failed",
                "content": [{"type": "content", "content": {"type": "text", "text": "blocked"}}]}]),
        ),
        (
            "the task's end maps to no update (its last output said it)",
            TaskEvent::Finished {
                outcome: Outcome::Complete,
                summary: "done".to_owned(),
            },
            json!([]),
        ),
    ];
    for (what, event, expected) in rows {
        let got: Vec<Value> = mapper().map(&event).iter().map(wire).collect();
        assert_eq!(Value::Array(got), expected, "{what}");
    }
}

#[test]
fn the_plan_is_the_flattened_phases_sent_at_start_and_at_each_change() {
    let mut m = mapper();
    let plan = |updates: Vec<SessionUpdate>| -> Vec<(String, String)> {
        assert_eq!(updates.len(), 1, "one plan update: {updates:?}");
        let v = wire(&updates[0]);
        assert_eq!(v["sessionUpdate"], "plan");
        v["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .map(|e| {
                assert_eq!(e["priority"], "medium");
                (
                    e["content"].as_str().expect("content").to_owned(),
                    e["status"].as_str().expect("status").to_owned(),
                )
            })
            .collect()
    };
    let started = plan(m.map(&status(TaskState::Running, &[(1, 4)], Some("feature"))));
    let texts: Vec<&str> = started.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        texts,
        [
            "Feature > 📋 Plan [1/4]",
            "Feature > 🛠️ Implement [2/4]",
            "Feature > 🧪 Test [3/4]",
            "Feature > Review [4/4] > 🔍 Static Analysis [1/2]",
            "Feature > Review [4/4] > 👀 Peer Review [2/2]",
        ]
    );
    let statuses = |p: &[(String, String)]| p.iter().map(|(_, s)| s.clone()).collect::<Vec<_>>();
    assert_eq!(
        statuses(&started),
        ["in_progress", "pending", "pending", "pending", "pending"]
    );
    // The same position again (waiting for approval, say) sends nothing.
    assert!(m
        .map(&status(
            TaskState::WaitingApproval,
            &[(1, 4)],
            Some("feature")
        ))
        .is_empty());
    let nested = plan(m.map(&status(
        TaskState::Running,
        &[(4, 4), (2, 2)],
        Some("feature"),
    )));
    assert_eq!(
        statuses(&nested),
        [
            "completed",
            "completed",
            "completed",
            "completed",
            "in_progress"
        ]
    );
    // After the last phase (no breadcrumb) nothing is said until the task completes.
    assert!(m
        .map(&status(TaskState::Running, &[], Some("feature")))
        .is_empty());
    let done = plan(m.map(&status(TaskState::Complete, &[], Some("feature"))));
    assert!(done.iter().all(|(_, s)| s == "completed"), "{done:?}");
}

#[test]
fn write_and_edit_calls_carry_their_diff() {
    let call = |tool: &str, input: Value| {
        let event = TaskEvent::Output {
            kind: OutputKind::ToolCall,
            text: tool.to_owned(),
            tool_call_id: Some("d".to_owned()),
            tool: Some(tool.to_owned()),
            input: Some(input),
            is_error: None,
        };
        wire(&mapper().map(&event)[0])["content"].clone()
    };
    let rows = [
        (
            "a Write shows the file as new text",
            call("Write", json!({"file_path": "a.md", "content": "hi"})),
            json!([{"type": "diff", "path": "/ws/a.md", "newText": "hi"}]),
        ),
        (
            "an Edit its old and new strings",
            call(
                "Edit",
                json!({"file_path": "/ws/b.rs", "old_string": "x", "new_string": "y"}),
            ),
            json!([{"type": "diff", "path": "/ws/b.rs", "oldText": "x", "newText": "y"}]),
        ),
        (
            "a MultiEdit one diff per edit",
            call(
                "MultiEdit",
                json!({"file_path": "c.rs", "edits": [
                    {"old_string": "1", "new_string": "2"},
                    {"old_string": "3", "new_string": "4"}]}),
            ),
            json!([{"type": "diff", "path": "/ws/c.rs", "oldText": "1", "newText": "2"},
                   {"type": "diff", "path": "/ws/c.rs", "oldText": "3", "newText": "4"}]),
        ),
        (
            "a Read has none",
            call("Read", json!({"file_path": "a.md"})),
            Value::Null,
        ),
    ];
    for (what, got, expected) in rows {
        assert_eq!(got, expected, "{what}");
    }
}

#[test]
fn a_task_without_a_workflow_has_no_plan() {
    let mut m = mapper();
    assert!(m.map(&status(TaskState::Running, &[], None)).is_empty());
    assert!(m.map(&status(TaskState::Complete, &[], None)).is_empty());
}

#[test]
fn the_turn_ends_where_the_task_waits_or_ends() {
    let finished = |outcome, summary: &str| TaskEvent::Finished {
        outcome,
        summary: summary.to_owned(),
    };
    let rows: Vec<(&str, TaskEvent, Option<StopReason>)> = vec![
        (
            "running goes on",
            status(TaskState::Running, &[], None),
            None,
        ),
        (
            "a countdown goes on",
            status(TaskState::Countdown, &[], None),
            None,
        ),
        (
            "an approval goes on",
            status(TaskState::WaitingApproval, &[], None),
            None,
        ),
        (
            "waiting for the user ends the turn",
            status(TaskState::Blocked, &[], None),
            Some(StopReason::EndTurn),
        ),
        (
            "complete ends it",
            finished(Outcome::Complete, "done"),
            Some(StopReason::EndTurn),
        ),
        (
            "failed ends it too (the error was shown)",
            finished(Outcome::Failed, "no key"),
            Some(StopReason::EndTurn),
        ),
        (
            "cancelled is cancelled",
            finished(Outcome::Cancelled, "cancelled"),
            Some(StopReason::Cancelled),
        ),
        (
            "the iteration limit is max_turn_requests",
            finished(Outcome::Complete, crate::machine::MAX_ITERATIONS_SUMMARY),
            Some(StopReason::MaxTurnRequests),
        ),
        (
            "text goes on",
            output(OutputKind::AssistantDelta, "x"),
            None,
        ),
    ];
    for (what, event, expected) in rows {
        assert_eq!(map::turn_end(&event), expected, "{what}");
    }
}

#[test]
fn tool_kinds() {
    let rows = [
        ("Read", ToolKind::Read),
        ("Glob", ToolKind::Search),
        ("Grep", ToolKind::Search),
        ("Edit", ToolKind::Edit),
        ("MultiEdit", ToolKind::Edit),
        ("Write", ToolKind::Edit),
        ("Bash", ToolKind::Execute),
        ("WebFetch", ToolKind::Fetch),
        ("workflow_step", ToolKind::SwitchMode),
        ("mcp__rawko__workflow_step", ToolKind::SwitchMode),
        ("SomethingElse", ToolKind::Other),
    ];
    for (tool, kind) in rows {
        assert_eq!(map::tool_kind(tool), kind, "{tool}");
    }
}

#[test]
fn a_blocked_call_asks_with_the_four_options_and_the_phase_and_reason() {
    let call = map::permission_tool_call(
        "c9",
        "Write",
        &json!({"file_path": "/ws/notes.md", "content": "hi"}),
        "Plan",
        "Write is blocked during the Plan phase",
        "Write notes.md (2 bytes)",
        Path::new("/ws"),
    );
    assert_eq!(
        serde_json::to_value(&call).expect("serializes"),
        json!({"toolCallId": "c9", "kind": "edit", "status": "pending",
            "title": "Write notes.md (2 bytes) — blocked in phase Plan",
            "content": [{"type": "content", "content": {"type": "text",
                "text": "Write is blocked during the Plan phase"}}],
            "locations": [{"path": "/ws/notes.md"}],
            "rawInput": {"file_path": "/ws/notes.md", "content": "hi"}})
    );
    let options: Vec<Value> = map::permission_options()
        .iter()
        .map(|o| serde_json::to_value(o).expect("serializes"))
        .collect();
    let ids: Vec<(&str, &str)> = options
        .iter()
        .map(|o| {
            (
                o["optionId"].as_str().expect("id"),
                o["kind"].as_str().expect("kind"),
            )
        })
        .collect();
    assert_eq!(
        ids,
        [
            ("allow_once", "allow_once"),
            ("allow_always", "allow_always"),
            ("reject_once", "reject_once"),
            ("reject_always", "reject_always"),
        ]
    );
}

#[test]
fn the_clients_choice_is_the_tasks_answer_and_anything_else_rejects() {
    let selected = |id: &str| {
        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id.to_owned()))
    };
    let rows = [
        (selected("allow_once"), ApprovalAnswer::AllowOnce),
        (selected("allow_always"), ApprovalAnswer::AllowAlways),
        (selected("reject_once"), ApprovalAnswer::RejectOnce),
        (selected("reject_always"), ApprovalAnswer::RejectAlways),
        (selected("something"), ApprovalAnswer::Cancelled),
        (
            RequestPermissionOutcome::Cancelled,
            ApprovalAnswer::Cancelled,
        ),
    ];
    for (outcome, answer) in rows {
        assert_eq!(map::approval_answer(&outcome), answer, "{outcome:?}");
    }
    assert_eq!(
        map::approval_line(ApprovalAnswer::AllowOnce, "Write a"),
        None
    );
    assert_eq!(
        map::approval_line(ApprovalAnswer::RejectOnce, "Write a").as_deref(),
        Some("\n🚫 Rejected: Write a\n")
    );
    assert_eq!(
        map::approval_line(ApprovalAnswer::Cancelled, "Write a").as_deref(),
        Some("\n🚫 Not approved (cancelled): Write a\n")
    );
}

#[test]
fn an_approval_request_maps_to_no_update_it_is_asked_instead() {
    let (reply, _answer) = oneshot::channel();
    let event = TaskEvent::Approval(Box::new(ApprovalRequest {
        subagent: Default::default(),
        tool_call_id: "c".to_owned(),
        tool: "Write".to_owned(),
        input: json!({}),
        phase: "Plan".to_owned(),
        reason: "blocked".to_owned(),
        detail: "Write is blocked in the Plan phase (allowed: Read)".to_owned(),
        summary: "Write".to_owned(),
        expires_at: 0,
        timeout: std::time::Duration::from_secs(1),
        reply,
    }));
    assert!(mapper().map(&event).is_empty());
    assert_eq!(map::turn_end(&event), None);
}

#[test]
fn slash_commands() {
    let rows = [
        ("/next", Some(SlashCommand::Step(StepAction::Next))),
        ("  /loop  ", Some(SlashCommand::Step(StepAction::Loop))),
        (
            "/status please",
            Some(SlashCommand::Step(StepAction::Status)),
        ),
        (
            "/cancel-workflow",
            Some(SlashCommand::Step(StepAction::Cancel)),
        ),
        ("/interrupt", Some(SlashCommand::Interrupt)),
        (
            "/rewind  Implement ",
            Some(SlashCommand::Rewind("Implement".into())),
        ),
        ("/rewind", Some(SlashCommand::Rewind(String::new()))),
        ("/rewinding", None),
        ("/unknown", None),
        ("next", None),
        ("please /next", None),
    ];
    for (text, expected) in rows {
        assert_eq!(map::slash_command(text), expected, "{text}");
    }
    let names: Vec<String> = map::available_commands()
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(
        names,
        [
            "next",
            "loop",
            "status",
            "cancel-workflow",
            "interrupt",
            "rewind"
        ]
    );
}

#[test]
fn workflows_are_the_modes_with_no_workflow_first() {
    let set = starter();
    let modes = serde_json::to_value(map::modes(&set, "feature")).expect("serializes");
    assert_eq!(modes["currentModeId"], "feature");
    let ids: Vec<&str> = modes["availableModes"]
        .as_array()
        .expect("modes")
        .iter()
        .map(|m| m["id"].as_str().expect("id"))
        .collect();
    // `review` runs only as part of `feature` (show: workflows), so it is no mode.
    assert_eq!(ids, ["none", "feature"]);
    assert_eq!(map::mode_workflow(&set, "none"), Ok(None));
    assert_eq!(
        map::mode_workflow(&set, "feature"),
        Ok(Some("feature".to_owned()))
    );
    let err = map::mode_workflow(&set, "review").expect_err("a subworkflow is no mode");
    assert!(
        err.contains("the modes are none and the workflows: feature"),
        "{err}"
    );
}

#[test]
fn the_prompt_text_joins_text_links_and_embedded_files() {
    use agent_client_protocol::v1::schema::{
        EmbeddedResource, EmbeddedResourceResource, ResourceLink, TextResourceContents,
    };
    let prompt = vec![
        ContentBlock::from("Fix the bug in"),
        ContentBlock::ResourceLink(ResourceLink::new("lib.rs", "file:///ws/src/lib.rs")),
        ContentBlock::Resource(EmbeddedResource::new(
            EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                "fn main() {}",
                "file:///ws/src/main.rs",
            )),
        )),
    ];
    assert_eq!(
        map::prompt_text(&prompt),
        "Fix the bug in\n@file:///ws/src/lib.rs\n<file uri=\"file:///ws/src/main.rs\">\nfn main() {}\n</file>"
    );
}

#[test]
fn a_loaded_session_replays_the_description_where_the_task_stands_and_its_plan() {
    let set = starter();
    let snapshot = |workflow: Option<&str>, crumbs: Vec<Crumb>| crate::engine::TaskSnapshot {
        ended: Default::default(),
        subagent: Default::default(),
        task_id: "task-1".to_owned(),
        description: "Add a plan".to_owned(),
        workflow: workflow.map(str::to_owned),
        workflow_name: None,
        state: TaskState::Interrupted,
        breadcrumb: crumbs,
        breadcrumb_text: String::new(),
        status_text: "Feature > 🛠️ Implement [2/4] — interrupted; resume to continue".to_owned(),
        started_at: 0,
        updated_at: 0,
        history: Vec::new(),
        workspace: PathBuf::from("/ws"),
        machine_state: "executing".to_owned(),
        agent: None,
        progress: Default::default(),
    };
    let crumb = Crumb {
        name: "Feature".to_owned(),
        phase_name: "Implement".to_owned(),
        emoji: "🛠️".to_owned(),
        index: 2,
        total: 4,
    };
    let updates: Vec<Value> = map::replay(&snapshot(Some("feature"), vec![crumb]), &set)
        .iter()
        .map(wire)
        .collect();
    assert_eq!(
        updates[..2],
        [
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Add a plan"}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text",
                "text": "rawko task task-1: Feature > 🛠️ Implement [2/4] — interrupted; resume to continue\n"}}),
        ]
    );
    assert_eq!(updates[2]["sessionUpdate"], "plan");
    assert_eq!(updates[2]["entries"][1]["status"], "in_progress");
    assert_eq!(updates.len(), 3);
    // Without a workflow there is no plan.
    assert_eq!(map::replay(&snapshot(None, Vec::new()), &set).len(), 2);
}

#[test]
fn the_workflow_is_a_mode_option_and_a_choice_of_providers_a_model_option() {
    use super::options::{choice, config_options, model_choices, Choice};
    use agent_client_protocol::v1::schema::SessionConfigOptionValue;
    let set = starter();
    let spec = |name: &str, model: Option<&str>| crate::provider::ProviderSpec {
        name: name.to_owned(),
        model: model.map(str::to_owned),
        ..Default::default()
    };
    // One provider: nothing to choose, only the workflow.
    assert!(model_choices(&[spec("anthropic", None)]).is_empty());
    let options = serde_json::to_value(config_options(&set, "feature", &[], None)).unwrap();
    assert_eq!(options.as_array().unwrap().len(), 1, "{options}");
    let workflow = &options[0];
    assert_eq!(workflow["id"], "workflow");
    assert_eq!(workflow["category"], "mode");
    assert_eq!(workflow["type"], "select");
    assert_eq!(workflow["currentValue"], "feature");
    let values: Vec<&str> = workflow["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect();
    assert_eq!(values[0], "none");
    assert!(
        values.contains(&"feature") && !values.contains(&"review"),
        "{values:?}"
    );
    // Two entries of one provider are told apart by their labels.
    let models = model_choices(&[
        spec("anthropic", Some("claude-sonnet-4-5")),
        spec("openai", None),
        spec("openai", None),
    ]);
    let labels: Vec<&str> = models.iter().map(|c| c.value.as_str()).collect();
    assert_eq!(
        labels,
        ["anthropic:claude-sonnet-4-5", "openai", "openai#2"]
    );
    let options =
        serde_json::to_value(config_options(&set, "none", &models, Some("openai#2"))).unwrap();
    assert_eq!(options[1]["id"], "model");
    assert_eq!(options[1]["category"], "model");
    assert_eq!(options[1]["currentValue"], "openai#2");
    let first = serde_json::to_value(config_options(&set, "none", &models, Some("gone"))).unwrap();
    assert_eq!(
        first[1]["currentValue"], "anthropic:claude-sonnet-4-5",
        "an unknown choice shows the first"
    );
    // What the client may choose, and the words for what it may not.
    let value = |v: &str| SessionConfigOptionValue::value_id(v.to_owned());
    assert_eq!(
        choice("workflow", &value("feature"), &set, &models),
        Ok(Choice::Workflow("feature".into()))
    );
    assert_eq!(
        choice("model", &value("openai"), &set, &models),
        Ok(Choice::Model("openai".into()))
    );
    let err = choice("model", &value("gpt"), &set, &models).unwrap_err();
    assert_eq!(
        err,
        "unknown model \"gpt\"; the models are anthropic:claude-sonnet-4-5, openai, openai#2"
    );
    let err = choice("model", &value("openai"), &set, &[]).unwrap_err();
    assert_eq!(err, "unknown option \"model\"; the options are workflow");
    let err = choice(
        "workflow",
        &SessionConfigOptionValue::boolean(true),
        &set,
        &models,
    )
    .unwrap_err();
    assert!(err.contains("not true or false"), "{err}");
    assert!(choice("workflow", &value("review"), &set, &models)
        .unwrap_err()
        .starts_with("unknown mode \"review\""));
}

#[test]
fn a_sessions_title_is_its_tasks_first_line_clipped() {
    assert_eq!(
        map::session_title("  Fix the bug\nin detail"),
        "Fix the bug"
    );
    let long = "x".repeat(300);
    assert!(map::session_title(&long).chars().count() <= 121);
}

#[test]
fn reported_usage_is_a_usage_update_when_the_window_is_known() {
    let mut m = mapper();
    let shown = m.map(&TaskEvent::Usage {
        used: 1280,
        window: Some(200_000),
    });
    assert_eq!(shown.len(), 1);
    let u = wire(&shown[0]);
    assert_eq!(u["sessionUpdate"], "usage_update");
    assert_eq!(u["used"], 1280);
    assert_eq!(u["size"], 200_000);
    assert!(
        m.map(&TaskEvent::Usage {
            used: 5,
            window: None
        })
        .is_empty(),
        "without the window there is nothing to show it against"
    );
}
