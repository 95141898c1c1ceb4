//! `CLAUDE_ENV_FILE`: Claude Code gives its SessionStart hooks a file to write `export NAME=value`
//! lines to, and the variables apply to the session's later Bash calls. rawko does the same for a
//! task, with one difference: Claude Code sources the files in the shell of every Bash call, rawko
//! **reads** them. Every Bash call of rawko's passes the phase's gate and, where asked, the user's
//! approval; a sourced file would run code at each call that neither ever saw. So rawko takes from
//! the files exactly the variables they assign, by the shell's quoting rules, and runs nothing.
//!
//! Understood, one statement per line (or separated by `;` or `&&`):
//!
//! - `export NAME=value …`, `declare -x NAME=value …` (bash's `export -p`), `typeset -x …`,
//!   `NAME=value …`; `export NAME` alone keeps what is set;
//! - `unset NAME …`;
//! - comments and blank lines.
//!
//! Values are shell words: unquoted, `'…'`, `"…"`, `$'…'`, backslash escapes, `$NAME` and
//! `${NAME}` (from what the file set before, then rawko's environment: `PATH="$PATH:./bin"`
//! works), and `~` at the start of a value or after a `:`. Anything else — a command, `$( … )`,
//! backticks, `${NAME:-…}`, a pipe — is reported and skipped, the rest of the file still read.

use crate::clip::clip_line;
use std::path::Path;

/// One change to the environment of the task's Bash calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvChange {
    Set(String, String),
    Unset(String),
}

/// What the files said: the changes in order, and what could not be read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    pub changes: Vec<EnvChange>,
    pub problems: Vec<String>,
}

impl Parsed {
    /// The value `name` has after the changes so far, else what `base` says.
    fn value(&self, name: &str, base: &dyn Fn(&str) -> Option<String>) -> Option<String> {
        for change in self.changes.iter().rev() {
            match change {
                EnvChange::Set(n, v) if n == name => return Some(v.clone()),
                EnvChange::Unset(n) if n == name => return None,
                _ => {}
            }
        }
        base(name)
    }

    /// The names set (and not unset again), in the order first set.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for change in &self.changes {
            match change {
                EnvChange::Set(n, _) => {
                    if !names.contains(&n.as_str()) {
                        names.push(n);
                    }
                }
                EnvChange::Unset(n) => names.retain(|x| x != n),
            }
        }
        names
    }
}

/// The files SessionStart hooks wrote in `dir` (`sessionstart-hook-<n>.sh`), read in the order of
/// the hooks. A missing directory is no change.
pub fn read_dir(dir: &Path, base: &dyn Fn(&str) -> Option<String>) -> Parsed {
    let mut files: Vec<(u64, std::path::PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let n = name
                .strip_prefix("sessionstart-hook-")?
                .strip_suffix(".sh")?
                .parse()
                .ok()?;
            Some((n, e.path()))
        })
        .collect();
    files.sort();
    let mut parsed = Parsed::default();
    for (_, file) in files {
        match std::fs::read(&file) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                parse_into(&text, &file.display().to_string(), base, &mut parsed);
            }
            Err(e) => parsed
                .problems
                .push(format!("{}: cannot read: {e}", file.display())),
        }
    }
    parsed
}

/// Reads one file's text (`source` names it in problems) into `parsed`.
pub fn parse_into(
    text: &str,
    source: &str,
    base: &dyn Fn(&str) -> Option<String>,
    parsed: &mut Parsed,
) {
    let mut lexer = Lexer {
        chars: text.chars().collect(),
        at: 0,
        line: 1,
    };
    while lexer.at < lexer.chars.len() {
        let line = lexer.line;
        let start = lexer.at;
        match lexer.statement(parsed, base) {
            Ok(words) => {
                if let Err(why) = apply(&words, parsed) {
                    parsed.problems.push(problem(
                        source,
                        line,
                        &lexer.chars[start..lexer.at],
                        &why,
                    ));
                }
            }
            Err(why) => {
                lexer.skip_statement();
                parsed
                    .problems
                    .push(problem(source, line, &lexer.chars[start..lexer.at], &why));
            }
        }
    }
}

fn problem(source: &str, line: usize, text: &[char], why: &str) -> String {
    let text: String = text.iter().collect();
    let shown = clip_line(text.trim(), 60);
    format!("{source}, line {line}: `{shown}` skipped: {why}")
}

/// A word of a statement: its value, and the assignment it is when it starts with `NAME=`.
#[derive(Debug)]
struct Word {
    text: String,
    assignment: Option<(String, String)>,
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What a statement does.
fn apply(words: &[Word], parsed: &mut Parsed) -> Result<(), String> {
    let Some(first) = words.first() else {
        return Ok(());
    };
    let assignments = |words: &[Word], parsed: &mut Parsed| -> Result<(), String> {
        for w in words {
            match &w.assignment {
                Some((name, value)) => parsed
                    .changes
                    .push(EnvChange::Set(name.clone(), value.clone())),
                // `export NAME`: whatever NAME holds is kept.
                None if is_name(&w.text) => {}
                None => return Err(format!("`{}` is not NAME=value", w.text)),
            }
        }
        Ok(())
    };
    if first.assignment.is_some() {
        if words.iter().all(|w| w.assignment.is_some()) {
            return assignments(words, parsed);
        }
        return Err("a command after an assignment is not run".to_owned());
    }
    let flags = |words: &[Word]| -> usize {
        words
            .iter()
            .take_while(|w| w.assignment.is_none() && w.text.starts_with('-'))
            .count()
    };
    match first.text.as_str() {
        "export" => {
            let rest = &words[1..];
            let n = flags(rest);
            if rest[..n].iter().any(|w| w.text != "--") {
                return Err("only `export NAME=value` is read".to_owned());
            }
            assignments(&rest[n..], parsed)
        }
        "declare" | "typeset" => {
            let rest = &words[1..];
            let n = flags(rest);
            if rest[..n]
                .iter()
                .any(|w| w.text.chars().skip(1).any(|c| !"xgr".contains(c)))
            {
                return Err("only `declare -x NAME=value` is read".to_owned());
            }
            assignments(&rest[n..], parsed)
        }
        "unset" => {
            let rest = &words[1..];
            let n = flags(rest);
            if rest[..n].iter().any(|w| w.text != "-v") {
                return Err("only `unset NAME` is read".to_owned());
            }
            for w in &rest[n..] {
                if !is_name(&w.text) {
                    return Err(format!("`{}` is not a variable name", w.text));
                }
                parsed.changes.push(EnvChange::Unset(w.text.clone()));
            }
            Ok(())
        }
        _ => Err(
            "rawko reads this file (it does not run it): only export, declare -x, unset and NAME=value lines count"
                .to_owned(),
        ),
    }
}

struct Lexer {
    chars: Vec<char>,
    at: usize,
    line: usize,
}

impl Lexer {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.chars.get(self.at).copied();
        if let Some(c) = c {
            self.at += 1;
            if c == '\n' {
                self.line += 1;
            }
        }
        c
    }

    /// Goes past the rest of a statement that could not be read: to the end of its line.
    fn skip_statement(&mut self) {
        while let Some(c) = self.next() {
            if c == '\n' {
                return;
            }
        }
    }

    /// The words of one statement, up to an unquoted newline, `;` or `&&` (consumed).
    fn statement(
        &mut self,
        parsed: &Parsed,
        base: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Vec<Word>, String> {
        let mut words = Vec::new();
        loop {
            while matches!(self.peek(), Some(' ' | '\t' | '\r')) {
                self.next();
            }
            match self.peek() {
                None => return Ok(words),
                Some('\n' | ';') => {
                    self.next();
                    return Ok(words);
                }
                Some('&') if self.chars.get(self.at + 1) == Some(&'&') => {
                    self.next();
                    self.next();
                    return Ok(words);
                }
                Some('#') => {
                    while !matches!(self.peek(), None | Some('\n')) {
                        self.next();
                    }
                }
                Some('\\') if self.chars.get(self.at + 1) == Some(&'\n') => {
                    self.next();
                    self.next();
                }
                Some(_) => words.push(self.word(parsed, base)?),
            }
        }
    }

    /// One word, expanded.
    fn word(
        &mut self,
        parsed: &Parsed,
        base: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Word, String> {
        // `NAME=` at the start (unquoted) makes it an assignment.
        let mut name_end = self.at;
        while self
            .chars
            .get(name_end)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
        {
            name_end += 1;
        }
        let name: String = self.chars[self.at..name_end].iter().collect();
        let assignment = self.chars.get(name_end) == Some(&'=') && is_name(&name);
        let mut text = String::new();
        if assignment {
            self.at = name_end + 1;
        }
        // Where `~` means the home directory: the start of an assignment's value, after a `:`.
        let mut tilde_ok = assignment;
        while let Some(c) = self.peek() {
            let tilde_here = tilde_ok;
            tilde_ok = false;
            match c {
                ' ' | '\t' | '\r' | '\n' | ';' => break,
                '&' if self.chars.get(self.at + 1) == Some(&'&') => break,
                '|' | '&' | '<' | '>' | '(' | ')' => {
                    return Err(format!("`{c}` is shell syntax, not a value"))
                }
                '`' => return Err("command substitution is not run".to_owned()),
                '\'' => {
                    self.next();
                    loop {
                        match self.next() {
                            None => return Err("a quote is not closed".to_owned()),
                            Some('\'') => break,
                            Some(c) => text.push(c),
                        }
                    }
                }
                '"' => {
                    self.next();
                    loop {
                        match self.next() {
                            None => return Err("a quote is not closed".to_owned()),
                            Some('"') => break,
                            Some('\\') => match self.peek() {
                                Some('\n') => {
                                    self.next();
                                }
                                Some(c @ ('$' | '`' | '"' | '\\')) => {
                                    self.next();
                                    text.push(c);
                                }
                                _ => text.push('\\'),
                            },
                            Some('`') => return Err("command substitution is not run".to_owned()),
                            Some('$') => self.dollar(&mut text, parsed, base, true)?,
                            Some(c) => text.push(c),
                        }
                    }
                }
                '\\' => {
                    self.next();
                    match self.next() {
                        Some('\n') | None => {}
                        Some(c) => text.push(c),
                    }
                }
                '$' => {
                    self.next();
                    if self.peek() == Some('\'') {
                        self.next();
                        self.ansi_c(&mut text)?;
                    } else {
                        self.dollar(&mut text, parsed, base, false)?;
                    }
                }
                '~' if tilde_here
                    && matches!(
                        self.chars.get(self.at + 1),
                        None | Some('/' | ':' | ' ' | '\t' | '\n' | ';')
                    ) =>
                {
                    self.next();
                    text.push_str(&parsed.value("HOME", base).unwrap_or_default());
                }
                ':' => {
                    self.next();
                    text.push(':');
                    tilde_ok = assignment;
                }
                c => {
                    self.next();
                    text.push(c);
                }
            }
        }
        let text = text.replace('\0', "");
        Ok(Word {
            assignment: assignment.then(|| (name, text.clone())),
            text,
        })
    }

    /// After a `$`: `NAME` or `{NAME}`, expanded; a lone `$` is itself.
    fn dollar(
        &mut self,
        text: &mut String,
        parsed: &Parsed,
        base: &dyn Fn(&str) -> Option<String>,
        quoted: bool,
    ) -> Result<(), String> {
        let name = |lexer: &mut Lexer| {
            let mut name = String::new();
            while let Some(c) = lexer
                .peek()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            {
                lexer.next();
                name.push(c);
            }
            name
        };
        match self.peek() {
            Some('(') => Err("command substitution is not run".to_owned()),
            Some('{') => {
                self.next();
                let n = name(self);
                if self.next() != Some('}') || !is_name(&n) {
                    return Err("only ${NAME} is expanded".to_owned());
                }
                text.push_str(&parsed.value(&n, base).unwrap_or_default());
                Ok(())
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let n = name(self);
                text.push_str(&parsed.value(&n, base).unwrap_or_default());
                Ok(())
            }
            Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => {
                Err(format!("${c} is not known here"))
            }
            Some('"') if !quoted => Err("$\"…\" is not read".to_owned()),
            _ => {
                text.push('$');
                Ok(())
            }
        }
    }

    /// The inside of `$'…'` (after the quote), bash's escapes read.
    fn ansi_c(&mut self, text: &mut String) -> Result<(), String> {
        loop {
            match self.next() {
                None => return Err("a quote is not closed".to_owned()),
                Some('\'') => return Ok(()),
                Some('\\') => {
                    let Some(e) = self.next() else {
                        return Err("a quote is not closed".to_owned());
                    };
                    let digits = |lexer: &mut Lexer, radix: u32, max: usize| -> Option<u32> {
                        let mut n = 0u32;
                        let mut count = 0;
                        while count < max {
                            match lexer.peek().and_then(|c| c.to_digit(radix)) {
                                Some(d) => {
                                    lexer.next();
                                    n = n * radix + d;
                                    count += 1;
                                }
                                None => break,
                            }
                        }
                        (count > 0).then_some(n)
                    };
                    match e {
                        'a' => text.push('\x07'),
                        'b' => text.push('\x08'),
                        'e' | 'E' => text.push('\x1b'),
                        'f' => text.push('\x0c'),
                        'n' => text.push('\n'),
                        'r' => text.push('\r'),
                        't' => text.push('\t'),
                        'v' => text.push('\x0b'),
                        '\\' | '\'' | '"' | '?' => text.push(e),
                        '0'..='7' => {
                            let mut n = e.to_digit(8).unwrap_or(0);
                            for _ in 0..2 {
                                match self.peek().and_then(|c| c.to_digit(8)) {
                                    Some(d) => {
                                        self.next();
                                        n = n * 8 + d;
                                    }
                                    None => break,
                                }
                            }
                            text.extend(char::from_u32(n));
                        }
                        'x' | 'u' | 'U' => {
                            let max = match e {
                                'x' => 2,
                                'u' => 4,
                                _ => 8,
                            };
                            match digits(self, 16, max) {
                                Some(n) => text.extend(char::from_u32(n)),
                                None => {
                                    text.push('\\');
                                    text.push(e);
                                }
                            }
                        }
                        other => {
                            text.push('\\');
                            text.push(other);
                        }
                    }
                }
                Some(c) => text.push(c),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(name: &str) -> Option<String> {
        match name {
            "PATH" => Some("/usr/bin:/bin".to_owned()),
            "HOME" => Some("/home/ada".to_owned()),
            _ => None,
        }
    }

    fn parse(text: &str) -> Parsed {
        let mut p = Parsed::default();
        parse_into(text, "env", &base, &mut p);
        p
    }

    fn set(n: &str, v: &str) -> EnvChange {
        EnvChange::Set(n.to_owned(), v.to_owned())
    }

    #[test]
    fn claude_codes_documented_lines_are_read() {
        let p = parse(
            "export NODE_ENV=production\nexport API_KEY=your-api-key\nexport PATH=\"$PATH:./node_modules/.bin\"\n",
        );
        assert_eq!(p.problems, Vec::<String>::new());
        assert_eq!(
            p.changes,
            vec![
                set("NODE_ENV", "production"),
                set("API_KEY", "your-api-key"),
                set("PATH", "/usr/bin:/bin:./node_modules/.bin"),
            ]
        );
        assert_eq!(p.names(), vec!["NODE_ENV", "API_KEY", "PATH"]);
    }

    #[test]
    fn quoting_follows_the_shell() {
        let p = parse(concat!(
            "# a comment\n",
            "\n",
            "export A='it'\"'\"'s \"q\" $x' B=\"a \\\"b\\\" \\$c \\\\ ${HOME}\"; C=plain\\ word\n",
            "declare -x D=$'a\\nb\\t\\x41\\u00e9' E=\"x\n",
            "y\"\n",
            "typeset -x F=~/bin:~/lib G=a~b && unset B\n",
            "export H=\"$UNSET_X\" I=$ J=${A}\n",
            "export K\n",
        ));
        assert_eq!(p.problems, Vec::<String>::new());
        assert_eq!(
            p.changes,
            vec![
                set("A", "it's \"q\" $x"),
                set("B", "a \"b\" $c \\ /home/ada"),
                set("C", "plain word"),
                set("D", "a\nb\tAé"),
                set("E", "x\ny"),
                set("F", "/home/ada/bin:/home/ada/lib"),
                set("G", "a~b"),
                EnvChange::Unset("B".into()),
                set("H", ""),
                set("I", "$"),
                set("J", "it's \"q\" $x"),
            ]
        );
        assert_eq!(p.names(), vec!["A", "C", "D", "E", "F", "G", "H", "I", "J"]);
    }

    /// What bash's and dash's `export -p` print reads back as the values they had.
    #[test]
    fn export_p_output_reads_back() {
        let p = parse(concat!(
            "declare -x A=$'a\\nb'\n",
            "declare -x B=\"it's \\\"q\\\" \\$x \\\\\\\\\"\n",
            "declare -x OLDPWD\n",
            "export C='a\n",
            "b'\n",
            "export D='it'\"'\"'s \"q\" $x \\\\'\n",
        ));
        assert_eq!(p.problems, Vec::<String>::new());
        assert_eq!(
            p.changes,
            vec![
                set("A", "a\nb"),
                set("B", "it's \"q\" $x \\\\"),
                set("C", "a\nb"),
                set("D", "it's \"q\" $x \\\\"),
            ]
        );
    }

    /// Nothing is run: commands and substitutions are reported and skipped, the rest is read.
    #[test]
    fn commands_are_reported_not_run() {
        let p = parse(concat!(
            "source ~/.nvm/nvm.sh\n",
            "export A=$(touch /tmp/x) B=1\n",
            "export C=`id`\n",
            "nvm use 20 || true\n",
            "export D=${X:-y}\n",
            "export OK=1\n",
            "E=1 make\n",
            "export F='unterminated\n",
        ));
        assert_eq!(p.changes, vec![set("OK", "1")]);
        assert_eq!(p.problems.len(), 7, "{:#?}", p.problems);
        assert!(p.problems[0]
            .starts_with("env, line 1: `source ~/.nvm/nvm.sh` skipped: rawko reads this file"));
        assert!(p.problems[1].contains("line 2") && p.problems[1].contains("command substitution"));
        assert!(p.problems[6].contains("line 8") && p.problems[6].contains("not closed"));
    }
}
