//! YAML helpers shared by the workflow loader and the agent parser: parsing with located
//! diagnostics, and finding the line of a key or a list item in the text (serde_yaml_ng's values
//! carry no positions). Pure: text in, values and line numbers out.

use std::path::Path;

use serde_yaml_ng::Value;

use super::diagnostic::Diagnostic;

mod flat;
pub use flat::parse_flat;

/// Parses YAML text, turning a syntax error into a located diagnostic. `line_offset` is the number
/// of file lines above the text (1 for frontmatter below its `---` line).
pub fn parse_yaml(text: &str, path: &Path, line_offset: usize) -> Result<Value, Diagnostic> {
    serde_yaml_ng::from_str::<Value>(text).map_err(|e| {
        let full = e.to_string();
        let message = format!(
            "invalid YAML: {}",
            full.find(" at line ").map_or(full.as_str(), |i| &full[..i])
        );
        // The parser places a duplicate key at the start of its mapping; point at the duplicate.
        let duplicate = message
            .split("duplicate entry with key \"")
            .nth(1)
            .and_then(|rest| rest.split('"').next());
        if let Some(line) = duplicate.and_then(|key| nth_key_line(text, key, 2)) {
            return Diagnostic::error(path, message).at_line(Some(line + line_offset));
        }
        match e.location() {
            Some(loc) => {
                Diagnostic::error(path, message).at(loc.line() + line_offset, loc.column())
            }
            None => Diagnostic::error(path, message),
        }
    })
}

/// The 1-based line of the `nth` (1-based) line that starts with `key:`, at any indentation.
pub fn nth_key_line(text: &str, key: &str, nth: usize) -> Option<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| is_key_line(l.trim_start(), key))
        .nth(nth.saturating_sub(1))
        .map(|(i, _)| i + 1)
}

/// Whether a (left-trimmed) line starts the mapping entry `key`, plain or quoted.
fn is_key_line(trimmed: &str, key: &str) -> bool {
    let after = trimmed
        .strip_prefix(key)
        .or_else(|| {
            trimmed
                .strip_prefix('"')
                .and_then(|t| t.strip_prefix(key))
                .and_then(|t| t.strip_prefix('"'))
        })
        .or_else(|| {
            trimmed
                .strip_prefix('\'')
                .and_then(|t| t.strip_prefix(key))
                .and_then(|t| t.strip_prefix('\''))
        });
    after.is_some_and(|rest| rest.trim_start().starts_with(':'))
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

fn is_blank_or_comment(line: &str) -> bool {
    let t = line.trim_start();
    t.is_empty() || t.starts_with('#')
}

/// The 1-based line of a nested field (`["tools", "bashFilter", "blockedPatterns"]`), following
/// block mappings by indentation. When a key is not found below its parent, the parent's line is
/// the best there is.
pub fn key_path_line(text: &str, keys: &[&str]) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found: Option<(usize, usize)> = None; // (0-based index, indent)
    for key in keys {
        let start = found.map_or(0, |(i, _)| i + 1);
        let mut hit = None;
        for (i, line) in lines.iter().enumerate().skip(start) {
            if is_blank_or_comment(line) {
                continue;
            }
            let indent = indent_of(line);
            match found {
                Some((_, parent)) if indent <= parent => break,
                None if indent > 0 => continue,
                _ => {}
            }
            if is_key_line(line.trim_start(), key) {
                hit = Some((i, indent));
                break;
            }
        }
        match hit {
            Some(h) => found = Some(h),
            None => break,
        }
    }
    found.map(|(i, _)| i + 1)
}

/// The 1-based line of item `n` (0-based) of the block list below the key on `key_line`, or
/// `key_line` itself when the list is written inline.
pub fn item_line(text: &str, key_line: usize, n: usize) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let key_indent = lines.get(key_line - 1).map_or(0, |l| indent_of(l));
    let mut item_indent: Option<usize> = None;
    let mut seen = 0;
    for (i, line) in lines.iter().enumerate().skip(key_line) {
        if is_blank_or_comment(line) {
            continue;
        }
        let trimmed = line.trim_start();
        let indent = indent_of(line);
        let is_item = trimmed == "-" || trimmed.starts_with("- ");
        match item_indent {
            None if is_item && indent >= key_indent => item_indent = Some(indent),
            None => return key_line,
            Some(want) if is_item && indent == want => {}
            Some(want) if indent > want => continue,
            Some(_) => break,
        }
        if seen == n {
            return i + 1;
        }
        seen += 1;
    }
    key_line
}

/// A YAML value's kind in the user's words, for "must be …, found …" messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}
