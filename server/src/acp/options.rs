//! What the client can choose for a session, as ACP's session config options: the workflow
//! (a `select` of category `mode`: the same choice as the session modes, which older clients
//! read) and, when more than one provider is configured, the provider and model the next task
//! runs with (category `model`). Pure, like `map.rs`, and table-tested in `tests.rs`.

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelectOption,
};

use super::map;
use crate::provider::ProviderSpec;
use crate::workflow::WorkflowSet;

/// The id of the workflow option.
pub const WORKFLOW: &str = "workflow";

/// The id of the provider and model option.
pub const MODEL: &str = "model";

/// A configured provider the user can choose for the session's next task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelChoice {
    /// Its value in the option: the provider's label (`anthropic:claude-sonnet-4-5`), with `#N`
    /// after a label that came before.
    pub value: String,
    pub spec: ProviderSpec,
}

/// The configured providers as choices (none when at most one is configured: nothing to choose).
pub fn model_choices(providers: &[ProviderSpec]) -> Vec<ModelChoice> {
    if providers.len() < 2 {
        return Vec::new();
    }
    let mut choices: Vec<ModelChoice> = Vec::new();
    for spec in providers {
        let label = spec.label();
        let mut value = label.clone();
        let mut n = 1;
        while choices.iter().any(|c| c.value == value) {
            n += 1;
            value = format!("{label}#{n}");
        }
        choices.push(ModelChoice {
            value,
            spec: spec.clone(),
        });
    }
    choices
}

/// The session's config options: the workflow (`mode` is its current value) and, with a choice
/// of providers, the one chosen (`model`, else the first).
pub fn config_options(
    set: &WorkflowSet,
    mode: &str,
    models: &[ModelChoice],
    model: Option<&str>,
) -> Vec<SessionConfigOption> {
    let workflows = map::modes(set, mode)
        .available_modes
        .into_iter()
        .map(|m| SessionConfigSelectOption::new(m.id.0, m.name).description(m.description))
        .collect::<Vec<_>>();
    let mut options =
        vec![
            SessionConfigOption::select(WORKFLOW, "Workflow", mode.to_owned(), workflows)
                .description(
                    "The workflow the next task runs in: its phases, gate and context".to_owned(),
                )
                .category(SessionConfigOptionCategory::Mode),
        ];
    if let Some(first) = models.first() {
        let current = model
            .filter(|m| models.iter().any(|c| c.value == *m))
            .unwrap_or(&first.value);
        let values = models
            .iter()
            .map(|c| SessionConfigSelectOption::new(c.value.clone(), c.value.clone()))
            .collect::<Vec<_>>();
        options.push(
            SessionConfigOption::select(MODEL, "Model", current.to_owned(), values)
                .description("The provider and model the next task runs with".to_owned())
                .category(SessionConfigOptionCategory::Model),
        );
    }
    options
}

/// What the client chose with `session/set_config_option`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// A mode: a workflow key or [`map::NO_WORKFLOW`].
    Workflow(String),
    /// A [`ModelChoice`]'s value.
    Model(String),
}

/// The choice `config_id` = `value` is, or an error for the user naming what there is.
pub fn choice(
    config_id: &str,
    value: &SessionConfigOptionValue,
    set: &WorkflowSet,
    models: &[ModelChoice],
) -> Result<Choice, String> {
    let Some(value) = value.as_value_id() else {
        return Err(format!(
            "the option \"{}\" takes one of its values, not true or false",
            crate::clip::clip(config_id)
        ));
    };
    let value = value.0.to_string();
    match config_id {
        WORKFLOW => map::mode_workflow(set, &value).map(|_| Choice::Workflow(value)),
        MODEL if !models.is_empty() => {
            if models.iter().any(|c| c.value == value) {
                Ok(Choice::Model(value))
            } else {
                Err(format!(
                    "unknown model \"{}\"; the models are {}",
                    crate::clip::clip(&value),
                    models
                        .iter()
                        .map(|c| c.value.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
        }
        _ => Err(format!(
            "unknown option \"{}\"; the options are {}",
            crate::clip::clip(config_id),
            if models.is_empty() {
                WORKFLOW.to_owned()
            } else {
                format!("{WORKFLOW}, {MODEL}")
            }
        )),
    }
}
