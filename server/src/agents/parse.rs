//! Parsing one agent file: a YAML mapping (`*.yaml`, `*.yml`) or Markdown with YAML frontmatter
//! (`*.md`), with every field rawko-sdk defines checked for its type and a diagnostic for each
//! problem, located at the field's line where the text shows it.
//!
//! serde_yaml_ng's values carry no positions, so lines come from the text: a field's line is found
//! by following its keys through the block mappings, which is how agent files are written. A
//! field in flow style (`tools: {allowed: [Read]}`) is placed at the nearest key that is found.

use std::fs;
use std::path::Path;

use serde_yaml_ng::{Mapping, Value};

use super::filter::{self, BashFilter};
use super::{
    AgentDefinition, AgentLimits, AgentProvider, AgentTools, AgentTransitions, Diagnostic,
    Severity, COMPLETE,
};
use crate::workflow::yaml::{item_line, key_path_line, parse_yaml, type_name};

/// What parsing one file produced.
#[derive(Debug, Clone)]
pub struct ParsedAgent {
    /// The agent, when the file has no errors.
    pub agent: Option<AgentDefinition>,
    /// The name the file gives, when it is a valid one, even if other fields are broken.
    pub name: Option<String>,
    pub diagnostics: Vec<Diagnostic>,
    /// The line of `name:`.
    pub(super) name_line: Option<usize>,
}

impl ParsedAgent {
    fn failed(diagnostic: Diagnostic) -> Self {
        ParsedAgent {
            agent: None,
            name: None,
            diagnostics: vec![diagnostic],
            name_line: None,
        }
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }
}

/// Whether `path` names a Markdown agent file (`.md`, any case); anything else is read as YAML.
pub(super) fn is_markdown(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("md"))
}

/// Reads and parses the agent file at `path`.
pub fn parse_file(path: &Path) -> ParsedAgent {
    match read_text(path) {
        Ok(text) => parse_str(path, &text),
        Err(d) => ParsedAgent::failed(d),
    }
}

/// Parses `text` as the agent file `path` (its extension picks the format).
pub fn parse_str(path: &Path, text: &str) -> ParsedAgent {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if is_markdown(path) {
        parse_markdown(path, text)
    } else {
        parse_yaml_file(path, text)
    }
}

fn parse_yaml_file(path: &Path, text: &str) -> ParsedAgent {
    let value = match parse_yaml(text, path, 0) {
        Ok(v) => v,
        Err(d) => return ParsedAgent::failed(d),
    };
    let map = match value {
        Value::Mapping(map) => map,
        Value::Null => {
            return ParsedAgent::failed(
                Diagnostic::error(
                    path,
                    "the file is empty: an agent needs at least name, systemPrompt and transitions.onSuccess",
                )
                .at_line(Some(1)),
            )
        }
        other => {
            return ParsedAgent::failed(
                Diagnostic::error(
                    path,
                    format!(
                        "an agent file must be a mapping of fields (name, systemPrompt, transitions, …), found {}",
                        type_name(&other)
                    ),
                )
                .at_line(Some(1)),
            )
        }
    };
    Fields::new(path, text, 0).agent(&map, None)
}

fn parse_markdown(path: &Path, text: &str) -> ParsedAgent {
    let Some(parts) = split_frontmatter(text) else {
        return ParsedAgent::failed(
            Diagnostic::error(
                path,
                "a Markdown agent must start with YAML frontmatter: a `---` line, the fields (name, transitions, …), and another `---` line",
            )
            .at_line(Some(1)),
        );
    };
    let Some(body_line) = parts.body_line else {
        return ParsedAgent::failed(
            Diagnostic::error(
                path,
                "the frontmatter is not closed: add a `---` line after the fields",
            )
            .at_line(Some(1)),
        );
    };
    let value = match parse_yaml(parts.front, path, 1) {
        Ok(v) => v,
        Err(d) => return ParsedAgent::failed(d),
    };
    let map = match value {
        Value::Mapping(map) => map,
        Value::Null => Mapping::new(),
        other => {
            return ParsedAgent::failed(
                Diagnostic::error(
                    path,
                    format!(
                        "the frontmatter must be a mapping of fields, found {}",
                        type_name(&other)
                    ),
                )
                .at_line(Some(2)),
            )
        }
    };
    let body = body_sections(parts.body, body_line);
    Fields::new(path, parts.front, 1).agent(&map, Some(body))
}

/// A Markdown file's parts: the frontmatter text, and the body with the 1-based line it starts on
/// (`None` when the frontmatter is not closed).
struct Frontmatter<'a> {
    front: &'a str,
    body: &'a str,
    body_line: Option<usize>,
}

/// `None` when the text does not start with a `---` line.
fn split_frontmatter(content: &str) -> Option<Frontmatter<'_>> {
    let mut lines = content.split_inclusive('\n');
    let first = lines.next()?;
    if first.trim_end() != "---" {
        return None;
    }
    let start = first.len();
    let mut offset = start;
    for (i, line) in lines.enumerate() {
        if line.trim_end() == "---" || line.trim_end() == "..." {
            return Some(Frontmatter {
                front: &content[start..offset],
                body: &content[offset + line.len()..],
                // Line 1 is the opening `---`, line i + 2 the closing one.
                body_line: Some(i + 3),
            });
        }
        offset += line.len();
    }
    Some(Frontmatter {
        front: &content[start..],
        body: "",
        body_line: None,
    })
}

/// A `## …` section of a Markdown body: its text and the line of its heading.
#[derive(Debug, Clone, PartialEq)]
struct Section {
    text: String,
    line: usize,
}

/// What SPEC-0008 reads from a Markdown body.
#[derive(Debug, Clone, PartialEq)]
struct BodySections {
    /// The `## System Prompt` section.
    system_prompt: Option<Section>,
    /// The `## When to Use` section.
    when_to_use: Option<Section>,
    /// The body without a leading `# h1` and without the When-to-Use section: the system prompt
    /// when there is no System Prompt heading.
    rest: Section,
    /// Headings of a section given a second time (only the first counts).
    repeated: Vec<(String, usize)>,
}

impl BodySections {
    /// The system prompt the body gives: its System Prompt section, or else the rest.
    fn system_prompt(&self) -> Section {
        match &self.system_prompt {
            Some(s) => s.clone(),
            None => self.rest.clone(),
        }
    }
}

/// Splits a Markdown body into SPEC-0008's sections. `first_line` is the body's first line in the
/// file. Headings inside fenced code blocks are text, not headings.
fn body_sections(body: &str, first_line: usize) -> BodySections {
    #[derive(Clone, Copy, PartialEq)]
    enum Region {
        Rest,
        SystemPrompt,
        WhenToUse,
        Ignored,
    }
    let mut system_prompt: Option<Section> = None;
    let mut when_to_use: Option<Section> = None;
    let mut rest = Section {
        text: String::new(),
        line: first_line,
    };
    let mut repeated = Vec::new();
    let mut region = Region::Rest;
    let mut fence: Option<(char, usize)> = None;
    let mut seen_text = false;

    for (i, line) in body.lines().enumerate() {
        let number = first_line + i;
        let trimmed = line.trim();
        if let Some((ch, len)) = fence {
            if fence_marker(trimmed).is_some_and(|(c, l)| c == ch && l >= len)
                && trimmed.trim_start_matches(ch).trim().is_empty()
            {
                fence = None;
            }
        } else if let Some(marker) = fence_marker(trimmed) {
            fence = Some(marker);
        } else if let Some((level, title)) = heading(trimmed) {
            if level == 1 && !seen_text {
                // The leading title of the file is not part of any prompt.
                seen_text = true;
                continue;
            }
            if level <= 2 {
                let slot = match title.as_str() {
                    "system prompt" => Some((&mut system_prompt, Region::SystemPrompt)),
                    "when to use" => Some((&mut when_to_use, Region::WhenToUse)),
                    _ => None,
                };
                match slot {
                    Some((section @ None, r)) => {
                        *section = Some(Section {
                            text: String::new(),
                            line: number,
                        });
                        region = r;
                        seen_text = true;
                        continue;
                    }
                    Some((Some(_), _)) => {
                        repeated.push((trimmed.to_owned(), number));
                        region = Region::Ignored;
                        seen_text = true;
                        continue;
                    }
                    None => region = Region::Rest,
                }
            }
        }
        if !trimmed.is_empty() {
            seen_text = true;
        }
        let target = match region {
            Region::Rest => Some(&mut rest),
            Region::SystemPrompt => system_prompt.as_mut(),
            Region::WhenToUse => when_to_use.as_mut(),
            Region::Ignored => None,
        };
        if let Some(section) = target {
            if section.text.is_empty() {
                if trimmed.is_empty() {
                    continue;
                }
                if region == Region::Rest {
                    // Point at the text itself when the rest turns out to be the prompt.
                    section.line = number;
                }
            }
            section.text.push_str(line);
            section.text.push('\n');
        }
    }
    for section in [&mut system_prompt, &mut when_to_use]
        .into_iter()
        .flatten()
        .chain([&mut rest])
    {
        section.text = section.text.trim().to_owned();
    }
    BodySections {
        system_prompt,
        when_to_use,
        rest,
        repeated,
    }
}

/// A code fence opener or closer: its character and run length.
fn fence_marker(line: &str) -> Option<(char, usize)> {
    let ch = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = line.chars().take_while(|c| *c == ch).count();
    (len >= 3).then_some((ch, len))
}

/// An ATX heading: its level and its title, lower-cased, with closing `#`s, a trailing colon and
/// runs of spaces removed.
fn heading(line: &str) -> Option<(usize, String)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &line[level..];
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let title = rest
        .trim()
        .trim_end_matches('#')
        .trim()
        .trim_end_matches(':');
    let title = title
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    Some((level, title))
}

/// Reads a file as UTF-8 text, with a diagnostic naming the problem when it cannot.
pub(super) fn read_text(path: &Path) -> Result<String, Diagnostic> {
    let bytes = fs::read(path)
        .map_err(|e| Diagnostic::error(path, format!("cannot read agent file: {e}")))?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..valid]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        Diagnostic::error(
            path,
            format!("agent file is not valid UTF-8 (invalid byte at offset {valid})"),
        )
        .at_line(Some(line))
    })
}

/// Whether `name` is a valid agent name: `^[a-z][a-z0-9_-]*$`, case-insensitively.
pub fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Reads the fields of one agent, collecting every problem rather than stopping at the first.
struct Fields<'a> {
    path: &'a Path,
    /// The YAML text (the whole file, or the frontmatter).
    yaml: &'a str,
    /// File lines above `yaml`.
    offset: usize,
    diagnostics: Vec<Diagnostic>,
    errors: usize,
}

impl<'a> Fields<'a> {
    fn new(path: &'a Path, yaml: &'a str, offset: usize) -> Self {
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

    fn agent(mut self, map: &Mapping, body: Option<BodySections>) -> ParsedAgent {
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
fn quote_hint(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) | Value::Number(_) => "; put it in quotes to make it text",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sections(body: &str) -> BodySections {
        body_sections(body, 10)
    }

    #[test]
    fn key_path_line_follows_nested_block_mappings() {
        let text = "name: a\n\
                    tools:\n  \
                      allowed: [Read]\n  \
                      bashFilter:\n    \
                        # a comment\n    \
                        blockedPatterns:\n      \
                          - x\n\
                    blockedPatterns: top\n";
        assert_eq!(key_path_line(text, &["name"]), Some(1));
        assert_eq!(key_path_line(text, &["tools", "allowed"]), Some(3));
        assert_eq!(
            key_path_line(text, &["tools", "bashFilter", "blockedPatterns"]),
            Some(6)
        );
        assert_eq!(key_path_line(text, &["blockedPatterns"]), Some(8));
        // Not found below its parent: the parent's line.
        assert_eq!(key_path_line(text, &["tools", "blocked"]), Some(2));
        assert_eq!(key_path_line(text, &["missing"]), None);
    }

    #[test]
    fn key_path_line_does_not_leave_the_parent() {
        let text = "tools:\n  allowed: [Read]\ntransitions:\n  onSuccess: x\n";
        assert_eq!(key_path_line(text, &["tools", "onSuccess"]), Some(1));
        assert_eq!(key_path_line(text, &["transitions", "onSuccess"]), Some(4));
    }

    #[test]
    fn item_line_counts_block_items_and_falls_back_to_the_key() {
        let text = "list:\n  - a\n  - b: |\n      c\n  - d\nnext: 1\ninline: [a, b]\n";
        assert_eq!(item_line(text, 1, 0), 2);
        assert_eq!(item_line(text, 1, 1), 3);
        assert_eq!(item_line(text, 1, 2), 5);
        assert_eq!(item_line(text, 1, 3), 1);
        assert_eq!(item_line(text, 7, 1), 7);
        let flush = "list:\n- a\n- b\n";
        assert_eq!(item_line(flush, 1, 1), 3);
    }

    #[test]
    fn names_follow_rawko_sdks_pattern() {
        for ok in ["a", "planner", "Code-Reviewer", "dev_2", "x-"] {
            assert!(is_valid_name(ok), "{ok}");
        }
        for bad in ["", "2dev", "-a", "_a", "a b", "dév", "a.b"] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn system_prompt_and_when_to_use_sections() {
        let s = sections(
            "# Planner\n\nIntro text.\n\n## When to Use\n\nAt the start.\n\n## System Prompt\n\nYou plan.\n\n### Steps\n\n1. Read.\n\n## Notes\n\nFor people.\n",
        );
        assert_eq!(
            s.system_prompt,
            Some(Section {
                text: "You plan.\n\n### Steps\n\n1. Read.".to_owned(),
                line: 18,
            })
        );
        assert_eq!(
            s.when_to_use,
            Some(Section {
                text: "At the start.".to_owned(),
                line: 14,
            })
        );
        assert_eq!(s.system_prompt().text, "You plan.\n\n### Steps\n\n1. Read.");
    }

    #[test]
    fn without_a_system_prompt_heading_the_rest_of_the_body_is_the_prompt() {
        let s = sections(
            "\n# Tester\n\nRun the tests.\n\n## When to Use\nAfter changes.\n\n## How\n\nUse cargo test.\n",
        );
        assert_eq!(s.system_prompt, None);
        assert_eq!(
            s.rest,
            Section {
                text: "Run the tests.\n\n## How\n\nUse cargo test.".to_owned(),
                line: 13,
            }
        );
        assert_eq!(
            s.when_to_use.map(|w| w.text),
            Some("After changes.".to_owned())
        );
    }

    #[test]
    fn only_a_leading_h1_is_dropped() {
        let s = sections("Text first.\n# Not a title\nMore.\n");
        assert_eq!(s.rest.text, "Text first.\n# Not a title\nMore.");
    }

    #[test]
    fn headings_in_code_fences_are_text() {
        let s = sections(
            "## System Prompt\nRun:\n```bash\n# install\n## When to Use\n```\nDone.\n~~~~\n## x\n~~~\n~~~~\n",
        );
        assert_eq!(
            s.system_prompt.map(|p| p.text),
            Some(
                "Run:\n```bash\n# install\n## When to Use\n```\nDone.\n~~~~\n## x\n~~~\n~~~~"
                    .to_owned()
            )
        );
        assert_eq!(s.when_to_use, None);
    }

    #[test]
    fn headings_match_loosely_and_repeats_are_noted() {
        let s = sections("##   system   PROMPT: ##\nA\n## System Prompt\nB\n## when to use\nC\n");
        assert_eq!(s.system_prompt.map(|p| p.text), Some("A".to_owned()));
        assert_eq!(s.repeated, vec![("## System Prompt".to_owned(), 12)]);
        assert_eq!(s.when_to_use.map(|p| p.text), Some("C".to_owned()));
        assert_eq!(heading("#hashtag"), None);
        assert_eq!(heading("####### seven"), None);
        assert_eq!(heading("##"), Some((2, String::new())));
    }

    #[test]
    fn frontmatter_split_reports_the_body_line() {
        let f = split_frontmatter("---\nname: a\n---\nbody\n").expect("frontmatter");
        assert_eq!(f.front, "name: a\n");
        assert_eq!(f.body, "body\n");
        assert_eq!(f.body_line, Some(4));
        let open = split_frontmatter("---\nname: a\n").expect("frontmatter");
        assert_eq!(open.body_line, None);
        assert!(split_frontmatter("name: a\n").is_none());
        assert!(split_frontmatter("").is_none());
    }
}
