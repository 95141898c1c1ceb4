//! The `hooks` section of a config file, in either of the two shapes rawko reads:
//!
//! - AutoAgent's: `{"PreExecutionStart": [{"type": "command", "command": "…", "timeout": 60000}]}`,
//!   a flat list of hooks per event, `timeout` in milliseconds;
//! - Claude Code's: `{"PreToolUse": [{"matcher": "Bash|Write", "hooks": [{"type": "command",
//!   "command": "…", "timeout": 60}]}]}`, matcher groups of hooks, `timeout` in seconds.
//!
//! The shape is told entry by entry: an entry with a `hooks` list is a Claude Code matcher group.
//! A hook that cannot be used is left out and reported; nothing is dropped without a word.

use std::time::Duration;

use regex::Regex;
use serde_json::{Map, Value};

use super::filter::{self, IfRule};
use super::http::{self, HttpHook};
use super::HookEvent;
use crate::clip::{clip_line, clip_to};

/// Where a hook was configured. Workspace hooks run only in a trusted workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookSource {
    /// `~/.config/rawko/config.json`.
    User,
    /// `<workspace>/.rawko/config.json`.
    Workspace,
}

/// Which tool's format a hook was written in. It decides what `Stop` means: for AutoAgent the end
/// of the session, for Claude Code the agent ending its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    AutoAgent,
    Claude,
}

/// What a hook does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookAction {
    /// A shell command; the event arrives as JSON on its stdin.
    Command(String),
    /// Claude Code's `http` hook: the event's JSON is POSTed to a URL, the answer is the body.
    Http(HttpHook),
    /// Commits every change: `git add -A` and `git commit`.
    GitCommit {
        message: Option<String>,
        no_verify: bool,
    },
    /// Pushes the current branch to `remote`, setting the upstream.
    GitPush { remote: String },
}

/// One configured hook.
#[derive(Debug, Clone)]
pub struct Hook {
    pub event: HookEvent,
    pub dialect: Dialect,
    pub source: HookSource,
    pub matcher: Matcher,
    pub action: HookAction,
    pub timeout: Duration,
    /// A timeout, a crash or a command that cannot start blocks instead of being reported only.
    pub fail_closed: bool,
    /// Claude Code's `if`: the hook runs only for the tool calls the permission rule matches.
    pub filter: Option<IfRule>,
    /// Claude Code's `async`: the hook runs in the background; the event does not wait for it and
    /// its answer is not read.
    pub background: bool,
    /// Claude Code's `once`: the hook runs at most once per task (Claude Code's session).
    pub once: bool,
}

impl PartialEq for Hook {
    fn eq(&self, other: &Self) -> bool {
        self.event == other.event
            && self.dialect == other.dialect
            && self.matcher == other.matcher
            && self.action == other.action
            && self.timeout == other.timeout
            && self.fail_closed == other.fail_closed
            && self.filter == other.filter
            && self.background == other.background
            && self.once == other.once
    }
}

impl Hook {
    /// How the hook is named in messages: its command, or its built-in type.
    pub fn label(&self) -> String {
        match &self.action {
            HookAction::Command(c) => {
                format!("`{}`", clip_line(c, 60))
            }
            HookAction::Http(h) => format!("POST {}", clip_line(&h.url, 80)),
            HookAction::GitCommit { .. } => "git-commit".to_owned(),
            HookAction::GitPush { remote } => format!("git-push ({remote})"),
        }
    }

    /// What the hook does, whatever event it is configured for: its command, or its built-in
    /// type. A configuration error is about this, so it is told once per task.
    pub fn identity(&self) -> String {
        match &self.action {
            HookAction::Command(c) => c.clone(),
            HookAction::Http(h) => h.url.clone(),
            _ => self.label(),
        }
    }

    /// One line for listings: `PreToolUse [Bash|Write]: ./check.sh`, `PreToolUse [Bash] if
    /// Bash(git *): POST https://… (async, once)`. Header values are not shown (they may name
    /// secrets).
    pub fn describe(&self) -> String {
        let mut matcher = match &self.matcher {
            Matcher::All => String::new(),
            m => format!(" [{}]", m.text()),
        };
        if let Some(rule) = &self.filter {
            matcher.push_str(&format!(" if {}", rule.text()));
        }
        let traits: Vec<&str> = [(self.background, "async"), (self.once, "once")]
            .into_iter()
            .filter_map(|(on, name)| on.then_some(name))
            .collect();
        let traits = if traits.is_empty() {
            String::new()
        } else {
            format!(" ({})", traits.join(", "))
        };
        let what = match &self.action {
            HookAction::Command(c) => c.clone(),
            HookAction::Http(h) => format!("POST {}", h.url),
            HookAction::GitCommit { message, no_verify } => format!(
                "git-commit{}{}",
                message
                    .as_ref()
                    .map(|m| format!(" \"{m}\""))
                    .unwrap_or_default(),
                if *no_verify { " --no-verify" } else { "" }
            ),
            HookAction::GitPush { remote } => format!("git-push to {remote}"),
        };
        format!("{}{matcher}: {what}{traits}", self.event.name())
    }
}

/// Which calls (or sources, or phases) a hook applies to, as Claude Code reads a matcher: empty or
/// `*` is all; letters, digits, `_`, `-`, spaces, `,` and `|` only is a list of exact names;
/// anything else is a regular expression, unanchored.
#[derive(Debug, Clone)]
pub enum Matcher {
    All,
    Names(Vec<String>, String),
    Pattern(Regex),
}

impl PartialEq for Matcher {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text()
    }
}

impl Matcher {
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        if t.is_empty() || t == "*" {
            return Ok(Self::All);
        }
        let plain = t
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' ' | ',' | '|'));
        if plain {
            let names = t
                .split(['|', ','])
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_ascii_lowercase)
                .collect();
            return Ok(Self::Names(names, t.to_owned()));
        }
        Regex::new(t)
            .map(Self::Pattern)
            .map_err(|e| format!("matcher {t:?} is not a valid regular expression: {e}"))
    }

    pub fn text(&self) -> String {
        match self {
            Self::All => "*".to_owned(),
            Self::Names(_, t) => t.clone(),
            Self::Pattern(r) => r.as_str().to_owned(),
        }
    }

    /// Whether the hook applies to `subject` (a tool name, a session source, a phase name).
    /// An event without a subject matches every matcher.
    pub fn matches(&self, subject: Option<&str>) -> bool {
        let Some(subject) = subject else { return true };
        match self {
            Self::All => true,
            Self::Names(names, _) => names.iter().any(|n| n.eq_ignore_ascii_case(subject)),
            Self::Pattern(r) => r.is_match(subject),
        }
    }
}

/// A problem in a `hooks` section: the hook it concerns is left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookProblem {
    pub message: String,
}

/// The default time limit of a hook.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Reads a `hooks` section.
pub fn parse(value: &Value, source: HookSource) -> (Vec<Hook>, Vec<HookProblem>) {
    let mut hooks = Vec::new();
    let mut problems = Vec::new();
    let mut problem = |message: String| problems.push(HookProblem { message });
    let Some(events) = value.as_object() else {
        problem(format!(
            "hooks must be an object of event name → list of hooks, found {}",
            short(value)
        ));
        return (hooks, problems);
    };
    for (name, entries) in events {
        let Some(event) = HookEvent::from_name(name) else {
            problem(format!(
                "hooks.{name}: no such event; the events are {}",
                HookEvent::ALL
                    .iter()
                    .map(|e| e.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            continue;
        };
        let Some(entries) = entries.as_array() else {
            problem(format!(
                "hooks.{name} must be a list, found {}",
                short(entries)
            ));
            continue;
        };
        for (i, entry) in entries.iter().enumerate() {
            let at = format!("hooks.{name}[{i}]");
            let Some(obj) = entry.as_object() else {
                problem(format!("{at} must be an object, found {}", short(entry)));
                continue;
            };
            if let Some(group) = obj.get("hooks") {
                // Claude Code's matcher group.
                let matcher = match obj.get("matcher") {
                    None | Some(Value::Null) => Matcher::All,
                    Some(Value::String(m)) => match Matcher::parse(m) {
                        Ok(m) => m,
                        Err(e) => {
                            problem(format!("{at}: {e}"));
                            continue;
                        }
                    },
                    Some(other) => {
                        problem(format!(
                            "{at}.matcher must be a string, found {}",
                            short(other)
                        ));
                        continue;
                    }
                };
                let Some(list) = group.as_array() else {
                    problem(format!("{at}.hooks must be a list, found {}", short(group)));
                    continue;
                };
                for (j, handler) in list.iter().enumerate() {
                    let at = format!("{at}.hooks[{j}]");
                    match handler
                        .as_object()
                        .ok_or_else(|| format!("{at} must be an object, found {}", short(handler)))
                        .and_then(|h| hook(h, &at, event, Dialect::Claude))
                    {
                        Ok(p) => {
                            hooks.push(p.into_hook(event, Dialect::Claude, source, matcher.clone()))
                        }
                        Err(e) => problem(e),
                    }
                }
            } else {
                match hook(obj, &at, event, Dialect::AutoAgent) {
                    Ok(parsed) => {
                        let matcher = match obj.get("matcher").and_then(Value::as_str) {
                            Some(m) => match Matcher::parse(m) {
                                Ok(m) => m,
                                Err(e) => {
                                    problem(format!("{at}: {e}"));
                                    continue;
                                }
                            },
                            None => Matcher::All,
                        };
                        hooks.push(parsed.into_hook(event, Dialect::AutoAgent, source, matcher))
                    }
                    Err(e) => problem(e),
                }
            }
        }
    }
    (hooks, problems)
}

/// What one hook object says, before it is placed under its event and matcher.
struct Parsed {
    action: HookAction,
    timeout: Duration,
    fail_closed: bool,
    filter: Option<IfRule>,
    background: bool,
    once: bool,
}

impl Parsed {
    fn into_hook(
        self,
        event: HookEvent,
        dialect: Dialect,
        source: HookSource,
        matcher: Matcher,
    ) -> Hook {
        Hook {
            event,
            dialect,
            source,
            matcher,
            action: self.action,
            timeout: self.timeout,
            fail_closed: self.fail_closed,
            filter: self.filter,
            background: self.background,
            once: self.once,
        }
    }
}

/// One hook object: its action, time limit, `failClosed`, and Claude Code's `if`, `async` and
/// `once`.
fn hook(
    obj: &Map<String, Value>,
    at: &str,
    event: HookEvent,
    dialect: Dialect,
) -> Result<Parsed, String> {
    let kind = match obj.get("type") {
        None => "command",
        Some(Value::String(t)) => t.as_str(),
        Some(other) => {
            return Err(format!(
                "{at}.type must be a string, found {}",
                short(other)
            ))
        }
    };
    let string = |key: &str| -> Result<Option<String>, String> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!(
                "{at}.{key} must be a string, found {}",
                short(other)
            )),
        }
    };
    let boolean = |key: &str| -> Result<bool, String> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(format!(
                "{at}.{key} must be true or false, found {}",
                short(other)
            )),
        }
    };
    let action = match kind {
        "command" => match string("command")? {
            Some(c) if !c.trim().is_empty() => HookAction::Command(c),
            _ => return Err(format!("{at}: a command hook needs a \"command\"")),
        },
        "git-commit" => HookAction::GitCommit {
            message: string("message")?,
            no_verify: boolean("noVerify")?,
        },
        "git-push" => HookAction::GitPush {
            remote: string("remote")?.unwrap_or_else(|| "origin".to_owned()),
        },
        "http" => {
            let Some(url) = string("url")?.filter(|u| !u.trim().is_empty()) else {
                return Err(format!("{at}: an http hook needs a \"url\""));
            };
            let url = url.trim().to_owned();
            let headers = match obj.get("headers") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Object(map)) => map
                    .iter()
                    .map(|(k, v)| match v {
                        Value::String(v) => Ok((k.clone(), v.clone())),
                        other => Err(format!(
                            "{at}.headers.{k} must be a string, found {}",
                            short(other)
                        )),
                    })
                    .collect::<Result<_, _>>()?,
                Some(other) => {
                    return Err(format!(
                        "{at}.headers must be an object of header name → value, found {}",
                        short(other)
                    ))
                }
            };
            let allowed_env_vars = match obj.get("allowedEnvVars") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|v| {
                        v.as_str().map(str::to_owned).ok_or_else(|| {
                            format!(
                                "{at}.allowedEnvVars must be a list of variable names, found {}",
                                short(v)
                            )
                        })
                    })
                    .collect::<Result<_, _>>()?,
                Some(other) => {
                    return Err(format!(
                        "{at}.allowedEnvVars must be a list of variable names, found {}",
                        short(other)
                    ))
                }
            };
            http::check(&url, &headers).map_err(|e| format!("{at}: {e}"))?;
            HookAction::Http(HttpHook {
                url,
                headers,
                allowed_env_vars,
            })
        }
        "prompt" | "agent" | "mcp_tool" => {
            return Err(format!(
                "{at}: \"{kind}\" hooks are not supported by rawko, so this {} hook does not run; use a \"command\" or \"http\" hook",
                event.name()
            ))
        }
        other => {
            return Err(format!(
                "{at}: unknown hook type \"{other}\", so this {} hook does not run; the types are command, http, git-commit and git-push",
                event.name()
            ))
        }
    };
    let timeout = match obj.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT,
        Some(v) => {
            let n = v
                .as_f64()
                .filter(|n| n.is_finite() && *n > 0.0)
                .ok_or_else(|| {
                    format!("{at}.timeout must be a positive number, found {}", short(v))
                })?;
            // AutoAgent counts milliseconds, Claude Code seconds.
            let secs = match dialect {
                Dialect::AutoAgent => n / 1000.0,
                Dialect::Claude => n,
            };
            if secs > 86_400.0 {
                return Err(format!("{at}.timeout is more than a day"));
            }
            Duration::from_secs_f64(secs)
        }
    };
    let filter = match string("if")? {
        None => None,
        Some(rule) => {
            if !filter::tool_event(event) {
                return Err(format!(
                    "{at}.if: \"{rule}\" filters tool calls, and {} is not about a tool call, so this hook does not run",
                    event.name()
                ));
            }
            Some(IfRule::parse(&rule).map_err(|e| {
                format!("{at}.if: \"{rule}\" is not a permission rule (`Bash(git *)`, `Write(src/**)`, `Read`): {e}; this hook does not run")
            })?)
        }
    };
    let background = boolean("async")?;
    if background && !matches!(action, HookAction::Command(_) | HookAction::Http(_)) {
        return Err(format!(
            "{at}.async: only command and http hooks run in the background"
        ));
    }
    Ok(Parsed {
        action,
        timeout,
        fail_closed: boolean("failClosed")?,
        filter,
        background,
        once: boolean("once")?,
    })
}

fn short(v: &Value) -> String {
    clip_to(&v.to_string(), 60).into_owned()
}

/// Merges the user's hooks and the workspace's: the user's run first; a hook configured in both
/// places runs once.
pub fn merge(user: Vec<Hook>, workspace: Vec<Hook>) -> Vec<Hook> {
    let mut all = user;
    for h in workspace {
        if !all.contains(&h) {
            all.push(h);
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn both_shapes_load() {
        let (hooks, problems) = parse(
            &json!({
                "PreExecutionStart": [{"type": "command", "command": "echo a", "timeout": 1500}],
                "PostExecutionEnd": [{"type": "git-commit", "message": "m {{taskId}}", "noVerify": true}, {"type": "git-push"}],
                "PreToolUse": [{"matcher": "Bash|Write", "hooks": [{"type": "command", "command": "./check.sh", "timeout": 5, "failClosed": true}]}],
                "Stop": [{"hooks": [{"command": "echo stop"}]}]
            }),
            HookSource::Workspace,
        );
        assert_eq!(problems, vec![]);
        assert_eq!(hooks.len(), 5);
        let of = |e: HookEvent| {
            hooks
                .iter()
                .filter(move |h| h.event == e)
                .collect::<Vec<_>>()
        };
        let start = of(HookEvent::PreExecutionStart);
        assert_eq!(start[0].timeout, Duration::from_millis(1500));
        assert_eq!(start[0].dialect, Dialect::AutoAgent);
        let end = of(HookEvent::PostExecutionEnd);
        assert_eq!(
            end[0].action,
            HookAction::GitCommit {
                message: Some("m {{taskId}}".into()),
                no_verify: true
            }
        );
        assert_eq!(
            end[1].action,
            HookAction::GitPush {
                remote: "origin".into()
            }
        );
        let pre = of(HookEvent::PreToolUse);
        assert_eq!(pre[0].timeout, Duration::from_secs(5));
        assert!(pre[0].fail_closed);
        assert!(pre[0].matcher.matches(Some("bash")));
        assert!(!pre[0].matcher.matches(Some("Read")));
        assert_eq!(of(HookEvent::Stop)[0].dialect, Dialect::Claude);
        assert_eq!(pre[0].describe(), "PreToolUse [Bash|Write]: ./check.sh");
    }

    #[test]
    fn bad_hooks_are_reported_and_left_out() {
        let (hooks, problems) = parse(
            &json!({
                "PreToolUse": [{"matcher": "(", "hooks": [{"command": "x"}]}, {"hooks": [{"type": "prompt", "prompt": "is this fine?"}]}],
                "Nope": [],
                "Stop": "echo",
                "SessionEnd": [{"type": "command"}, {"type": "command", "command": "ok", "timeout": -1}, {"type": "command", "command": "fine"}]
            }),
            HookSource::User,
        );
        assert_eq!(hooks.len(), 1);
        let messages: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(messages.len(), 6, "{messages:#?}");
        assert!(messages
            .iter()
            .any(|m| m.contains("not a valid regular expression")));
        assert!(messages
            .iter()
            .any(|m| m.contains("\"prompt\" hooks are not supported")));
        assert!(messages
            .iter()
            .any(|m| m.starts_with("hooks.Nope: no such event")));
        assert!(messages.iter().any(|m| m.contains("needs a \"command\"")));
        assert!(messages
            .iter()
            .any(|m| m.contains("timeout must be a positive number")));
    }

    #[test]
    fn claude_codes_http_if_async_and_once_load() {
        let (hooks, problems) = parse(
            &json!({"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "http", "url": "http://127.0.0.1:8080/pre", "timeout": 5,
                 "headers": {"Authorization": "Bearer $TOKEN"}, "allowedEnvVars": ["TOKEN"],
                 "if": "Bash(git *)", "async": true, "once": true}
            ]}]}),
            HookSource::Workspace,
        );
        assert_eq!(problems, vec![]);
        let h = &hooks[0];
        assert_eq!(
            h.action,
            HookAction::Http(HttpHook {
                url: "http://127.0.0.1:8080/pre".into(),
                headers: vec![("Authorization".into(), "Bearer $TOKEN".into())],
                allowed_env_vars: vec!["TOKEN".into()],
            })
        );
        assert_eq!(h.timeout, Duration::from_secs(5));
        assert!(h.background && h.once);
        assert_eq!(h.filter.as_ref().map(IfRule::text), Some("Bash(git *)"));
        // What a trust question lists: the URL, never a header's value.
        assert_eq!(
            h.describe(),
            "PreToolUse [Bash] if Bash(git *): POST http://127.0.0.1:8080/pre (async, once)"
        );
        assert_eq!(h.label(), "POST http://127.0.0.1:8080/pre");
    }

    /// Claude Code's hooks rawko cannot run are each reported once, naming the event and the
    /// type, and the rest of the section loads.
    #[test]
    fn claude_code_hooks_rawko_cannot_run_are_reported_and_the_rest_loads() {
        let (hooks, problems) = parse(
            &json!({
                "PreToolUse": [{"hooks": [
                    {"type": "prompt", "prompt": "is it safe? $ARGUMENTS"},
                    {"type": "agent", "prompt": "verify"},
                    {"type": "mcp_tool", "server": "s", "tool": "t"},
                    {"type": "http", "url": "ftp://x/"},
                    {"type": "http"},
                    {"type": "http", "url": "http://h/", "headers": {"bad name": "v"}},
                    {"type": "command", "command": "a", "if": "Bash(git *"},
                    {"type": "command", "command": "ok", "if": "Write(src/**)"}
                ]}],
                "Stop": [{"hooks": [{"type": "command", "command": "b", "if": "Bash"}]}],
                "PostExecutionEnd": [{"type": "git-push", "async": true}],
                "SessionStart": [{"hooks": [{"type": "http", "url": "https://h/start"}]}]
            }),
            HookSource::User,
        );
        let messages: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(hooks.len(), 2, "{messages:#?}");
        assert_eq!(messages.len(), 9, "{messages:#?}");
        for kind in ["prompt", "agent", "mcp_tool"] {
            assert!(
                messages.iter().any(|m| m.starts_with("hooks.PreToolUse[0].hooks[")
                    && m.contains(&format!("\"{kind}\" hooks are not supported by rawko, so this PreToolUse hook does not run"))),
                "{kind}: {messages:#?}"
            );
        }
        assert!(messages
            .iter()
            .any(|m| m.contains("must be an http or https URL")));
        assert!(messages
            .iter()
            .any(|m| m.contains("an http hook needs a \"url\"")));
        assert!(messages.iter().any(|m| m.contains("not a header name")));
        assert!(messages
            .iter()
            .any(|m| m.contains(".if: \"Bash(git *\" is not a permission rule")));
        assert!(messages
            .iter()
            .any(|m| m.starts_with("hooks.Stop[0].hooks[0].if:")
                && m.contains("Stop is not about a tool call")));
        assert!(messages
            .iter()
            .any(|m| m.contains("only command and http hooks run in the background")));
    }

    #[test]
    fn matchers_read_like_claude_code() {
        let m = Matcher::parse("Edit, Write").unwrap();
        assert!(m.matches(Some("Write")) && m.matches(Some("edit")) && !m.matches(Some("Bash")));
        let r = Matcher::parse("mcp__.*").unwrap();
        assert!(r.matches(Some("mcp__memory__x")) && !r.matches(Some("Bash")));
        assert!(Matcher::parse("").unwrap().matches(Some("anything")));
        assert!(m.matches(None));
    }

    #[test]
    fn merge_keeps_order_and_runs_duplicates_once() {
        let (user, _) = parse(
            &json!({"Stop": [{"type": "command", "command": "a"}]}),
            HookSource::User,
        );
        let (ws, _) = parse(
            &json!({"Stop": [{"type": "command", "command": "a"}, {"type": "command", "command": "b"}]}),
            HookSource::Workspace,
        );
        let all = merge(user, ws);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].source, HookSource::User);
        assert_eq!(all[1].action, HookAction::Command("b".into()));
    }
}
