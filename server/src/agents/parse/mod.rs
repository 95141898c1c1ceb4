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

mod fields;
mod markdown;
use fields::*;
use markdown::*;

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
    pub(super) fn failed(diagnostic: Diagnostic) -> Self {
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

/// Parses `bytes`, the contents of the agent file `path` as read.
pub fn parse_bytes(path: &Path, bytes: &[u8]) -> ParsedAgent {
    match text_of(path, bytes) {
        Ok(text) => parse_str(path, text),
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

/// Reads a file as UTF-8 text, with a diagnostic naming the problem when it cannot.
pub(super) fn read_text(path: &Path) -> Result<String, Diagnostic> {
    let bytes = fs::read(path)
        .map_err(|e| Diagnostic::error(path, format!("cannot read agent file: {e}")))?;
    text_of(path, &bytes).map(str::to_owned)
}

/// An agent file's contents as UTF-8 text.
fn text_of<'a>(path: &Path, bytes: &'a [u8]) -> Result<&'a str, Diagnostic> {
    std::str::from_utf8(bytes).map_err(|e| {
        let valid = e.valid_up_to();
        let line = bytes[..valid].iter().filter(|b| **b == b'\n').count() + 1;
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

#[cfg(test)]
mod tests;
