//! `docs/protocol.md` and the crate say the same thing: every method has a section with the right
//! direction and kind, every section names a real method, and each section's tables list exactly
//! the fields (and enum values) the types serialise, read from their generated JSON Schemas. The
//! commands and error codes tables match the crate's constants too.
//!
//! The checker returns its findings instead of panicking, so the tests at the bottom can show that
//! it notices a renamed field, a missing section and the like.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use rawko_protocol::{commands, error_codes, ALL_METHODS};
use serde_json::Value;

fn protocol_md() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/protocol.md");
    fs::read_to_string(&path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
}

/// A `##` or `###` section of the document.
struct Section {
    /// The title of the enclosing `##` section (its own title for a `##` section).
    part: String,
    /// The heading's text after the hashes.
    title: String,
    /// For a heading that is exactly one code span, `### `name``: the name.
    name: Option<String>,
    lines: Vec<String>,
}

fn sections(doc: &str) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::new();
    let mut part = String::new();
    let mut in_code = false;
    for line in doc.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        let heading = if in_code {
            None
        } else if let Some(title) = line.strip_prefix("## ") {
            part = title.trim().to_owned();
            Some(title)
        } else {
            line.strip_prefix("### ")
        };
        match heading {
            Some(title) => {
                let title = title.trim().to_owned();
                let name = title
                    .strip_prefix('`')
                    .and_then(|t| t.strip_suffix('`'))
                    .filter(|t| !t.contains('`'))
                    .map(str::to_owned);
                sections.push(Section {
                    part: part.clone(),
                    title,
                    name,
                    lines: Vec::new(),
                });
            }
            None => {
                if let Some(section) = sections.last_mut() {
                    section.lines.push(line.to_owned());
                }
            }
        }
    }
    sections
}

/// A Markdown table with the label before it: `**Params**`, `**Result**`, `` **`Type`** ``, or
/// none.
struct Table {
    label: Option<String>,
    /// The body rows, each cell trimmed, header and separator left out.
    rows: Vec<Vec<String>>,
}

fn tables(lines: &[String]) -> Vec<Table> {
    let mut tables = Vec::new();
    let mut label = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        if let Some(text) = line.strip_prefix("**").and_then(|l| l.strip_suffix("**")) {
            label = Some(text.trim_matches('`').to_owned());
        } else if line.starts_with('|') {
            let mut rows = Vec::new();
            while i < lines.len() && lines[i].trim().starts_with('|') {
                rows.push(cells(lines[i].trim()));
                i += 1;
            }
            // The header and the |---| separator.
            rows.drain(..rows.len().min(2));
            tables.push(Table {
                label: label.take(),
                rows,
            });
            continue;
        }
        i += 1;
    }
    tables
}

/// The cells of a table row, with `\|` kept inside a cell.
fn cells(row: &str) -> Vec<String> {
    let inner = row.trim_matches('|');
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push('|');
                chars.next();
            }
            '|' => cells.push(std::mem::take(&mut cell).trim().to_owned()),
            _ => cell.push(c),
        }
    }
    cells.push(cell.trim().to_owned());
    cells
}

/// What a documented type is made of, read from its JSON Schema.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    /// An object: each property with whether it is required, and the documented type it refers
    /// to, if any.
    Fields(BTreeMap<String, Field>),
    /// A string enum: its values.
    Values(BTreeSet<String>),
}

#[derive(Debug, Clone, PartialEq)]
struct Field {
    required: bool,
    /// The `$defs` name the property's schema (or its items) refers to.
    refers_to: Option<String>,
}

fn shape(schema: &Value) -> Option<Shape> {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        let required: BTreeSet<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let fields = properties
            .iter()
            .map(|(name, property)| {
                let field = Field {
                    required: required.contains(name.as_str()),
                    refers_to: ref_name(property),
                };
                (name.clone(), field)
            })
            .collect();
        return Some(Shape::Fields(fields));
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return Some(Shape::Values(
            values
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        ));
    }
    let variants = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))?
        .as_array()?;
    let values: Option<BTreeSet<String>> = variants
        .iter()
        .map(|v| v.get("const")?.as_str().map(str::to_owned))
        .collect();
    values.map(Shape::Values)
}

fn ref_name(property: &Value) -> Option<String> {
    let reference = property
        .get("$ref")
        .or_else(|| property.get("items").and_then(|items| items.get("$ref")))?
        .as_str()?;
    reference.strip_prefix("#/$defs/").map(str::to_owned)
}

/// The shapes a method's section must document: `Params`, `Result` and every type they use that
/// is an object or a string enum. `schemas` holds the params schema, then the result schema for a request.
fn expected_shapes(schemas: &[Value]) -> BTreeMap<String, Shape> {
    let mut expected = BTreeMap::new();
    for (label, schema) in ["Params", "Result"].iter().zip(schemas) {
        if let Some(Shape::Fields(fields)) = shape(schema) {
            if !fields.is_empty() {
                expected.insert(label.to_string(), Shape::Fields(fields));
            }
        }
        if let Some(defs) = schema.get("$defs").and_then(Value::as_object) {
            for (name, def) in defs {
                if let Some(def_shape) = shape(def) {
                    expected.insert(name.clone(), def_shape);
                }
            }
        }
    }
    expected
}

/// Compares one documented table with the shape of its type.
fn compare(
    where_: &str,
    table: &Table,
    shape: &Shape,
    documented: &BTreeSet<String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    match shape {
        Shape::Fields(fields) => {
            let mut seen = BTreeSet::new();
            for row in &table.rows {
                let cell = row[0].trim_matches('`');
                let (name, optional) = match cell.strip_suffix('?') {
                    Some(name) => (name, true),
                    None => (cell, false),
                };
                seen.insert(name.to_owned());
                let Some(field) = fields.get(name) else {
                    problems.push(format!(
                        "{where_}: the table lists `{name}`, which the type does not have"
                    ));
                    continue;
                };
                if optional == field.required {
                    let should = if field.required {
                        "required"
                    } else {
                        "optional (`name?`)"
                    };
                    problems.push(format!("{where_}: `{name}` should be marked {should}"));
                }
                if let Some(target) = field.refers_to.as_ref().filter(|t| documented.contains(*t)) {
                    let type_cell = row.get(1).map(String::as_str).unwrap_or("");
                    if !type_cell.contains(target.as_str()) {
                        problems.push(format!(
                            "{where_}: the type of `{name}` should name `{target}`"
                        ));
                    }
                }
            }
            for name in fields.keys().filter(|name| !seen.contains(*name)) {
                problems.push(format!("{where_}: the table lacks field `{name}`"));
            }
        }
        Shape::Values(values) => {
            let listed: BTreeSet<String> = table
                .rows
                .iter()
                .map(|row| row[0].trim_matches('`').to_owned())
                .collect();
            for value in listed.difference(values) {
                problems.push(format!(
                    "{where_}: the table lists value `{value}`, which the type does not have"
                ));
            }
            for value in values.difference(&listed) {
                problems.push(format!("{where_}: the table lacks value `{value}`"));
            }
        }
    }
    problems
}

/// Everything in `doc` that disagrees with the crate; empty when they agree.
fn problems(doc: &str) -> Vec<String> {
    let sections = sections(doc);
    let mut problems = Vec::new();

    // Types documented once for all methods, under "## Shared types".
    let shared: BTreeMap<&str, &Section> = sections
        .iter()
        .filter(|s| s.part == "Shared types")
        .filter_map(|s| s.name.as_deref().map(|name| (name, s)))
        .collect();
    let mut shared_used = BTreeSet::new();

    for info in ALL_METHODS {
        let heading = format!("### `{}`", info.method);
        let matching: Vec<&Section> = sections
            .iter()
            .filter(|s| s.name.as_deref() == Some(info.method))
            .collect();
        let section = match matching.as_slice() {
            [section] => *section,
            [] => {
                problems.push(format!("{}: no section `{heading}`", info.method));
                continue;
            }
            _ => {
                problems.push(format!(
                    "{}: more than one section `{heading}`",
                    info.method
                ));
                continue;
            }
        };
        let line_value = |key: &str| {
            let prefix = format!("- {key}: ");
            section
                .lines
                .iter()
                .find_map(|l| l.strip_prefix(&prefix).map(|v| v.trim().to_owned()))
        };
        if line_value("Direction").as_deref() != Some(info.direction.as_str()) {
            problems.push(format!(
                "{}: the section should say `- Direction: {}`",
                info.method, info.direction
            ));
        }
        if line_value("Kind").as_deref() != Some(info.kind.as_str()) {
            problems.push(format!(
                "{}: the section should say `- Kind: {}`",
                info.method, info.kind
            ));
        }

        let mut schemas = vec![(info.params_schema)().to_value()];
        if let Some(result_schema) = info.result_schema {
            schemas.push(result_schema().to_value());
        }
        let expected = expected_shapes(&schemas);
        let documented: BTreeSet<String> = expected.keys().cloned().collect();

        let mut in_section = BTreeMap::new();
        for table in tables(&section.lines) {
            let Some(label) = table.label.clone() else {
                problems.push(format!("{}: a table without a `**Params**`, `**Result**` or `**`Type`**` line before it", info.method));
                continue;
            };
            if !expected.contains_key(&label) {
                problems.push(format!(
                    "{}: table `{label}` names nothing the method's types have",
                    info.method
                ));
                continue;
            }
            if in_section.insert(label.clone(), table).is_some() {
                problems.push(format!("{}: two tables `{label}`", info.method));
            }
        }
        for (label, shape) in &expected {
            let where_ = format!("{} {label}", info.method);
            if let Some(table) = in_section.get(label) {
                problems.extend(compare(&where_, table, shape, &documented));
            } else if let Some(shared_section) = shared.get(label.as_str()) {
                // Checked once, with the first method that uses it.
                if !shared_used.insert(label.clone()) {
                    continue;
                }
                match tables(&shared_section.lines).as_slice() {
                    [table] => problems.extend(compare(
                        &format!("shared type {label}"),
                        table,
                        shape,
                        &documented,
                    )),
                    _ => problems.push(format!("shared type {label}: needs exactly one table")),
                }
            } else {
                problems.push(format!(
                    "{}: no table `{label}` in its section or under Shared types",
                    info.method
                ));
            }
        }
    }

    for section in &sections {
        let Some(name) = section.name.as_deref() else {
            continue;
        };
        if name.contains('/') {
            if !ALL_METHODS.iter().any(|info| info.method == name) {
                problems.push(format!(
                    "section `{}` names a method the crate does not have",
                    section.title
                ));
            }
        } else if section.part == "Shared types" {
            if !shared_used.contains(name) {
                problems.push(format!("shared type `{name}` is used by no method"));
            }
        } else {
            problems.push(format!(
                "section `{}` is neither a method nor a shared type",
                section.title
            ));
        }
    }

    problems.extend(check_commands(&sections));
    problems.extend(check_error_codes(&sections));
    problems
}

/// The commands table lists exactly `commands::ALL`.
fn check_commands(sections: &[Section]) -> Vec<String> {
    let Some(section) = sections
        .iter()
        .find(|s| s.title.contains("workspace/executeCommand"))
    else {
        return vec!["no section on `workspace/executeCommand`".to_owned()];
    };
    let documented: BTreeSet<(String, String)> = tables(&section.lines)
        .iter()
        .flat_map(|t| &t.rows)
        .map(|row| {
            (
                row[0].trim_matches('`').to_owned(),
                row[1].trim_matches('`').to_owned(),
            )
        })
        .collect();
    let crate_has: BTreeSet<(String, String)> = commands::ALL
        .iter()
        .map(|(c, m)| (c.to_string(), m.to_string()))
        .collect();
    let mut problems = Vec::new();
    for (command, method) in crate_has.difference(&documented) {
        problems.push(format!("commands table lacks `{command}` → `{method}`"));
    }
    for (command, method) in documented.difference(&crate_has) {
        problems.push(format!(
            "commands table lists `{command}` → `{method}`, which the crate does not have"
        ));
    }
    problems
}

/// The errors table lists exactly `error_codes::ALL`.
fn check_error_codes(sections: &[Section]) -> Vec<String> {
    let Some(section) = sections.iter().find(|s| s.title == "Errors") else {
        return vec!["no section `## Errors`".to_owned()];
    };
    let documented: BTreeSet<(String, String)> = tables(&section.lines)
        .iter()
        .flat_map(|t| &t.rows)
        .map(|row| (row[0].trim_matches('`').to_owned(), row[1].clone()))
        .collect();
    let crate_has: BTreeSet<(String, String)> = error_codes::ALL
        .iter()
        .map(|(code, name)| (code.to_string(), name.to_string()))
        .collect();
    let mut problems = Vec::new();
    for (code, name) in crate_has.difference(&documented) {
        problems.push(format!("errors table lacks `{code}` {name}"));
    }
    for (code, name) in documented.difference(&crate_has) {
        problems.push(format!(
            "errors table lists `{code}` {name}, which the crate does not have"
        ));
    }
    problems
}

#[test]
fn protocol_md_agrees_with_the_crate() {
    let problems = problems(&protocol_md());
    assert!(
        problems.is_empty(),
        "docs/protocol.md disagrees with crate rawko-protocol:\n  {}",
        problems.join("\n  ")
    );
}

/// Applies `edit` to the real document and returns what the checker says about the result.
fn problems_after(from: &str, to: &str) -> Vec<String> {
    let doc = protocol_md();
    assert!(
        doc.contains(from),
        "the document no longer contains {from:?}; update this test"
    );
    problems(&doc.replacen(from, to, 1))
}

fn assert_noticed(problems: &[String], needle: &str) {
    assert!(
        problems.iter().any(|p| p.contains(needle)),
        "expected a problem mentioning {needle:?}, got {problems:?}"
    );
}

#[test]
fn a_renamed_field_is_noticed() {
    let problems = problems_after("| `secondsLeft` |", "| `secondsRemaining` |");
    assert_noticed(
        &problems,
        "lists `secondsRemaining`, which the type does not have",
    );
    assert_noticed(&problems, "lacks field `secondsLeft`");
}

#[test]
fn a_renamed_field_of_a_shared_type_is_noticed() {
    let problems = problems_after(
        "| `phaseName` | string | the name of the current entry",
        "| `phase` | string | the name of the current entry",
    );
    assert_noticed(
        &problems,
        "shared type BreadcrumbItem: the table lacks field `phaseName`",
    );
}

#[test]
fn a_wrong_optional_mark_is_noticed() {
    let problems = problems_after("| `reason?` |", "| `reason` |");
    assert_noticed(
        &problems,
        "rawko/status Params: `reason` should be marked optional",
    );
}

#[test]
fn a_missing_enum_value_is_noticed() {
    let problems = problems_after("| `hook_output` | what a hook printed |\n", "");
    assert_noticed(&problems, "OutputKind: the table lacks value `hook_output`");
}

#[test]
fn a_missing_section_is_noticed() {
    let problems = problems_after("### `rawko/retry`", "### `rawko/tryAgain`");
    assert_noticed(&problems, "rawko/retry: no section");
    assert_noticed(
        &problems,
        "`rawko/tryAgain`` names a method the crate does not have",
    );
}

#[test]
fn a_wrong_direction_or_kind_is_noticed() {
    let problems = problems_after(
        "### `rawko/countdown`\n\n- Direction: server → client\n- Kind: notification",
        "### `rawko/countdown`\n\n- Direction: client → server\n- Kind: request",
    );
    assert_noticed(
        &problems,
        "rawko/countdown: the section should say `- Direction: server → client`",
    );
    assert_noticed(
        &problems,
        "rawko/countdown: the section should say `- Kind: notification`",
    );
}

#[test]
fn a_wrong_error_code_is_noticed() {
    let problems = problems_after(
        "| `-32004` | workflow not found |",
        "| `-32005` | workflow not found |",
    );
    assert_noticed(&problems, "errors table lacks `-32004` workflow not found");
}

#[test]
fn a_type_cell_that_does_not_name_the_type_is_noticed() {
    let problems = problems_after("| `kind` | `OutputKind` |", "| `kind` | string |");
    assert_noticed(
        &problems,
        "rawko/output Params: the type of `kind` should name `OutputKind`",
    );
}
