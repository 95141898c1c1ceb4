//! `rawko trust`, `rawko sessions list|show` and `rawko config …`: trusting a workspace's hooks
//! and settings that need trust, the sessions recorded, and editing the hooks as AutoAgent's
//! `config` commands do.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::{table, Context, ExitCode, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE};
use crate::config;
use crate::hooks::session::{self, Session};
use crate::hooks::trust::{self, Trust};
use crate::hooks::{self as hooks_mod, HookSource};

/// `rawko trust [--revoke]`
pub fn trust_workspace(ctx: &mut Context<'_>, revoke: bool) -> io::Result<ExitCode> {
    let Some(store) = trust::store_path(ctx.env) else {
        writeln!(
            ctx.err,
            "error: no config directory (set XDG_CONFIG_HOME or HOME) to record trust in"
        )?;
        return Ok(EXIT_PROBLEMS);
    };
    if revoke {
        let was = trust::revoke(&store, &ctx.workspace)?;
        if ctx.json {
            writeln!(
                ctx.out,
                "{}",
                json!({"workspace": ctx.workspace.display().to_string(), "trusted": false, "wasTrusted": was})
            )?;
            return Ok(EXIT_OK);
        }
        writeln!(
            ctx.out,
            "{}",
            if was {
                format!(
                    "{} is no longer trusted: its hooks will not run until you trust it again.",
                    ctx.workspace.display()
                )
            } else {
                format!("{} was not trusted.", ctx.workspace.display())
            }
        )?;
        return Ok(EXIT_OK);
    }
    let file = ctx.workspace.join(".rawko").join("config.json");
    let (settings, problems) = config::load(&config::workspace_files(&ctx.workspace), None);
    for p in &problems {
        writeln!(ctx.err, "warning: {p}")?;
    }
    let Some(section) = settings.trust_section() else {
        if ctx.json {
            writeln!(
                ctx.out,
                "{}",
                json!({"workspace": ctx.workspace.display().to_string(), "trusted": false, "hooks": []})
            )?;
            return Ok(EXIT_OK);
        }
        writeln!(
            ctx.out,
            "{} defines no hooks; there is nothing to trust.",
            file.display()
        )?;
        return Ok(EXIT_OK);
    };
    let before = trust::check(Some(&store), &ctx.workspace, Some(&section));
    trust::record(&store, &ctx.workspace, &section)?;
    let lines = hooks_mod::workspace_hook_lines(&settings.hooks);
    let chosen = settings.workspace_settings.as_ref();
    if ctx.json {
        let mut said = json!({"workspace": ctx.workspace.display().to_string(), "trusted": true, "hooks": lines, "hooksHash": trust::hooks_hash(&section)});
        if chosen.is_some() {
            said["settings"] = json!(settings.workspace_settings_lines());
        }
        writeln!(ctx.out, "{said}")?;
        return Ok(EXIT_OK);
    }
    write!(
        ctx.out,
        "Trusted {}{}.",
        ctx.workspace.display(),
        match (before, chosen) {
            (Trust::Changed, None) => " again (its hooks changed)",
            (Trust::Changed, Some(_)) => " again (what it was trusted with changed)",
            (Trust::Trusted, _) => " (it already was)",
            _ => "",
        }
    )?;
    let mut covered = Vec::new();
    if !lines.is_empty() {
        writeln!(ctx.out, " These hooks will run:")?;
        for l in lines {
            writeln!(ctx.out, "  {l}")?;
        }
        covered.push(format!(
            "the hooks in {}",
            settings.workspace_hook_files_text(&ctx.workspace)
        ));
    }
    if let Some(w) = chosen {
        // On the first line when there are no hooks to list.
        let lead = if covered.is_empty() { " " } else { "" };
        writeln!(
            ctx.out,
            "{lead}These settings of {} will be used:",
            w.file.display()
        )?;
        for l in w.lines() {
            writeln!(ctx.out, "  {l}")?;
        }
        covered.push(format!("the {} in {}", w.keys_text(), w.file.display()));
    }
    writeln!(
        ctx.out,
        "If {} change, rawko asks again.",
        covered.join(" or ")
    )?;
    Ok(EXIT_OK)
}

fn time(ms: i64) -> String {
    crate::workflow::texts::iso_timestamp(ms)
}

fn duration(ms: Option<i64>) -> String {
    let Some(ms) = ms else { return "-".into() };
    let s = ms / 1000;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}

/// `rawko sessions list`
pub fn sessions_list(ctx: &mut Context<'_>, all: bool) -> io::Result<ExitCode> {
    let Some(dir) = crate::store::state_dir(ctx.env) else {
        writeln!(
            ctx.err,
            "error: no state directory (set XDG_STATE_HOME or HOME)"
        )?;
        return Ok(EXIT_PROBLEMS);
    };
    let workspace = ctx.workspace.display().to_string();
    let sessions: Vec<Session> = session::list(&dir)
        .into_iter()
        .filter(|s| all || s.workspace == workspace)
        .collect();
    if ctx.json {
        writeln!(ctx.out, "{}", serde_json::to_string_pretty(&sessions)?)?;
        return Ok(EXIT_OK);
    }
    if sessions.is_empty() {
        writeln!(
            ctx.out,
            "No sessions{} yet. Each `rawko serve` or `rawko run` is one.",
            if all { "" } else { " in this workspace" }
        )?;
        return Ok(EXIT_OK);
    }
    let rows: Vec<[String; 6]> = sessions
        .iter()
        .map(|s| {
            [
                s.id.clone(),
                s.status.as_str().to_owned(),
                s.command.clone(),
                time(s.start_time),
                duration(s.metadata.total_duration),
                format!(
                    "{} done, {} failed of {}",
                    s.tasks.completed, s.tasks.failed, s.tasks.planned
                ),
            ]
        })
        .collect();
    for line in table(
        ["ID", "STATUS", "COMMAND", "STARTED", "TOOK", "TASKS"],
        &rows,
    ) {
        writeln!(ctx.out, "{line}")?;
    }
    Ok(EXIT_OK)
}

/// The command line a session ran, quoted for a shell. The recorded `args` are the whole command
/// line after `rawko` (the subcommand among them); older records may hold only what followed it.
fn command_line(s: &Session) -> String {
    use crate::hooks::template::shell_quote;
    let mut words = vec!["rawko".to_owned()];
    if !s.args.contains(&s.command) {
        words.push(s.command.clone());
    }
    words.extend(s.args.iter().map(|a| shell_quote(a)));
    words.join(" ")
}

/// `rawko sessions show ID`
pub fn sessions_show(ctx: &mut Context<'_>, id: &str) -> io::Result<ExitCode> {
    let Some(dir) = crate::store::state_dir(ctx.env) else {
        writeln!(
            ctx.err,
            "error: no state directory (set XDG_STATE_HOME or HOME)"
        )?;
        return Ok(EXIT_PROBLEMS);
    };
    let s = match session::find(&dir, id) {
        Ok(s) => s,
        Err(e) => {
            writeln!(ctx.err, "error: {e}")?;
            return Ok(EXIT_PROBLEMS);
        }
    };
    if ctx.json {
        writeln!(ctx.out, "{}", serde_json::to_string_pretty(&s)?)?;
        return Ok(EXIT_OK);
    }
    let o = &mut *ctx.out;
    writeln!(o, "session {}", s.id)?;
    writeln!(o, "  status     {}", s.status.as_str())?;
    writeln!(o, "  command    {}", command_line(&s))?;
    writeln!(o, "  workspace  {}", s.workspace)?;
    writeln!(o, "  started    {}", time(s.start_time))?;
    if let Some(end) = s.end_time {
        writeln!(o, "  ended      {}", time(end))?;
    }
    writeln!(o, "  took       {}", duration(s.metadata.total_duration))?;
    writeln!(
        o,
        "  tasks      {} planned, {} complete, {} failed, {} cancelled",
        s.tasks.planned, s.tasks.completed, s.tasks.failed, s.tasks.cancelled
    )?;
    if let Some(t) = &s.current_task {
        writeln!(o, "  current    {t}")?;
    }
    if let Some(p) = &s.provider {
        writeln!(o, "  provider   {p}")?;
    }
    if let Some(b) = &s.metadata.git_branch {
        writeln!(o, "  branch     {b}")?;
    }
    if let Some(c) = &s.metadata.git_commit {
        writeln!(o, "  commit     {c}")?;
    }
    if let Some(e) = &s.error {
        writeln!(o, "  error      {e}")?;
    }
    Ok(EXIT_OK)
}

/// What `rawko config` changes.
#[derive(Debug, Clone)]
pub enum ConfigEdit {
    AutoCommit(bool),
    AutoPush(bool),
    GitNoVerify(bool),
    PushRemote(String),
}

/// Parses `true`/`false` as AutoAgent does (any case).
pub fn parse_bool(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!("expected true or false, found \"{s}\"")),
    }
}

/// The config file `rawko config` edits.
fn config_file(ctx: &Context<'_>, global: bool) -> Option<PathBuf> {
    if global {
        let workspace = config::workspace_files(&ctx.workspace);
        config::config_files(&ctx.workspace, ctx.env)
            .into_iter()
            .find(|f| !workspace.contains(f))
    } else {
        Some(ctx.workspace.join(".rawko").join("config.json"))
    }
}

fn read_object(file: &Path) -> Result<Map<String, Value>, String> {
    match std::fs::read_to_string(file) {
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => Err(format!("{} must hold a JSON object", file.display())),
            Err(e) => Err(format!(
                "{} is not valid JSON ({e}); fix it first, nothing was changed",
                file.display()
            )),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Map::new()),
        Err(e) => Err(format!("cannot read {}: {e}", file.display())),
    }
}

fn write_object(file: &Path, map: Map<String, Value>) -> io::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(&Value::Object(map)).map_err(io::Error::other)?;
    let tmp = file.with_extension("json.tmp");
    std::fs::write(&tmp, text + "\n")?;
    std::fs::rename(&tmp, file)
}

/// The hook list of `event` in `hooks`, created when missing.
fn event_list<'a>(hooks: &'a mut Map<String, Value>, event: &str) -> &'a mut Vec<Value> {
    let entry = hooks
        .entry(event.to_owned())
        .or_insert_with(|| Value::Array(Vec::new()));
    if !entry.is_array() {
        *entry = Value::Array(Vec::new());
    }
    entry.as_array_mut().expect("an array")
}

fn is_type(hook: &Value, t: &str) -> bool {
    hook.get("type").and_then(Value::as_str) == Some(t)
}

/// Applies an edit to a `hooks` object; returns what changed, for the user.
pub fn apply_edit(hooks: &mut Map<String, Value>, edit: &ConfigEdit) -> String {
    const AT: &str = "PostExecutionEnd";
    let any_of = |hooks: &Map<String, Value>, t: &str| -> usize {
        hooks
            .values()
            .filter_map(Value::as_array)
            .flatten()
            .filter(|h| is_type(h, t))
            .count()
    };
    let message = match edit {
        ConfigEdit::AutoCommit(true) | ConfigEdit::AutoPush(true) => {
            let (t, hook) = match edit {
                ConfigEdit::AutoCommit(_) => (
                    "git-commit",
                    json!({"type": "git-commit", "message": "rawko: {{taskDescription}}"}),
                ),
                _ => ("git-push", json!({"type": "git-push", "remote": "origin"})),
            };
            let list = event_list(hooks, AT);
            if list.iter().any(|h| is_type(h, t)) {
                format!("a {t} hook is already in {AT}; nothing changed")
            } else {
                if t == "git-push" {
                    list.push(hook);
                } else {
                    // Commit before any push.
                    let at = list
                        .iter()
                        .position(|h| is_type(h, "git-push"))
                        .unwrap_or(list.len());
                    list.insert(at, hook);
                }
                format!("added a {t} hook to {AT}")
            }
        }
        ConfigEdit::AutoCommit(false) | ConfigEdit::AutoPush(false) => {
            let t = if matches!(edit, ConfigEdit::AutoCommit(_)) {
                "git-commit"
            } else {
                "git-push"
            };
            let before = any_of(hooks, t);
            for list in hooks.values_mut().filter_map(Value::as_array_mut) {
                list.retain(|h| !is_type(h, t));
            }
            hooks.retain(|_, v| v.as_array().is_none_or(|a| !a.is_empty()));
            if before == 0 {
                format!("there was no {t} hook; nothing changed")
            } else {
                format!(
                    "removed {before} {t} hook{}",
                    if before == 1 { "" } else { "s" }
                )
            }
        }
        ConfigEdit::GitNoVerify(on) => {
            let mut n = 0;
            for h in hooks
                .values_mut()
                .filter_map(Value::as_array_mut)
                .flatten()
                .filter(|h| is_type(h, "git-commit"))
            {
                if let Some(o) = h.as_object_mut() {
                    o.insert("noVerify".into(), Value::Bool(*on));
                    n += 1;
                }
            }
            if n == 0 {
                "there is no git-commit hook to change (rawko config set-auto-commit true adds one)"
                    .to_owned()
            } else {
                format!(
                    "{} noVerify on {n} git-commit hook{}",
                    if *on { "set" } else { "cleared" },
                    if n == 1 { "" } else { "s" }
                )
            }
        }
        ConfigEdit::PushRemote(remote) => {
            let mut n = 0;
            for h in hooks
                .values_mut()
                .filter_map(Value::as_array_mut)
                .flatten()
                .filter(|h| is_type(h, "git-push"))
            {
                if let Some(o) = h.as_object_mut() {
                    o.insert("remote".into(), Value::String(remote.clone()));
                    n += 1;
                }
            }
            if n == 0 {
                "there is no git-push hook to change (rawko config set-auto-push true adds one)"
                    .to_owned()
            } else {
                format!(
                    "pushes go to {remote} ({n} git-push hook{})",
                    if n == 1 { "" } else { "s" }
                )
            }
        }
    };
    message
}

/// `rawko config set-…`
pub fn config_edit(ctx: &mut Context<'_>, edit: ConfigEdit, global: bool) -> io::Result<ExitCode> {
    if let ConfigEdit::PushRemote(r) = &edit {
        if r.trim().is_empty() || r.starts_with('-') || r.contains(char::is_whitespace) {
            writeln!(ctx.err, "error: \"{r}\" is not a remote name")?;
            return Ok(EXIT_USAGE);
        }
    }
    let Some(file) = config_file(ctx, global) else {
        writeln!(
            ctx.err,
            "error: no config directory (set XDG_CONFIG_HOME or HOME)"
        )?;
        return Ok(EXIT_PROBLEMS);
    };
    let mut map = match read_object(&file) {
        Ok(m) => m,
        Err(e) => {
            writeln!(ctx.err, "error: {e}")?;
            return Ok(EXIT_PROBLEMS);
        }
    };
    // A workspace the user trusted (or one without hooks) stays trusted after an edit the user
    // made through rawko.
    let trust_store = trust::store_path(ctx.env);
    let was_trusted = !global
        && matches!(
            trust::check(
                trust_store.as_deref(),
                &ctx.workspace,
                config::workspace_trust_section(&ctx.workspace).as_ref()
            ),
            Trust::Nothing | Trust::Trusted
        );
    let mut hooks = match map.remove("hooks") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(h)) => h,
        Some(_) => {
            writeln!(
                ctx.err,
                "error: \"hooks\" in {} is not an object; fix it first, nothing was changed",
                file.display()
            )?;
            return Ok(EXIT_PROBLEMS);
        }
    };
    let before = hooks.clone();
    let message = apply_edit(&mut hooks, &edit);
    if hooks == before {
        // Nothing to change: the file is left as it is (and not created).
        writeln!(ctx.out, "{}: {message}", file.display())?;
        return Ok(EXIT_OK);
    }
    if !hooks.is_empty() {
        map.insert("hooks".into(), Value::Object(hooks));
    }
    write_object(&file, map)?;
    if was_trusted {
        if let (Some(store), Some(section)) =
            (trust_store, config::workspace_trust_section(&ctx.workspace))
        {
            trust::record(&store, &ctx.workspace, &section)?;
        }
    }
    writeln!(ctx.out, "{}: {message}", file.display())?;
    Ok(EXIT_OK)
}

/// `rawko config show`: the settings in effect and every hook, with where it comes from.
pub fn config_show(ctx: &mut Context<'_>) -> io::Result<ExitCode> {
    let files = config::config_files(&ctx.workspace, ctx.env);
    let (settings, problems) = config::load(&files, None);
    let state = trust::check(
        trust::store_path(ctx.env).as_deref(),
        &ctx.workspace,
        settings.trust_section().as_ref(),
    );
    let settings = settings.trusting(state.allows());
    // Where the workspace's settings that need trust stand, in the words of the hooks' lines.
    let standing = match state {
        Trust::Trusted | Trust::Nothing => "trusted: used",
        Trust::Changed => "changed since trusted: not used (`rawko trust`)",
        Trust::Untrusted => "not trusted: not used (`rawko trust`)",
    };
    // In the order they run: by the event's place in a task's life, then as configured (the
    // order an event's hooks run in).
    let mut in_order: Vec<&crate::hooks::Hook> = settings.hooks.iter().collect();
    in_order.sort_by_key(|h| h.event.lifecycle_rank());
    if ctx.json {
        let hooks: Vec<Value> = in_order
            .iter()
            .map(|h| {
                json!({
                    "event": h.event.name(),
                    "hook": h.describe(),
                    "source": match h.source { HookSource::User => "user", HookSource::Workspace => "workspace" },
                    "runs": h.source == HookSource::User || state == Trust::Trusted,
                    "timeoutSeconds": h.timeout.as_secs_f64(),
                    "failClosed": h.fail_closed,
                })
            })
            .collect();
        writeln!(
            ctx.out,
            "{}",
            serde_json::to_string_pretty(&json!({
                "files": files.iter().map(|f| json!({"path": f.display().to_string(), "exists": f.is_file()})).collect::<Vec<_>>(),
                "approvalTimeoutSeconds": settings.approval_timeout.as_secs_f64(),
                "maxReminders": settings.max_reminders,
                "countdownSeconds": settings.countdown_seconds,
                "bashTimeoutSeconds": settings.bash_timeout.as_secs_f64(),
                "maxIterations": settings.max_iterations,
                "maxFailures": settings.max_failures,
                "sandbox": {
                    "mode": settings.sandbox.mode.name(),
                    "allowRead": settings.sandbox.allow_read,
                    "allowWrite": settings.sandbox.allow_write,
                    "landlockAbi": crate::sandbox::landlock_support().ok(),
                    "landlockUnavailable": crate::sandbox::landlock_support().err(),
                    "effect": crate::sandbox::describe(&settings.sandbox),
                },
                "providers": settings.providers.iter().map(|p| p.name.clone()).collect::<Vec<_>>(),
                "workspaceSettings": settings.workspace_settings.as_ref().map(|w| json!({
                    "file": w.file.display().to_string(),
                    "keys": w.keys(),
                    "settings": w.lines(),
                    "used": state.allows(),
                })),
                "hooks": hooks,
                "problems": problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "notes": settings.notes,
            }))?
        )?;
        return Ok(EXIT_OK);
    }
    let o = &mut *ctx.out;
    writeln!(o, "Config files (later ones win):")?;
    let [autoagent, _] = config::workspace_files(&ctx.workspace);
    for f in &files {
        let what = match (f.is_file(), *f == autoagent) {
            (false, _) => "(none)",
            (true, true) => "(AutoAgent's: only its hooks are read)",
            (true, false) => "",
        };
        writeln!(o, "  {} {what}", f.display())?;
    }
    writeln!(o)?;
    writeln!(o, "Settings:")?;
    writeln!(
        o,
        "  approvalTimeoutSeconds  {}",
        settings.approval_timeout.as_secs_f64()
    )?;
    writeln!(o, "  maxReminders            {}", settings.max_reminders)?;
    writeln!(
        o,
        "  countdownSeconds        {}",
        settings.countdown_seconds
    )?;
    writeln!(
        o,
        "  bashTimeoutSeconds      {}",
        settings.bash_timeout.as_secs_f64()
    )?;
    writeln!(o, "  maxIterations           {}", settings.max_iterations)?;
    writeln!(o, "  maxFailures             {}", settings.max_failures)?;
    writeln!(
        o,
        "  sandbox                 {}",
        crate::sandbox::describe(&settings.sandbox)
    )?;
    if !settings.providers.is_empty() {
        let names: Vec<&str> = settings.providers.iter().map(|p| p.name.as_str()).collect();
        writeln!(o, "  providers               {}", names.join(", "))?;
    }
    writeln!(o)?;
    if let Some(w) = &settings.workspace_settings {
        writeln!(
            o,
            "Settings of {} that need trust ({standing}):",
            w.file.display()
        )?;
        for l in w.lines() {
            writeln!(o, "  {l}")?;
        }
        writeln!(o)?;
    }
    if settings.hooks.is_empty() {
        writeln!(
            o,
            "Hooks: none (`rawko config set-auto-commit true` adds a git commit after each task)"
        )?;
    } else {
        writeln!(o, "Hooks, in the order they run:")?;
        for h in &in_order {
            let from = match h.source {
                HookSource::User => "user".to_owned(),
                HookSource::Workspace => match state {
                    Trust::Trusted => "workspace".to_owned(),
                    Trust::Changed => {
                        "workspace, changed since trusted: does not run (`rawko trust`)".to_owned()
                    }
                    _ => "workspace, not trusted: does not run (`rawko trust`)".to_owned(),
                },
            };
            writeln!(o, "  {}  ({from})", h.describe())?;
        }
    }
    if let Some(w) = settings
        .workspace_settings
        .as_ref()
        .filter(|_| !state.allows())
    {
        writeln!(
            ctx.err,
            "note: {}: {} (`rawko trust` trusts it)",
            w.not_used(),
            state.reason()
        )?;
    }
    for n in &settings.notes {
        writeln!(ctx.err, "note: {n}")?;
    }
    for p in &problems {
        writeln!(ctx.err, "warning: {p}")?;
    }
    Ok(if problems.is_empty() {
        EXIT_OK
    } else {
        EXIT_PROBLEMS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_follow_autoagent() {
        let mut hooks = Map::new();
        assert_eq!(
            apply_edit(&mut hooks, &ConfigEdit::AutoPush(true)),
            "added a git-push hook to PostExecutionEnd"
        );
        apply_edit(&mut hooks, &ConfigEdit::AutoCommit(true));
        let list = hooks["PostExecutionEnd"].as_array().unwrap();
        assert!(is_type(&list[0], "git-commit") && is_type(&list[1], "git-push"));
        assert!(apply_edit(&mut hooks, &ConfigEdit::AutoCommit(true)).contains("already"));
        apply_edit(&mut hooks, &ConfigEdit::GitNoVerify(true));
        assert_eq!(hooks["PostExecutionEnd"][0]["noVerify"], json!(true));
        apply_edit(&mut hooks, &ConfigEdit::PushRemote("upstream".into()));
        assert_eq!(hooks["PostExecutionEnd"][1]["remote"], json!("upstream"));
        apply_edit(&mut hooks, &ConfigEdit::AutoCommit(false));
        apply_edit(&mut hooks, &ConfigEdit::AutoPush(false));
        assert!(hooks.is_empty(), "{hooks:?}");
        assert_eq!(parse_bool("TRUE"), Ok(true));
        assert!(parse_bool("yes").is_err());
    }
}
