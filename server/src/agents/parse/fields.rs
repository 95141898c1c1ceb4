//! The fields of one agent, read with a diagnostic for every problem.

use super::*;

/// Reads the fields of one agent, collecting every problem rather than stopping at the first.
pub(super) struct Fields<'a> {
    path: &'a Path,
    /// The YAML text (the whole file, or the frontmatter).
    yaml: &'a str,
    /// File lines above `yaml`.
    offset: usize,
    diagnostics: Vec<Diagnostic>,
    errors: usize,
}

impl<'a> Fields<'a> {
    pub(super) fn new(path: &'a Path, yaml: &'a str, offset: usize) -> Self {
        Fields {
            path,
            yaml,
            offset,
            diagnostics: Vec::new(),
            errors: 0,
        }
    }

    fn line(&self, keys: &[&str]) -> Option<usize> {
        key_path_line(self.yaml, keys).map(|l| l + self.offset)
    }

    fn item_line(&self, keys: &[&str], n: usize) -> Option<usize> {
        key_path_line(self.yaml, keys).map(|l| item_line(self.yaml, l, n) + self.offset)
    }

    fn error(&mut self, line: Option<usize>, message: impl Into<String>) {
        self.errors += 1;
        self.diagnostics
            .push(Diagnostic::error(self.path, message).at_line(line));
    }

    fn warning(&mut self, line: Option<usize>, message: impl Into<String>) {
        self.diagnostics
            .push(Diagnostic::warning(self.path, message).at_line(line));
    }

    /// The value at `keys` below `map` (`map` is the mapping that holds the last key).
    fn get<'m>(map: &'m Mapping, keys: &[&str]) -> Option<&'m Value> {
        map.get(*keys.last()?).filter(|v| !v.is_null())
    }

    /// An optional text field; a value that is not a string is an error.
    fn string(&mut self, map: &Mapping, keys: &[&str]) -> Option<String> {
        match Self::get(map, keys)? {
            Value::String(s) => Some(s.clone()),
            other => {
                let msg = format!(
                    "{} must be text, found {}{}",
                    keys.join("."),
                    type_name(other),
                    quote_hint(other)
                );
                self.error(self.line(keys), msg);
                None
            }
        }
    }

    /// A text field that must be present and not blank. `what` says what it is for.
    fn required_string(&mut self, map: &Mapping, keys: &[&str], what: &str) -> Option<String> {
        let present = Self::get(map, keys).is_some();
        let value = self.string(map, keys);
        match value {
            None if !present => {
                let line = match keys {
                    [_] => Some(1),
                    [parent, ..] => self.line(&[parent]).or(Some(1)),
                    [] => None,
                };
                self.error(line, format!("{} is required: {what}", keys.join(".")));
                None
            }
            Some(s) if s.trim().is_empty() => {
                self.error(
                    self.line(keys),
                    format!("{} is empty: {what}", keys.join(".")),
                );
                None
            }
            other => other,
        }
    }

    /// An optional list of strings.
    fn string_list(&mut self, map: &Mapping, keys: &[&str]) -> Option<Vec<String>> {
        let value = Self::get(map, keys)?;
        let name = keys.join(".");
        let Value::Sequence(items) = value else {
            let msg = format!("{name} must be a list of text, found {}", type_name(value));
            self.error(self.line(keys), msg);
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) => out.push(s.clone()),
                other => {
                    ok = false;
                    let msg = format!(
                        "{name}[{i}] must be text, found {}{}",
                        type_name(other),
                        quote_hint(other)
                    );
                    self.error(self.item_line(keys, i), msg);
                }
            }
        }
        ok.then_some(out)
    }

    /// An optional positive whole number that fits `T`.
    fn positive<T: TryFrom<u64>>(&mut self, map: &Mapping, keys: &[&str]) -> Option<T> {
        let value = Self::get(map, keys)?;
        let number = match value {
            Value::Number(n) => n.as_u64().filter(|n| *n > 0),
            _ => None,
        };
        if let Some(n) = number.and_then(|n| T::try_from(n).ok()) {
            return Some(n);
        }
        let name = keys.join(".");
        let msg = match value {
            Value::Number(n) if number.is_some() => format!("{name} is too large: {n}"),
            Value::Number(n) => format!("{name} must be a positive whole number, found {n}"),
            Value::String(s) => {
                format!("{name} must be a positive whole number, found the text \"{s}\"")
            }
            other => format!(
                "{name} must be a positive whole number, found {}",
                type_name(other)
            ),
        };
        self.error(self.line(keys), msg);
        None
    }

    /// An optional mapping field.
    fn mapping<'m>(&mut self, map: &'m Mapping, keys: &[&str], what: &str) -> Option<&'m Mapping> {
        match Self::get(map, keys)? {
            Value::Mapping(m) => Some(m),
            other => {
                let msg = format!(
                    "{} must be a mapping {what}, found {}",
                    keys.join("."),
                    type_name(other)
                );
                self.error(self.line(keys), msg);
                None
            }
        }
    }

    /// A transition target: an agent name or `complete`.
    fn target(&mut self, map: &Mapping, keys: &[&str]) -> Option<String> {
        let target = self.string(map, keys)?;
        let trimmed = target.trim();
        if trimmed != COMPLETE && !is_valid_name(trimmed) {
            let msg = format!(
                "{} must name an agent or \"{COMPLETE}\", found \"{target}\"",
                keys.join(".")
            );
            self.error(self.line(keys), msg);
            return None;
        }
        Some(trimmed.to_owned())
    }

    pub(super) fn agent(mut self, map: &Mapping, body: Option<BodySections>) -> ParsedAgent {
        let name_line = self.line(&["name"]);
        let name = self
            .required_string(map, &["name"], "the agent's name, such as `developer`")
            .and_then(|name| {
                let name = name.trim().to_owned();
                if !is_valid_name(&name) {
                    self.error(
                        name_line,
                        format!(
                            "name \"{name}\" must start with a letter and contain only letters, digits, `_` and `-`"
                        ),
                    );
                    return None;
                }
                if name == COMPLETE {
                    self.error(
                        name_line,
                        format!("name \"{COMPLETE}\" is reserved: as a transition target it ends the task"),
                    );
                    return None;
                }
                Some(name)
            });
        let display_name = self.string(map, &["displayName"]);
        let (system_prompt, when_to_use) = match &body {
            None => (
                self.required_string(
                    map,
                    &["systemPrompt"],
                    "the instructions the agent works by",
                ),
                self.string(map, &["whenToUse"]),
            ),
            Some(body) => self.markdown_texts(map, body),
        };

        let tools = self.tools(map);
        let transitions = self.transitions(map);
        let limits = self.limits(map);
        let provider = self.provider(map);

        let agent = match (name.clone(), system_prompt, transitions, self.errors) {
            (Some(name), Some(system_prompt), Some(transitions), 0) => Some(AgentDefinition {
                name,
                display_name,
                when_to_use,
                system_prompt,
                tools,
                transitions,
                limits,
                provider,
                file: self.path.to_owned(),
            }),
            _ => None,
        };
        ParsedAgent {
            agent,
            name,
            diagnostics: self.diagnostics,
            name_line,
        }
    }

    /// systemPrompt and whenToUse of a Markdown agent: the frontmatter's when given, else the
    /// body's sections.
    fn markdown_texts(
        &mut self,
        map: &Mapping,
        body: &BodySections,
    ) -> (Option<String>, Option<String>) {
        for (heading, line) in &body.repeated {
            self.warning(
                Some(*line),
                format!("`{heading}` appears again; only the first such section is used"),
            );
        }
        let front_prompt = Self::get(map, &["systemPrompt"]).is_some();
        let system_prompt = if front_prompt {
            let prompt = self.required_string(
                map,
                &["systemPrompt"],
                "the instructions the agent works by",
            );
            if !body.system_prompt().text.is_empty() {
                self.warning(
                    self.line(&["systemPrompt"]),
                    "systemPrompt is set in the frontmatter, so the Markdown body is not used as the system prompt",
                );
            }
            prompt
        } else {
            let section = body.system_prompt();
            if section.text.is_empty() {
                let msg = match &body.system_prompt {
                    Some(_) => "the `## System Prompt` section is empty: write the instructions the agent works by",
                    None => "the agent has no system prompt: write it as the Markdown body (or under `## System Prompt`)",
                };
                self.error(Some(section.line), msg);
                None
            } else {
                Some(section.text)
            }
        };
        let when_to_use = if Self::get(map, &["whenToUse"]).is_some() {
            if body
                .when_to_use
                .as_ref()
                .is_some_and(|s| !s.text.is_empty())
            {
                self.warning(
                    self.line(&["whenToUse"]),
                    "whenToUse is set in the frontmatter, so the `## When to Use` section is not used",
                );
            }
            self.string(map, &["whenToUse"])
        } else {
            body.when_to_use
                .as_ref()
                .map(|s| s.text.clone())
                .filter(|t| !t.is_empty())
        };
        (system_prompt, when_to_use)
    }

    fn tools(&mut self, map: &Mapping) -> AgentTools {
        let Some(tools) = self.mapping(map, &["tools"], "with allowed, blocked or bashFilter")
        else {
            return AgentTools::default();
        };
        let allowed = self.string_list(tools, &["tools", "allowed"]);
        let blocked = self
            .string_list(tools, &["tools", "blocked"])
            .unwrap_or_default();
        let bash_filter = self.bash_filter(tools);
        AgentTools {
            allowed,
            blocked,
            bash_filter,
        }
    }

    fn bash_filter(&mut self, tools: &Mapping) -> Option<BashFilter> {
        let keys = ["tools", "bashFilter"];
        let filter = self.mapping(tools, &keys, "with allowedCommands or blockedPatterns")?;
        let allowed = self
            .string_list(filter, &["tools", "bashFilter", "allowedCommands"])
            .unwrap_or_default();
        let pattern_keys = ["tools", "bashFilter", "blockedPatterns"];
        let patterns = self.string_list(filter, &pattern_keys).unwrap_or_default();
        // Report every pattern that does not compile, not just the first.
        let mut compiled = Vec::with_capacity(patterns.len());
        for (i, pattern) in patterns.iter().enumerate() {
            match filter::compile(i, pattern) {
                Ok(re) => compiled.push(re),
                Err(e) => {
                    let msg = format!("tools.bashFilter.blockedPatterns[{i}]: {e}");
                    self.error(self.item_line(&pattern_keys, i), msg);
                }
            }
        }
        (compiled.len() == patterns.len()).then_some(BashFilter {
            allowed_commands: allowed,
            blocked_patterns: compiled,
        })
    }

    fn transitions(&mut self, map: &Mapping) -> Option<AgentTransitions> {
        let what = "with onSuccess (an agent name or \"complete\"), and optionally onFailure and onMaxIterations";
        if Self::get(map, &["transitions"]).is_none() {
            self.error(
                Some(1),
                format!("transitions is required: a mapping {what}"),
            );
            return None;
        }
        let transitions = self.mapping(map, &["transitions"], what)?;
        let success_keys = ["transitions", "onSuccess"];
        let on_success = if Self::get(transitions, &success_keys).is_none() {
            self.error(
                self.line(&["transitions"]),
                "transitions.onSuccess is required: the agent that runs after a success, or \"complete\"",
            );
            None
        } else {
            self.target(transitions, &success_keys)
        };
        let on_failure = self.target(transitions, &["transitions", "onFailure"]);
        let on_max_iterations = self.target(transitions, &["transitions", "onMaxIterations"]);
        if Self::get(transitions, &["transitions", "custom"]).is_some() {
            self.warning(
                self.line(&["transitions", "custom"]),
                "transitions.custom is not supported by rawko and is ignored",
            );
        }
        Some(AgentTransitions {
            on_success: on_success?,
            on_failure,
            on_max_iterations,
        })
    }

    fn limits(&mut self, map: &Mapping) -> AgentLimits {
        let Some(limits) =
            self.mapping(map, &["limits"], "with maxIterations, timeout or maxTokens")
        else {
            return AgentLimits::default();
        };
        AgentLimits {
            max_iterations: self.positive(limits, &["limits", "maxIterations"]),
            timeout_ms: self.positive(limits, &["limits", "timeout"]),
            max_tokens: self.positive(limits, &["limits", "maxTokens"]),
        }
    }

    fn provider(&mut self, map: &Mapping) -> Option<AgentProvider> {
        let provider = self.mapping(map, &["provider"], "with name, model and maxTokens")?;
        let name = self.required_string(
            provider,
            &["provider", "name"],
            "which provider runs the agent",
        );
        let model = self.string(provider, &["provider", "model"]);
        let max_tokens = self.positive(provider, &["provider", "maxTokens"]);
        Some(AgentProvider {
            name: name?,
            model,
            max_tokens,
        })
    }
}

/// A hint for scalars YAML read as something other than text (`yes`, `1.0`, `null`).
pub(super) fn quote_hint(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) | Value::Number(_) => "; put it in quotes to make it text",
        _ => "",
    }
}
