//! The JSON form of machines, events, records and effects.

use super::*;

#[test]
fn json_shape() {
    let r = run([
        start("Add a login page"),
        Event::PlanUpdated {
            plan: plan(&["design"]),
        },
        selected("coder"),
        Event::AgentMessage {
            text: "On it.".to_owned(),
        },
        agent_error("rate_limited"),
    ]);
    expect![[r#"
        {
          "state": "selecting",
          "context": {
            "task": "Add a login page",
            "startedAt": 1700000001000,
            "currentAgent": "coder",
            "plan": {
              "steps": [
                {
                  "index": 0,
                  "description": "design",
                  "status": "pending",
                  "agentUsed": null
                }
              ],
              "currentStepIndex": 0,
              "isComplete": false
            },
            "history": [
              {
                "agent": "coder",
                "startedAt": 1700000003000,
                "completedAt": 1700000005000,
                "result": "failure",
                "output": null,
                "error": "rate_limited happened"
              }
            ],
            "messages": [
              "On it."
            ],
            "consecutiveFailures": 1,
            "totalFailures": 1,
            "lastError": {
              "code": "rate_limited",
              "message": "rate_limited happened"
            },
            "lastArbiterDecision": {
              "type": "SELECT_MODE",
              "mode": "coder",
              "reason": "best fit"
            },
            "maxIterations": 50,
            "iterationCount": 1,
            "maxFailures": 3,
            "defaultAgent": null,
            "executionStartedAt": 1700000003000
          }
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&r.machine).unwrap());
}

#[test]
fn json_round_trip_of_every_state() {
    for m in sample_machines() {
        let text = serde_json::to_string(&m).unwrap();
        let back: Machine = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
    }
    // A restored machine goes on where it stopped.
    let m = at(State::Evaluating);
    let back: Machine = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
    assert_eq!(
        back.transition(&decided(proceed()), T0),
        m.transition(&decided(proceed()), T0)
    );
}

#[test]
fn json_reading_is_lenient_about_missing_fields_and_strict_about_error_handling() {
    let m: Machine =
        serde_json::from_value(json!({"state": "selecting", "context": {"task": "t"}})).unwrap();
    assert_eq!(m.state, State::Selecting);
    assert_eq!(m.context.task, "t");
    assert_eq!(m.context.max_iterations, DEFAULT_MAX_ITERATIONS);
    let err = serde_json::from_value::<Machine>(json!({"state": "error_handling"})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "a machine cannot rest in the transient state error_handling"
    );
}

#[test]
fn events_in_json() {
    let lines: Vec<String> = sample_events()
        .into_iter()
        .map(|e| {
            let text = serde_json::to_string(&e).unwrap();
            let back: Event = serde_json::from_str(&text).unwrap();
            assert_eq!(back, e);
            text
        })
        .collect();
    expect![[r#"
        {"type":"START_TASK","task":"Another task"}
        {"type":"CANCEL"}
        {"type":"RESET"}
        {"type":"AGENT_SELECTED","agent":"reviewer","decision":{"type":"SELECT_MODE","mode":"reviewer","reason":"best fit"}}
        {"type":"AGENT_SELECTED","agent":"reviewer"}
        {"type":"AGENT_SELECTION_FAILED","error":{"code":"selection_failed","message":"no such agent"}}
        {"type":"AGENT_SELECTION_FAILED","error":{"code":"rate_limited","message":"slow down"}}
        {"type":"AGENT_MESSAGE","text":"hello"}
        {"type":"AGENT_TOOL_CALL","id":"t1","name":"Read"}
        {"type":"AGENT_TOOL_RESULT","id":"t1","isError":false}
        {"type":"AGENT_COMPLETE","success":true,"output":"done"}
        {"type":"AGENT_COMPLETE","success":false,"output":"could not finish"}
        {"type":"AGENT_ERROR","error":{"code":"rate_limited","message":"rate_limited happened"}}
        {"type":"AGENT_ERROR","error":{"code":"network_error","message":"network_error happened"}}
        {"type":"AGENT_ERROR","error":{"code":"tool_failure","message":"tool_failure happened"}}
        {"type":"ARBITER_DECISION","decision":{"type":"COMPLETE","summary":"all done"}}
        {"type":"ARBITER_DECISION","decision":{"type":"CONTINUE","reason":"more to do"}}
        {"type":"ARBITER_DECISION","decision":{"type":"RETRY","reason":"poor result"}}
        {"type":"ARBITER_DECISION","decision":{"type":"SELECT_MODE","mode":"tester","reason":"tests next"}}
        {"type":"ARBITER_ERROR","error":{"code":"arbiter_error","message":"bad json"}}
        {"type":"ARBITER_ERROR","error":{"code":"network_error","message":"reset by peer"}}
        {"type":"FORCE_AGENT","agent":"tester"}
        {"type":"SKIP_STEP"}
        {"type":"RETRY"}
        {"type":"PLAN_UPDATED","plan":{"steps":[{"index":0,"description":"design","status":"pending","agentUsed":null},{"index":1,"description":"build","status":"pending","agentUsed":null}],"currentStepIndex":0,"isComplete":false}}"#]]
    .assert_eq(&lines.join("\n"));
    // Names agree with the serialised tags.
    for e in sample_events() {
        let value = serde_json::to_value(&e).unwrap();
        assert_eq!(value["type"], e.name());
    }
}

#[test]
fn records_and_effects_in_json() {
    let out = at(State::Executing).transition(&Event::Cancel, T0);
    expect![[r#"{"event":"CANCEL","from":"executing","to":"cancelled","via":null,"guard":null,"effects":[{"type":"abort_agent"},{"type":"finish","outcome":"cancelled","summary":"cancelled"}],"handled":true,"note":null}"#]]
        .assert_eq(&serde_json::to_string(&out.record).unwrap());
    let run = Effect::RunAgent {
        agent: "coder".to_owned(),
    };
    let back: Effect = serde_json::from_value(serde_json::to_value(&run).unwrap()).unwrap();
    assert_eq!(back, run);
}

#[test]
fn state_names() {
    for state in State::ALL {
        assert_eq!(serde_json::to_value(state).unwrap(), state.name());
        assert_eq!(state.to_string(), state.name());
    }
}
