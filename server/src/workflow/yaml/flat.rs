//! A phase's frontmatter read without the YAML parser when it is written the way nearly every
//! one is: `key: value` lines, one level of `key:` mapping below (two spaces in), values that are
//! plain words, double-quoted text or flow lists of them. Pure: text in, value out.
//!
//! It is not a second YAML parser. It answers only for text whose every line it reads fully, and
//! only with the value `parse_yaml` gives that text (`workflow/tests/yaml.rs` checks the two
//! against each other over many generated texts); anything else, from a comment after a value
//! to a duplicate key, a tab, or a number, is `None`, and the caller parses the text as YAML,
//! which reports any problem with its line. Libyaml's scanner and the values it builds took most
//! of the time of a load of 50 workflows of 10 phases.

use serde_yaml_ng::{Mapping, Value};

/// The mapping `text` holds (`Value::Null` for nothing but blank and comment lines), or `None`
/// when the text is not in the simple form.
pub fn parse_flat(text: &str) -> Option<Value> {
    if !text.chars().all(plain_char) {
        return None;
    }
    let mut root = Mapping::new();
    // The top-level key whose value is a mapping still open below it.
    let mut open: Option<(Value, Mapping)> = None;
    for line in text.split('\n') {
        let trimmed = line.trim_start_matches(' ');
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = line.len() - trimmed.len();
        let (key, value) = key_value(trimmed)?;
        match indent {
            0 => {
                close(&mut root, &mut open)?;
                match value {
                    Some(value) => insert(&mut root, key, value)?,
                    None => open = Some((key, Mapping::new())),
                }
            }
            2 => {
                let (_, inner) = open.as_mut()?;
                insert(inner, key, value.unwrap_or(Value::Null))?;
            }
            _ => return None,
        }
    }
    close(&mut root, &mut open)?;
    Some(if root.is_empty() {
        Value::Null
    } else {
        Value::Mapping(root)
    })
}

/// Ends the open `key:`: its mapping, or nothing when no line was below it.
fn close(root: &mut Mapping, open: &mut Option<(Value, Mapping)>) -> Option<()> {
    if let Some((key, inner)) = open.take() {
        let value = if inner.is_empty() {
            Value::Null
        } else {
            Value::Mapping(inner)
        };
        insert(root, key, value)?;
    }
    Some(())
}

/// A duplicate key is YAML's error to report.
fn insert(map: &mut Mapping, key: Value, value: Value) -> Option<()> {
    if map.contains_key(&key) {
        return None;
    }
    map.insert(key, value);
    Some(())
}

/// `key: value` or `key:` (its value on the lines below).
fn key_value(line: &str) -> Option<(Value, Option<Value>)> {
    let (key, rest) = line.split_once(':')?;
    if !is_word(key) || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let key = Value::String(key.to_owned());
    if rest.trim_end_matches(' ').is_empty() {
        return Some((key, None));
    }
    let value = rest.strip_prefix(' ')?.trim_matches(' ');
    Some((key, Some(scalar_or_list(value)?)))
}

fn scalar_or_list(value: &str) -> Option<Value> {
    match value.strip_prefix('[') {
        Some(inner) => {
            let inner = inner.strip_suffix(']')?.trim_matches(' ');
            if inner.is_empty() {
                return Some(Value::Sequence(Vec::new()));
            }
            inner
                .split(',')
                .map(|item| text(item.trim_matches(' '), true))
                .collect::<Option<Vec<_>>>()
                .map(Value::Sequence)
        }
        None => text(value, false),
    }
}

/// A plain word or a double-quoted text without escapes, as a string; `None` for anything YAML
/// might read as something else.
fn text(s: &str, in_list: bool) -> Option<Value> {
    let s = match s.strip_prefix('"') {
        Some(quoted) => {
            let inner = quoted.strip_suffix('"')?;
            if inner.contains(['"', '\\']) {
                return None;
            }
            return Some(Value::String(inner.to_owned()));
        }
        None => s,
    };
    // `: ` and ` #` end a plain scalar, and flow indicators end one inside a list: a plain text
    // holds none of them (nor a colon or `#` at all, to keep the rule short).
    let stops: &[char] = if in_list {
        &[':', '#', '[', ']', '{', '}', ',', '"']
    } else {
        &[':', '#', '[', ']', '{', '}']
    };
    if !is_word(s) || s.contains(stops) {
        return None;
    }
    Some(Value::String(s.to_owned()))
}

/// Whether a plain scalar is surely a string: it starts with a letter (ASCII or not), so it is no
/// number and no indicator, and it is none of the words YAML reads as null or a boolean.
fn is_word(s: &str) -> bool {
    let starts_with_letter = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || !c.is_ascii());
    starts_with_letter
        && !matches!(
            s,
            "null" | "Null" | "NULL" | "true" | "True" | "TRUE" | "false" | "False" | "FALSE"
        )
}

/// The characters the simple form allows: printable ASCII, the line feed, and printable
/// non-ASCII characters other than the ones YAML 1.1 reads as line breaks or a byte-order mark.
fn plain_char(c: char) -> bool {
    match c {
        '\n' | ' '..='~' => true,
        '\u{a0}'..='\u{d7ff}' => !matches!(c, '\u{2028}' | '\u{2029}'),
        '\u{e000}'..='\u{fffd}' => c != '\u{feff}',
        '\u{10000}'..='\u{10ffff}' => true,
        _ => false,
    }
}
