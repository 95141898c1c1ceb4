//! Benchmarks of the orchestrator machine: transitions per second of the pure transition function
//! over a realistic task — START_TASK, then ten agent runs (AGENT_SELECTED, AGENT_COMPLETE,
//! ARBITER_DECISION CONTINUE), the last ending in COMPLETE — once bare and once with the agent
//! streaming messages and tool calls in every run.
//!
//! Run: `cargo bench -p rawko --bench machine`. Criterion reports the throughput in elements
//! (transitions) per second.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rawko::machine::{ArbiterDecision, Event, Machine, MachineConfig, State};

const RUNS: usize = 10;

/// The events of one task; `streaming` adds 5 messages and 2 tool calls with their results to
/// every agent run.
fn task_events(streaming: bool) -> Vec<Event> {
    let mut events = vec![Event::StartTask {
        task: "Add a login page with tests and docs".to_owned(),
    }];
    for run in 0..RUNS {
        let agent = ["planner", "coder", "tester", "reviewer"][run % 4].to_owned();
        events.push(Event::AgentSelected {
            agent: agent.clone(),
            decision: Some(ArbiterDecision::SelectMode {
                mode: agent,
                reason: "the next step needs this agent".to_owned(),
            }),
        });
        if streaming {
            for m in 0..5 {
                events.push(Event::AgentMessage {
                    text: format!("Working on part {m} of the step; reading and editing files."),
                });
            }
            for t in 0..2 {
                let id = format!("toolu_{run}_{t}");
                events.push(Event::AgentToolCall {
                    id: id.clone(),
                    name: "Edit".to_owned(),
                });
                events.push(Event::AgentToolResult {
                    id,
                    is_error: false,
                });
            }
        }
        events.push(Event::AgentComplete {
            success: true,
            output: "Step done: edited src/login.rs and added tests in tests/login.rs.".to_owned(),
        });
        let decision = if run + 1 == RUNS {
            ArbiterDecision::Complete {
                summary: "login page added, tested and documented".to_owned(),
            }
        } else {
            ArbiterDecision::Continue {
                reason: "more steps remain in the plan".to_owned(),
            }
        };
        events.push(Event::ArbiterDecision { decision });
    }
    events
}

fn run_task(start: &Machine, events: &[Event]) -> Machine {
    let mut machine = start.clone();
    let mut now = 1_700_000_000_000;
    for event in events {
        now += 250;
        machine = machine.transition(event, now).machine;
    }
    machine
}

fn benches(c: &mut Criterion) {
    let start = Machine::new(MachineConfig::default());
    let mut group = c.benchmark_group("machine");
    for (name, streaming) in [
        ("task cycle: 10 agent runs", false),
        ("task cycle: 10 agent runs with streaming", true),
    ] {
        let events = task_events(streaming);
        let end = run_task(&start, &events);
        assert_eq!(end.state, State::Complete);
        assert_eq!(end.context.iteration_count as usize, RUNS);
        group.throughput(Throughput::Elements(events.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| run_task(black_box(&start), black_box(&events)))
        });
    }
    group.finish();
}

criterion_group!(machine, benches);
criterion_main!(machine);
