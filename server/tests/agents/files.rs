//! One fixture per rule: types, numbers, YAML syntax and the files themselves.

use super::*;

#[test]
fn every_type_error_of_a_file_is_reported_at_its_line() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.yaml",
        r#"name: a
displayName: [A]
systemPrompt: x
tools:
  allowed: Read
  blocked:
    - Write
    - 3
  bashFilter:
    allowedCommands: {ls: true}
transitions:
  onSuccess: complete
  onFailure: true
limits:
  maxIterations: "5"
  timeout: -1
  maxTokens: 1.5
provider: anthropic
"#,
    );
    let outcome = load_dir(tmp.path());
    let expected: [(&str, usize); 9] = [
        ("displayName must be text, found a list", 2),
        ("tools.allowed must be a list of text, found a string", 5),
        (
            "tools.blocked[1] must be text, found a number; put it in quotes to make it text",
            8,
        ),
        (
            "tools.bashFilter.allowedCommands must be a list of text, found a mapping",
            10,
        ),
        (
            "transitions.onFailure must be text, found a boolean; put it in quotes",
            13,
        ),
        (
            "limits.maxIterations must be a positive whole number, found the text \"5\"",
            15,
        ),
        (
            "limits.timeout must be a positive whole number, found -1",
            16,
        ),
        (
            "limits.maxTokens must be a positive whole number, found 1.5",
            17,
        ),
        (
            "provider must be a mapping with name, model and maxTokens, found a string",
            18,
        ),
    ];
    for (needle, line) in expected {
        assert_diag(&outcome, needle, Severity::Error, &file, Some(line));
    }
    assert_eq!(
        outcome.diagnostics.len(),
        expected.len(),
        "{}",
        shown(&outcome)
    );
    assert!(outcome.agents.is_empty());
}

#[test]
fn numbers_must_fit() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.yaml",
        "name: a\nsystemPrompt: x\ntransitions: {onSuccess: complete}\nlimits:\n  maxIterations: 0\n  maxTokens: 4294967296\n  timeout: 4294967296\n",
    );
    let outcome = load_dir(tmp.path());
    assert_diag(
        &outcome,
        "limits.maxIterations must be a positive whole number, found 0",
        Severity::Error,
        &file,
        Some(5),
    );
    assert_diag(
        &outcome,
        "limits.maxTokens is too large: 4294967296",
        Severity::Error,
        &file,
        Some(6),
    );
    // A timeout is in milliseconds and may be larger.
    assert_eq!(outcome.diagnostics.len(), 2, "{}", shown(&outcome));
}

#[test]
fn provider_needs_a_name() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.yaml",
        "name: a\nsystemPrompt: x\ntransitions: {onSuccess: complete}\nprovider:\n  model: m\n",
    );
    let outcome = load_dir(tmp.path());
    assert_only_error(&outcome, "provider.name is required", &file, Some(4));
}

#[test]
fn a_bad_blocked_pattern_is_reported_at_load_naming_the_pattern() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.md",
        "---\nname: a\ntools:\n  bashFilter:\n    blockedPatterns:\n      - 'rm\\s'\n      - '(unclosed'\n      - '[z-a]'\ntransitions:\n  onSuccess: complete\n---\nDo it.\n",
    );
    let outcome = load_dir(tmp.path());
    assert_diag(
        &outcome,
        "tools.bashFilter.blockedPatterns[1]: blocked pattern `(unclosed` is not a valid regular expression: unclosed group",
        Severity::Error,
        &file,
        Some(7),
    );
    assert_diag(
        &outcome,
        "blocked pattern `[z-a]` is not a valid regular expression",
        Severity::Error,
        &file,
        Some(8),
    );
    assert_eq!(outcome.diagnostics.len(), 2, "{}", shown(&outcome));
    assert!(outcome.agents.is_empty());
}

#[test]
fn malformed_yaml_is_located() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.yaml",
        "name: a\nsystemPrompt: x: y\ntransitions: {onSuccess: complete}\n",
    );
    let outcome = load_dir(tmp.path());
    assert_only_error(
        &outcome,
        "invalid YAML: mapping values are not allowed",
        &file,
        Some(2),
    );
    assert!(outcome.diagnostics[0].column.is_some());
}

#[test]
fn malformed_frontmatter_is_located_in_the_file() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.md",
        "---\nname: a\ntransitions: [\n---\nBody.\n",
    );
    let outcome = load_dir(tmp.path());
    assert_eq!(outcome.diagnostics.len(), 1, "{}", shown(&outcome));
    let d = find(&outcome, "invalid YAML");
    assert_eq!(d.path, file);
    // The frontmatter's lines count from the file's line 2.
    assert!(d.line.is_some_and(|l| l >= 3), "{d}");
}

#[test]
fn a_duplicate_key_points_at_the_duplicate() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.md",
        "---\nname: a\ntransitions: {onSuccess: complete}\nname: b\n---\nBody.\n",
    );
    let outcome = load_dir(tmp.path());
    assert_only_error(
        &outcome,
        "duplicate entry with key \"name\"",
        &file,
        Some(4),
    );
}

#[test]
fn a_yaml_file_must_be_a_mapping() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(tmp.path(), "a.yaml", "- name: a\n");
    let outcome = load_dir(tmp.path());
    assert_only_error(
        &outcome,
        "an agent file must be a mapping of fields (name, systemPrompt, transitions, …), found a list",
        &file,
        Some(1),
    );
}

#[test]
fn an_empty_file_is_an_error() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(tmp.path(), "a.yml", "");
    let outcome = load_dir(tmp.path());
    assert_only_error(&outcome, "the file is empty", &file, Some(1));
}

#[test]
fn a_non_utf8_file_is_an_error_at_its_line() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.md",
        b"---\nname: a\n---\nBad \xff byte.\n".as_slice(),
    );
    let outcome = load_dir(tmp.path());
    assert_only_error(&outcome, "agent file is not valid UTF-8", &file, Some(4));
}

#[test]
fn an_unreadable_file_is_an_error() {
    let tmp = TempDir::new().expect("temp dir");
    // A link to nothing cannot be read, whoever runs the test.
    let file = tmp.path().join("gone.yaml");
    std::os::unix::fs::symlink(tmp.path().join("missing"), &file).expect("symlink");
    let outcome = load_dir(tmp.path());
    assert_only_error(&outcome, "cannot read agent file", &file, None);
}

#[test]
fn a_root_that_is_a_file_is_an_error() {
    let tmp = TempDir::new().expect("temp dir");
    let root = write(tmp.path(), "agents", "not a folder");
    let outcome = load_dir(&root);
    assert_eq!(outcome.diagnostics.len(), 1, "{}", shown(&outcome));
    assert_diag(
        &outcome,
        "agents folder is not a directory",
        Severity::Error,
        &root,
        None,
    );
}

#[test]
fn a_missing_root_is_quietly_empty() {
    let tmp = TempDir::new().expect("temp dir");
    let outcome = load_dir(&tmp.path().join("nothing"));
    assert!(outcome.diagnostics.is_empty());
    assert!(outcome.agents.is_empty());
}

#[test]
fn only_agent_files_are_read() {
    let tmp = TempDir::new().expect("temp dir");
    write(tmp.path(), "a.yaml", yaml_agent("a", "complete"));
    write(
        tmp.path(),
        "README.md",
        "# My agents\n\nNotes for people.\n",
    );
    write(tmp.path(), "notes.txt", "not yaml: [");
    write(tmp.path(), ".a.yaml.swp", "garbage: [");
    write(tmp.path(), "sub/b.yaml", yaml_agent("b", "complete"));
    let outcome = load_dir(tmp.path());
    assert!(outcome.diagnostics.is_empty(), "{}", shown(&outcome));
    assert_eq!(names(&outcome), ["a"]);
}

#[test]
fn one_broken_file_never_hides_the_others() {
    let tmp = TempDir::new().expect("temp dir");
    write(tmp.path(), "a.yaml", yaml_agent("a", "c"));
    let broken = write(tmp.path(), "b.md", "---\nname: b\n: [\n---\n");
    write(
        tmp.path(),
        "c.md",
        "---\nname: c\ntransitions: {onSuccess: complete}\n---\nC.\n",
    );
    let unnamed = write(tmp.path(), "d.yaml", "systemPrompt: x\n");
    let outcome = load_dir(tmp.path());
    assert_eq!(names(&outcome), ["a", "c"]);
    assert!(outcome
        .diagnostics
        .iter()
        .any(|d| d.path == broken && d.severity == Severity::Error));
    assert!(outcome
        .diagnostics
        .iter()
        .any(|d| d.path == unnamed && d.message.contains("name is required")));
    assert!(outcome
        .diagnostics
        .iter()
        .any(|d| d.path == unnamed && d.message.contains("transitions is required")));
    let skipped: Vec<&Path> = outcome.skipped.iter().map(|s| s.file.as_path()).collect();
    assert_eq!(skipped, [broken.as_path(), unnamed.as_path()]);
}
