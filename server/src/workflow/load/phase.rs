//! One phase file: its frontmatter and its body.

use super::*;

/// Splits a phase file into its frontmatter (and the 1-based line the frontmatter starts on) and
/// its body.
pub(super) fn split_frontmatter(content: &str) -> Result<(&str, usize, &str), &'static str> {
    let mut lines = content.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err("a phase file must start with YAML frontmatter: a `---` line, the fields (id, name, emoji, …), and another `---` line");
    }
    let start = first.len();
    let mut offset = start;
    for line in lines {
        if line.trim_end() == "---" || line.trim_end() == "..." {
            let front = &content[start..offset];
            let body = &content[offset + line.len()..];
            return Ok((front, 2, body));
        }
        offset += line.len();
    }
    Err("the frontmatter is not closed: add a `---` line after the fields")
}

/// Collects the problems of one file.
pub(super) struct Sink<'a> {
    diagnostics: &'a mut Vec<Diagnostic>,
    path: &'a Path,
    key: &'a str,
    errors: usize,
}

impl Sink<'_> {
    fn error(&mut self, line: Option<usize>, msg: impl Into<String>) {
        self.errors += 1;
        self.diagnostics.push(
            Diagnostic::error(self.path, msg)
                .at_line(line)
                .in_workflow(self.key),
        );
    }

    fn warning(&mut self, line: Option<usize>, msg: impl Into<String>) {
        self.diagnostics.push(
            Diagnostic::warning(self.path, msg)
                .at_line(line)
                .in_workflow(self.key),
        );
    }
}

/// Parses one phase file. Problems go to `diagnostics`; `None` when the phase is unusable.
pub(super) fn parse_phase(
    content: &str,
    path: &Path,
    diagnostics: &mut Vec<Diagnostic>,
    key: &str,
) -> Option<PhaseDefinition> {
    let mut sink = Sink {
        diagnostics,
        path,
        key,
        errors: 0,
    };
    let (front, front_line, body) = match split_frontmatter(content) {
        Ok(parts) => parts,
        Err(msg) => {
            sink.error(Some(1), msg);
            return None;
        }
    };
    // Most frontmatters are a few `key: value` lines, read without the YAML parser; any other
    // is parsed as YAML, which reports its problems.
    let parsed = match parse_flat(front) {
        Some(value) => Ok(value),
        None => parse_yaml(front, path, front_line - 1),
    };
    let value = match parsed {
        Ok(v) => v,
        Err(d) => {
            sink.diagnostics.push(d.in_workflow(key));
            return None;
        }
    };
    let map = match value {
        Value::Mapping(m) => m,
        Value::Null => Mapping::new(),
        other => {
            sink.error(
                Some(front_line),
                format!(
                    "the frontmatter must be a mapping of fields, found {}",
                    type_name(&other)
                ),
            );
            return None;
        }
    };
    let line_of = |k: &str| key_line(front, k).map(|l| l + front_line - 1);

    let required = |sink: &mut Sink, k: &str| -> Option<String> {
        match map.get(k) {
            None | Some(Value::Null) => {
                sink.error(
                    Some(front_line),
                    format!("phase {k} is required in the frontmatter"),
                );
                None
            }
            Some(v) => match scalar_text(v) {
                Some(s) if s.trim().is_empty() => {
                    sink.error(line_of(k), format!("phase {k} is empty"));
                    None
                }
                Some(s) => Some(s),
                None => {
                    sink.error(
                        line_of(k),
                        format!("phase {k} must be text, found {}", type_name(v)),
                    );
                    None
                }
            },
        }
    };
    let id = required(&mut sink, "id");
    let name = required(&mut sink, "name");
    let emoji = required(&mut sink, "emoji");

    // `tools` gates the agent; `subagentTools` (rawko's addition) its subagents, read alike.
    let policy = |sink: &mut Sink, key: &str| -> Option<ToolPolicy> {
        match map.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Mapping(t)) => {
                let list = |sink: &mut Sink, k: &str| -> Option<Vec<ToolRule>> {
                    match t.get(k) {
                        None => None,
                        Some(Value::Null) => {
                            sink.warning(
                            line_of(key),
                            format!("{key}.{k} has no value, so it restricts nothing; write `{k}: []` for an empty list"),
                        );
                            None
                        }
                        Some(Value::Sequence(items)) => {
                            let mut out = Vec::with_capacity(items.len());
                            for item in items {
                                match scalar_text(item) {
                                    Some(s) => match ToolRule::parse(&s) {
                                        Ok(rule) => {
                                            if !super::super::tools::is_known(rule.tool()) {
                                                let hint =
                                                    super::super::tools::suggestion(rule.tool())
                                                        .map(|n| format!(" (did you mean {n}?)"))
                                                        .unwrap_or_default();
                                                sink.warning(
                                                line_of(key),
                                                format!(
                                                    "{key}.{k} names \"{}\", which is no tool rawko knows{hint}; it applies only to a tool of exactly that name",
                                                    rule.tool()
                                                ),
                                            );
                                            }
                                            out.push(rule)
                                        }
                                        Err(e) => sink.error(
                                            line_of(key),
                                            format!("invalid tool rule \"{s}\": {e}"),
                                        ),
                                    },
                                    None => sink.error(
                                        line_of(key),
                                        format!(
                                            "{key}.{k} must list tool names, found {}",
                                            type_name(item)
                                        ),
                                    ),
                                }
                            }
                            Some(out)
                        }
                        Some(other) => {
                            sink.error(
                                line_of(key),
                                format!(
                                    "{key}.{k} must be a list of tool names, found {}",
                                    type_name(other)
                                ),
                            );
                            None
                        }
                    }
                };
                let white = list(sink, "whitelist");
                let black = list(sink, "blacklist");
                match (white, black) {
                    (Some(_), Some(_)) => {
                        sink.error(
                            line_of(key),
                            format!(
                                "{key} has both whitelist and blacklist; a phase may use only one"
                            ),
                        );
                        None
                    }
                    (Some(w), None) => Some(ToolPolicy::Whitelist(w)),
                    (None, Some(b)) => Some(ToolPolicy::Blacklist(b)),
                    (None, None) => {
                        if !t.contains_key("whitelist") && !t.contains_key("blacklist") {
                            sink.warning(
                            line_of(key),
                            format!("{key} has neither whitelist nor blacklist, so it restricts nothing"),
                        );
                        }
                        None
                    }
                }
            }
            Some(other) => {
                sink.error(
                    line_of(key),
                    format!(
                        "{key} must be a mapping with whitelist or blacklist, found {}",
                        type_name(other)
                    ),
                );
                None
            }
        }
    };
    let tools = policy(&mut sink, "tools");
    let subagent_tools = policy(&mut sink, "subagentTools").map(Box::new);

    let available_profiles = match map.get("availableProfiles") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Sequence(items)) => items.iter().filter_map(scalar_text).collect(),
        Some(other) => {
            sink.warning(
                line_of("availableProfiles"),
                format!(
                    "availableProfiles must be a list of profile names, found {}; ignored",
                    type_name(other)
                ),
            );
            Vec::new()
        }
    };
    let agent = match map.get("agent") {
        None | Some(Value::Null) => None,
        Some(v) => match scalar_text(v) {
            Some(s) => Some(s),
            None => {
                sink.error(
                    line_of("agent"),
                    format!("agent must be an agent name, found {}", type_name(v)),
                );
                None
            }
        },
    };

    let instructions = body.trim();
    if instructions.is_empty() {
        let body_line = content.lines().count().max(1);
        sink.error(
            Some(body_line),
            "phase has no instructions: write them as the Markdown body after the frontmatter",
        );
    }

    if sink.errors > 0 {
        return None;
    }
    Some(PhaseDefinition {
        id: id?,
        name: name?,
        emoji: emoji?,
        tools,
        subagent_tools,
        available_profiles,
        agent,
        instructions: instructions.to_owned(),
        file: path.to_owned(),
    })
}
