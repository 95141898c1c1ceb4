//! `{{var}}` in hook commands and commit messages.
//!
//! In a **command**, no value ever becomes shell text. Each value the command uses is passed to
//! the hook's shell in an environment variable, `RAWKO_VAR_<name>` (a list's items also in
//! `RAWKO_VAR_<name>_0`, `_1`, …), and `{{name}}` is replaced by a reference to that variable,
//! written for the quoting context the placeholder stands in. [`render_command`] scans the
//! template as a shell would (quotes, `$( … )`, backticks, `${ … }`, comments, heredocs) to find
//! that context:
//!
//! | where `{{name}}` stands | what it becomes |
//! |---|---|
//! | unquoted (also inside `$( … )`, backticks, `${x:-…}`) | `"${RAWKO_VAR_name}"`: one word; a list, one word per item |
//! | inside `'…'` | `'"${RAWKO_VAR_name}"'`: the quote is closed, the value put in, the quote reopened |
//! | inside `$'…'` | `'"${RAWKO_VAR_name}"$'` |
//! | inside `"…"`, or in the body of a heredoc whose delimiter is unquoted (`<<EOF`) | `${RAWKO_VAR_name}` |
//! | in the body of a heredoc whose delimiter is quoted (`<<'EOF'`, `<<"EOF"`, `<<\EOF`) | the heredoc is rewritten with a fresh unquoted delimiter, every `\`, `$` and `` ` `` of its body escaped so the body stays literal, and `${RAWKO_VAR_name}` in place of the placeholder |
//! | inside `$(( … ))` or `(( … ))` | the value itself when it is a whole number, else the placeholder stays as written (an arithmetic error): bash evaluates the text of a variable in arithmetic, so a reference would not be inert there |
//! | in a comment | left as written |
//!
//! A shell never evaluates the result of a parameter expansion again, so whatever a value holds
//! (`'`, `"`, `$( … )`, backticks, `\`, newlines, a line that looks like a heredoc's delimiter) is
//! passed as it is. Even where the scan misjudged a context, the command holds only a variable's
//! name, never its value: at worst the hook prints a reference wrongly, it cannot run the value.
//!
//! A value given to another interpreter inside a string (`sh -c '…{{x}}…'`, `python3 -c '…'`)
//! is that interpreter's input, as it would be if typed there; such a program should read
//! `$RAWKO_VAR_x` from its environment instead.
//!
//! In a **commit message** (no shell involved) values are put in as they are. Unknown variables
//! stay as written everywhere.

use std::collections::BTreeMap;

mod render;
use render::*;

/// A variable's value: one string, or a list (one word per item where a command uses it
/// unquoted, joined with spaces elsewhere).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateValue {
    One(String),
    List(Vec<String>),
}

impl TemplateValue {
    /// The value as one string: a list's items joined with spaces.
    pub fn joined(&self) -> String {
        match self {
            Self::One(s) => s.clone(),
            Self::List(items) => items.join(" "),
        }
    }
}

impl From<String> for TemplateValue {
    fn from(s: String) -> Self {
        Self::One(s)
    }
}

impl From<&str> for TemplateValue {
    fn from(s: &str) -> Self {
        Self::One(s.to_owned())
    }
}

pub type Vars = BTreeMap<&'static str, TemplateValue>;

/// Quotes `s` for a POSIX shell: `'…'`, with each `'` written as `'\''`.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '_' | '-' | '.' | '/' | ':' | '@' | '+' | '=' | ',')
        })
    {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The environment variable that carries `{{name}}`'s value (a list's items joined with spaces).
pub fn env_name(name: &str) -> String {
    format!("RAWKO_VAR_{name}")
}

/// The environment variable that carries item `i` of the list `{{name}}`.
pub fn item_env_name(name: &str, i: usize) -> String {
    format!("RAWKO_VAR_{name}_{i}")
}

/// A command with its placeholders replaced, and the environment its shell needs for them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShellCommand {
    pub text: String,
    pub env: Vec<(String, String)>,
}

/// Replaces `{{name}}` (letters, digits and `_`) in a commit message or other plain text with
/// the variable's value, as it is.
pub fn render_text(template: &str, vars: &Vars) -> String {
    let mut out = String::with_capacity(template.len());
    let mut i = 0;
    while i < template.len() {
        if let Some((name, len)) = placeholder(template, i, vars) {
            out.push_str(&vars[name].joined());
            i += len;
        } else {
            let c = template[i..].chars().next().expect("a char");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Replaces `{{name}}` in a shell command by a reference to an environment variable that holds
/// the value, written for the quoting context the placeholder stands in (see the module's
/// documentation). The environment holds the variables the command refers to.
pub fn render_command(template: &str, vars: &Vars) -> ShellCommand {
    let mut r = Renderer {
        vars,
        used: BTreeMap::new(),
    };
    let text = r.scan(template, Frame::Script { parens: 0 });
    let mut env = Vec::new();
    for (name, value) in r.used {
        // A shell variable cannot hold NUL.
        let clean = |s: &str| s.replace('\0', "");
        env.push((env_name(name), clean(&value.joined())));
        if let TemplateValue::List(items) = value {
            for (i, item) in items.iter().enumerate() {
                env.push((item_env_name(name, i), clean(item)));
            }
        }
    }
    ShellCommand { text, env }
}

#[cfg(test)]
mod tests;
