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

/// The placeholder `{{name}}` of a known variable at byte `at` of `s`: its name and length.
fn placeholder<'v>(s: &str, at: usize, vars: &'v Vars) -> Option<(&'v str, usize)> {
    let rest = s.get(at..)?.strip_prefix("{{")?;
    let end = rest.find("}}")?;
    let name = &rest[..end];
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let (key, _) = vars.get_key_value(name)?;
    Some((key, end + 4))
}

/// Where the scanner is: the innermost construct around the current position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    /// The command itself: a shell script (`parens` counts open subshell parentheses).
    Script { parens: u32 },
    /// `$( … )`: a script, ended by the `)` that balances it.
    Subst { parens: u32 },
    /// `` `…` ``: a script, ended by the next unescaped backtick.
    Backtick,
    /// `'…'`.
    Single,
    /// `$'…'` (bash's ANSI-C quoting).
    AnsiC,
    /// `"…"`.
    Double,
    /// `${ … }`, in double quotes or not (`depth` counts nested braces).
    Param { depth: u32, quoted: bool },
    /// `$(( … ))` or `(( … ))`.
    Arith { parens: u32 },
    /// The body of a heredoc whose delimiter is unquoted (scanned on its own).
    Body,
}

/// A heredoc whose operator was read and whose body starts after the end of the line.
struct Pending {
    delimiter: Vec<u8>,
    strip_tabs: bool,
    quoted: bool,
    /// Where the delimiter word is in the output, to rewrite it.
    word: std::ops::Range<usize>,
}

struct Renderer<'v> {
    vars: &'v Vars,
    used: BTreeMap<&'v str, &'v TemplateValue>,
}

/// Bytes that end a word (and start a new one after them).
fn separates(b: u8) -> bool {
    matches!(
        b,
        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
    )
}

impl<'v> Renderer<'v> {
    /// `{{name}}` written for `frame`.
    fn reference(&mut self, name: &'v str, frame: Frame) -> Option<String> {
        let value = &self.vars[name];
        let var = env_name(name);
        let text = match frame {
            Frame::Script { .. }
            | Frame::Subst { .. }
            | Frame::Backtick
            | Frame::Param { quoted: false, .. } => match value {
                TemplateValue::One(_) => format!("\"${{{var}}}\""),
                TemplateValue::List(items) => (0..items.len())
                    .map(|i| format!("\"${{{}}}\"", item_env_name(name, i)))
                    .collect::<Vec<_>>()
                    .join(" "),
            },
            Frame::Double | Frame::Param { quoted: true, .. } | Frame::Body => {
                format!("${{{var}}}")
            }
            Frame::Single => format!("'\"${{{var}}}\"'"),
            Frame::AnsiC => format!("'\"${{{var}}}\"$'"),
            Frame::Arith { .. } => {
                let v = value.joined();
                let digits = v.strip_prefix('-').unwrap_or(&v);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                // A number needs no variable.
                return Some(v);
            }
        };
        self.used.insert(name, value);
        Some(text)
    }

    /// Renders `src`, which starts in `base` (a script, or a heredoc body).
    fn scan(&mut self, src: &str, base: Frame) -> String {
        let b = src.as_bytes();
        let mut out = String::with_capacity(src.len() + 32);
        let mut stack = vec![base];
        let mut pending: Vec<Pending> = Vec::new();
        let mut i = 0;
        // Copies `n` bytes of `src` from `i`, and the rest of a character they end inside.
        macro_rules! copy {
            ($n:expr) => {{
                let mut end = (i + $n).min(b.len());
                while !src.is_char_boundary(end) {
                    end += 1;
                }
                out.push_str(&src[i..end]);
                i = end;
            }};
        }
        while i < b.len() {
            let frame = *stack.last().expect("the base frame stays");
            let c = b[i];
            let next = b.get(i + 1).copied();
            // A placeholder, wherever it is (comments are skipped below).
            if c == b'{' {
                if let Some((name, len)) = placeholder(src, i, self.vars) {
                    match self.reference(name, frame) {
                        Some(text) => out.push_str(&text),
                        None => out.push_str(&src[i..i + len]),
                    }
                    i += len;
                    continue;
                }
            }
            match frame {
                Frame::Single => {
                    if c == b'\'' {
                        stack.pop();
                    }
                    copy!(1);
                }
                Frame::AnsiC => match c {
                    b'\\' => copy!(2),
                    b'\'' => {
                        stack.pop();
                        copy!(1);
                    }
                    _ => copy!(1),
                },
                Frame::Double | Frame::Body => match c {
                    b'\\'
                        if next.is_some_and(|n| {
                            matches!(n, b'$' | b'`' | b'\\' | b'\n')
                                || (n == b'"' && frame == Frame::Double)
                        }) =>
                    {
                        copy!(2)
                    }
                    b'"' if frame == Frame::Double => {
                        stack.pop();
                        copy!(1);
                    }
                    b'`' => {
                        stack.push(Frame::Backtick);
                        copy!(1);
                    }
                    b'$' => self.dollar(src, &mut i, &mut out, &mut stack, true),
                    _ => copy!(1),
                },
                Frame::Param { depth, quoted } => match c {
                    b'\\' => copy!(2),
                    b'}' if depth == 0 => {
                        stack.pop();
                        copy!(1);
                    }
                    b'}' | b'{' => {
                        let depth = if c == b'{' { depth + 1 } else { depth - 1 };
                        *stack.last_mut().expect("a frame") = Frame::Param { depth, quoted };
                        copy!(1);
                    }
                    b'\'' if !quoted => {
                        stack.push(Frame::Single);
                        copy!(1);
                    }
                    b'"' => {
                        stack.push(Frame::Double);
                        copy!(1);
                    }
                    b'`' => {
                        stack.push(Frame::Backtick);
                        copy!(1);
                    }
                    b'$' => self.dollar(src, &mut i, &mut out, &mut stack, quoted),
                    _ => copy!(1),
                },
                Frame::Arith { parens } => match c {
                    b'(' => {
                        *stack.last_mut().expect("a frame") = Frame::Arith { parens: parens + 1 };
                        copy!(1);
                    }
                    b')' if parens == 0 && next == Some(b')') => {
                        stack.pop();
                        copy!(2);
                    }
                    b')' => {
                        *stack.last_mut().expect("a frame") = Frame::Arith {
                            parens: parens.saturating_sub(1),
                        };
                        copy!(1);
                    }
                    b'`' => {
                        stack.push(Frame::Backtick);
                        copy!(1);
                    }
                    b'$' => self.dollar(src, &mut i, &mut out, &mut stack, true),
                    _ => copy!(1),
                },
                Frame::Script { .. } | Frame::Subst { .. } | Frame::Backtick => {
                    let word_start = out.as_bytes().last().is_none_or(|&l| separates(l));
                    match c {
                        b'\\' => copy!(2),
                        b'\'' => {
                            stack.push(Frame::Single);
                            copy!(1);
                        }
                        b'"' => {
                            stack.push(Frame::Double);
                            copy!(1);
                        }
                        b'`' if frame == Frame::Backtick => {
                            stack.pop();
                            copy!(1);
                        }
                        b'`' => {
                            stack.push(Frame::Backtick);
                            copy!(1);
                        }
                        b'$' => self.dollar(src, &mut i, &mut out, &mut stack, false),
                        b'#' if word_start => {
                            // A comment, to the end of the line (or of the backticks).
                            let end = b[i..]
                                .iter()
                                .position(|&x| {
                                    x == b'\n' || (x == b'`' && frame == Frame::Backtick)
                                })
                                .map_or(b.len(), |p| i + p);
                            copy!(end - i);
                        }
                        b'(' if word_start && next == Some(b'(') => {
                            stack.push(Frame::Arith { parens: 0 });
                            copy!(2);
                        }
                        b'(' | b')' => {
                            let top = stack.last_mut().expect("a frame");
                            match (*top, c) {
                                (Frame::Subst { parens: 0 }, b')') => {
                                    stack.pop();
                                }
                                (Frame::Subst { parens }, _) | (Frame::Script { parens }, _) => {
                                    let parens = if c == b'(' {
                                        parens + 1
                                    } else {
                                        parens.saturating_sub(1)
                                    };
                                    *top = if matches!(*top, Frame::Subst { .. }) {
                                        Frame::Subst { parens }
                                    } else {
                                        Frame::Script { parens }
                                    };
                                }
                                _ => {}
                            }
                            copy!(1);
                        }
                        b'<' if b[i..].starts_with(b"<<<") => copy!(3),
                        b'<' if next == Some(b'<') => {
                            let strip_tabs = b.get(i + 2) == Some(&b'-');
                            copy!(if strip_tabs { 3 } else { 2 });
                            while i < b.len() && matches!(b[i], b' ' | b'\t') {
                                copy!(1);
                            }
                            let start = out.len();
                            let (delimiter, quoted, len) = heredoc_word(&b[i..]);
                            copy!(len);
                            if !delimiter.is_empty() {
                                pending.push(Pending {
                                    delimiter,
                                    strip_tabs,
                                    quoted,
                                    word: start..out.len(),
                                });
                            }
                        }
                        b'\n' if !pending.is_empty() => {
                            copy!(1);
                            let mut rewrites = Vec::new();
                            for doc in std::mem::take(&mut pending) {
                                let (body, terminator) = heredoc_body(&b[i..], &doc);
                                let body_text = &src[i..i + body];
                                let term_text = &src[i + body..i + body + terminator];
                                i += body + terminator;
                                if !doc.quoted {
                                    let rendered = self.scan(body_text, Frame::Body);
                                    out.push_str(&rendered);
                                    out.push_str(term_text);
                                } else if let Some((text, delimiter)) =
                                    self.quoted_body(body_text, &doc)
                                {
                                    out.push_str(&text);
                                    if !term_text.is_empty() {
                                        let tabs = term_text.len()
                                            - term_text.trim_start_matches('\t').len();
                                        out.push_str(&term_text[..tabs]);
                                        out.push_str(&delimiter);
                                        if term_text.ends_with('\n') {
                                            out.push('\n');
                                        }
                                    }
                                    rewrites.push((doc.word.clone(), delimiter));
                                } else {
                                    out.push_str(body_text);
                                    out.push_str(term_text);
                                }
                            }
                            // The delimiter words come before the bodies: rewrite from the last.
                            for (range, delimiter) in rewrites.into_iter().rev() {
                                out.replace_range(range, &delimiter);
                            }
                        }
                        _ => copy!(1),
                    }
                }
            }
        }
        out
    }

    /// `$` in a script (`quoted` false) or in double quotes, a `${…}` or an arithmetic: starts a
    /// substitution, or is a plain `$`.
    fn dollar(
        &mut self,
        src: &str,
        i: &mut usize,
        out: &mut String,
        stack: &mut Vec<Frame>,
        quoted: bool,
    ) {
        let b = src.as_bytes();
        let rest = &b[*i..];
        let (frame, len) = if rest.starts_with(b"$((") {
            (Some(Frame::Arith { parens: 0 }), 3)
        } else if rest.starts_with(b"$(") {
            (Some(Frame::Subst { parens: 0 }), 2)
        } else if rest.starts_with(b"${") {
            (Some(Frame::Param { depth: 0, quoted }), 2)
        } else if rest.starts_with(b"$'") && !quoted {
            (Some(Frame::AnsiC), 2)
        } else if rest.starts_with(b"$\"") && !quoted {
            (Some(Frame::Double), 2)
        } else {
            (None, 1)
        };
        if let Some(f) = frame {
            stack.push(f);
        }
        out.push_str(&src[*i..*i + len]);
        *i += len;
    }

    /// A quoted heredoc's body with placeholders: the body rewritten for an unquoted delimiter
    /// (`\`, `$` and `` ` `` escaped, placeholders as `${RAWKO_VAR_…}`) and that delimiter. None
    /// when the body has no placeholder of a known variable (it stays as it is).
    fn quoted_body(&mut self, body: &str, doc: &Pending) -> Option<(String, String)> {
        let b = body.as_bytes();
        if !(0..b.len()).any(|i| b[i] == b'{' && placeholder(body, i, self.vars).is_some()) {
            return None;
        }
        let mut text = String::with_capacity(body.len() + 32);
        let mut i = 0;
        while i < b.len() {
            if let Some((name, len)) = placeholder(body, i, self.vars) {
                let r = self.reference(name, Frame::Body).expect("a body reference");
                text.push_str(&r);
                i += len;
                continue;
            }
            let c = body[i..].chars().next().expect("a char");
            if matches!(c, '\\' | '$' | '`') {
                text.push('\\');
            }
            text.push(c);
            i += c.len_utf8();
        }
        // A delimiter no line of the new body can be mistaken for.
        let lines: Vec<&str> = text
            .split('\n')
            .map(|l| {
                if doc.strip_tabs {
                    l.trim_start_matches('\t')
                } else {
                    l
                }
            })
            .collect();
        let mut delimiter = "RAWKO_EOF".to_owned();
        let mut n = 0;
        while lines.contains(&delimiter.as_str()) {
            n += 1;
            delimiter = format!("RAWKO_EOF_{n}");
        }
        Some((text, delimiter))
    }
}

/// A heredoc's delimiter word at the start of `b`: its text with quotes removed, whether any
/// part was quoted (then the body is not expanded), and its length.
fn heredoc_word(b: &[u8]) -> (Vec<u8>, bool, usize) {
    let mut text = Vec::new();
    let mut quoted = false;
    let mut i = 0;
    while i < b.len() && !separates(b[i]) {
        match b[i] {
            b'\'' => {
                quoted = true;
                let end = b[i + 1..]
                    .iter()
                    .position(|&x| x == b'\'')
                    .map_or(b.len(), |p| i + 1 + p);
                text.extend_from_slice(&b[i + 1..end]);
                i = (end + 1).min(b.len());
            }
            b'"' => {
                quoted = true;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\'
                        && i + 1 < b.len()
                        && matches!(b[i + 1], b'"' | b'\\' | b'$' | b'`')
                    {
                        i += 1;
                    }
                    text.push(b[i]);
                    i += 1;
                }
                i = (i + 1).min(b.len());
            }
            b'\\' => {
                quoted = true;
                if let Some(&x) = b.get(i + 1) {
                    text.push(x);
                }
                i = (i + 2).min(b.len());
            }
            x => {
                text.push(x);
                i += 1;
            }
        }
    }
    (text, quoted, i)
}

/// A heredoc's body at the start of `b` (the line after its operator): the length of the body
/// and of the line that ends it (0 when the text ends first).
fn heredoc_body(b: &[u8], doc: &Pending) -> (usize, usize) {
    let mut at = 0;
    while at < b.len() {
        let end = b[at..]
            .iter()
            .position(|&x| x == b'\n')
            .map_or(b.len(), |p| at + p);
        let mut line = &b[at..end];
        if doc.strip_tabs {
            while let [b'\t', rest @ ..] = line {
                line = rest;
            }
        }
        if line == doc.delimiter.as_slice() {
            return (at, (end + 1).min(b.len()) - at);
        }
        at = end + 1;
    }
    (b.len(), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vars {
        let mut v = Vars::new();
        v.insert("taskDescription", "$(touch /tmp/pwned) it's".into());
        v.insert("taskId", "task-1".into());
        v.insert("duration", "1500".into());
        v.insert(
            "filesModified",
            TemplateValue::List(vec!["a b.txt".into(), "c.rs".into()]),
        );
        v
    }

    fn text(t: &str) -> String {
        render_command(t, &vars()).text
    }

    #[test]
    fn each_context_gets_its_reference() {
        assert_eq!(
            text("echo {{taskDescription}} {{taskId}}"),
            r#"echo "${RAWKO_VAR_taskDescription}" "${RAWKO_VAR_taskId}""#
        );
        assert_eq!(
            text("echo 'a {{taskId}} b'"),
            r#"echo 'a '"${RAWKO_VAR_taskId}"' b'"#
        );
        assert_eq!(
            text(r#"echo "a {{taskId}} b""#),
            r#"echo "a ${RAWKO_VAR_taskId} b""#
        );
        assert_eq!(
            text("ls {{filesModified}}"),
            r#"ls "${RAWKO_VAR_filesModified_0}" "${RAWKO_VAR_filesModified_1}""#
        );
        assert_eq!(
            text("echo \"{{filesModified}}\""),
            r#"echo "${RAWKO_VAR_filesModified}""#
        );
        assert_eq!(
            text("echo $(( {{duration}} / 1000 )) $(( {{taskId}} ))"),
            "echo $(( 1500 / 1000 )) $(( {{taskId}} ))"
        );
        assert_eq!(text("true # it's {{taskId}}"), "true # it's {{taskId}}");
        assert_eq!(
            text("cat <<EOF\n$x {{taskId}}\nEOF\necho {{taskId}}"),
            "cat <<EOF\n$x ${RAWKO_VAR_taskId}\nEOF\necho \"${RAWKO_VAR_taskId}\""
        );
        assert_eq!(
            text("cat <<'EOF'\n$x \\ `{{taskId}}`\nEOF\n"),
            "cat <<RAWKO_EOF\n\\$x \\\\ \\`${RAWKO_VAR_taskId}\\`\nRAWKO_EOF\n"
        );
        assert_eq!(text("cat <<'EOF'\n$x\nEOF"), "cat <<'EOF'\n$x\nEOF");
    }

    #[test]
    fn only_the_used_values_go_into_the_environment() {
        let c = render_command("echo {{taskId}} \"{{filesModified}}\"", &vars());
        assert_eq!(
            c.env,
            vec![
                ("RAWKO_VAR_filesModified".into(), "a b.txt c.rs".into()),
                ("RAWKO_VAR_filesModified_0".into(), "a b.txt".into()),
                ("RAWKO_VAR_filesModified_1".into(), "c.rs".into()),
                ("RAWKO_VAR_taskId".into(), "task-1".into()),
            ]
        );
        assert_eq!(
            render_command("true", &vars()),
            ShellCommand {
                text: "true".into(),
                env: vec![]
            }
        );
    }

    /// Values that broke (or ran) hooks when they were pasted into the command as text.
    const NASTY: &[&str] = &[
        "it's",
        "say \"hi\" and 'bye'",
        "$(touch marker-subst)",
        "`touch marker-backtick`",
        "back\\slash \\n \\\\ \\",
        "paren ( unbalanced )) (",
        "semi; touch marker-semi & | > x",
        "multi\nline\nEOF\nRAWKO_EOF\n'EOF'\n\tEOF",
        "EOF",
        "non-ASCII: é ü 日本 🎉",
        "${HOME} $HOME $$ $1 ${x:-y}",
        "-n",
        "",
        "* ? [a]",
        "a  b\tc   ",
        "}} {{taskId}} {{taskDescription}}",
        "#not a comment",
    ];

    /// A shell to run the rendered commands with: `sh` (dash on Debian) and bash, when present.
    fn shells() -> Vec<&'static str> {
        ["/bin/sh", "/bin/bash", "/usr/bin/bash"]
            .into_iter()
            .filter(|s| std::path::Path::new(s).exists())
            .collect()
    }

    /// Runs `template` rendered with `value` as `{{taskDescription}}` (and a number as
    /// `{{duration}}`) in `shell`; returns stdout and whether a marker file appeared.
    fn run(shell: &str, template: &str, vars: &Vars) -> (Vec<u8>, String, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let c = render_command(template, vars);
        let out = std::process::Command::new(shell)
            .arg("-c")
            .arg(&c.text)
            .envs(c.env.iter().map(|(k, v)| (k, v)))
            .current_dir(dir.path())
            .output()
            .unwrap();
        let left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        (
            out.stdout,
            format!(
                "{shell} -c {:?}: exit {:?}, stderr {}",
                c.text,
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            ),
            left,
        )
    }

    /// Every quoting context × every nasty value, run by the real shells: the output is the value
    /// byte for byte, and nothing in the value ran.
    #[test]
    fn every_context_passes_every_value_exactly_and_runs_none() {
        type Expect = fn(&str) -> String;
        let contexts: &[(&str, Expect, bool)] = &[
            // (template, what it prints for the value, whether only bash runs it)
            ("printf '%s|' {{taskDescription}}", |v| format!("{v}|"), false),
            ("printf '%s|' 'a {{taskDescription}} b'", |v| format!("a {v} b|"), false),
            ("printf '%s|' 'about '{{taskDescription}}", |v| format!("about {v}|"), false),
            ("printf '%s|' \"a {{taskDescription}} b\"", |v| format!("a {v} b|"), false),
            ("printf '%s|' \"it's {{taskDescription}}\" 'say \"{{taskDescription}}\"'", |v| format!("it's {v}|say \"{v}\"|"), false),
            ("cat <<EOF\na {{taskDescription}} b\nEOF", |v| format!("a {v} b\n"), false),
            ("cat <<EOF; printf '%s|' {{taskDescription}}\n{{taskDescription}}\nEOF\nprintf '%s|' '{{taskDescription}}'", |v| format!("{v}\n{v}|{v}|"), false),
            ("cat <<'EOF'\na {{taskDescription}} $HOME \\ `x` $(y) \\\nEOF", |v| format!("a {v} $HOME \\ `x` $(y) \\\n"), false),
            ("cat <<\"EOF\"\n'{{taskDescription}}'\nEOF\nprintf '%s|' {{taskDescription}}", |v| format!("'{v}'\n{v}|"), false),
            ("cat <<\\EOF\n{{taskDescription}}\nEOF", |v| format!("{v}\n"), false),
            ("cat <<-'EOF'\n\t{{taskDescription}}\n\tEOF", |v| format!("{}\n", v.trim_start_matches('\t')), false),
            ("cat <<A <<'B'\n{{taskDescription}}\nA\n$x {{taskDescription}}\nB", |v| format!("$x {v}\n"), false),
            ("printf '%s|' \"$(printf '%s' {{taskDescription}})\"", |v| format!("{v}|"), false),
            ("printf '%s|' \"x$(printf '%s' \"{{taskDescription}}\")y\"", |v| format!("x{v}y|"), false),
            ("printf '%s|' \"$(printf '%s' '{{taskDescription}}')\"", |v| format!("{v}|"), false),
            ("printf '%s|' \"`printf '%s' {{taskDescription}}`\"", |v| format!("{v}|"), false),
            ("x=`printf '%s' \"{{taskDescription}}\"`; printf '%s|' \"$x\"", |v| format!("{v}|"), false),
            ("printf '%s|' \"${nothing:-{{taskDescription}}}\"", |v| format!("{v}|"), false),
            ("printf '%s|' ${nothing:-{{taskDescription}}}", |v| format!("{v}|"), false),
            ("printf '%s|' x # {{taskDescription}} it's", |_| "x|".to_owned(), false),
            ("(printf '%s|' {{taskDescription}}); printf '%s|' \"$(( {{duration}} + 1 ))\"", |v| format!("{v}|1501|"), false),
            ("printf '%s|' $'tab\\t{{taskDescription}}'", |v| format!("tab\t{v}|"), true),
            ("(( {{duration}} > 1000 )) && printf '%s|' big", |_| "big|".to_owned(), true),
        ];
        let shells = shells();
        assert!(!shells.is_empty(), "no shell to test with");
        let mut failures = Vec::new();
        for shell in &shells {
            let bash = shell.ends_with("bash");
            for (template, expect, bash_only) in contexts {
                if *bash_only && !bash {
                    continue;
                }
                for value in NASTY {
                    let mut v = vars();
                    v.insert("taskDescription", (*value).into());
                    let (stdout, how, left) = run(shell, template, &v);
                    if stdout != expect(value).into_bytes() {
                        failures.push(format!(
                            "{template:?} with {value:?}: printed {:?}, wanted {:?}\n  {how}",
                            String::from_utf8_lossy(&stdout),
                            expect(value)
                        ));
                    }
                    if !left.is_empty() {
                        failures.push(format!(
                            "{template:?} with {value:?} ran something: {left:?}\n  {how}"
                        ));
                    }
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// A list is one word per item unquoted and one string inside quotes; a value in
    /// arithmetic is put in only when it is a number.
    #[test]
    fn lists_and_arithmetic_in_the_shells() {
        for shell in shells() {
            let mut v = vars();
            v.insert(
                "filesModified",
                TemplateValue::List(vec![
                    "a b.txt".into(),
                    "$(touch marker)".into(),
                    "it's".into(),
                    "*".into(),
                ]),
            );
            let (out, how, left) = run(shell, "printf '<%s>' {{filesModified}}", &v);
            assert_eq!(
                String::from_utf8_lossy(&out),
                "<a b.txt><$(touch marker)><it's><*>",
                "{how}"
            );
            let (out, how, _) = run(
                shell,
                "printf '<%s>' \"{{filesModified}}\" '{{filesModified}}'",
                &v,
            );
            assert_eq!(
                String::from_utf8_lossy(&out),
                "<a b.txt $(touch marker) it's *><a b.txt $(touch marker) it's *>",
                "{how}"
            );
            v.insert("filesModified", TemplateValue::List(vec![]));
            let (out, how, _) = run(shell, "printf '<%s>' x {{filesModified}}", &v);
            assert_eq!(String::from_utf8_lossy(&out), "<x>", "{how}");
            assert!(left.is_empty(), "{left:?}");
            // Not a number: the placeholder stays, the arithmetic fails, nothing runs.
            v.insert("duration", "a[$(touch marker)]".into());
            let (out, how, left) = run(shell, "echo $(( {{duration}} + 1 ))", &v);
            assert!(out.is_empty() && left.is_empty(), "{how} {left:?}");
        }
    }

    /// Whatever the command (it is the user's config), rendering never panics, and the text of a
    /// value never appears in it.
    #[test]
    fn any_command_renders() {
        const PIECES: [&str; 30] = [
            "{{taskDescription}}",
            "{{taskId}}",
            "{{filesModified}}",
            "{{duration}}",
            "{{",
            "}}",
            "'",
            "\"",
            "$'",
            "$(",
            "$((",
            "${",
            "`",
            "(",
            ")",
            "}",
            "{",
            "\\",
            "\n",
            "<<",
            "<<-",
            "<<'E'",
            "E",
            "#",
            " ",
            ";",
            "é",
            "日本",
            "\t",
            "$",
        ];
        let mut v = vars();
        v.insert("taskDescription", "VALUE-TEXT".into());
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..20_000 {
            let mut t = String::new();
            for _ in 0..(seed % 12) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                t.push_str(PIECES[(seed % PIECES.len() as u64) as usize]);
            }
            seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let c = render_command(&t, &v);
            assert!(!c.text.contains("VALUE-TEXT"), "{t:?} → {:?}", c.text);
        }
    }

    #[test]
    fn text_is_put_in_as_it_is() {
        assert_eq!(
            render_text("x{{taskId}}y {{filesModified}} {{nope}}", &vars()),
            "xtask-1y a b.txt c.rs {{nope}}"
        );
    }

    #[test]
    fn unknown_and_broken_placeholders_stay() {
        assert_eq!(
            text("{{nope}} {{ taskId }} {{taskId"),
            "{{nope}} {{ taskId }} {{taskId"
        );
        assert_eq!(text("{{{{taskId}}"), "{{\"${RAWKO_VAR_taskId}\"");
        assert_eq!(text("é{{taskId}}ü"), "é\"${RAWKO_VAR_taskId}\"ü");
        assert_eq!(shell_quote(""), "''");
    }
}
