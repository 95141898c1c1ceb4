//! The provider and the arbiter a task runs with: the spec a request asks for, completed from
//! the configured providers (or the one whose key is set), and each built with the settings' keys.

use std::path::Path;

use super::{Place, StartRequest, TaskError, Tasks};
use crate::config::Settings;
use crate::engine::ArbiterSetup;
use crate::provider::{Provider, ProviderRequest, ProviderSpec};

impl Tasks {
    /// The provider spec `request` asks for, completed from the configured providers.
    pub fn provider_spec(&self, request: &StartRequest) -> Result<ProviderSpec, TaskError> {
        self.provider_spec_in(request, &|name| std::env::var(name).ok())
            .map(|(spec, _)| spec)
    }

    /// [`Tasks::provider_spec`] reading the environment through `env`; with no provider
    /// configured or asked for, the one whose key is set (`apiKeys`, else `env`), and a note
    /// saying so.
    pub fn provider_spec_in(
        &self,
        request: &StartRequest,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(ProviderSpec, Option<String>), TaskError> {
        Self::provider_spec_for(&self.place(), request, env)
    }

    /// [`Tasks::provider_spec_in`] in `place`, with its settings as they are (the ones a task
    /// being assembled has read).
    pub(super) fn provider_spec_for(
        place: &Place,
        request: &StartRequest,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(ProviderSpec, Option<String>), TaskError> {
        let nonempty = |s: &Option<String>| s.clone().filter(|s| !s.trim().is_empty());
        let (name, model, base_url) = (
            nonempty(&request.provider),
            nonempty(&request.model),
            nonempty(&request.base_url),
        );
        let script = request
            .script
            .as_deref()
            .filter(|s| !s.as_os_str().is_empty());
        let wanted = ProviderRequest {
            name: name.as_deref(),
            model: model.as_deref(),
            script,
            base_url: base_url.as_deref(),
            agent_command: request
                .agent_command
                .as_deref()
                .filter(|c| !c.trim().is_empty()),
        };
        let has_key = |name: &str| {
            let var = match name {
                "anthropic" => crate::provider::anthropic::KEY_VAR,
                _ => crate::provider::openai::KEY_VAR,
            };
            place
                .settings
                .api_keys
                .get(name)
                .is_some_and(|k| !k.trim().is_empty())
                || env(var).is_some_and(|k| !k.trim().is_empty())
        };
        crate::provider::resolve_spec_or_default(
            &wanted,
            &place.settings.providers,
            &place.workspace,
            &has_key,
        )
        .map_err(TaskError::Invalid)
    }
}

/// Builds a provider with the keys of the settings (`apiKeys`), else the environment's.
pub(super) fn build(spec: &ProviderSpec, settings: &Settings) -> Result<Box<dyn Provider>, String> {
    if spec.name == "acp" && spec.env.is_empty() {
        // An agent's variables are never logged: a resumed task takes them from the settings.
        if let Some(configured) = settings
            .providers
            .iter()
            .find(|p| p.name == "acp" && p.command == spec.command)
        {
            let mut spec = spec.clone();
            spec.env = configured.env.clone();
            return spec.build_with(&|name| settings.api_keys.get(name));
        }
    }
    spec.build_with(&|name| settings.api_keys.get(name))
}

/// The arbiter the settings ask for.
pub(super) fn new_arbiter(
    settings: &Settings,
    workspace: &Path,
) -> Result<ArbiterSetup, TaskError> {
    let Some(spec) = &settings.arbiter else {
        return Ok(ArbiterSetup::Deterministic);
    };
    let mut spec = spec.clone();
    if let Some(script) = &spec.script {
        spec.script = Some(workspace.join(script));
    }
    let provider = build(&spec, settings)
        .map_err(|e| TaskError::CannotStart(format!("the model arbiter cannot start: {e}")))?;
    Ok(ArbiterSetup::Model { provider, spec })
}
