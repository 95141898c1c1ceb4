//! What rawko's git is told so that nothing the repository's config names runs.
//!
//! git reads its config from the system, the user (`~/.gitconfig`), the repository
//! (`.git/config`, `config.worktree`, and whatever they include) and the command line, later
//! overriding earlier. The repository's files are the agent's to write, so a value of theirs
//! that names a program (a filter, a hooks path, an ssh command, a credential helper, …) is
//! overridden on the command line with the user's own value for the same key, or with a value
//! under which nothing runs. Which scope a value comes from is git's own answer
//! (`git config --list --show-scope`, which runs nothing): `system` and `global` are the user's,
//! `command` rawko's own, anything else the repository's.

use std::ffi::OsString;

/// Where a config value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The system's or the user's global config.
    User,
    /// The repository's (`local`, `worktree`), which the agent can write.
    Repository,
}

/// One value of the config, as `git config --list --show-scope -z` gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub scope: Scope,
    /// `section.variable` or `section.subsection.variable`; git gives the section and the
    /// variable in lower case, the subsection as written.
    pub key: String,
    /// `None` for a key written without `=` (a boolean true).
    pub value: Option<String>,
}

/// The config git reads in a repository, with where each value comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    pub entries: Vec<Entry>,
}

impl Config {
    /// Reads the output of `git config --list --show-scope -z`: `scope NUL key LF value NUL`, or
    /// `scope NUL key NUL` for a key with no value.
    pub fn parse(bytes: &[u8]) -> Config {
        let text = String::from_utf8_lossy(bytes);
        let mut parts = text.split('\0');
        let mut entries = Vec::new();
        while let (Some(scope), Some(item)) = (parts.next(), parts.next()) {
            let scope = match scope {
                "system" | "global" => Scope::User,
                // rawko's own `-c` values: rawko's environment gives git none of its own.
                "command" => continue,
                _ => Scope::Repository,
            };
            let (key, value) = match item.split_once('\n') {
                Some((k, v)) => (k, Some(v.to_owned())),
                None => (item, None),
            };
            if !key.is_empty() {
                entries.push(Entry {
                    scope,
                    key: key.to_owned(),
                    value,
                });
            }
        }
        Config { entries }
    }

    /// The user's last value for `key` (a key without a value reads as `true`).
    pub fn user(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .rev()
            .find(|e| e.scope == Scope::User && e.key == key)
            .map(|e| e.value.as_deref().unwrap_or("true"))
    }

    /// Every value of the user's for `key`, in the order git reads them.
    pub fn user_all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.entries
            .iter()
            .filter(move |e| e.scope == Scope::User && e.key == key)
            .map(|e| e.value.as_deref().unwrap_or("true"))
    }

    /// The keys the repository's config sets, each once, in the order git reads them.
    fn repository_keys(&self) -> Vec<&str> {
        let mut keys: Vec<&str> = Vec::new();
        for e in &self.entries {
            if e.scope == Scope::Repository && !keys.contains(&e.key.as_str()) {
                keys.push(&e.key);
            }
        }
        keys
    }

    /// Whether the repository's config sets `key`.
    pub fn repository_sets(&self, key: &str) -> bool {
        self.entries
            .iter()
            .any(|e| e.scope == Scope::Repository && e.key == key)
    }
}

/// A key's section, subsection and variable.
fn split_key(key: &str) -> (&str, Option<&str>, &str) {
    let first = key.find('.').unwrap_or(key.len());
    let last = key.rfind('.').unwrap_or(key.len());
    let section = &key[..first];
    let variable = key.get(last + 1..).unwrap_or_default();
    let sub = (last > first).then(|| &key[first + 1..last]);
    (section, sub, variable)
}

/// What a value the repository's config sets is replaced with when the user has none.
enum Neutral {
    /// This value, under which nothing runs.
    Value(&'static str),
    /// No value does: a push is refused (a proxy, a certificate authority, a remote helper).
    RefusePush,
}

/// The neutral value of a key the repository's config may set to run something, or to send the
/// user's credentials somewhere; `None` for a key that is harmless.
fn neutral(section: &str, sub: Option<&str>, variable: &str) -> Option<Neutral> {
    use Neutral::{RefusePush, Value};
    Some(match (section, sub, variable) {
        // An empty value runs nothing (git 2.47: "cannot run" for a diff program, no askpass,
        // no filter; `required` off so an unfiltered file is not an error).
        ("core", None, "askpass" | "alternaterefscommand") => Value(""),
        ("diff", None, "external") => Value(""),
        ("diff", Some(_), "textconv" | "command") => Value(""),
        ("merge", Some(_), "driver") => Value(""),
        ("filter", Some(_), "clean" | "smudge" | "process") => Value(""),
        ("filter", Some(_), "required") => Value("false"),
        // Signing: git's own programs, and no signing the user did not ask for.
        ("gpg", None, "program") | ("gpg", Some("openpgp"), "program") => Value("gpg"),
        ("gpg", Some("x509"), "program") => Value("gpgsm"),
        ("gpg", Some("ssh"), "program") => Value("ssh-keygen"),
        ("gpg", Some(_), "program" | "defaultkeycommand") => Value(""),
        ("gpg", None, "format") => Value("openpgp"),
        ("commit" | "tag" | "push", None, "gpgsign") => Value("false"),
        // A push sends the user's credentials: not through a proxy or a certificate authority
        // the agent chose, not without checking the server, no cookies written anywhere.
        ("http", _, "sslverify") => Value("true"),
        ("http", _, "cookiefile") => Value(""),
        ("http", _, "savecookies") => Value("false"),
        ("http", _, "proxy" | "sslcainfo" | "sslcapath" | "proxysslcainfo") => RefusePush,
        ("remote", Some(_), "proxy" | "vcs") => RefusePush,
        ("protocol", Some(name), "allow") => Value(default_policy(name)),
        ("protocol", None, "allow") => Value("user"),
        _ => return None,
    })
}

/// git's policy for a protocol when nothing is configured.
fn default_policy(protocol: &str) -> &'static str {
    match protocol {
        "http" | "https" | "git" | "ssh" => "always",
        "ext" => "never",
        _ => "user",
    }
}

/// Where git finds hooks for a command rawko runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HooksPath {
    /// None runs.
    Off,
    /// The user's `core.hooksPath`, else this directory (the repository's `hooks`).
    Users(std::path::PathBuf),
}

/// The command line and environment that make git run nothing the repository's config names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hardened {
    /// `-c key=value`, in order (later wins; all of them after every config file).
    pub config: Vec<(String, String)>,
    /// Variables to set.
    pub env: Vec<(&'static str, OsString)>,
    /// Why a push is refused, when it is.
    pub push_refusal: Option<String>,
}

/// What overrides `config`'s repository values for a command with `hooks`, pushing to `remote`
/// (if it is a push); `var` reads rawko's environment.
pub fn harden(
    config: &Config,
    hooks: &HooksPath,
    remote: Option<&str>,
    var: &dyn Fn(&str) -> Option<OsString>,
) -> Hardened {
    let mut out = Hardened::default();
    let mut set = |k: &str, v: &str| out.config.push((k.to_owned(), v.to_owned()));
    set("core.fsmonitor", "false");
    let hooks_path = match hooks {
        HooksPath::Off => "/dev/null".to_owned(),
        HooksPath::Users(default) => config
            .user("core.hookspath")
            .map(str::to_owned)
            .unwrap_or_else(|| default.display().to_string()),
    };
    set("core.hooksPath", &hooks_path);
    set("protocol.ext.allow", "never");
    // rawko's commit does not start the repository's maintenance (`gc --auto` runs detached).
    set("gc.auto", "0");
    set("maintenance.auto", "false");
    // A push's negotiation runs `remote.<name>.uploadpack`, where the repository's value wins
    // over any given on the command line (git takes the first).
    set("push.negotiate", "false");
    // Credential helpers: the repository's never run. An empty value empties the list; then
    // the user's, in their order.
    set("credential.helper", "");
    for e in &config.entries {
        let (section, _, variable) = split_key(&e.key);
        if e.scope == Scope::User && section == "credential" && variable == "helper" {
            set(&e.key, e.value.as_deref().unwrap_or_default());
        }
    }
    let mut refused: Vec<&str> = Vec::new();
    for key in config.repository_keys() {
        let (section, sub, variable) = split_key(key);
        if section == "remote" && sub != remote {
            continue;
        }
        match (neutral(section, sub, variable), config.user(key)) {
            (None, _) => {}
            (Some(_), Some(users)) => set(key, users),
            (Some(Neutral::Value(v)), None) => set(key, v),
            (Some(Neutral::RefusePush), None) => refused.push(key),
        }
        if (section, sub, variable) == ("protocol", None, "allow") {
            for name in ["http", "https", "git", "ssh"] {
                let key = format!("protocol.{name}.allow");
                if config.user(&key).is_none() && !config.repository_sets(&key) {
                    set(&key, "always");
                }
            }
        }
    }
    if remote.is_some() && !refused.is_empty() {
        out.push_refusal = Some(format!(
            "the repository's config sets {}, which an agent can write; rawko pushes only with network settings from your own git config (git config --global)",
            refused.join(", ")
        ));
    }

    let non_empty = |name: &str| var(name).filter(|v| !v.is_empty());
    // ssh: the user's command (their environment, then their config), else ssh that fails
    // instead of asking for a password no one sees. The variable wins over any core.sshCommand.
    let ssh = non_empty("GIT_SSH_COMMAND")
        .or_else(|| non_empty("GIT_SSH").map(|p| OsString::from(shell_quote(&p.to_string_lossy()))))
        .or_else(|| config.user("core.sshcommand").map(OsString::from))
        .unwrap_or_else(|| OsString::from("ssh -o BatchMode=yes"));
    out.env.push(("GIT_SSH_COMMAND", ssh));
    // core.gitProxy takes the first match, so it is overridden by the variable (empty: none).
    if var("GIT_PROXY_COMMAND").is_none() && config.repository_sets("core.gitproxy") {
        out.env.push(("GIT_PROXY_COMMAND", OsString::new()));
    }
    out
}

/// `text` as one word for `sh`.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(list: &[(&str, &str, Option<&str>)]) -> Config {
        let mut bytes = Vec::new();
        for (scope, key, value) in list {
            bytes.extend_from_slice(scope.as_bytes());
            bytes.push(0);
            bytes.extend_from_slice(key.as_bytes());
            if let Some(v) = value {
                bytes.push(b'\n');
                bytes.extend_from_slice(v.as_bytes());
            }
            bytes.push(0);
        }
        Config::parse(&bytes)
    }

    fn no_env(_: &str) -> Option<OsString> {
        None
    }

    #[test]
    fn the_listing_is_read_with_its_scopes() {
        let c = entries(&[
            ("global", "user.name", Some("Ada")),
            ("local", "core.bare", None),
            ("worktree", "filter.x.clean", Some("a\nb")),
            ("command", "x.y", Some("")),
        ]);
        assert_eq!(
            c.entries,
            vec![
                Entry {
                    scope: Scope::User,
                    key: "user.name".into(),
                    value: Some("Ada".into())
                },
                Entry {
                    scope: Scope::Repository,
                    key: "core.bare".into(),
                    value: None
                },
                Entry {
                    scope: Scope::Repository,
                    key: "filter.x.clean".into(),
                    value: Some("a\nb".into())
                },
            ]
        );
        assert_eq!(
            split_key("filter.a.b.clean"),
            ("filter", Some("a.b"), "clean")
        );
        assert_eq!(split_key("core.fsmonitor"), ("core", None, "fsmonitor"));
    }

    #[test]
    fn the_repositorys_programs_are_overridden_with_the_users_or_nothing() {
        let c = entries(&[
            ("global", "filter.lfs.clean", Some("git-lfs clean -- %f")),
            ("global", "credential.helper", Some("store")),
            (
                "global",
                "credential.https://example.com.helper",
                Some("cache"),
            ),
            ("local", "filter.lfs.clean", Some("evil")),
            ("local", "filter.evil.smudge", Some("evil")),
            ("local", "filter.evil.required", Some("true")),
            ("local", "credential.helper", Some("!evil")),
            ("local", "commit.gpgsign", Some("true")),
            ("local", "gpg.program", Some("evil")),
            ("local", "core.hookspath", Some(".hooks")),
            ("local", "user.name", Some("Agent")),
            ("local", "remote.origin.vcs", Some("evil")),
            ("local", "remote.other.vcs", Some("evil")),
        ]);
        let h = harden(&c, &HooksPath::Users("/r/.git/hooks".into()), None, &no_env);
        let get = |k: &str| {
            h.config
                .iter()
                .filter(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(get("core.fsmonitor"), ["false"]);
        assert_eq!(get("core.hooksPath"), ["/r/.git/hooks"]);
        assert_eq!(get("filter.lfs.clean"), ["git-lfs clean -- %f"]);
        assert_eq!(get("filter.evil.smudge"), [""]);
        assert_eq!(get("filter.evil.required"), ["false"]);
        assert_eq!(get("credential.helper"), ["", "store"]);
        assert_eq!(get("credential.https://example.com.helper"), ["cache"]);
        assert_eq!(get("commit.gpgsign"), ["false"]);
        assert_eq!(get("gpg.program"), ["gpg"]);
        assert_eq!(get("user.name"), Vec::<&str>::new());
        assert_eq!(h.push_refusal, None);
        assert_eq!(
            h.env,
            vec![("GIT_SSH_COMMAND", OsString::from("ssh -o BatchMode=yes"))]
        );

        let h = harden(&c, &HooksPath::Off, Some("origin"), &|k| {
            (k == "GIT_SSH").then(|| OsString::from("/opt/my ssh"))
        });
        assert!(h
            .config
            .contains(&("core.hooksPath".into(), "/dev/null".into())));
        assert_eq!(
            h.push_refusal.as_deref(),
            Some("the repository's config sets remote.origin.vcs, which an agent can write; rawko pushes only with network settings from your own git config (git config --global)")
        );
        assert_eq!(
            h.env,
            vec![("GIT_SSH_COMMAND", OsString::from("'/opt/my ssh'"))]
        );
    }
}
