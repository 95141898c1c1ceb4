//! Tool filtering of loaded agents, and the starter agents.

use super::*;

// ---------------------------------------------------------------------------------------------
// Tool filtering of loaded agents
// ---------------------------------------------------------------------------------------------

fn loaded(yaml: &str) -> AgentDefinition {
    let parsed = parse_str(Path::new("agent.yaml"), yaml);
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
    parsed.agent.expect("agent")
}

#[test]
fn a_loaded_agents_tools_are_filtered() {
    let a = loaded(
        "name: reader\nsystemPrompt: x\ntransitions: {onSuccess: complete}\ntools:\n  allowed: [Read, Bash, Write]\n  blocked: [write]\n",
    );
    assert!(a.tool_allowed("read"));
    assert!(a.tool_allowed("BASH"));
    assert!(!a.tool_allowed("Write"));
    assert!(!a.tool_allowed("Edit"));
    assert!(a.tool_allowed("workflow_step"));
}

#[test]
fn a_loaded_bash_filter_checks_first_words_and_patterns() {
    let a = loaded(
        "name: reader\nsystemPrompt: x\ntransitions: {onSuccess: complete}\ntools:\n  bashFilter:\n    allowedCommands: [ls, git]\n    blockedPatterns: ['\\bgit\\s+push\\b']\n",
    );
    assert_eq!(a.check_bash("ls -la"), Ok(()));
    assert_eq!(a.check_bash("GIT_PAGER=cat git log"), Ok(()));
    assert_eq!(
        a.check_bash("FOO=1 rm -rf ."),
        Err("Command 'rm' is not allowed for agent reader".to_owned())
    );
    assert_eq!(
        a.check_bash("git push --force"),
        Err(r"Command blocked by pattern: \bgit\s+push\b".to_owned())
    );
}

// ---------------------------------------------------------------------------------------------
// The starter agents
// ---------------------------------------------------------------------------------------------

fn starter() -> AgentLoadOutcome {
    load_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("starter/agents"))
}

#[test]
fn the_starter_agents_validate_cleanly_together() {
    let outcome = starter();
    assert!(outcome.diagnostics.is_empty(), "{}", shown(&outcome));
    assert_eq!(
        names(&outcome),
        ["developer", "planner", "reviewer", "tester"]
    );
    let flow = |name: &str| {
        let a = outcome.agents.get(name).expect(name);
        assert!(
            a.when_to_use.as_ref().is_some_and(|w| w.len() > 40),
            "{name}"
        );
        assert!(a.system_prompt.len() > 200, "{name}");
        (
            a.transitions.on_success.clone(),
            a.failure_target().to_owned(),
            a.transitions.on_max_iterations.clone(),
        )
    };
    let s = |x: &str| x.to_owned();
    assert_eq!(flow("planner"), (s("developer"), s("planner"), None));
    assert_eq!(
        flow("developer"),
        (s("tester"), s("developer"), Some(s("reviewer")))
    );
    assert_eq!(flow("tester"), (s("reviewer"), s("developer"), None));
    assert_eq!(flow("reviewer"), (s("complete"), s("developer"), None));
}

#[test]
fn the_starter_planner_and_reviewer_are_read_only() {
    let outcome = starter();
    for name in ["planner", "reviewer"] {
        let a = outcome.agents.get(name).expect(name);
        for tool in ["Read", "Glob", "Grep", "Bash", "workflow_step"] {
            assert!(a.tool_allowed(tool), "{name} may use {tool}");
        }
        for tool in ["Write", "Edit"] {
            assert!(!a.tool_allowed(tool), "{name} may not use {tool}");
        }
        assert_eq!(a.check_bash("git status"), Ok(()), "{name}");
        assert_eq!(a.check_bash("ls -la src"), Ok(()), "{name}");
        assert!(a.check_bash("rm -rf src").is_err(), "{name}");
        assert!(a.check_bash("git commit -am wip").is_err(), "{name}");
        assert!(a.check_bash("cat a > b").is_err(), "{name}");
        assert!(a.check_bash("ls && rm x").is_err(), "{name}");
        assert!(a.check_bash("find . -delete").is_err(), "{name}");
    }
    let planner = outcome.agents.get("planner").expect("planner");
    assert_eq!(planner.limits.max_iterations, Some(5));
}

#[test]
fn the_starter_developer_has_every_tool_but_does_not_push() {
    let outcome = starter();
    let dev = outcome.agents.get("developer").expect("developer");
    for tool in ["Read", "Write", "Edit", "Glob", "Grep", "Bash", "WebFetch"] {
        assert!(dev.tool_allowed(tool), "{tool}");
    }
    assert_eq!(dev.check_bash("cargo test && git commit -am x"), Ok(()));
    assert!(dev.check_bash("git push origin main").is_err());
    let tester = outcome.agents.get("tester").expect("tester");
    assert!(!tester.tool_allowed("Write"));
    assert_eq!(tester.check_bash("cargo test 2>&1 | tail -20"), Ok(()));
}
