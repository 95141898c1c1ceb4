//! Subagent profiles, for `delegate_to_subagents`: pi's agent files (`$PI_CODING_AGENT_DIR/agents`
//! or `~/.pi/agent/agents`, then `<workspace>/.pi/agents`) and rawko's agents (`.rawko/agents`),
//! by name, a later root overriding an earlier one and rawko's agents overriding pi's.
//!
//! A pi agent file is Markdown with a YAML frontmatter: `name` (required), `description`,
//! `provider`, `model`, `thinkingLevel` (or `thinking`), `excludeTools` and `tools` (a list, or
//! names separated by commas); the body is the subagent's prompt.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{AgentDefinition, AgentLimits, AgentProvider, AgentSet, AgentTools, AgentTransitions};
use crate::workflow::Diagnostic;

/// One of pi's agent files, as read. It travels in the task log of the subagent that runs it (and
/// in its parent's, from the parent's start), so a file changed later never reaches the task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PiProfile {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude_tools: Vec<String>,
    /// Only these tools, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// The file it was read from.
    pub file: PathBuf,
}

impl PiProfile {
    /// The profile as the agent a subagent task runs.
    pub fn to_agent(&self) -> AgentDefinition {
        AgentDefinition {
            name: self.name.clone(),
            display_name: None,
            when_to_use: self.description.clone(),
            system_prompt: self.prompt.clone(),
            tools: AgentTools {
                allowed: self.tools.clone(),
                blocked: self.exclude_tools.clone(),
                bash_filter: None,
            },
            transitions: AgentTransitions {
                on_success: super::COMPLETE.to_owned(),
                on_failure: None,
                on_max_iterations: None,
            },
            limits: AgentLimits::default(),
            provider: self.provider.as_ref().map(|name| AgentProvider {
                name: name.clone(),
                model: self.model.clone(),
                max_tokens: None,
            }),
            file: self.file.clone(),
        }
    }
}

/// A profile a subagent may run: a pi agent file or one of rawko's agents.
#[derive(Debug, Clone, PartialEq)]
pub enum Profile {
    Pi(PiProfile),
    Rawko(AgentDefinition),
}

impl Profile {
    pub fn name(&self) -> &str {
        match self {
            Profile::Pi(p) => &p.name,
            Profile::Rawko(a) => &a.name,
        }
    }

    /// The agent the subagent runs.
    pub fn agent(&self) -> AgentDefinition {
        match self {
            Profile::Pi(p) => p.to_agent(),
            Profile::Rawko(a) => a.clone(),
        }
    }

    /// The provider and model the profile asks for (`None`: the parent's).
    pub fn provider(&self) -> (Option<String>, Option<String>) {
        match self {
            Profile::Pi(p) => (p.provider.clone(), p.model.clone()),
            Profile::Rawko(a) => match &a.provider {
                Some(p) => (Some(p.name.clone()), p.model.clone()),
                None => (None, None),
            },
        }
    }
}

/// The profiles a task may delegate to, by name (compared case-insensitively).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Profiles {
    list: Vec<Profile>,
}

impl Profiles {
    /// pi's profiles (in root order) and rawko's agents, which override pi's of the same name.
    pub fn new(pi: Vec<PiProfile>, agents: &AgentSet) -> Profiles {
        let mut list: Vec<Profile> = Vec::new();
        let mut put = |p: Profile| {
            list.retain(|q| !q.name().eq_ignore_ascii_case(p.name()));
            list.push(p);
        };
        for p in pi {
            put(Profile::Pi(p));
        }
        for a in agents.iter() {
            put(Profile::Rawko(a.clone()));
        }
        Profiles { list }
    }

    pub fn get(&self, name: &str) -> Option<&Profile> {
        let name = name.trim();
        self.list
            .iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }

    /// The names, in order, for an error that lists them.
    pub fn names(&self) -> Vec<&str> {
        self.list.iter().map(Profile::name).collect()
    }

    /// pi's profiles among them (what a task logs at its start).
    pub fn pi(&self) -> Vec<PiProfile> {
        self.list
            .iter()
            .filter_map(|p| match p {
                Profile::Pi(p) => Some(p.clone()),
                Profile::Rawko(_) => None,
            })
            .collect()
    }
}

/// pi's agent folders: the user's (`$PI_CODING_AGENT_DIR/agents`, else `~/.pi/agent/agents`),
/// then the workspace's (`.pi/agents`).
pub fn pi_roots(workspace: &Path, env: impl Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let non_empty = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let mut roots = Vec::new();
    match non_empty("PI_CODING_AGENT_DIR") {
        Some(dir) => roots.push(dir.join("agents")),
        None => {
            if let Some(home) = non_empty("HOME") {
                roots.push(home.join(".pi").join("agent").join("agents"));
            }
        }
    }
    roots.push(workspace.join(".pi").join("agents"));
    roots
}

/// Reads every `*.md` of the roots (a missing root is no problem), in name order; a file that
/// is not a profile is left out with a diagnostic. A later profile of the same name replaces an
/// earlier one.
pub fn load_pi(roots: &[PathBuf]) -> (Vec<PiProfile>, Vec<Diagnostic>) {
    let mut out: Vec<PiProfile> = Vec::new();
    let mut diagnostics = Vec::new();
    for root in roots {
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
            .collect();
        files.sort();
        for file in files {
            let parsed = std::fs::read_to_string(&file)
                .map_err(|e| format!("cannot read: {e}"))
                .and_then(|text| parse_pi(&file, &text));
            match parsed {
                Ok(p) => {
                    out.retain(|q| !q.name.eq_ignore_ascii_case(&p.name));
                    out.push(p);
                }
                Err(message) => diagnostics.push(Diagnostic::error(file.clone(), message)),
            }
        }
    }
    (out, diagnostics)
}

/// Reads one pi agent file.
pub fn parse_pi(file: &Path, text: &str) -> Result<PiProfile, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("an agent file starts with a `---` frontmatter")?;
    let end = rest
        .find("\n---")
        .ok_or("the frontmatter has no closing `---`")?;
    let front = &rest[..end];
    let body = rest[end + 4..]
        .split_once('\n')
        .map_or("", |(_, b)| b)
        .trim();
    let value: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(front).map_err(|e| format!("invalid frontmatter: {e}"))?;
    let map = value
        .as_mapping()
        .ok_or("the frontmatter is not a mapping of fields")?;
    let text_of = |key: &str| -> Result<Option<String>, String> {
        match map.get(key) {
            None | Some(serde_yaml_ng::Value::Null) => Ok(None),
            Some(serde_yaml_ng::Value::String(s)) => {
                Ok(Some(s.trim().to_owned()).filter(|s| !s.is_empty()))
            }
            Some(serde_yaml_ng::Value::Number(n)) => Ok(Some(n.to_string())),
            Some(_) => Err(format!("{key} must be text")),
        }
    };
    let list_of = |key: &str| -> Result<Option<Vec<String>>, String> {
        match map.get(key) {
            None | Some(serde_yaml_ng::Value::Null) => Ok(None),
            Some(serde_yaml_ng::Value::String(s)) => Ok(Some(
                s.split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned)
                    .collect(),
            )),
            Some(serde_yaml_ng::Value::Sequence(items)) => items
                .iter()
                .map(|i| match i {
                    serde_yaml_ng::Value::String(s) => Ok(s.trim().to_owned()),
                    _ => Err(format!("{key} must list tool names")),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(format!("{key} must be a list of tool names")),
        }
    };
    let name = text_of("name")?.ok_or("the frontmatter has no name")?;
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(format!(
            "name \"{}\" may hold only letters, digits, `-`, `_` and `.`",
            crate::clip::clip(&name)
        ));
    }
    if body.is_empty() {
        return Err("the agent has no prompt: write it after the frontmatter".to_owned());
    }
    // pi writes a model as `provider/model` too.
    let mut provider = text_of("provider")?;
    let mut model = text_of("model")?;
    if let (None, Some(m)) = (&provider, &model) {
        if let Some((p, rest)) = m.split_once('/') {
            if ["anthropic", "openai"].contains(&p) {
                provider = Some(p.to_owned());
                model = Some(rest.to_owned());
            }
        }
    }
    Ok(PiProfile {
        name,
        description: text_of("description")?,
        prompt: body.to_owned(),
        provider,
        model,
        thinking_level: text_of("thinkingLevel")?.or(text_of("thinking")?),
        exclude_tools: list_of("excludeTools")?.unwrap_or_default(),
        tools: list_of("tools")?,
        file: file.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pi_agent_file_is_read_with_every_field() {
        let p = parse_pi(
            Path::new("/a/reviewer.md"),
            "---\nname: reviewer\ndescription: Reviews\nmodel: anthropic/claude-sonnet-4\nthinkingLevel: high\nexcludeTools: [write, edit]\n---\nYou review code.\n",
        )
        .unwrap();
        assert_eq!(p.name, "reviewer");
        assert_eq!(p.provider.as_deref(), Some("anthropic"));
        assert_eq!(p.model.as_deref(), Some("claude-sonnet-4"));
        assert_eq!(p.thinking_level.as_deref(), Some("high"));
        assert_eq!(p.exclude_tools, ["write", "edit"]);
        assert_eq!(p.prompt, "You review code.");
        let agent = p.to_agent();
        assert!(!agent.tool_allowed("Write"), "pi's write is Write");
        assert!(!agent.tool_allowed("MultiEdit"), "edit covers MultiEdit");
        assert!(agent.tool_allowed("Read"));
        let p = parse_pi(
            Path::new("/a/w.md"),
            "---\nname: writer\ntools: read, write\n---\nWrite.\n",
        )
        .unwrap();
        assert_eq!(p.tools, Some(vec!["read".to_owned(), "write".to_owned()]));
        assert!(!p.to_agent().tool_allowed("Bash"));
    }

    #[test]
    fn a_broken_agent_file_says_why() {
        let cases = [
            ("no frontmatter\n", "starts with"),
            ("---\nname: a\n", "no closing"),
            ("---\ndescription: x\n---\nbody\n", "no name"),
            ("---\nname: a\n---\n\n", "no prompt"),
            ("---\nname: ../x\n---\nbody\n", "may hold only"),
            (
                "---\nname: a\nexcludeTools: {a: 1}\n---\nbody\n",
                "list of tool names",
            ),
            ("---\n- a\n---\nbody\n", "not a mapping"),
        ];
        for (text, want) in cases {
            let e = parse_pi(Path::new("/a.md"), text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn later_roots_and_rawko_agents_override_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let (user, ws) = (dir.path().join("u"), dir.path().join("w"));
        std::fs::create_dir_all(&user).unwrap();
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(user.join("a.md"), "---\nname: writer\n---\nuser's\n").unwrap();
        std::fs::write(ws.join("a.md"), "---\nname: Writer\n---\nworkspace's\n").unwrap();
        std::fs::write(ws.join("bad.md"), "nothing\n").unwrap();
        let (pi, diags) = load_pi(&[user, ws]);
        assert_eq!(pi.len(), 1);
        assert_eq!(pi[0].prompt, "workspace's");
        assert_eq!(diags.len(), 1);
        let profiles = Profiles::new(pi, &AgentSet::new());
        assert_eq!(profiles.names(), ["Writer"]);
        assert!(profiles.get("writer").is_some());
        assert!(profiles.get("nobody").is_none());
    }

    #[test]
    fn pi_roots_follow_pi_coding_agent_dir() {
        let ws = Path::new("/ws");
        let roots = pi_roots(ws, |k| match k {
            "PI_CODING_AGENT_DIR" => Some("/pi".into()),
            "HOME" => Some("/home/u".into()),
            _ => None,
        });
        assert_eq!(
            roots,
            [PathBuf::from("/pi/agents"), PathBuf::from("/ws/.pi/agents")]
        );
        let roots = pi_roots(ws, |k| (k == "HOME").then(|| "/home/u".into()));
        assert_eq!(roots[0], PathBuf::from("/home/u/.pi/agent/agents"));
    }
}
