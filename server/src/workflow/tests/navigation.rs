//! Moving through workflows: phases, subworkflows, loops, cancelling, the step tool and stale
//! states.

use super::*;

#[test]
fn linear_workflow_runs_to_done() {
    let set = set_of(&[wf("lin", "Linear", &["a", "b", "c"])]);
    check_walk(
        &set,
        "lin",
        expect![[r#"
            start  Linear > 🔹 A [1/3]  (lin:0)
            next   Linear > 🔹 B [2/3]  (lin:1)
            next   Linear > 🔹 C [3/3]  (lin:2)
            done   after C (step 3)"#]],
    );
}

#[test]
fn subworkflow_as_first_phase_is_entered_at_start() {
    let set = set_of(&[
        wf("root", "Root", &["@sub", "z"]),
        wf("sub", "Sub", &["a", "b"]),
    ]);
    check_walk(
        &set,
        "root",
        expect![[r#"
            start  Root > Sub [1/2] > 🔹 A [1/2]  (root:0 / sub:0)
            next   Root > Sub [1/2] > 🔹 B [2/2]  (root:0 / sub:1)
            exit   Root > 🔹 Z [2/2]  (root:1)
            done   after Z (step 3)"#]],
    );
}

#[test]
fn subworkflow_as_parents_last_phase_finishes_the_workflow() {
    let set = set_of(&[
        wf("root", "Root", &["a", "@sub"]),
        wf("sub", "Sub", &["b", "c"]),
    ]);
    check_walk(
        &set,
        "root",
        expect![[r#"
            start  Root > 🔹 A [1/2]  (root:0)
            enter  Root > Sub [2/2] > 🔹 B [1/2]  (root:1 / sub:0)
            next   Root > Sub [2/2] > 🔹 C [2/2]  (root:1 / sub:1)
            done   after C (step 3)"#]],
    );
}

#[test]
fn three_levels_deep_enter_and_pop_out_of_all() {
    let set = set_of(&[
        wf("root", "Release", &["a", "@l1", "z"]),
        wf("l1", "Review", &["b", "@l2"]),
        wf("l2", "Checks", &["c", "d"]),
    ]);
    check_walk(
        &set,
        "root",
        expect![[r#"
            start  Release > 🔹 A [1/3]  (root:0)
            enter  Release > Review [2/3] > 🔹 B [1/2]  (root:1 / l1:0)
            enter  Release > Review [2/3] > Checks [2/2] > 🔹 C [1/2]  (root:1 / l1:1 / l2:0)
            next   Release > Review [2/3] > Checks [2/2] > 🔹 D [2/2]  (root:1 / l1:1 / l2:1)
            exit   Release > 🔹 Z [3/3]  (root:2)
            done   after Z (step 5)"#]],
    );
}

#[test]
fn nested_first_entries_are_entered_in_one_move() {
    let set = set_of(&[
        wf("root", "Root", &["a", "@l1"]),
        wf("l1", "One", &["@l2"]),
        wf("l2", "Two", &["@l3"]),
        wf("l3", "Three", &["x"]),
    ]);
    check_walk(
        &set,
        "root",
        expect![[r#"
            start  Root > 🔹 A [1/2]  (root:0)
            enter  Root > One [2/2] > Two [1/1] > Three [1/1] > 🔹 X [1/1]  (root:1 / l1:0 / l2:0 / l3:0)
            done   after X (step 2)"#]],
    );
}

#[test]
fn a_finished_subworkflow_leads_straight_into_the_next_one() {
    let set = set_of(&[
        wf("root", "Root", &["@s1", "@s2"]),
        wf("s1", "First", &["a"]),
        wf("s2", "Second", &["b"]),
    ]);
    check_walk(
        &set,
        "root",
        expect![[r#"
            start  Root > First [1/2] > 🔹 A [1/1]  (root:0 / s1:0)
            exit   Root > Second [2/2] > 🔹 B [1/1]  (root:1 / s2:0)
            done   after B (step 2)"#]],
    );
}

#[test]
fn loop_inside_a_subworkflow_resets_only_that_scope() {
    let set = set_of(&[
        wf("root", "Root", &["a", "@sub", "z"]),
        wf("sub", "Sub", &["b", "c", "d"]),
    ]);
    let mut s = start(&set, "root");
    for _ in 0..3 {
        s = s.advance(&set).unwrap().state;
    }
    assert_eq!(path(&s), "root:1 / sub:2");
    let looped = s.loop_scope(&set).unwrap();
    assert_eq!(path(&looped), "root:1 / sub:0");
    assert_eq!(looped.global_step_count, s.global_step_count + 1);
    assert_eq!(crumb(&looped, &set), "Root > Sub [2/3] > 🔹 B [1/3]");
}

#[test]
fn loop_at_the_root_enters_a_leading_subworkflow() {
    let set = set_of(&[wf("root", "Root", &["@sub", "z"]), wf("sub", "Sub", &["a"])]);
    let s = start(&set, "root").advance(&set).unwrap().state;
    assert_eq!(path(&s), "root:1");
    let looped = s.loop_scope(&set).unwrap();
    assert_eq!(path(&looped), "root:0 / sub:0");
}

#[test]
fn loop_is_refused_when_the_innermost_scope_is_not_loopable() {
    let mut sub = wf("sub", "Sub", &["b", "c"]);
    sub.loopable = false;
    let set = set_of(&[wf("root", "Root", &["a", "@sub"]), sub]);
    let inside = start(&set, "root").advance(&set).unwrap().state;
    assert_eq!(inside.loop_scope(&set), Err(NavError::NotLoopable));
    // The root is loopable, and only the innermost scope's setting counts.
    assert!(start(&set, "root").loop_scope(&set).is_ok());

    let result = execute(Some(&inside), &set, StepAction::Loop);
    assert_eq!(result.result_type, ResultType::Error);
    assert_eq!(result.text, "⚠️ Looping is disabled for this workflow.");
    assert!(result.state.is_none());
}

#[test]
fn loop_in_a_non_loopable_root_is_refused_even_if_subworkflows_loop() {
    let mut root = wf("root", "Root", &["a", "@sub"]);
    root.loopable = false;
    let set = set_of(&[root, wf("sub", "Sub", &["b"])]);
    let s = start(&set, "root");
    assert_eq!(s.loop_scope(&set), Err(NavError::NotLoopable));
    let inside = s.advance(&set).unwrap().state;
    assert!(inside.loop_scope(&set).is_ok());
}

#[test]
fn cancel_takes_two_calls() {
    let set = set_of(&[wf("lin", "Linear", &["a", "b"])]);
    let s = start(&set, "lin");
    let CancelOutcome::ConfirmationNeeded(armed) = s.cancel().unwrap() else {
        panic!("first cancel must ask for confirmation");
    };
    assert!(armed.active && armed.cancel_pending);
    let CancelOutcome::Cancelled(done) = armed.cancel().unwrap() else {
        panic!("second cancel must cancel");
    };
    assert!(!done.active && done.cancelled && !done.completion_notified);
    assert_eq!(done.cancel(), Err(NavError::NotActive));
}

#[test]
fn another_move_between_the_two_cancels_disarms_the_confirmation() {
    let set = set_of(&[wf("lin", "Linear", &["a", "b", "c"])]);
    let first = execute(Some(&start(&set, "lin")), &set, StepAction::Cancel);
    assert_eq!(first.result_type, ResultType::Cancel);
    assert!(first
        .text
        .starts_with("⚠️ **Confirm cancellation** of workflow \"Ship it\"?"));
    let armed = first.state.unwrap();
    let moved = execute(Some(&armed), &set, StepAction::Next).state.unwrap();
    let again = execute(Some(&moved), &set, StepAction::Cancel);
    assert!(
        again.text.contains("Confirm cancellation"),
        "{}",
        again.text
    );
    let done = execute(again.state.as_ref(), &set, StepAction::Cancel);
    assert_eq!(done.text, "Workflow cancelled: \"Ship it\"");
    assert!(done.state.unwrap().cancelled);
}

#[test]
fn the_confirmation_is_never_persisted() {
    let set = set_of(&[wf("lin", "Linear", &["a"])]);
    let CancelOutcome::ConfirmationNeeded(armed) = start(&set, "lin").cancel().unwrap() else {
        panic!()
    };
    let record = WorkflowRecord::new(&armed, &set);
    let back = WorkflowRecord::from_json(&record.to_json()).unwrap();
    assert!(!back.state.cancel_pending);
}

#[test]
fn next_after_done_says_there_is_no_active_workflow() {
    let set = set_of(&[wf("lin", "Linear", &["a"])]);
    let done = start(&set, "lin").advance(&set).unwrap();
    assert_eq!(done.movement, Movement::Done);
    assert_eq!(done.to, None);
    assert_eq!(done.state.advance(&set), Err(NavError::NotActive));
    let result = execute(Some(&done.state), &set, StepAction::Next);
    assert_eq!(
        result.text,
        "No active workflow. Use /workflow {name} {description} to start one."
    );
    assert!(result.state.is_none());
    assert_eq!(
        execute(None, &set, StepAction::Loop).text,
        "No active workflow to loop."
    );
    assert_eq!(
        execute(None, &set, StepAction::Cancel).text,
        "No active workflow to cancel."
    );
}

#[test]
fn step_tool_next_texts() {
    let set = set_of(&[
        wf("root", "Root", &["a", "@sub", "z"]),
        wf("sub", "Review", &["b"]),
    ]);
    let s = start(&set, "root");
    let entered = execute(Some(&s), &set, StepAction::Next);
    expect![[r#"
        ✓ Entered subworkflow 'Review': A → 🔹 B
        Previous: A | Current: 🔹 B | Next: DONE

        **What to do in B:**
        Do b."#]]
    .assert_eq(&entered.text);
    let exited = execute(entered.state.as_ref(), &set, StepAction::Next);
    expect![[r#"
        ✓ Exited subworkflow, returning to Root: B → 🔹 Z
        Previous: B | Current: 🔹 Z | Next: DONE

        **What to do in Z:**
        Do z."#]]
    .assert_eq(&exited.text);
    let done = execute(exited.state.as_ref(), &set, StepAction::Next);
    assert_eq!(done.result_type, ResultType::Complete);
    assert_eq!(
        done.text,
        "✓ Advanced: Z → DONE\n\n🎉 **All phases complete!**"
    );
    assert!(!done.state.unwrap().active);
}

#[test]
fn step_tool_status_and_loop_texts() {
    let set = set_of(&[
        wf("root", "Root", &["a", "@sub"]),
        wf("sub", "Review", &["b", "c"]),
    ]);
    let s = start(&set, "root").advance(&set).unwrap().state;
    let s = s.advance(&set).unwrap().state;
    let status = execute(Some(&s), &set, StepAction::Status);
    assert!(status.state.is_none());
    expect![[r#"
        **Workflow:** Root (root)
        **Task ID:** task-1
        **Description:** Ship it
        **Path:** Root > Review
        **Phase:** 🔹 C [2/2] (step 2)
        **Started:** 2023-11-14T22:13:20.000Z

        **What to do:**
        Do c.

        **Available profiles:** (none)"#]]
    .assert_eq(&status.text);
    let looped = execute(Some(&s), &set, StepAction::Loop);
    expect![[r#"
        🔄 Looped 'Review' back to: 🔹 B

        **What to do in B:**
        Do b."#]]
    .assert_eq(&looped.text);
}

#[test]
fn step_tool_input_is_checked() {
    assert_eq!(
        parse_input(&json!({"action": "next"})),
        Ok(StepAction::Next)
    );
    assert_eq!(
        parse_input(&json!({"action": "loop", "summary": "x"})),
        Ok(StepAction::Loop)
    );
    assert_eq!(
        parse_input(&json!({"action": "jump"})),
        Err("Unknown action: jump".to_owned())
    );
    assert!(parse_input(&json!({}))
        .unwrap_err()
        .contains("needs an \"action\""));
    assert!(parse_input(&json!({"action": 3}))
        .unwrap_err()
        .contains("must be a string"));
    assert!(parse_input(&json!("next")).is_err());
}

#[test]
fn starting_checks_the_workflow() {
    let mut sub = wf("sub", "Sub", &["a"]);
    sub.show = Show::Workflows;
    let set = set_of(&[wf("root", "Root", &["@sub"]), sub]);
    assert_eq!(
        WorkflowState::start(&set, "nope", "", "t", 0),
        Err(NavError::UnknownWorkflow("nope".to_owned()))
    );
    assert_eq!(
        WorkflowState::start(&set, "sub", "", "t", 0),
        Err(NavError::SubworkflowOnly("sub".to_owned()))
    );
    let s = WorkflowState::start(&set, "root", "d", "t", 5).unwrap();
    assert!(s.active && !s.cancelled && !s.completion_notified);
    assert_eq!(s.global_step_count, 0);
    assert_eq!((s.task_id.as_str(), s.started_at), ("t", 5));
}

#[test]
fn a_state_that_no_longer_fits_is_stale_not_a_panic() {
    let set = set_of(&[wf("lin", "Linear", &["a", "b"])]);
    let mut s = start(&set, "lin");
    s.current_path[0].phase_index = 7;
    assert!(s.resolve(&set).is_none());
    assert_eq!(s.advance(&set), Err(NavError::Stale("lin".to_owned())));
    assert_eq!(
        check(Some(&s), &set, "Write", &NO_INPUT),
        GateDecision::Allow
    );
    let status = execute(Some(&s), &set, StepAction::Status);
    assert_eq!(status.result_type, ResultType::Error);
    s.current_path = vec![PathSegment {
        workflow_key: "gone".to_owned(),
        phase_index: 0,
    }];
    assert!(s.resolve(&set).is_none());
    assert_eq!(
        execute(Some(&s), &set, StepAction::Next).text,
        "Workflow definition 'lin' not found."
    );
}

#[test]
fn a_foreign_state_pointing_at_a_subworkflow_entry_is_understood() {
    // pi-workflows' loop leaves the path on a subworkflow entry without entering it.
    let set = set_of(&[
        wf("root", "Root", &["@sub", "z"]),
        wf("sub", "Sub", &["a", "b"]),
    ]);
    let mut s = start(&set, "root");
    s.current_path.truncate(1);
    assert_eq!(crumb(&s, &set), "Root > Sub [1/2] > 🔹 A [1/2]");
    let next = s.advance(&set).unwrap();
    assert_eq!(path(&next.state), "root:0 / sub:1");
    assert_eq!(next.from, "A");
}
