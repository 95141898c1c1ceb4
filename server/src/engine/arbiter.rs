//! The arbiter: picks the agent that runs next and judges each agent run. Two kinds, chosen in
//! config: deterministic (agent transitions, and a phase's `agent:` key) and model-based (rawko-sdk
//! SPEC-0006's prompt sections, answered with strictly parsed JSON).

use serde_json::Value;

use crate::agents::{AgentDefinition, AgentSet};
use crate::clip::clip_to;
use crate::machine::{ArbiterDecision, Machine, MachineError};
use crate::workflow::{WorkflowSet, WorkflowState};

/// The built-in agent that runs when no agent is configured for the work at hand.
pub const DEFAULT_AGENT: &str = "default";

/// What the arbiter knows when it decides.
pub struct View<'a> {
    pub machine: &'a Machine,
    pub agents: &'a AgentSet,
    pub default_agent: &'a str,
    pub workflow: Option<&'a WorkflowState>,
    pub workflows: &'a WorkflowSet,
    /// The last run ran into its agent's `limits.maxIterations`.
    pub hit_max_iterations: bool,
    /// The last run's final text.
    pub last_output: &'a str,
}

impl View<'_> {
    /// The agent the current phase names with `agent:`, if it names one.
    fn phase_agent(&self) -> Option<String> {
        let (_, phase) = self.workflow?.current_phase(self.workflows)?;
        phase.agent.clone()
    }

    fn agent(&self, name: &str) -> Option<&AgentDefinition> {
        self.agents.get(name)
    }

    fn exists(&self, name: &str) -> bool {
        name == DEFAULT_AGENT || self.agents.get(name).is_some()
    }
}

fn error(code: &str, message: impl Into<String>) -> MachineError {
    MachineError {
        code: code.to_owned(),
        message: message.into(),
    }
}

/// Deterministic selection: the phase's agent, else after a failure the failed agent's
/// `onFailure` (itself by default), else the current agent, else the default agent.
pub fn select(view: &View<'_>) -> Result<(String, ArbiterDecision), MachineError> {
    let ctx = &view.machine.context;
    let (agent, reason) = if let Some(agent) = view.phase_agent() {
        (agent, "the current phase names this agent".to_owned())
    } else if let (Some(current), Some(_)) = (&ctx.current_agent, &ctx.last_error) {
        let target = view
            .agent(current)
            .and_then(|a| a.transitions.on_failure.clone())
            .unwrap_or_else(|| current.clone());
        (target, format!("after a failure of {current}"))
    } else if let Some(current) = &ctx.current_agent {
        (current.clone(), "the same agent continues".to_owned())
    } else {
        (
            view.default_agent.to_owned(),
            "the task starts with the default agent".to_owned(),
        )
    };
    if agent == "complete" {
        return Err(error(
            "selection_failed",
            "the failure transition leads to \"complete\"; nothing is left to run",
        ));
    }
    if !view.exists(&agent) {
        return Err(error(
            "selection_failed",
            format!(
                "agent \"{agent}\" does not exist; the agents are {}",
                agent_names(view)
            ),
        ));
    }
    Ok((
        agent.clone(),
        ArbiterDecision::SelectMode {
            mode: agent,
            reason,
        },
    ))
}

fn agent_names(view: &View<'_>) -> String {
    let mut names: Vec<&str> = view.agents.names().collect();
    names.push(DEFAULT_AGENT);
    names.join(", ")
}

/// Deterministic evaluation of the run that just ended.
pub fn evaluate(view: &View<'_>) -> Result<ArbiterDecision, MachineError> {
    if let Some(w) = view.workflow {
        return Ok(if w.active {
            ArbiterDecision::Continue {
                reason: "the workflow is still active".to_owned(),
            }
        } else {
            ArbiterDecision::Complete {
                summary: summary(view.last_output),
            }
        });
    }
    let Some(current) = view.machine.context.current_agent.as_deref() else {
        return Ok(ArbiterDecision::Complete {
            summary: summary(view.last_output),
        });
    };
    let Some(agent) = view.agent(current) else {
        return Ok(ArbiterDecision::Complete {
            summary: summary(view.last_output),
        });
    };
    let target = if view.hit_max_iterations {
        agent
            .transitions
            .on_max_iterations
            .clone()
            .unwrap_or_else(|| agent.transitions.on_success.clone())
    } else {
        agent.transitions.on_success.clone()
    };
    if target == "complete" {
        return Ok(ArbiterDecision::Complete {
            summary: summary(view.last_output),
        });
    }
    if !view.exists(&target) {
        return Err(error(
            "arbiter_error",
            format!("agent {current}'s transition names \"{target}\", which does not exist"),
        ));
    }
    Ok(ArbiterDecision::SelectMode {
        mode: target,
        reason: format!("{current} finished; its transition leads here"),
    })
}

fn summary(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        "the agent finished".to_owned()
    } else {
        text.to_owned()
    }
}

/// The arbiter's system prompt (rawko-sdk).
pub const SYSTEM_PROMPT: &str =
    "You are an arbiter making decisions about task execution. Always respond with valid JSON.";

fn history_section(view: &View<'_>, last: usize, output_max: usize) -> String {
    let history = &view.machine.context.history;
    if history.is_empty() {
        return "(no executions yet)".to_owned();
    }
    history
        .iter()
        .rev()
        .take(last)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .map(|e| {
            let mut line = format!("- {}: {:?}", e.agent, e.result);
            if let Some(o) = &e.output {
                line.push_str(&format!(" — {}", clip_to(o, output_max)));
            }
            if let Some(err) = &e.error {
                line.push_str(&format!(" (error: {})", clip_to(err, output_max)));
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn common_sections(view: &View<'_>, history_len: usize, output_max: usize) -> String {
    let ctx = &view.machine.context;
    let mut out = String::new();
    out.push_str(&format!("## Task\n{}\n\n", ctx.task));
    out.push_str("## Current Plan\n");
    match &ctx.plan {
        Some(plan) if !plan.steps.is_empty() => {
            for s in &plan.steps {
                out.push_str(&format!(
                    "{}. [{:?}] {}\n",
                    s.index + 1,
                    s.status,
                    s.description
                ));
            }
        }
        _ => out.push_str("(no plan)\n"),
    }
    if let Some(w) = view.workflow {
        if let Some(active) = w.resolve(view.workflows) {
            out.push_str(&format!(
                "Workflow position: {}\n",
                active.breadcrumb_text()
            ));
        }
    }
    out.push_str(&format!(
        "\n## Execution History\n{}\n\n",
        history_section(view, history_len, output_max)
    ));
    out.push_str("## Available Agents\n");
    for a in view.agents.iter() {
        let what = a
            .when_to_use
            .clone()
            .or_else(|| a.display_name.clone())
            .unwrap_or_default();
        out.push_str(&format!("- {}: {}\n", a.name, what.trim()));
    }
    out.push_str(&format!(
        "- {DEFAULT_AGENT}: a general agent with every tool\n"
    ));
    out.push_str(&format!(
        "\n## Constraints\nIteration {} of {}; consecutive failures {} of {}.\n",
        ctx.iteration_count, ctx.max_iterations, ctx.consecutive_failures, ctx.max_failures
    ));
    if let Some(e) = &ctx.last_error {
        out.push_str(&format!("\n## Last Error\n{}: {}\n", e.code, e.message));
    }
    out
}

/// The prompt that asks the model which agent runs next.
pub fn select_prompt(view: &View<'_>) -> String {
    format!(
        "{}\nChoose the agent that should work next. Answer with only a JSON object: \
         {{\"decision\": \"SELECT_MODE\" | \"COMPLETE\" | \"RETRY\", \"mode\": \"<agent name>\", \"reason\": \"<why>\"}}",
        common_sections(view, 10, 300)
    )
}

/// The prompt that asks the model to judge the run that just ended.
pub fn evaluate_prompt(view: &View<'_>) -> String {
    format!(
        "{}\n## Last Output\n{}\n\nJudge the progress. Answer with only a JSON object: \
         {{\"decision\": \"CONTINUE\" | \"COMPLETE\" | \"RETRY\" | \"SELECT_MODE\", \"reason\": \"<why>\", \"summary\": \"<for COMPLETE>\", \"mode\": \"<for SELECT_MODE>\"}}",
        common_sections(view, 5, 2000),
        clip_to(view.last_output, 2000)
    )
}

/// Parses the model's answer strictly: one JSON object (a ```json fence around it is allowed)
/// with a known `decision` and the fields that decision needs.
pub fn parse_decision(text: &str) -> Result<ArbiterDecision, String> {
    let mut body = text.trim();
    if let Some(inner) = body.strip_prefix("```") {
        let inner = inner.strip_prefix("json").unwrap_or(inner);
        body = inner
            .strip_suffix("```")
            .ok_or("an unclosed code fence")?
            .trim();
    }
    let value: Value = serde_json::from_str(body).map_err(|e| format!("not a JSON object: {e}"))?;
    let obj = value
        .as_object()
        .ok_or("the answer must be a JSON object")?;
    let text_field = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_owned);
    let reason = text_field("reason").unwrap_or_default();
    match obj.get("decision").and_then(Value::as_str) {
        Some("SELECT_MODE") => {
            let mode = text_field("mode")
                .filter(|m| !m.trim().is_empty())
                .ok_or("SELECT_MODE needs \"mode\": the agent's name")?;
            Ok(ArbiterDecision::SelectMode { mode, reason })
        }
        Some("CONTINUE") => Ok(ArbiterDecision::Continue { reason }),
        Some("COMPLETE") => Ok(ArbiterDecision::Complete {
            summary: text_field("summary")
                .filter(|s| !s.is_empty())
                .unwrap_or(reason),
        }),
        Some("RETRY") => Ok(ArbiterDecision::Retry { reason }),
        Some(other) => Err(format!("unknown decision \"{other}\"")),
        None => Err("the answer has no \"decision\"".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_parse_strictly() {
        assert_eq!(
            parse_decision("{\"decision\":\"SELECT_MODE\",\"mode\":\"tester\",\"reason\":\"r\"}"),
            Ok(ArbiterDecision::SelectMode {
                mode: "tester".into(),
                reason: "r".into()
            })
        );
        assert_eq!(
            parse_decision("```json\n{\"decision\":\"COMPLETE\",\"reason\":\"done\"}\n```"),
            Ok(ArbiterDecision::Complete {
                summary: "done".into()
            })
        );
        assert_eq!(
            parse_decision("{\"decision\":\"CONTINUE\"}"),
            Ok(ArbiterDecision::Continue {
                reason: String::new()
            })
        );
        for bad in [
            "Sure! {\"decision\":\"COMPLETE\"}",
            "{\"decision\":\"SELECT_MODE\"}",
            "{\"decision\":\"DANCE\"}",
            "[1]",
            "{}",
            "```json\n{\"decision\":\"COMPLETE\"}",
        ] {
            assert!(parse_decision(bad).is_err(), "{bad}");
        }
    }
}
