//! How rawko reads a hook's result (a command's exit, stdout and stderr, or an http hook's
//! answer read the same way) into a [`Dispatch`]: AutoAgent's and Claude Code's JSON answers,
//! exit 2 as a block, timeouts and failures as notes.

use std::time::Duration;

use serde_json::Value;

use super::process::{self, Exit};
use super::{Dispatch, Hook, HookEvent, Invocation, Note};
use crate::clip::clip_bytes;

/// The fields of a JSON answer that rawko reads (AutoAgent's and Claude Code's).
const ANSWER_FIELDS: [&str; 8] = [
    "continue",
    "stopReason",
    "suppressOutput",
    "systemMessage",
    "decision",
    "reason",
    "feedback",
    "hookSpecificOutput",
];

/// Reads one command hook's result into the dispatch.
pub(super) fn interpret(
    inv: &Invocation,
    hook: &Hook,
    label: &str,
    r: &process::CommandResult,
    out: &mut Dispatch,
) {
    let event = inv.event;
    let stderr_line = |fallback: &str| {
        let t = r.stderr.trim();
        if t.is_empty() {
            fallback.to_owned()
        } else {
            clip_bytes(t, 2000).into_owned()
        }
    };
    let fail_closed = |out: &mut Dispatch, why: String| {
        out.blocked = Some(format!("{why}; the hook is failClosed, so this blocks"));
    };
    let stdout = r.stdout.trim_end();
    // JSON on stdout is read where the exit status lets it decide (0 and the ordinary errors).
    // An answer that looks like JSON but cannot be read (past the bound, or broken) is a hook
    // failure: it blocks under failClosed and is never taken as a silent allow.
    let looks_like_json = stdout.trim_start().starts_with('{');
    let parsed: Result<Option<Value>, String> = match &r.exit {
        Exit::Code(code) if *code != 2 && !matches!(code, 126 | 127 | 129..=192) => {
            if looks_like_json && r.stdout_cut > 0 {
                Err(format!(
                    "its answer is longer than {} MiB",
                    process::ANSWER_CAP / (1024 * 1024)
                ))
            } else if looks_like_json {
                serde_json::from_str::<Value>(stdout.trim())
                    .map(Some)
                    .map_err(|e| e.to_string())
            } else {
                Ok(None)
            }
        }
        _ => Ok(None),
    };
    // stdout is shown, except an answer in JSON that says nothing but what rawko acts on (`{}`,
    // `{"continue": true}`, a decision): what it does is shown where it happens. One with a field
    // rawko does not read is shown, so a misspelt field does not pass unnoticed.
    let answer_only = matches!(&parsed, Ok(Some(Value::Object(o))) if o.keys().all(|k| ANSWER_FIELDS.contains(&k.as_str())));
    if !stdout.trim().is_empty() && !answer_only {
        let shown = clip_bytes(stdout, 8000);
        let mut text = format!("{label}: {shown}");
        let kept = if shown.len() == stdout.len() {
            stdout.len()
        } else {
            shown.len() - '…'.len_utf8()
        };
        let hidden = stdout.len() - kept + r.stdout_cut;
        if hidden > 0 {
            text.push_str(&format!("\n[{hidden} more bytes of output not shown]"));
        }
        out.notes.push(Note::Output(text));
    }
    if r.left_running {
        out.notes.push(Note::Output(format!(
            "{label} left processes running when it exited; they were ended (what a hook starts ends with it)"
        )));
    }
    match &r.exit {
        Exit::SpawnFailed(why) => {
            let why = format!("{label} could not run: {why}");
            out.notes.push(Note::ConfigError {
                hook: hook.identity(),
                text: why.clone(),
            });
            if hook.fail_closed {
                fail_closed(out, why);
            }
            return;
        }
        Exit::Code(code @ (126 | 127)) => {
            let what = if *code == 127 {
                "command not found"
            } else {
                "not executable"
            };
            let why = format!(
                "{label} could not run ({what}, exit {code}): {}; check the hooks in your config",
                stderr_line(what)
            );
            out.notes.push(Note::ConfigError {
                hook: hook.identity(),
                text: why.clone(),
            });
            if hook.fail_closed {
                fail_closed(out, why);
            }
            return;
        }
        Exit::TimedOut => {
            let why = format!(
                "{label} timed out after {} and was stopped",
                secs(hook.timeout)
            );
            out.notes.push(Note::Error(why.clone()));
            if hook.fail_closed {
                fail_closed(out, why);
            }
            return;
        }
        Exit::Signal(sig) => {
            let why = format!("{label} crashed (killed by {sig})");
            out.notes.push(Note::Error(why.clone()));
            if hook.fail_closed {
                fail_closed(out, why);
            }
            return;
        }
        Exit::Code(2) => {
            let reason = stderr_line("Blocked by hook");
            // PostToolUse: as in Claude Code, stderr goes to the agent (with the tool's result).
            if event.can_block() || event == HookEvent::PostToolUse {
                out.blocked = Some(reason);
            } else {
                out.notes.push(Note::Error(format!(
                    "{label} exited with 2, but {} cannot be blocked: {reason}",
                    event.name()
                )));
            }
            return;
        }
        Exit::Code(0) => {}
        Exit::Code(code @ 129..=192) => {
            // The shell reports a command killed by a signal as 128 + the signal.
            let sig = nix::sys::signal::Signal::try_from(code - 128)
                .map(|s| s.as_str().to_owned())
                .unwrap_or_else(|_| format!("signal {}", code - 128));
            let why = format!("{label} crashed (killed by {sig}, exit {code})");
            out.notes.push(Note::Error(why.clone()));
            if hook.fail_closed {
                fail_closed(out, why);
            }
            return;
        }
        Exit::Code(code) => {
            out.notes.push(Note::Error(format!(
                "{label} failed (exit {code}): {}",
                stderr_line("no message")
            )));
        }
    }
    // JSON on stdout decides; plain text is context for the events that take it.
    let parsed = match parsed {
        Ok(v) => v,
        Err(e) => {
            let why = format!("{label} answered JSON that rawko cannot read ({e})");
            out.notes.push(Note::Error(why.clone()));
            if hook.fail_closed {
                fail_closed(out, why);
            }
            return;
        }
    };
    let Some(Value::Object(json)) = parsed else {
        if r.exit == Exit::Code(0)
            && matches!(event, HookEvent::SessionStart | HookEvent::UserPromptSubmit)
            && !stdout.trim().is_empty()
        {
            out.context.push(stdout.trim().to_owned());
        }
        return;
    };
    let text = |key: &str| json.get(key).and_then(Value::as_str).map(str::to_owned);
    if let Some(message) = text("systemMessage") {
        out.notes
            .push(Note::Output(format!("{label}: ⚠ {message}")));
    }
    if json.get("continue") == Some(&Value::Bool(false)) {
        out.halt = Some(text("stopReason").unwrap_or_else(|| format!("stopped by {label}")));
        return;
    }
    let reason = text("reason");
    match json.get("decision").and_then(Value::as_str) {
        Some("block") => {
            let mut why = reason
                .clone()
                .unwrap_or_else(|| "Blocked by hook".to_owned());
            if let Some(feedback) = text("feedback") {
                why.push_str("\n\n");
                why.push_str(&feedback);
            }
            if event.can_block() || event == HookEvent::PostToolUse {
                out.blocked = Some(why);
                return;
            }
            out.notes.push(Note::Error(format!(
                "{label} asked to block, but {} cannot be blocked: {why}",
                event.name()
            )));
        }
        Some("approve") => out.allowed = true,
        _ => {}
    }
    if let Some(specific) = json.get("hookSpecificOutput").and_then(Value::as_object) {
        let reason = specific
            .get("permissionDecisionReason")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if event == HookEvent::PreToolUse {
            match specific.get("permissionDecision").and_then(Value::as_str) {
                Some("deny") => {
                    out.blocked = Some(reason.unwrap_or_else(|| format!("denied by {label}")));
                    return;
                }
                Some("ask") | Some("defer") => {
                    out.ask = Some(reason.unwrap_or_else(|| format!("{label} asks you")))
                }
                Some("allow") => out.allowed = true,
                Some(other) => out.notes.push(Note::Error(format!(
                    "{label}: unknown permissionDecision \"{other}\" (allow, deny or ask); ignored"
                ))),
                None => {}
            }
            match specific.get("updatedInput") {
                Some(v @ Value::Object(_)) => out.updated_input = Some(v.clone()),
                None | Some(Value::Null) => {}
                Some(_) => out.notes.push(Note::Error(format!(
                    "{label}: updatedInput must be an object; ignored"
                ))),
            }
        }
        if let Some(context) = specific.get("additionalContext").and_then(Value::as_str) {
            if !context.trim().is_empty() {
                out.context.push(context.to_owned());
            }
        }
    }
}

pub(super) fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if (s - s.round()).abs() < 1e-9 {
        format!("{} s", s.round())
    } else {
        format!("{s:.1} s")
    }
}
