//! The phase gate: tool lists, rule patterns and the shell.

use super::*;

// ── Gate ──

fn gated_set(tools: Option<ToolPolicy>) -> WorkflowSet {
    let w = wf("wf", "Flow", &["read"]);
    let mut def = definition(&w);
    if let PhaseEntry::Phase(p) = &mut def.phases[0] {
        p.tools = tools;
        p.name = "Research".to_owned();
    }
    WorkflowSet::from_map(IndexMap::from([("wf".to_owned(), def)]))
}

#[test]
fn gate_whitelist_blacklist_and_case() {
    let white = gated_set(Some(ToolPolicy::Whitelist(vec![
        "Read".into(),
        "grep".into(),
    ])));
    let s = start(&white, "wf");
    assert!(check(Some(&s), &white, "Read", &NO_INPUT).is_allowed());
    assert!(check(Some(&s), &white, "read", &NO_INPUT).is_allowed());
    assert!(check(Some(&s), &white, "GREP", &NO_INPUT).is_allowed());
    assert!(!check(Some(&s), &white, "Write", &NO_INPUT).is_allowed());
    assert!(check(Some(&s), &white, "workflow_step", &NO_INPUT).is_allowed());
    assert!(check(Some(&s), &white, "Workflow_Step", &NO_INPUT).is_allowed());

    let black = gated_set(Some(ToolPolicy::Blacklist(vec![
        "Write".into(),
        "Bash".into(),
    ])));
    let s = start(&black, "wf");
    assert!(check(Some(&s), &black, "Read", &NO_INPUT).is_allowed());
    assert!(!check(Some(&s), &black, "bash", &NO_INPUT).is_allowed());
    assert!(!check(Some(&s), &black, "WRITE", &NO_INPUT).is_allowed());

    let open = gated_set(None);
    let s = start(&open, "wf");
    assert!(check(Some(&s), &open, "Anything", &NO_INPUT).is_allowed());
    assert!(check(None, &open, "Write", &NO_INPUT).is_allowed());
}

#[test]
fn gate_block_reason_default_and_template() {
    let set = gated_set(Some(ToolPolicy::Whitelist(vec!["Read".into()])));
    let s = start(&set, "wf");
    expect![[r#"
        Block { reason: "[workflow] The tool \"Write\" is blocked during the Research phase.\nRefer to the current phase instructions for allowed tools and approaches.\nWhen finished, call workflow_step to advance to the next phase.", phase: "Research", detail: "Write is blocked in the Research phase (allowed: Read)" }"#]]
    .assert_eq(&format!("{:?}", check(Some(&s), &set, "Write", &NO_INPUT)));

    let mut set = gated_set(Some(ToolPolicy::Blacklist(vec![
        "Write".into(),
        "Edit".into(),
    ])));
    let mut def = set.get("wf").unwrap().clone();
    def.block_reason_template = Some(
        "{workflowName}/{phaseName}: no {toolName}; you may use {allowedTools}. {unknown}".into(),
    );
    set = WorkflowSet::from_map(IndexMap::from([("wf".to_owned(), def)]));
    let s = start(&set, "wf");
    let GateDecision::Block { reason, .. } = check(Some(&s), &set, "Edit", &NO_INPUT) else {
        panic!("Edit must be blocked")
    };
    assert_eq!(
        reason,
        "Flow/Research: no Edit; you may use all except: Write, Edit. {unknown}"
    );
}

#[test]
fn gate_follows_the_phase() {
    let mut set = set_of(&[wf("wf", "Flow", &["plan", "build"])]);
    let mut def = set.get("wf").unwrap().clone();
    if let PhaseEntry::Phase(p) = &mut def.phases[0] {
        p.tools = Some(ToolPolicy::Whitelist(vec!["Read".into()]));
    }
    set = WorkflowSet::from_map(IndexMap::from([("wf".to_owned(), def)]));
    let s = start(&set, "wf");
    assert!(!check(Some(&s), &set, "Write", &NO_INPUT).is_allowed());
    let s = s.advance(&set).unwrap().state;
    assert!(check(Some(&s), &set, "Write", &NO_INPUT).is_allowed());
}

// ── Gate: rule patterns and the shell ──

/// A one-phase workflow whose phase is called `name` and carries `tools`.
fn phase_set(name: &str, tools: Option<ToolPolicy>) -> WorkflowSet {
    let w = wf("wf", "Flow", &["p"]);
    let mut def = definition(&w);
    if let PhaseEntry::Phase(p) = &mut def.phases[0] {
        p.tools = tools;
        p.name = name.to_owned();
    }
    WorkflowSet::from_map(IndexMap::from([("wf".to_owned(), def)]))
}

fn white(rules: &[&str]) -> Option<ToolPolicy> {
    Some(ToolPolicy::Whitelist(
        rules.iter().map(|r| ToolRule::parse(r).expect(r)).collect(),
    ))
}

fn black(rules: &[&str]) -> Option<ToolPolicy> {
    Some(ToolPolicy::Blacklist(
        rules.iter().map(|r| ToolRule::parse(r).expect(r)).collect(),
    ))
}

fn bash(set: &WorkflowSet, command: &str) -> GateDecision {
    let s = start(set, "wf");
    check(Some(&s), set, "Bash", &json!({ "command": command }))
}

fn file_call(set: &WorkflowSet, tool: &str, input: serde_json::Value) -> GateDecision {
    let s = start(set, "wf");
    check(Some(&s), set, tool, &input)
}

fn reason(decision: GateDecision) -> String {
    match decision {
        GateDecision::Block { reason, .. } => reason,
        GateDecision::Allow => panic!("expected a block"),
    }
}

#[test]
fn read_only_whitelist_blocks_writing_bash() {
    let set = phase_set("Plan", white(&["Read", "Grep", "Bash"]));
    for command in [
        "cat > x",
        "echo hi | tee f",
        "sed -i s/a/b/ f.txt",
        "git commit -m x",
        "npm install",
        "ls && rm -rf x",
        "bash -c 'touch x'",
        "echo $(rm x)",
    ] {
        assert!(
            !bash(&set, command).is_allowed(),
            "{command:?} must be blocked"
        );
    }
    for command in [
        "ls",
        "git status",
        "cargo test",
        "grep -r x src | head",
        "cat > /dev/null",
    ] {
        assert!(bash(&set, command).is_allowed(), "{command:?} must run");
    }
    // The tool name is case-insensitive, the reason names the command, the reason and the phase.
    let s = start(&set, "wf");
    let decision = check(
        Some(&s),
        &set,
        "bash",
        &json!({"command": "sed -i s/a/b/ f.txt"}),
    );
    assert_eq!(
        decision,
        GateDecision::Block {
            reason: "[workflow] \"sed -i s/a/b/ f.txt\" writes files (sed -i edits in place), and the Plan phase does not allow writing.".to_owned(),
            phase: "Plan".to_owned(),
            detail: "\"sed -i s/a/b/ f.txt\" writes files (sed -i edits in place), and the Plan phase does not allow writing.".to_owned(),
        }
    );
    assert_eq!(
        reason(bash(&set, "ls\ncat > notes.md <<EOF\nhello\nEOF")),
        "[workflow] \"ls …\" writes files (> writes to notes.md), and the Plan phase does not allow writing."
    );
    // Other tools keep the plain rules.
    assert!(check(Some(&s), &set, "Read", &json!({"path": "a"})).is_allowed());
    assert!(!check(Some(&s), &set, "Write", &json!({"path": "a"})).is_allowed());
}

#[test]
fn a_bash_rule_in_the_whitelist_lets_that_command_write() {
    let set = phase_set("Plan", white(&["Read", "Bash", "Bash(git commit*)"]));
    assert!(bash(&set, "git commit -m x").is_allowed());
    assert!(bash(&set, "git commit --amend --no-edit").is_allowed());
    assert!(bash(&set, "git status && git commit -m x").is_allowed());
    assert!(bash(&set, "ls").is_allowed());
    assert!(!bash(&set, "rm -rf x").is_allowed());
    assert!(!bash(&set, "git push").is_allowed());
    assert_eq!(
        reason(bash(&set, "git commit -m x && rm -rf x")),
        "[workflow] \"git commit -m x && rm -rf x\" writes files (rm removes files), and the Plan phase does not allow writing."
    );

    // Only patterns, no plain `Bash`: every part of the command must match one.
    let set = phase_set(
        "Plan",
        white(&["Read", "Bash(git commit*)", "Bash(git status)"]),
    );
    assert!(bash(&set, "git commit -m x").is_allowed());
    assert!(bash(&set, "git status; git commit -m x").is_allowed());
    assert!(!bash(&set, "ls").is_allowed());
    assert!(!bash(&set, "rm -rf x").is_allowed());
    assert_eq!(
        reason(bash(&set, "git commit -m x && rm -rf x")),
        "[workflow] \"rm -rf x\" (part of \"git commit -m x && rm -rf x\") is not a command the Plan phase allows; it allows Bash only as Bash(git commit*), Bash(git status)."
    );

    // Claude Code's prefix form.
    let set = phase_set("Plan", white(&["Bash(npm run test:*)"]));
    assert!(bash(&set, "npm run test").is_allowed());
    assert!(bash(&set, "npm run test -- --watch=false").is_allowed());
    assert!(!bash(&set, "npm run testing").is_allowed());

    // Inline interpreters count as writing unless the phase allows them by name.
    let set = phase_set("Plan", white(&["Bash", "Bash(python3 -c *)"]));
    assert!(bash(&set, "python3 -c 'print(1)'").is_allowed());
    assert!(!bash(&set, "node -e 'console.log(1)'").is_allowed());
}

#[test]
fn path_rules_match_the_calls_path() {
    let set = phase_set("Docs", white(&["Read", "Edit(docs/**)"]));
    for path in [
        "docs/a.md",
        "./docs/a.md",
        "docs/sub/b.md",
        "docs",
        "x/../docs/a.md",
    ] {
        let call = file_call(
            &set,
            "Edit",
            json!({"path": path, "old_text": "a", "new_text": "b"}),
        );
        assert!(call.is_allowed(), "Edit of {path:?} must run");
    }
    assert!(file_call(&set, "edit", json!({"file_path": "docs/a.md"})).is_allowed());
    for path in [
        "src/b.rs",
        "docs.md",
        "docs/../src/b.rs",
        "../docs/a.md",
        "/ws/docs/a.md",
    ] {
        let call = file_call(&set, "Edit", json!({"path": path}));
        assert!(!call.is_allowed(), "Edit of {path:?} must be blocked");
    }
    assert_eq!(
        reason(file_call(&set, "Edit", json!({"path": "src/b.rs"}))),
        "[workflow] Edit of \"src/b.rs\" is blocked during the Docs phase, which allows Edit only as Edit(docs/**)."
    );
    assert_eq!(
        reason(file_call(&set, "Edit", json!({}))),
        "[workflow] Edit without a path is blocked during the Docs phase, which allows Edit only as Edit(docs/**)."
    );
    // Write is not listed at all: the usual reason.
    assert!(
        reason(file_call(&set, "Write", json!({"path": "docs/a.md"})))
            .starts_with("[workflow] The tool \"Write\" is blocked during the Docs phase.")
    );

    let set = phase_set("Docs", white(&["Read", "Write(*.md)"]));
    for path in ["a.md", "docs/a.md", "./deep/er/c.md"] {
        assert!(
            file_call(&set, "Write", json!({"path": path})).is_allowed(),
            "{path:?}"
        );
    }
    for path in ["src/b.rs", "a.md.rs", "md"] {
        assert!(
            !file_call(&set, "Write", json!({"path": path})).is_allowed(),
            "{path:?}"
        );
    }
    // Writing is allowed only for some paths, so writing Bash commands are not.
    let set = phase_set("Docs", white(&["Bash", "Write(*.md)", "Edit"]));
    assert!(!bash(&set, "echo x > notes.md").is_allowed());

    let set = phase_set("Code", white(&["Read(src/**)", "Read(/Cargo.toml)"]));
    assert!(file_call(&set, "Read", json!({"path": "src/lib.rs"})).is_allowed());
    assert!(file_call(&set, "Read", json!({"path": "Cargo.toml"})).is_allowed());
    assert!(!file_call(&set, "Read", json!({"path": "server/Cargo.toml"})).is_allowed());
    assert!(!file_call(&set, "Read", json!({"path": ".env"})).is_allowed());
}

#[test]
fn a_blacklist_of_write_and_edit_also_blocks_writing_bash() {
    let set = phase_set("Review", black(&["Write", "Edit"]));
    assert!(!bash(&set, "rm -rf x").is_allowed());
    assert!(!bash(&set, "cat > x").is_allowed());
    assert!(!bash(&set, "git commit -m x").is_allowed());
    assert!(bash(&set, "ls").is_allowed());
    assert!(bash(&set, "cargo test 2>&1 | tail").is_allowed());
    assert!(!file_call(&set, "Write", json!({"path": "a"})).is_allowed());
    assert!(file_call(&set, "Read", json!({"path": "a"})).is_allowed());
    assert_eq!(
        reason(bash(&set, "rm -rf x")),
        "[workflow] \"rm -rf x\" writes files (rm removes files), and the Review phase does not allow writing."
    );
    // Either one is enough.
    let set = phase_set("Review", black(&["Write"]));
    assert!(!bash(&set, "touch x").is_allowed());
    assert!(file_call(&set, "Edit", json!({"path": "a"})).is_allowed());

    // Patterns in a blacklist block what they match, and only that.
    let set = phase_set("Review", black(&["Bash(rm *)", "Read(secrets/**)"]));
    assert!(!bash(&set, "rm -rf x").is_allowed());
    assert!(!bash(&set, "ls && rm x").is_allowed());
    assert!(bash(&set, "ls").is_allowed());
    assert!(
        bash(&set, "touch x").is_allowed(),
        "Write and Edit are allowed here"
    );
    assert_eq!(
        reason(bash(&set, "ls && rm x")),
        "[workflow] \"ls && rm x\" matches Bash(rm *), which the Review phase blocks."
    );
    assert!(!file_call(&set, "Read", json!({"path": "secrets/key"})).is_allowed());
    assert!(!file_call(&set, "Read", json!({"path": "/home/me/ws/secrets/key"})).is_allowed());
    assert!(file_call(&set, "Read", json!({"path": "src/key.rs"})).is_allowed());

    // A blacklisted Edit pattern restricts writing, so writing Bash is blocked too.
    let set = phase_set("Review", black(&["Edit(src/**)"]));
    assert!(!file_call(&set, "Edit", json!({"path": "src/a.rs"})).is_allowed());
    assert!(file_call(&set, "Edit", json!({"path": "docs/a.md"})).is_allowed());
    assert!(!bash(&set, "sed -i s/a/b/ docs/a.md").is_allowed());
}

#[test]
fn every_way_of_editing_is_an_edit_to_the_gate() {
    // Claude Code's MultiEdit and NotebookEdit, and pi's lower-case names, are what a rule for
    // Edit or Write stands for.
    for list in [&["Write", "Edit"][..], &["write", "edit"][..]] {
        let set = phase_set("Review", black(list));
        for (tool, input) in [
            ("MultiEdit", json!({"file_path": "/ws/a.rs", "edits": []})),
            (
                "NotebookEdit",
                json!({"notebook_path": "/ws/a.ipynb", "new_source": "x"}),
            ),
            ("edit", json!({"path": "a.rs"})),
            ("write", json!({"path": "a.rs"})),
            ("Edit", json!({"file_path": "a.rs"})),
        ] {
            assert!(
                !file_call(&set, tool, input).is_allowed(),
                "{tool} with blacklist {list:?}"
            );
        }
        assert!(file_call(&set, "Read", json!({"file_path": "a.rs"})).is_allowed());
        assert!(file_call(&set, "read", json!({"path": "a.rs"})).is_allowed());
    }
    // A whitelist of Edit lets MultiEdit run; one of MultiEdit does not let Edit run.
    let set = phase_set("Build", white(&["Read", "Edit"]));
    assert!(file_call(&set, "MultiEdit", json!({"file_path": "a"})).is_allowed());
    assert!(!file_call(&set, "find", json!({"pattern": "*"})).is_allowed());
    let set = phase_set("Build", white(&["MultiEdit", "find"]));
    assert!(!file_call(&set, "Edit", json!({"file_path": "a"})).is_allowed());
    assert!(file_call(&set, "Glob", json!({"pattern": "*"})).is_allowed());
    // Path patterns read Claude Code's fields too.
    let set = phase_set("Docs", black(&["Edit(src/**)"]));
    assert!(!file_call(&set, "MultiEdit", json!({"file_path": "src/a.rs"})).is_allowed());
    assert!(!file_call(
        &set,
        "NotebookEdit",
        json!({"notebook_path": "src/a.ipynb"})
    )
    .is_allowed());
    assert!(file_call(&set, "MultiEdit", json!({"file_path": "docs/a.md"})).is_allowed());
}

#[test]
fn no_tool_list_or_full_write_access_lets_everything_run() {
    let set = phase_set("Build", None);
    for command in ["rm -rf x", "git commit -m x", "npm install", "cat > x"] {
        assert!(bash(&set, command).is_allowed(), "{command:?}");
    }
    assert!(file_call(&set, "Edit", json!({"path": "/etc/passwd"})).is_allowed());
    let s = start(&set, "wf");
    assert!(check(None, &set, "Bash", &json!({"command": "rm -rf x"})).is_allowed());
    assert!(check(Some(&s), &set, "Anything", &json!(null)).is_allowed());

    let set = phase_set("Build", white(&["Read", "Write", "Edit", "Bash"]));
    assert!(bash(&set, "rm -rf x").is_allowed());
    let set = phase_set("Build", black(&["WebFetch"]));
    assert!(bash(&set, "rm -rf x").is_allowed());
    // workflow_step always runs, even under an empty whitelist.
    let set = phase_set("Build", white(&[]));
    let s = start(&set, "wf");
    assert!(check(Some(&s), &set, "workflow_step", &json!({"action": "next"})).is_allowed());
}

#[test]
fn shell_blocks_use_the_block_reason_template() {
    let set = phase_set("Plan", white(&["Read", "Bash"]));
    let mut def = set.get("wf").unwrap().clone();
    def.block_reason_template =
        Some("{phaseName}: no {toolName} here (only {allowedTools}).".into());
    let set = WorkflowSet::from_map(IndexMap::from([("wf".to_owned(), def)]));
    let s = start(&set, "wf");
    assert_eq!(
        reason(check(Some(&s), &set, "bash", &json!({"command": "npm install"}))),
        "Plan: no Bash here (only Read, Bash).\n\"npm install\" writes files (npm install changes installed packages), and the Plan phase does not allow writing."
    );
    assert_eq!(
        reason(check(Some(&s), &set, "Write", &json!({"path": "a"}))),
        "Plan: no Write here (only Read, Bash)."
    );
}

#[test]
fn tool_rules_parse_and_report_errors() {
    let ok = [
        ("Read", "Read", None),
        ("  bash  ", "bash", None),
        ("Bash(git status*)", "Bash", Some("git status*")),
        ("Bash( npm test )", "Bash", Some("npm test")),
        ("Bash(echo (a))", "Bash", Some("echo (a)")),
        ("Edit(docs/**)", "Edit", Some("docs/**")),
        ("Write(*.md)", "Write", Some("*.md")),
        ("mcp__fs__read(src/**)", "mcp__fs__read", Some("src/**")),
    ];
    for (text, tool, pattern) in ok {
        let rule = ToolRule::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert_eq!((rule.tool(), rule.pattern()), (tool, pattern), "{text:?}");
        assert_eq!(rule.source(), text.trim());
    }
    let bad = [
        ("", "the rule is empty"),
        ("Bash(", "it must end with `)` after the pattern"),
        ("Bash(ls) x", "it must end with `)` after the pattern"),
        ("Bash)", "it has a `)` but no `(`"),
        ("(ls)", "it has no tool name before `(`"),
        (
            "Bash()",
            "the pattern is empty; write `Bash` alone for every use of the tool",
        ),
        ("Edit(src/[)", "unclosed character class; missing ']'"),
        (
            "Edit({a,b)",
            "unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)",
        ),
    ];
    for (text, message) in bad {
        assert_eq!(
            ToolRule::parse(text)
                .map_err(|e| e.to_string())
                .map(|r| r.source().to_owned()),
            Err(message.to_owned()),
            "{text:?}"
        );
    }
    // Rules compare, print and serialise as written.
    let rule = ToolRule::from("Bash(git commit*)");
    assert_eq!(rule, "Bash(git commit*)");
    assert_eq!(
        format!("{rule:?} {rule}"),
        "\"Bash(git commit*)\" Bash(git commit*)"
    );
    assert_eq!(
        serde_json::to_value(&rule).unwrap(),
        json!("Bash(git commit*)")
    );
    assert_eq!(
        ToolPolicy::Blacklist(vec!["Write".into(), rule]).describe(),
        "all except: Write, Bash(git commit*)"
    );
    // A hand-built rule with a broken pattern matches nothing.
    let broken = ToolRule::from("Edit(src/[)");
    assert!(!broken.matches_path("src/[") && !broken.is_plain());
}

/// The user's words for a block: the tool, the phase and the list, never the agent's template.
fn detail(decision: GateDecision) -> String {
    match decision {
        GateDecision::Block { detail, .. } => detail,
        GateDecision::Allow => panic!("expected a block"),
    }
}

#[test]
fn the_detail_says_what_blocked_the_call_in_the_users_words() {
    let white = gated_set(Some(ToolPolicy::Whitelist(vec![
        "Read".into(),
        "Glob".into(),
        "Grep".into(),
    ])));
    let s = start(&white, "wf");
    assert_eq!(
        detail(check(Some(&s), &white, "Write", &NO_INPUT)),
        "Write is blocked in the Research phase (allowed: Read, Glob, Grep)"
    );
    let black = gated_set(Some(ToolPolicy::Blacklist(vec![
        "Write".into(),
        "Edit".into(),
    ])));
    let s = start(&black, "wf");
    assert_eq!(
        detail(check(Some(&s), &black, "Edit", &NO_INPUT)),
        "Edit is blocked in the Research phase (blacklist: Write, Edit)"
    );
    let none = gated_set(Some(ToolPolicy::Whitelist(Vec::new())));
    let s = start(&none, "wf");
    assert_eq!(
        detail(check(Some(&s), &none, "Read", &NO_INPUT)),
        "Read is blocked in the Research phase (allowed: only workflow_step)"
    );
    // A tool name from the model is clipped like every quote of outside input.
    let long = "W".repeat(300);
    let shown = detail(check(Some(&s), &none, &long, &NO_INPUT));
    assert!(shown.len() < 200, "{shown}");
    assert!(shown.contains('…'), "{shown}");
}
