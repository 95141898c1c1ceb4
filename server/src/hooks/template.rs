//! `{{var}}` in hook commands and commit messages. In a command every value is shell-quoted, so a
//! task named `$(touch /tmp/pwned)` stays inert text; in a commit message it is put in as it is.
//! Unknown variables stay as written.

use std::collections::BTreeMap;

/// A variable's value: one string, or a list (joined with spaces, each item quoted on its own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateValue {
    One(String),
    List(Vec<String>),
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

/// Replaces `{{name}}` (letters, digits and `_`) with the variable's value.
pub fn render(template: &str, vars: &Vars, quote: bool) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find("}}");
        let name = end
            .map(|e| &after[..e])
            .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        match (name, end, name.and_then(|n| vars.get(n))) {
            (Some(_), Some(e), Some(value)) => {
                out.push_str(&match value {
                    TemplateValue::One(s) if quote => shell_quote(s),
                    TemplateValue::One(s) => s.clone(),
                    TemplateValue::List(items) if quote => items
                        .iter()
                        .map(|i| shell_quote(i))
                        .collect::<Vec<_>>()
                        .join(" "),
                    TemplateValue::List(items) => items.join(" "),
                });
                rest = &after[e + 2..];
            }
            _ => {
                // Not a known variable: keep the braces and go on after them.
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vars {
        let mut v = Vars::new();
        v.insert("taskDescription", "$(touch /tmp/pwned) it's".into());
        v.insert("taskId", "task-1".into());
        v.insert(
            "filesModified",
            TemplateValue::List(vec!["a b.txt".into(), "c.rs".into()]),
        );
        v
    }

    #[test]
    fn values_are_quoted_in_commands() {
        assert_eq!(
            render("echo {{taskDescription}} {{taskId}}", &vars(), true),
            r#"echo '$(touch /tmp/pwned) it'\''s' task-1"#
        );
        assert_eq!(
            render("ls {{filesModified}}", &vars(), true),
            "ls 'a b.txt' c.rs"
        );
        assert_eq!(render("x{{taskId}}y", &vars(), false), "xtask-1y");
    }

    #[test]
    fn unknown_and_broken_placeholders_stay() {
        assert_eq!(
            render("{{nope}} {{ taskId }} {{taskId", &vars(), true),
            "{{nope}} {{ taskId }} {{taskId"
        );
        assert_eq!(render("{{{{taskId}}", &vars(), true), "{{task-1");
        assert_eq!(shell_quote(""), "''");
    }
}
