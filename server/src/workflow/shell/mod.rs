//! Shell-command classification for the phase gate: does a Bash command write files?
//!
//! Pure: it reads the command text and nothing else. The command is split the way a shell splits
//! it — `;`, `&&`, `||`, `|`, `&`, newlines, subshells in parentheses, `$( … )`, backticks and
//! process substitutions, with quotes respected and heredoc bodies skipped — and every simple
//! command is judged on its own: its output redirections, its command name (seen through
//! `VAR=x`, `sudo`, `env`, `command`, `exec`, `time`, `nice`, `xargs` and friends) and the
//! arguments that make a command write (`sed -i`, `git commit`, `npm install`, `curl -o`, …).
//! Strings run by `sh -c`, `bash -c`, `eval` and heredocs fed to a shell are classified in turn;
//! inline code for other interpreters (`python -c`, `node -e`, `perl -e`, …) counts as writing,
//! since rawko cannot see what it does.
//!
//! The classifier errs towards `Writes` where it cannot see (a computed command name, a shell
//! reading commands from a pipe); builds and test runs (`cargo test`, `npm test`, `pytest`) count
//! as read-only even though they write build artefacts.

mod commands;
mod interpreters;
mod parser;
mod tables;
use commands::*;
use interpreters::*;
use parser::*;
use tables::*;

/// What a shell command does to files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellEffect {
    ReadOnly,
    /// It writes, removes or changes files (or the repository, or installed packages); `why` says
    /// how in a few words, e.g. `sed -i edits in place`.
    Writes {
        why: String,
    },
}

impl ShellEffect {
    pub fn writes(&self) -> bool {
        matches!(self, ShellEffect::Writes { .. })
    }

    /// The reason, for a writing command.
    pub fn why(&self) -> Option<&str> {
        match self {
            ShellEffect::ReadOnly => None,
            ShellEffect::Writes { why } => Some(why),
        }
    }
}

fn writes(why: impl Into<String>) -> ShellEffect {
    ShellEffect::Writes { why: why.into() }
}

/// One simple command of a command line, with its own effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The command as written, trimmed: `rm -rf x` out of `ls && rm -rf x`. Commands found inside
    /// a string run by `sh -c` or `eval` are as written inside that string.
    pub text: String,
    /// The effect of this command alone; a wrapper such as `sh -c '…'` is read-only itself and its
    /// inner commands are listed separately.
    pub effect: ShellEffect,
}

/// Classifies a whole command line: `Writes` (with the first writing part's reason) when any part
/// of it writes.
pub fn classify(command: &str) -> ShellEffect {
    let mut out = Vec::new();
    classify_into(command, 0, &mut out);
    out.into_iter()
        .map(|c| c.effect)
        .find(ShellEffect::writes)
        .unwrap_or(ShellEffect::ReadOnly)
}

/// Every simple command of a command line with its effect, in the order they were found
/// (commands inside a substitution or a nested shell come before the command that holds them).
pub fn commands(command: &str) -> Vec<SimpleCommand> {
    let mut out = Vec::new();
    classify_into(command, 0, &mut out);
    out
}

/// How deep `sh -c`, `eval` and friends may nest before the command counts as writing.
const MAX_SHELL_DEPTH: usize = 8;
/// How deep substitutions and subshells may nest before the command counts as writing.
const MAX_PARSE_DEPTH: usize = 64;

fn classify_into(command: &str, depth: usize, out: &mut Vec<SimpleCommand>) {
    let mut parser = Parser::new(command.as_bytes(), 0);
    parser.parse_list(false);
    let too_deep = parser.too_deep;
    for seg in parser.out {
        let effect = effect_of(&seg, depth, out);
        out.push(SimpleCommand {
            text: seg.text,
            effect,
        });
    }
    if too_deep {
        out.push(SimpleCommand {
            text: command.trim().to_owned(),
            effect: writes("the command nests too deeply to inspect"),
        });
    }
}

fn nested_shell(text: &str, depth: usize, out: &mut Vec<SimpleCommand>) -> ShellEffect {
    if depth >= MAX_SHELL_DEPTH {
        return writes("it nests shells too deeply to inspect");
    }
    classify_into(text, depth + 1, out);
    ShellEffect::ReadOnly
}

/// Targets that are not files: writing there changes nothing on disk.
fn is_device(target: &str) -> bool {
    matches!(
        target,
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty" | "-"
    ) || target
        .strip_prefix("/dev/fd/")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

// ── Judging ──

fn effect_of(seg: &Segment, depth: usize, out: &mut Vec<SimpleCommand>) -> ShellEffect {
    if let Some((op, target)) = seg.writes_to.first() {
        let verb = match *op {
            ">>" | "&>>" => "appends to",
            "<>" => "opens for writing",
            _ => "writes to",
        };
        return writes(format!("{op} {verb} {target}"));
    }
    let mut words = &seg.words[..];
    // Assignments and reserved words that only introduce the command.
    while let Some(w) = words.first() {
        if is_assignment(&w.text)
            || matches!(
                w.text.as_str(),
                "{" | "}"
                    | "!"
                    | "if"
                    | "then"
                    | "else"
                    | "elif"
                    | "fi"
                    | "do"
                    | "done"
                    | "while"
                    | "until"
                    | "esac"
                    | "coproc"
            )
        {
            words = &words[1..];
        } else {
            break;
        }
    }
    if words.is_empty() {
        return ShellEffect::ReadOnly;
    }
    classify_words(words, &seg.stdin, depth, out)
}

fn is_assignment(word: &str) -> bool {
    let Some(eq) = word.find('=') else {
        return false;
    };
    let name = word[..eq].strip_suffix('+').unwrap_or(&word[..eq]);
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The text of the words, joined by spaces.
fn joined(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn texts(words: &[Word]) -> impl Iterator<Item = &str> {
    words.iter().map(|w| w.text.as_str())
}

fn has(words: &[Word], flags: &[&str]) -> bool {
    texts(words).any(|t| flags.contains(&t))
}

fn has_prefix(words: &[Word], prefixes: &[&str]) -> bool {
    texts(words).any(|t| prefixes.iter().any(|p| t.starts_with(p)))
}

/// A short-option cluster (`-abc`, not `--long`) that holds `letter`.
fn cluster_has(words: &[Word], letters: &[char]) -> bool {
    texts(words).any(|t| {
        t.len() > 1
            && t.starts_with('-')
            && !t.starts_with("--")
            && t[1..].chars().any(|c| letters.contains(&c))
    })
}

/// The words that are not options (everything after `--` is an operand).
fn operands(words: &[Word]) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = false;
    for t in texts(words) {
        if rest {
            out.push(t);
        } else if t == "--" {
            rest = true;
        } else if !t.starts_with('-') || t == "-" {
            out.push(t);
        }
    }
    out
}

/// The index of the first operand, skipping options and the values of `with_value` options.
fn first_operand(words: &[Word], with_value: &[&str]) -> Option<usize> {
    let mut i = 0;
    while let Some(w) = words.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            return (i + 1 < words.len()).then_some(i + 1);
        }
        if !t.starts_with('-') || t == "-" {
            return Some(i);
        }
        i += if with_value.contains(&t) { 2 } else { 1 };
    }
    None
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

#[cfg(test)]
mod tests;
