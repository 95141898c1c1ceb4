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

// ── Parsing ──

/// One word after quote removal. Expansions (`$x`, `$( … )`, backticks) stay in `text` as written.
#[derive(Debug, Clone)]
struct Word {
    text: String,
    /// No expansion: the text is what the command receives.
    literal: bool,
    /// Some part was quoted or escaped.
    quoted: bool,
}

#[derive(Debug, Clone, Default)]
enum Stdin {
    #[default]
    Inherited,
    Pipe,
    /// A heredoc body or here-string.
    Text(String),
}

#[derive(Debug, Default)]
struct Segment {
    id: usize,
    start: usize,
    end: usize,
    text: String,
    words: Vec<Word>,
    /// File-writing redirections: operator and target.
    writes_to: Vec<(&'static str, String)>,
    stdin: Stdin,
    /// Between `[[` and `]]`, where `<` and `>` compare.
    in_test: bool,
}

struct PendingHeredoc {
    segment: usize,
    delimiter: Vec<u8>,
    strip_tabs: bool,
    expand: bool,
}

struct Parser<'a> {
    src: &'a [u8],
    pos: usize,
    out: Vec<Segment>,
    heredocs: Vec<PendingHeredoc>,
    next_id: usize,
    depth: usize,
    too_deep: bool,
}

fn is_blank(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r')
}

fn ends_word(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\r' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
    )
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

impl<'a> Parser<'a> {
    fn new(src: &'a [u8], depth: usize) -> Self {
        Self {
            src,
            pos: 0,
            out: Vec::new(),
            heredocs: Vec::new(),
            next_id: 0,
            depth,
            too_deep: false,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    fn peek_at(&self, n: usize) -> Option<u8> {
        self.src.get(self.pos + n).copied()
    }

    fn skip_blanks(&mut self) {
        while let Some(c) = self.peek() {
            if is_blank(c) {
                self.pos += 1;
            } else if c == b'\\' && self.peek_at(1) == Some(b'\n') {
                self.pos += 2;
            } else {
                break;
            }
        }
    }

    fn segment<'s>(
        &mut self,
        cur: &'s mut Option<Segment>,
        start: usize,
        piped: &mut bool,
    ) -> &'s mut Segment {
        if cur.is_none() {
            let id = self.next_id;
            self.next_id += 1;
            *cur = Some(Segment {
                id,
                start,
                end: start,
                stdin: if std::mem::take(piped) {
                    Stdin::Pipe
                } else {
                    Stdin::Inherited
                },
                ..Segment::default()
            });
        }
        cur.as_mut().expect("just set")
    }

    fn finish(&mut self, cur: &mut Option<Segment>) {
        if let Some(mut seg) = cur.take() {
            seg.text = lossy(&self.src[seg.start..seg.end]).trim().to_owned();
            self.out.push(seg);
        }
    }

    /// Parses commands until the end, or until the `)` that closes the current nesting.
    fn parse_list(&mut self, nested: bool) {
        let mut cur: Option<Segment> = None;
        let mut piped = false;
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else {
                self.finish(&mut cur);
                return;
            };
            match c {
                b'\n' => {
                    self.pos += 1;
                    self.finish(&mut cur);
                    self.read_heredocs();
                    piped = false;
                }
                b';' => {
                    self.pos += 1;
                    self.finish(&mut cur);
                    piped = false;
                }
                b'&' if self.peek_at(1) == Some(b'>') => self.redirect(&mut cur, None, &mut piped),
                b'&' => {
                    self.pos += if self.peek_at(1) == Some(b'&') { 2 } else { 1 };
                    self.finish(&mut cur);
                    piped = false;
                }
                b'|' => {
                    let double = self.peek_at(1) == Some(b'|');
                    self.pos += if double || self.peek_at(1) == Some(b'&') {
                        2
                    } else {
                        1
                    };
                    self.finish(&mut cur);
                    piped = !double;
                }
                b'(' => {
                    let empty = cur.as_ref().is_none_or(|s| s.words.is_empty());
                    if empty && self.peek_at(1) == Some(b'(') {
                        // `(( arithmetic ))`: no command runs.
                        let start = self.pos;
                        self.pos += 2;
                        self.skip_arithmetic();
                        let seg = self.segment(&mut cur, start, &mut piped);
                        seg.end = self.pos;
                    } else {
                        self.finish(&mut cur);
                        self.pos += 1;
                        self.nested_list();
                        piped = false;
                    }
                }
                b')' => {
                    self.pos += 1;
                    self.finish(&mut cur);
                    if nested {
                        return;
                    }
                    // A stray `)` (a `case` pattern): go on.
                }
                b'<' | b'>' if self.peek_at(1) == Some(b'(') => {
                    // Process substitution: a word whose command runs on its own.
                    let start = self.pos;
                    self.pos += 2;
                    self.nested_list();
                    let text = lossy(&self.src[start..self.pos]);
                    let seg = self.segment(&mut cur, start, &mut piped);
                    seg.words.push(Word {
                        text,
                        literal: false,
                        quoted: false,
                    });
                    seg.end = self.pos;
                }
                b'<' | b'>' if in_test(&cur) => {
                    // A comparison inside `[[ … ]]`, not a redirection.
                    let start = self.pos;
                    self.pos += 1;
                    let seg = self.segment(&mut cur, start, &mut piped);
                    seg.words.push(Word {
                        text: lossy(&self.src[start..start + 1]),
                        literal: true,
                        quoted: false,
                    });
                    seg.end = self.pos;
                }
                b'<' | b'>' => self.redirect(&mut cur, None, &mut piped),
                b'#' => {
                    while self.peek().is_some_and(|c| c != b'\n') {
                        self.pos += 1;
                    }
                }
                _ => {
                    let start = self.pos;
                    let word = self.read_word();
                    let fd = !word.quoted
                        && !word.text.is_empty()
                        && word.text.bytes().all(|b| b.is_ascii_digit())
                        && matches!(self.peek(), Some(b'<' | b'>'))
                        && !in_test(&cur);
                    if fd {
                        self.redirect(&mut cur, Some(start), &mut piped);
                        continue;
                    }
                    let end = self.pos;
                    let seg = self.segment(&mut cur, start, &mut piped);
                    if word.literal && (word.text == "[[" && seg.words.is_empty()) {
                        seg.in_test = true;
                    } else if word.text == "]]" {
                        seg.in_test = false;
                    }
                    seg.words.push(word);
                    seg.end = end;
                }
            }
        }
    }

    /// After an opening `(`, `$(`, `<(` or `>(`: the commands up to the matching `)`.
    fn nested_list(&mut self) {
        if self.depth >= MAX_PARSE_DEPTH {
            self.too_deep = true;
            self.pos = self.src.len();
            return;
        }
        self.depth += 1;
        self.parse_list(true);
        self.depth -= 1;
    }

    /// Classifies `src` (the inside of backticks, a heredoc body) with a parser of its own.
    fn sub_parse(&mut self, src: &[u8], expansions_only: bool) {
        if self.depth >= MAX_PARSE_DEPTH {
            self.too_deep = true;
            return;
        }
        let mut sub = Parser::new(src, self.depth + 1);
        if expansions_only {
            sub.scan_expansions();
        } else {
            sub.parse_list(false);
        }
        self.too_deep |= sub.too_deep;
        for mut seg in sub.out {
            seg.id = usize::MAX;
            self.out.push(seg);
        }
    }

    /// Finds `$( … )` and backticks in text that is otherwise data (an unquoted heredoc body).
    fn scan_expansions(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                b'\\' => self.pos = (self.pos + 2).min(self.src.len()),
                b'$' if self.peek_at(1) == Some(b'(') && self.peek_at(2) != Some(b'(') => {
                    self.pos += 2;
                    self.nested_list();
                }
                b'`' => {
                    let mut ignored = Vec::new();
                    self.backtick(&mut ignored);
                }
                _ => self.pos += 1,
            }
        }
    }

    /// Skips to the `))` that closes an arithmetic expression; the position is after `((`.
    fn skip_arithmetic(&mut self) {
        let mut open = 2usize;
        while let Some(c) = self.peek() {
            if c == b'$' && self.peek_at(1) == Some(b'(') && self.peek_at(2) != Some(b'(') {
                self.pos += 2;
                self.nested_list();
                continue;
            }
            if c == b'`' {
                let mut ignored = Vec::new();
                self.backtick(&mut ignored);
                continue;
            }
            self.pos += 1;
            match c {
                b'(' => open += 1,
                b')' => {
                    open -= 1;
                    if open == 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
    }

    fn redirect(&mut self, cur: &mut Option<Segment>, fd_start: Option<usize>, piped: &mut bool) {
        let start = fd_start.unwrap_or(self.pos);
        const OPS: [&str; 12] = [
            "&>>", "&>", "<<<", "<<-", "<<", ">>", ">|", ">&", "<&", "<>", ">", "<",
        ];
        let rest = &self.src[self.pos..];
        let op = OPS
            .into_iter()
            .find(|op| rest.starts_with(op.as_bytes()))
            .unwrap_or("<");
        self.pos += op.len();
        self.skip_blanks();
        match op {
            "<<" | "<<-" => {
                let word = self.read_word();
                let end = self.pos;
                let seg = self.segment(cur, start, piped);
                seg.stdin = Stdin::Text(String::new());
                seg.end = end;
                let id = seg.id;
                if !word.text.is_empty() {
                    self.heredocs.push(PendingHeredoc {
                        segment: id,
                        delimiter: word.text.into_bytes(),
                        strip_tabs: op == "<<-",
                        expand: !word.quoted,
                    });
                }
            }
            "<<<" => {
                let word = self.read_word();
                let end = self.pos;
                let seg = self.segment(cur, start, piped);
                seg.stdin = Stdin::Text(word.text);
                seg.end = end;
            }
            _ => {
                let word = self.read_word();
                let end = self.pos;
                let target = word.text;
                let file = match op {
                    ">" | ">>" | ">|" | "&>" | "&>>" | "<>" => true,
                    // `>&2` and `>&-` duplicate or close; `>&file` writes like `&>file`.
                    ">&" => !(target == "-" || target.bytes().all(|b| b.is_ascii_digit())),
                    _ => false,
                };
                let seg = self.segment(cur, start, piped);
                if file && !target.is_empty() && !is_device(&target) {
                    seg.writes_to.push((op, target));
                }
                seg.end = end;
            }
        }
    }

    /// At the start of a line after one with heredoc operators: reads their bodies.
    fn read_heredocs(&mut self) {
        for doc in std::mem::take(&mut self.heredocs) {
            let body_start = self.pos;
            let mut body_end = self.src.len();
            while self.pos < self.src.len() {
                let line_start = self.pos;
                let line_end = self.src[line_start..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(self.src.len(), |i| line_start + i);
                self.pos = (line_end + 1).min(self.src.len());
                let mut line = &self.src[line_start..line_end];
                if doc.strip_tabs {
                    while let [b'\t', rest @ ..] = line {
                        line = rest;
                    }
                }
                if let [rest @ .., b'\r'] = line {
                    line = rest;
                }
                if line == doc.delimiter.as_slice() {
                    body_end = line_start;
                    break;
                }
            }
            let body = &self.src[body_start..body_end.max(body_start)];
            if doc.expand {
                self.sub_parse(body, true);
            }
            let text = lossy(body);
            if let Some(seg) = self.out.iter_mut().rev().find(|s| s.id == doc.segment) {
                seg.stdin = Stdin::Text(text);
            }
        }
    }

    /// One word, with quotes removed; substitutions inside it are parsed as commands of their own.
    fn read_word(&mut self) -> Word {
        let mut text = Vec::new();
        let mut literal = true;
        let mut quoted = false;
        while let Some(c) = self.peek() {
            if ends_word(c) {
                break;
            }
            match c {
                b'\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some(b'\n') => self.pos += 1,
                        Some(ch) => {
                            quoted = true;
                            text.push(ch);
                            self.pos += 1;
                        }
                        None => {}
                    }
                }
                b'\'' => {
                    quoted = true;
                    self.pos += 1;
                    while let Some(ch) = self.peek() {
                        self.pos += 1;
                        if ch == b'\'' {
                            break;
                        }
                        text.push(ch);
                    }
                }
                b'"' => {
                    quoted = true;
                    self.pos += 1;
                    self.double_quoted(&mut text, &mut literal);
                }
                b'$' => self.dollar(&mut text, &mut literal, &mut quoted),
                b'`' => {
                    literal = false;
                    self.backtick(&mut text);
                }
                _ => {
                    text.push(c);
                    self.pos += 1;
                }
            }
        }
        Word {
            text: String::from_utf8(text)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            literal,
            quoted,
        }
    }

    /// After an opening `"`: up to and past the closing one.
    fn double_quoted(&mut self, text: &mut Vec<u8>, literal: &mut bool) {
        while let Some(c) = self.peek() {
            match c {
                b'"' => {
                    self.pos += 1;
                    return;
                }
                b'\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some(b'\n') => self.pos += 1,
                        Some(ch @ (b'$' | b'`' | b'"' | b'\\')) => {
                            text.push(ch);
                            self.pos += 1;
                        }
                        _ => text.push(b'\\'),
                    }
                }
                b'$' if !matches!(self.peek_at(1), Some(b'\'' | b'"')) => {
                    let mut ignored = true;
                    self.dollar(text, literal, &mut ignored);
                }
                b'`' => {
                    *literal = false;
                    self.backtick(text);
                }
                _ => {
                    text.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// At a `$`: a substitution, an expansion, an ANSI-C string or a plain dollar sign.
    fn dollar(&mut self, text: &mut Vec<u8>, literal: &mut bool, quoted: &mut bool) {
        let start = self.pos;
        match self.peek_at(1) {
            Some(b'(') if self.peek_at(2) == Some(b'(') => {
                self.pos += 3;
                self.skip_arithmetic();
                *literal = false;
            }
            Some(b'(') => {
                self.pos += 2;
                self.nested_list();
                *literal = false;
            }
            Some(b'{') => {
                self.pos += 2;
                let mut open = 1usize;
                while let Some(c) = self.peek() {
                    if c == b'$' && self.peek_at(1) == Some(b'(') {
                        self.pos += 2;
                        self.nested_list();
                        continue;
                    }
                    self.pos += 1;
                    match c {
                        b'{' => open += 1,
                        b'}' => {
                            open -= 1;
                            if open == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                *literal = false;
            }
            Some(b'\'') => {
                *quoted = true;
                self.pos += 2;
                while let Some(c) = self.peek() {
                    self.pos += 1;
                    match c {
                        b'\'' => return,
                        b'\\' => {
                            let Some(esc) = self.peek() else {
                                break;
                            };
                            self.pos += 1;
                            text.push(match esc {
                                b'n' => b'\n',
                                b't' => b'\t',
                                b'\\' | b'\'' | b'"' => esc,
                                other => {
                                    // `\x72`, `\162`, `\u…`: decoded by the shell, not here.
                                    *literal = false;
                                    other
                                }
                            });
                        }
                        _ => text.push(c),
                    }
                }
                return;
            }
            Some(b'"') => {
                *quoted = true;
                self.pos += 2;
                self.double_quoted(text, literal);
                return;
            }
            Some(c) if c.is_ascii_alphanumeric() || b"_@*#?$!-".contains(&c) => {
                self.pos += 2;
                if c.is_ascii_alphabetic() || c == b'_' {
                    while self
                        .peek()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
                    {
                        self.pos += 1;
                    }
                }
                *literal = false;
            }
            _ => {
                self.pos += 1;
            }
        }
        text.extend_from_slice(&self.src[start..self.pos]);
    }

    /// At a backtick: the command inside, parsed on its own; the position ends after the closing one.
    fn backtick(&mut self, text: &mut Vec<u8>) {
        let start = self.pos;
        self.pos += 1;
        let mut inner = Vec::new();
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                b'`' => break,
                b'\\' => match self.peek() {
                    Some(ch @ (b'`' | b'\\' | b'$')) => {
                        inner.push(ch);
                        self.pos += 1;
                    }
                    _ => inner.push(b'\\'),
                },
                _ => inner.push(c),
            }
        }
        self.sub_parse(&inner, false);
        text.extend_from_slice(&self.src[start..self.pos]);
    }
}

/// Inside `[[ … ]]`, where `<` and `>` compare.
fn in_test(cur: &Option<Segment>) -> bool {
    cur.as_ref().is_some_and(|s| s.in_test)
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

fn classify_words(
    words: &[Word],
    stdin: &Stdin,
    depth: usize,
    out: &mut Vec<SimpleCommand>,
) -> ShellEffect {
    let Some(first) = words.first() else {
        return ShellEffect::ReadOnly;
    };
    let expands =
        first.text != "[" && first.text != "[[" && first.text.contains(['*', '?', '[', '{']);
    if !first.literal || expands {
        return writes(format!(
            "the command name {} is computed, so what it runs is unknown",
            first.text
        ));
    }
    let name = basename(&first.text);
    let args = &words[1..];
    let then = |i: Option<usize>, out: &mut Vec<SimpleCommand>| match i {
        Some(i) if i < args.len() => classify_words(&args[i..], stdin, depth, out),
        _ => ShellEffect::ReadOnly,
    };
    match name {
        // ── Prefixes that run the rest of the words ──
        "sudo" | "doas" => {
            if has(args, &["-e", "--edit"]) {
                return writes(format!("{name} -e edits files"));
            }
            let i = first_operand(
                args,
                &[
                    "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-T", "-U", "-R",
                ],
            );
            let i = i.map(|i| skip_assignments(args, i));
            then(i, out)
        }
        "env" => {
            let mut i = 0;
            while let Some(t) = args.get(i).map(|w| w.text.as_str()) {
                match t {
                    "-u" | "-C" | "--unset" | "--chdir" => i += 2,
                    "-S" | "--split-string" => {
                        let mut text = args.get(i + 1).map_or(String::new(), |w| w.text.clone());
                        for w in args.iter().skip(i + 2) {
                            text.push(' ');
                            text.push_str(&w.text);
                        }
                        return nested_shell(&text, depth, out);
                    }
                    "--" => {
                        i += 1;
                        break;
                    }
                    _ if t.starts_with('-') => i += 1,
                    _ => break,
                }
            }
            then(Some(skip_assignments(args, i)), out)
        }
        "command" => {
            if has(args, &["-v", "-V"]) {
                return ShellEffect::ReadOnly;
            }
            then(first_operand(args, &[]), out)
        }
        "builtin" | "nohup" | "unbuffer" | "busybox" => then(Some(0), out),
        "flock" => match args
            .iter()
            .position(|w| w.text == "-c" || w.text == "--command")
        {
            Some(i) => match args.get(i + 1) {
                Some(cmd) => nested_shell(&cmd.text, depth, out),
                None => ShellEffect::ReadOnly,
            },
            // `flock [options] FILE COMMAND…`
            None => then(
                first_operand(args, &["-w", "--timeout", "-E", "--conflict-exit-code"])
                    .map(|i| i + 1),
                out,
            ),
        },
        "parallel" => {
            // `parallel [options] COMMAND ::: ARGS`: the command is shell text.
            let Some(i) = first_operand(
                args,
                &[
                    "-j",
                    "--jobs",
                    "-S",
                    "--sshlogin",
                    "--joblog",
                    "--results",
                    "-a",
                    "--arg-file",
                ],
            ) else {
                return ShellEffect::ReadOnly;
            };
            let end = args[i..]
                .iter()
                .position(|w| w.text.starts_with(":::"))
                .map_or(args.len(), |n| i + n);
            nested_shell(&joined(&args[i..end]), depth, out)
        }
        "trap" => match args.first() {
            // The handler runs later, in this shell.
            Some(handler) if !handler.text.starts_with('-') => {
                nested_shell(&handler.text, depth, out)
            }
            _ => ShellEffect::ReadOnly,
        },
        "source" | "." => match args.first() {
            Some(file) if !file.literal => writes(format!(
                "{name} runs commands from a computed file ({})",
                file.text
            )),
            _ => ShellEffect::ReadOnly,
        },
        "exec" => then(first_operand(args, &["-a"]), out),
        "time" => {
            if let Some(i) = args
                .iter()
                .position(|w| w.text == "-o" || w.text == "--output")
            {
                if let Some(f) = args.get(i + 1) {
                    return writes(format!("time -o writes to {}", f.text));
                }
            }
            then(
                first_operand(args, &["-f", "--format", "-o", "--output"]),
                out,
            )
        }
        "nice" => {
            let i = first_operand(args, &["-n", "--adjustment"]);
            then(i, out)
        }
        "ionice" => then(
            first_operand(args, &["-c", "-n", "--class", "--classdata"]),
            out,
        ),
        "stdbuf" => then(first_operand(args, &["-i", "-o", "-e"]), out),
        "timeout" => {
            // Options, then the duration, then the command.
            let i = first_operand(args, &["-s", "-k", "--signal", "--kill-after"]);
            then(i.map(|i| i + 1), out)
        }
        "xargs" => {
            let i = first_operand(
                args,
                &[
                    "-I",
                    "-n",
                    "-P",
                    "-L",
                    "-d",
                    "-E",
                    "-s",
                    "-a",
                    "--arg-file",
                    "--delimiter",
                    "--max-args",
                    "--max-lines",
                    "--max-procs",
                    "--max-chars",
                    "--eof",
                ],
            );
            then(i, out)
        }
        "watch" => {
            let i = first_operand(args, &["-n", "--interval", "-d"]);
            match i {
                Some(i) => nested_shell(&joined(&args[i..]), depth, out),
                None => ShellEffect::ReadOnly,
            }
        }
        "npx" | "pnpx" | "bunx" | "uvx" => {
            if let Some(i) = args
                .iter()
                .position(|w| w.text == "-c" || w.text == "--call")
            {
                if let Some(cmd) = args.get(i + 1) {
                    return nested_shell(&cmd.text, depth, out);
                }
            }
            let i = first_operand(args, &["-p", "--package", "--from", "--with", "--python"]);
            then(i, out)
        }

        // ── Shells and inline code ──
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "ash" | "mksh" | "fish" => {
            shell(name, args, stdin, depth, out)
        }
        "eval" => nested_shell(&joined(args), depth, out),
        "su" => match args
            .iter()
            .position(|w| w.text == "-c" || w.text == "--command")
        {
            Some(i) => match args.get(i + 1) {
                Some(cmd) => nested_shell(&cmd.text, depth, out),
                None => ShellEffect::ReadOnly,
            },
            None => ShellEffect::ReadOnly,
        },
        _ if is_python(name) => python(name, args, stdin, depth, out),
        "node" | "nodejs" => {
            let mut i = 0;
            while let Some(t) = args.get(i).map(|w| w.text.as_str()) {
                if matches!(t, "-e" | "--eval" | "-p" | "--print" | "-pe")
                    || t.starts_with("--eval=")
                    || t.starts_with("--print=")
                {
                    return writes(format!("{name} {t} runs inline code"));
                }
                if !t.starts_with('-') || t == "-" {
                    break;
                }
                i += if matches!(t, "-r" | "--require" | "--import" | "--loader") {
                    2
                } else {
                    1
                };
            }
            from_input(name, args.get(i).map(|w| w.text.as_str()), stdin)
        }
        "deno" => match args.first().map(|w| w.text.as_str()) {
            Some("eval") => writes("deno eval runs inline code"),
            Some("install" | "add" | "remove" | "uninstall") => package_change(name, args),
            Some("fmt") if !has(args, &["--check"]) => writes("deno fmt reformats files"),
            _ => ShellEffect::ReadOnly,
        },
        "perl" | "ruby" => perlish(name, args, stdin),
        "php" if has(args, &["-r"]) => writes("php -r runs inline code"),
        "lua" | "luajit" if has(args, &["-e"]) => writes(format!("{name} -e runs inline code")),
        "Rscript" if has(args, &["-e"]) => writes("Rscript -e runs inline code"),
        "awk" | "gawk" | "mawk" | "nawk" => awk(name, args),

        // ── Commands that write by nature ──
        "rm" => writes("rm removes files"),
        "rmdir" => writes("rmdir removes directories"),
        "unlink" => writes("unlink removes files"),
        "shred" => writes("shred destroys files"),
        "mv" => writes("mv moves files"),
        "cp" => writes("cp copies files"),
        "touch" => writes("touch creates or updates files"),
        "mkdir" => writes("mkdir creates directories"),
        "ln" | "link" => writes(format!("{name} creates links")),
        "chmod" | "setfacl" => writes(format!("{name} changes permissions")),
        "chown" | "chgrp" => writes(format!("{name} changes ownership")),
        "chattr" => writes("chattr changes file attributes"),
        "truncate" => writes("truncate resizes files"),
        "fallocate" => writes("fallocate allocates files"),
        "install" => writes("install copies files"),
        "mkfifo" | "mknod" => writes(format!("{name} creates special files")),
        "scp" => writes("scp copies files"),
        "split" | "csplit" => writes(format!("{name} writes files")),
        "sponge" => writes("sponge writes to a file"),
        "vi" | "vim" | "nvim" | "nano" | "emacs" | "ed" | "ex" | "pico" | "micro" | "sudoedit" => {
            writes(format!("{name} edits files"))
        }
        _ if name.starts_with("create-") => writes(format!("{name} scaffolds a project")),

        // ── Commands that write with some arguments ──
        "tee" => match operands(args).into_iter().find(|f| !is_device(f)) {
            Some(f) => writes(format!("tee writes to {f}")),
            None => ShellEffect::ReadOnly,
        },
        "dd" => match texts(args)
            .filter_map(|t| t.strip_prefix("of="))
            .find(|f| !is_device(f))
        {
            Some(f) => writes(format!("dd writes to {f}")),
            None => ShellEffect::ReadOnly,
        },
        "sed" | "gsed" => sed(name, args),
        "sort" => {
            let mut it = texts(args);
            while let Some(t) = it.next() {
                let target = match t {
                    "-o" | "--output" => it.next(),
                    _ => t
                        .strip_prefix("--output=")
                        .or_else(|| t.strip_prefix("-o").filter(|r| !r.is_empty())),
                };
                if let Some(f) = target.filter(|f| !is_device(f)) {
                    return writes(format!("sort -o writes to {f}"));
                }
            }
            ShellEffect::ReadOnly
        }
        "uniq" => {
            let mut files = Vec::new();
            let mut it = texts(args);
            while let Some(t) = it.next() {
                if matches!(t, "-f" | "-s" | "-w") {
                    it.next();
                } else if !t.starts_with('-') || t == "-" {
                    files.push(t);
                }
            }
            match files.get(1).filter(|f| !is_device(f)) {
                Some(f) => writes(format!("uniq writes to {f}")),
                None => ShellEffect::ReadOnly,
            }
        }
        "find" => find(args, stdin, depth, out),
        "fd" | "fdfind" => {
            match args
                .iter()
                .position(|w| matches!(w.text.as_str(), "-x" | "--exec" | "-X" | "--exec-batch"))
            {
                Some(i) => match classify_words(&args[i + 1..], stdin, depth, out) {
                    ShellEffect::Writes { why } => writes(format!("{name} --exec: {why}")),
                    read => read,
                },
                None => ShellEffect::ReadOnly,
            }
        }
        "patch" if !has(args, &["--dry-run", "--check"]) => writes("patch edits files"),
        "rsync" if !(has(args, &["--dry-run", "--list-only"]) || cluster_has(args, &['n'])) => {
            writes("rsync copies files")
        }
        "curl" => curl(args),
        "wget" => wget(args),
        "tar" | "bsdtar" | "gtar" => tar(args),
        "unzip" if !cluster_has(args, &['l', 't', 'v', 'Z', 'p', 'c', 'z']) => {
            writes("unzip extracts files")
        }
        "zip" => writes("zip writes an archive"),
        "gzip" | "gunzip" | "bzip2" | "bunzip2" | "xz" | "unxz" | "lzma" | "zstd" | "unzstd"
        | "lz4" | "compress" | "uncompress" => {
            let to_stdout = cluster_has(args, &['c', 't', 'l'])
                || has(args, &["--stdout", "--to-stdout", "--test", "--list"]);
            if to_stdout || operands(args).iter().all(|f| *f == "-") {
                ShellEffect::ReadOnly
            } else {
                writes(format!("{name} replaces files"))
            }
        }
        "7z" | "7za" | "7zr" | "unrar" => match args.first().map(|w| w.text.as_str()) {
            Some("a" | "x" | "e" | "d" | "u" | "rn") => writes(format!("{name} writes files")),
            _ => ShellEffect::ReadOnly,
        },
        "git" => git(args),

        // ── Package managers, formatters, toolchains ──
        "npm" | "pnpm" | "yarn" | "bun" => js_packages(name, args, stdin, depth, out),
        "pip" | "pip3" | "pipx" | "uv" | "poetry" | "gem" | "bundle" | "bundler" | "composer"
        | "conda" | "mamba" | "micromamba" | "apt" | "apt-get" | "aptitude" | "yum" | "dnf"
        | "microdnf" | "zypper" | "apk" | "brew" | "snap" | "port" => {
            packages(name, args, stdin, depth, out)
        }
        "dpkg"
            if has(
                args,
                &[
                    "-i",
                    "--install",
                    "-r",
                    "--remove",
                    "-P",
                    "--purge",
                    "--unpack",
                    "--configure",
                ],
            ) =>
        {
            writes("dpkg changes installed packages")
        }
        "pacman" => {
            let changes = texts(args).any(|t| {
                t.len() > 1
                    && t.starts_with('-')
                    && !t.starts_with("--")
                    && (t.contains('R')
                        || t.contains('U')
                        || (t.contains('S') && !t[1..].contains(['s', 'i', 'g', 'l', 'p'])))
            });
            if changes {
                writes("pacman changes installed packages")
            } else {
                ShellEffect::ReadOnly
            }
        }
        "cargo" => cargo(args),
        "go" => match args.first().map(|w| w.text.as_str()) {
            Some(sub @ ("get" | "install" | "generate" | "fmt")) => {
                writes(format!("go {sub} changes files"))
            }
            Some(sub @ ("mod" | "work")) => match args.get(1).map(|w| w.text.as_str()) {
                Some(op @ ("tidy" | "init" | "vendor" | "edit" | "use" | "sync")) => {
                    writes(format!("go {sub} {op} changes files"))
                }
                _ => ShellEffect::ReadOnly,
            },
            _ => ShellEffect::ReadOnly,
        },
        "rustfmt" => {
            let stdout = has(args, &["--check"])
                || texts(args)
                    .collect::<Vec<_>>()
                    .windows(2)
                    .any(|p| p[0] == "--emit" && p[1] == "stdout")
                || has(args, &["--emit=stdout"]);
            let files = operands(args)
                .into_iter()
                .filter(|f| f.ends_with(".rs"))
                .count();
            if stdout || files == 0 {
                ShellEffect::ReadOnly
            } else {
                writes("rustfmt reformats files in place")
            }
        }
        "gofmt" | "goimports" if has(args, &["-w"]) => {
            writes(format!("{name} -w reformats files in place"))
        }
        "prettier" if has(args, &["--write", "-w"]) => writes("prettier --write reformats files"),
        "eslint" | "standard" | "stylelint" if has_prefix(args, &["--fix"]) => {
            writes(format!("{name} --fix edits files"))
        }
        "black" | "isort" => {
            let check = has(
                args,
                &["--check", "--check-only", "-c", "--diff", "--stdout", "-d"],
            );
            if check || operands(args).iter().all(|f| *f == "-") {
                ShellEffect::ReadOnly
            } else {
                writes(format!("{name} reformats files in place"))
            }
        }
        "ruff" => {
            let format = args.first().is_some_and(|w| w.text == "format");
            if (format && !has(args, &["--check", "--diff"])) || has_prefix(args, &["--fix"]) {
                writes("ruff rewrites files")
            } else {
                ShellEffect::ReadOnly
            }
        }
        "clang-format" | "autopep8" | "yapf" if has(args, &["-i", "--in-place"]) => {
            writes(format!("{name} -i reformats files in place"))
        }
        _ => ShellEffect::ReadOnly,
    }
}

fn skip_assignments(args: &[Word], mut i: usize) -> usize {
    while args.get(i).is_some_and(|w| is_assignment(&w.text)) {
        i += 1;
    }
    i
}

/// A program that runs code it reads from standard input when given no script.
fn from_input(name: &str, script: Option<&str>, stdin: &Stdin) -> ShellEffect {
    let reads_input = matches!(script, None | Some("-"));
    match stdin {
        Stdin::Pipe | Stdin::Text(_) if reads_input => {
            writes(format!("{name} runs code from its input"))
        }
        _ => ShellEffect::ReadOnly,
    }
}

fn shell(
    name: &str,
    args: &[Word],
    stdin: &Stdin,
    depth: usize,
    out: &mut Vec<SimpleCommand>,
) -> ShellEffect {
    let mut i = 0;
    let mut command = false;
    while let Some(t) = args.get(i).map(|w| w.text.as_str()) {
        if t == "--" || t == "-" {
            i += 1;
            break;
        }
        if matches!(t, "--rcfile" | "--init-file") {
            i += 2;
            continue;
        }
        if t.starts_with("--") {
            i += 1;
            continue;
        }
        if t.len() > 1 && (t.starts_with('-') || t.starts_with('+')) {
            command |= t.starts_with('-') && t.contains('c');
            // `-o option` and `-O option` take the next word.
            i += if t.contains(['o', 'O']) { 2 } else { 1 };
            continue;
        }
        break;
    }
    if command {
        return match args.get(i) {
            Some(cmd) => nested_shell(&cmd.text, depth, out),
            None => ShellEffect::ReadOnly,
        };
    }
    if i < args.len() {
        // A script file: like running any program.
        return ShellEffect::ReadOnly;
    }
    match stdin {
        Stdin::Text(body) => nested_shell(body, depth, out),
        Stdin::Pipe => writes(format!("{name} runs commands from its input")),
        Stdin::Inherited => ShellEffect::ReadOnly,
    }
}

fn is_python(name: &str) -> bool {
    let rest = name
        .strip_prefix("python")
        .or_else(|| name.strip_prefix("pypy"));
    rest.is_some_and(|r| r.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
}

fn python(
    name: &str,
    args: &[Word],
    stdin: &Stdin,
    depth: usize,
    out: &mut Vec<SimpleCommand>,
) -> ShellEffect {
    let mut i = 0;
    while let Some(t) = args.get(i).map(|w| w.text.as_str()) {
        if t == "--" {
            i += 1;
            break;
        }
        if !t.starts_with('-') || t == "-" || t.starts_with("--") {
            if t.starts_with("--") {
                i += 1;
                continue;
            }
            break;
        }
        for (j, c) in t[1..].char_indices() {
            match c {
                'c' => return writes(format!("{name} -c runs inline code")),
                'm' => {
                    let rest = &t[2 + j..];
                    let (module, next) = if rest.is_empty() {
                        (args.get(i + 1).map(|w| w.text.as_str()), i + 2)
                    } else {
                        (Some(rest), i + 1)
                    };
                    return match module {
                        Some(m @ ("pip" | "pip3" | "venv" | "ensurepip")) => {
                            let rest = args.get(next..).unwrap_or_default();
                            if m == "pip" || m == "pip3" {
                                packages("pip", rest, stdin, depth, out)
                            } else {
                                writes(format!("{name} -m {m} creates files"))
                            }
                        }
                        _ => ShellEffect::ReadOnly,
                    };
                }
                'W' | 'X' => {
                    if j + 1 == t.len() - 1 {
                        i += 1;
                    }
                    break;
                }
                _ => {}
            }
        }
        i += 1;
    }
    from_input(name, args.get(i).map(|w| w.text.as_str()), stdin)
}

fn perlish(name: &str, args: &[Word], stdin: &Stdin) -> ShellEffect {
    let mut in_place = false;
    let mut inline = false;
    let mut i = 0;
    while let Some(t) = args.get(i).map(|w| w.text.as_str()) {
        if t == "--" {
            i += 1;
            break;
        }
        if !t.starts_with('-') || t == "-" {
            break;
        }
        if t.starts_with("--") {
            i += 1;
            continue;
        }
        let chars: Vec<char> = t[1..].chars().collect();
        let mut j = 0;
        while let Some(&c) = chars.get(j) {
            match c {
                'i' => {
                    in_place = true;
                    break;
                }
                'e' | 'E' => {
                    inline = true;
                    if j + 1 == chars.len() {
                        i += 1;
                    }
                    break;
                }
                'I' | 'M' | 'm' | 'r' | 'C' | 'x' | 'd' | 'D' => {
                    if j + 1 == chars.len() && matches!(c, 'I' | 'M' | 'm' | 'r') {
                        i += 1;
                    }
                    break;
                }
                '0' | 'l' => {
                    j += 1;
                    while chars.get(j).is_some_and(|c| c.is_ascii_hexdigit()) {
                        j += 1;
                    }
                }
                _ => j += 1,
            }
        }
        i += 1;
    }
    if in_place {
        return writes(format!("{name} -i edits in place"));
    }
    if inline {
        return writes(format!("{name} -e runs inline code"));
    }
    from_input(name, args.get(i).map(|w| w.text.as_str()), stdin)
}

fn sed(name: &str, args: &[Word]) -> ShellEffect {
    let mut it = texts(args);
    while let Some(t) = it.next() {
        if t == "--" {
            break;
        }
        if t == "--in-place" || t.starts_with("--in-place=") {
            return writes(format!("{name} -i edits in place"));
        }
        if t.len() > 1 && t.starts_with('-') && !t.starts_with("--") {
            for (j, c) in t[1..].char_indices() {
                match c {
                    'i' => return writes(format!("{name} -i edits in place")),
                    'e' | 'f' | 'l' => {
                        if j + 2 == t.len() {
                            it.next();
                        }
                        break;
                    }
                    _ => {}
                }
            }
        }
    }
    ShellEffect::ReadOnly
}

fn awk(name: &str, args: &[Word]) -> ShellEffect {
    let mut i = 0;
    let mut program: Option<&str> = None;
    let mut from_file = false;
    while let Some(t) = args.get(i).map(|w| w.text.as_str()) {
        match t {
            "--" => {
                i += 1;
                break;
            }
            "-i" | "--include" => {
                if args.get(i + 1).is_some_and(|w| w.text == "inplace") {
                    return writes(format!("{name} -i inplace edits in place"));
                }
                i += 2;
            }
            "--include=inplace" | "-iinplace" => {
                return writes(format!("{name} -i inplace edits in place"));
            }
            "-f" | "--file" => {
                from_file = true;
                i += 2;
            }
            "-e" | "--source" => {
                program = args.get(i + 1).map(|w| w.text.as_str());
                i += 2;
            }
            "-F" | "-v" | "--assign" | "--field-separator" => i += 2,
            _ if t.starts_with('-') && t.len() > 1 => i += 1,
            _ => break,
        }
    }
    if program.is_none() && !from_file {
        program = args.get(i).map(|w| w.text.as_str());
    }
    match program.and_then(awk_program_writes) {
        Some(why) => writes(format!("{name} {why}")),
        None => ShellEffect::ReadOnly,
    }
}

/// What an awk program does beyond printing to standard output, if anything.
fn awk_program_writes(program: &str) -> Option<&'static str> {
    let bytes = program.as_bytes();
    let mut i = 0;
    let mut in_string = false;
    // Inside a print statement: from `print` up to `;`, `}` or a newline.
    let mut in_print = false;
    let mut last_word_end_is_pipe = false;
    while i < bytes.len() {
        let c = bytes[i];
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match c {
            b'"' => in_string = true,
            b';' | b'}' | b'{' | b'\n' => in_print = false,
            b'>' if in_print => return Some("prints to a file"),
            b'|' if in_print => return Some("prints into a command"),
            b'|' => last_word_end_is_pipe = true,
            _ if c.is_ascii_alphabetic() => {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                let word = &program[start..i];
                match word {
                    "print" | "printf" => in_print = true,
                    "system" => return Some("runs commands with system()"),
                    "getline" if last_word_end_is_pipe => {
                        return Some("runs commands with getline");
                    }
                    _ => {}
                }
                last_word_end_is_pipe = false;
                continue;
            }
            _ if c.is_ascii_whitespace() => {}
            _ => last_word_end_is_pipe = false,
        }
        i += 1;
    }
    None
}

fn find(args: &[Word], stdin: &Stdin, depth: usize, out: &mut Vec<SimpleCommand>) -> ShellEffect {
    let mut i = 0;
    while let Some(t) = args.get(i).map(|w| w.text.as_str()) {
        match t {
            "-delete" => return writes("find -delete removes files"),
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                let target = args.get(i + 1).map_or("a file", |w| w.text.as_str());
                return writes(format!("find {t} writes to {target}"));
            }
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let end = args[i + 1..]
                    .iter()
                    .position(|w| w.text == ";" || w.text == "+")
                    .map_or(args.len(), |n| i + 1 + n);
                if let ShellEffect::Writes { why } =
                    classify_words(&args[i + 1..end], stdin, depth, out)
                {
                    return writes(format!("find {t}: {why}"));
                }
                i = end + 1;
            }
            _ => i += 1,
        }
    }
    ShellEffect::ReadOnly
}

/// Short options of curl that take a value.
const CURL_VALUE: &str = "AbcCdDeEFHKmoPQrtTuUwxXyYz";

fn curl(args: &[Word]) -> ShellEffect {
    let mut it = texts(args).peekable();
    while let Some(t) = it.next() {
        let (flag, target) = match t {
            "-O" | "--remote-name" | "--remote-name-all" => {
                return writes("curl -O saves the download to a file")
            }
            "-o" | "--output" => ("-o", it.next()),
            "-D" | "--dump-header" => ("-D", it.next()),
            "-c" | "--cookie-jar" => ("-c", it.next()),
            _ if t.starts_with("--output=") => ("-o", t.strip_prefix("--output=")),
            _ if t.len() > 1 && t.starts_with('-') && !t.starts_with("--") => {
                let mut found = ("", None);
                for (j, c) in t[1..].char_indices() {
                    if c == 'O' {
                        return writes("curl -O saves the download to a file");
                    }
                    if CURL_VALUE.contains(c) {
                        let rest = &t[2 + j..];
                        let value = if rest.is_empty() {
                            it.next()
                        } else {
                            Some(rest)
                        };
                        found = match c {
                            'o' => ("-o", value),
                            'D' => ("-D", value),
                            'c' => ("-c", value),
                            _ => ("", None),
                        };
                        break;
                    }
                }
                found
            }
            _ => continue,
        };
        if let Some(f) = target.filter(|f| !is_device(f)) {
            return writes(format!("curl {flag} writes to {f}"));
        }
    }
    ShellEffect::ReadOnly
}

/// Short options of wget that take a value.
const WGET_VALUE: &str = "OoaeiItTwQPUBlADRXY";

fn wget(args: &[Word]) -> ShellEffect {
    if has(args, &["--spider", "--help", "-h", "--version", "-V"]) {
        return ShellEffect::ReadOnly;
    }
    let mut target = None;
    let mut it = texts(args);
    while let Some(t) = it.next() {
        if t == "--output-document" {
            target = it.next();
        } else if let Some(v) = t.strip_prefix("--output-document=") {
            target = Some(v);
        } else if t.len() > 1 && t.starts_with('-') && !t.starts_with("--") {
            for (j, c) in t[1..].char_indices() {
                if WGET_VALUE.contains(c) {
                    let rest = &t[2 + j..];
                    let value = if rest.is_empty() {
                        it.next()
                    } else {
                        Some(rest)
                    };
                    if c == 'O' {
                        target = value;
                    }
                    break;
                }
            }
        }
    }
    match target {
        Some(f) if is_device(f) => ShellEffect::ReadOnly,
        Some(f) => writes(format!("wget -O writes to {f}")),
        None => writes("wget saves the download to a file"),
    }
}

fn tar(args: &[Word]) -> ShellEffect {
    let mut extract = false;
    let mut create = false;
    let mut to_stdout = false;
    let mut file: Option<&str> = None;
    let mut i = 0;
    while let Some(t) = args.get(i).map(|w| w.text.as_str()) {
        i += 1;
        match t {
            "--extract" | "--get" => extract = true,
            "--create" | "--append" | "--update" | "--delete" | "--catenate" | "--concatenate" => {
                create = true
            }
            "--to-stdout" => to_stdout = true,
            "--file" => {
                file = args.get(i).map(|w| w.text.as_str());
                i += 1;
            }
            _ if t.starts_with("--file=") => file = t.strip_prefix("--file="),
            _ if t.starts_with("--") => {}
            // Options: `-xzf`, or the old style without a dash as the first word.
            _ if (t.starts_with('-') && t.len() > 1) || i == 1 => {
                let letters = t.trim_start_matches('-');
                for (j, c) in letters.char_indices() {
                    match c {
                        'x' => extract = true,
                        'c' | 'r' | 'u' | 'A' => create = true,
                        'O' => to_stdout = true,
                        'f' => {
                            let rest = &letters[j + 1..];
                            if t.starts_with('-') && !rest.is_empty() {
                                file = Some(rest);
                            } else {
                                file = args.get(i).map(|w| w.text.as_str());
                                i += 1;
                            }
                            break;
                        }
                        'C' if t.starts_with('-') => {
                            if letters[j + 1..].is_empty() {
                                i += 1;
                            }
                            break;
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    if extract && !to_stdout {
        return writes("tar x extracts files");
    }
    match file {
        Some(f) if create && !is_device(f) => writes(format!("tar c writes the archive {f}")),
        _ => ShellEffect::ReadOnly,
    }
}

fn git(args: &[Word]) -> ShellEffect {
    let i = first_operand(
        args,
        &[
            "-C",
            "-c",
            "--git-dir",
            "--work-tree",
            "--namespace",
            "--config-env",
            "--super-prefix",
        ],
    );
    let aliased = args[..i.unwrap_or(args.len())]
        .windows(2)
        .any(|p| p[0].text == "-c" && p[1].text.starts_with("alias."));
    if aliased {
        return writes("git -c alias.… defines a command that may write");
    }
    let Some(i) = i else {
        return ShellEffect::ReadOnly;
    };
    let sub = args[i].text.as_str();
    let rest = &args[i + 1..];
    let first = rest.first().map(|w| w.text.as_str());
    let changes = match sub {
        "commit" | "checkout" | "reset" | "merge" | "rebase" | "push" | "pull" | "add" | "rm"
        | "mv" | "clean" | "cherry-pick" | "revert" | "restore" | "switch" | "init" | "clone"
        | "am" | "gc" | "prune" | "update-ref" | "update-index" | "filter-branch"
        | "filter-repo" | "fast-import" | "checkout-index" | "read-tree" | "bisect"
        | "sparse-checkout" | "replace" | "mergetool" | "commit-tree" | "write-tree" | "mktag"
        | "mktree" | "pack-refs" | "repack" | "lfs" => true,
        "stash" => !matches!(first, Some("list" | "show")),
        "apply" => {
            !has(rest, &["--check", "--stat", "--numstat", "--summary"]) || has(rest, &["--apply"])
        }
        "tag" => {
            let listing = has(
                rest,
                &[
                    "-l",
                    "--list",
                    "-n",
                    "--contains",
                    "--no-contains",
                    "--points-at",
                    "--merged",
                    "--no-merged",
                    "-v",
                    "--verify",
                ],
            );
            let change = has(
                rest,
                &[
                    "-d",
                    "--delete",
                    "-a",
                    "--annotate",
                    "-s",
                    "--sign",
                    "-f",
                    "--force",
                    "-m",
                    "-F",
                ],
            );
            change || (!listing && !operands(rest).is_empty())
        }
        "branch" => {
            let change = has(
                rest,
                &[
                    "-d",
                    "-D",
                    "--delete",
                    "-m",
                    "-M",
                    "--move",
                    "-c",
                    "-C",
                    "--copy",
                    "-f",
                    "--force",
                    "-u",
                    "--set-upstream-to",
                    "--unset-upstream",
                    "--edit-description",
                    "--track",
                    "-t",
                    "--no-track",
                ],
            ) || has_prefix(rest, &["--set-upstream-to="]);
            let listing = has(
                rest,
                &[
                    "-l",
                    "--list",
                    "-a",
                    "--all",
                    "-r",
                    "--remotes",
                    "--contains",
                    "--no-contains",
                    "--merged",
                    "--no-merged",
                    "--points-at",
                    "--show-current",
                    "-v",
                    "-vv",
                    "--verbose",
                ],
            );
            change || (!listing && !operands(rest).is_empty())
        }
        "config" => {
            let read = has(
                rest,
                &[
                    "--get",
                    "--get-all",
                    "--get-regexp",
                    "--get-urlmatch",
                    "-l",
                    "--list",
                    "--show-origin",
                    "--name-only",
                ],
            ) || matches!(first, Some("get" | "list"));
            let change = has(
                rest,
                &[
                    "--unset",
                    "--unset-all",
                    "--add",
                    "--replace-all",
                    "--rename-section",
                    "--remove-section",
                    "-e",
                    "--edit",
                ],
            ) || matches!(
                first,
                Some("set" | "unset" | "rename-section" | "remove-section" | "edit")
            );
            change || (!read && operands(rest).len() >= 2)
        }
        "remote" => matches!(
            first,
            Some(
                "add"
                    | "remove"
                    | "rm"
                    | "rename"
                    | "set-url"
                    | "set-head"
                    | "set-branches"
                    | "prune"
                    | "update"
            )
        ),
        "worktree" => !matches!(first, None | Some("list")),
        "submodule" => !matches!(first, None | Some("status" | "summary")),
        "notes" => !matches!(first, None | Some("list" | "show" | "get-ref")),
        "reflog" => matches!(first, Some("expire" | "delete")),
        "format-patch" => !has(rest, &["--stdout"]),
        "symbolic-ref" => operands(rest).len() >= 2 || has(rest, &["-d", "--delete"]),
        _ => false,
    };
    if changes {
        writes(format!("git {sub} changes the repository"))
    } else {
        ShellEffect::ReadOnly
    }
}

fn package_change(name: &str, args: &[Word]) -> ShellEffect {
    let sub = args.first().map_or("install", |w| w.text.as_str());
    writes(format!("{name} {sub} changes installed packages"))
}

/// Options of package managers that take a value (so the value is not the subcommand).
const PM_VALUE: [&str; 10] = [
    "--prefix",
    "-C",
    "--cwd",
    "--dir",
    "--filter",
    "-F",
    "--workspace",
    "-w",
    "--directory",
    "--project",
];

fn js_packages(
    name: &str,
    args: &[Word],
    stdin: &Stdin,
    depth: usize,
    out: &mut Vec<SimpleCommand>,
) -> ShellEffect {
    if name == "bun" && has(args, &["-e", "--eval"]) {
        return writes("bun -e runs inline code");
    }
    let i = first_operand(args, &PM_VALUE);
    let Some(i) = i else {
        // `yarn` alone installs.
        return if name == "yarn" && args.is_empty() {
            writes("yarn installs packages")
        } else {
            ShellEffect::ReadOnly
        };
    };
    let sub = args[i].text.as_str();
    let rest = &args[i + 1..];
    let runs = matches!(
        (name, sub),
        ("npm" | "pnpm" | "yarn", "exec" | "dlx") | ("bun", "x")
    );
    if runs {
        let j = first_operand(rest, &["-p", "--package", "-c", "--call"]);
        if let Some(k) = rest
            .iter()
            .position(|w| w.text == "-c" || w.text == "--call")
        {
            if let Some(cmd) = rest.get(k + 1) {
                return nested_shell(&cmd.text, depth, out);
            }
        }
        return match j {
            Some(j) => classify_words(&rest[j..], stdin, depth, out),
            None => ShellEffect::ReadOnly,
        };
    }
    let changes = match sub {
        "install" | "i" | "in" | "ins" | "inst" | "isnt" | "add" | "a" | "ci" | "clean-install"
        | "install-test" | "it" | "uninstall" | "remove" | "rm" | "r" | "un" | "unlink"
        | "update" | "up" | "upgrade" | "udpate" | "link" | "ln" | "dedupe" | "ddp" | "prune"
        | "publish" | "unpublish" | "version" | "init" | "create" | "import" => true,
        "audit" => has(rest, &["fix"]),
        "pkg" => matches!(
            rest.first().map(|w| w.text.as_str()),
            Some("set" | "delete")
        ),
        _ => false,
    };
    if changes {
        writes(format!("{name} {sub} changes installed packages"))
    } else {
        ShellEffect::ReadOnly
    }
}

fn packages(
    name: &str,
    args: &[Word],
    stdin: &Stdin,
    depth: usize,
    out: &mut Vec<SimpleCommand>,
) -> ShellEffect {
    let Some(i) = first_operand(args, &PM_VALUE) else {
        return ShellEffect::ReadOnly;
    };
    let sub = args[i].text.as_str();
    let rest = &args[i + 1..];
    let next = rest.first().map(|w| w.text.as_str());
    // Subcommands that run another command.
    let runs = match (name, sub) {
        ("uv" | "poetry" | "pipx", "run") | ("bundle" | "bundler", "exec") => true,
        ("uv", "tool") if next == Some("run") => {
            return match first_operand(&rest[1..], &["--from", "--with", "--python"]) {
                Some(j) => classify_words(&rest[1 + j..], stdin, depth, out),
                None => ShellEffect::ReadOnly,
            };
        }
        _ => false,
    };
    if runs {
        return match first_operand(
            rest,
            &[
                "--with",
                "--python",
                "-p",
                "--from",
                "--package",
                "--env-file",
                "--extra",
                "--group",
            ],
        ) {
            Some(j) => classify_words(&rest[j..], stdin, depth, out),
            None => ShellEffect::ReadOnly,
        };
    }
    let changes = match name {
        "pip" | "pip3" => matches!(sub, "install" | "uninstall" | "download"),
        "pipx" => matches!(
            sub,
            "install" | "uninstall" | "upgrade" | "upgrade-all" | "reinstall" | "inject"
        ),
        "uv" => match sub {
            "add" | "remove" | "sync" | "lock" | "init" | "venv" => true,
            "pip" => matches!(next, Some("install" | "uninstall" | "sync")),
            "tool" => matches!(next, Some("install" | "uninstall" | "upgrade")),
            _ => false,
        },
        "poetry" => matches!(
            sub,
            "add" | "remove" | "install" | "update" | "lock" | "init" | "new"
        ),
        "gem" => matches!(sub, "install" | "uninstall" | "update" | "cleanup"),
        "bundle" | "bundler" => matches!(sub, "install" | "update" | "add" | "remove" | "lock"),
        "composer" => matches!(
            sub,
            "install" | "update" | "require" | "remove" | "create-project"
        ),
        "conda" | "mamba" | "micromamba" => matches!(
            sub,
            "install" | "remove" | "uninstall" | "update" | "upgrade" | "create"
        ),
        "brew" => matches!(
            sub,
            "install"
                | "uninstall"
                | "remove"
                | "rm"
                | "upgrade"
                | "update"
                | "reinstall"
                | "tap"
                | "untap"
                | "link"
                | "unlink"
                | "cleanup"
                | "pin"
                | "unpin"
        ),
        "apk" => matches!(sub, "add" | "del" | "upgrade" | "update" | "fix"),
        "snap" => matches!(sub, "install" | "remove" | "refresh"),
        "port" => matches!(sub, "install" | "uninstall" | "upgrade" | "selfupdate"),
        // apt, apt-get, aptitude, yum, dnf, microdnf, zypper
        _ => matches!(
            sub,
            "install"
                | "remove"
                | "purge"
                | "erase"
                | "upgrade"
                | "dist-upgrade"
                | "full-upgrade"
                | "autoremove"
                | "update"
                | "reinstall"
                | "downgrade"
                | "build-dep"
                | "in"
                | "rm"
                | "up"
        ),
    };
    if changes {
        writes(format!("{name} {sub} changes installed packages"))
    } else {
        ShellEffect::ReadOnly
    }
}

fn cargo(args: &[Word]) -> ShellEffect {
    let args = match args.first() {
        Some(w) if w.text.starts_with('+') => &args[1..],
        _ => args,
    };
    let Some(i) = first_operand(
        args,
        &["--manifest-path", "-Z", "--config", "-C", "--color"],
    ) else {
        return ShellEffect::ReadOnly;
    };
    let sub = args[i].text.as_str();
    let rest = &args[i + 1..];
    match sub {
        "install" | "uninstall" | "add" | "remove" | "rm" => {
            writes(format!("cargo {sub} changes installed packages"))
        }
        "update" | "generate-lockfile" => writes(format!("cargo {sub} rewrites Cargo.lock")),
        "new" | "init" | "vendor" => writes(format!("cargo {sub} creates files")),
        "fix" => writes("cargo fix edits files"),
        "fmt" if !has(rest, &["--check"]) => writes("cargo fmt reformats files in place"),
        "clippy" if has_prefix(rest, &["--fix"]) => writes("cargo clippy --fix edits files"),
        _ => ShellEffect::ReadOnly,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(cases: &[(&str, &str)], want_writes: bool) {
        let mut wrong = Vec::new();
        for (name, command) in cases {
            let effect = classify(command);
            if effect.writes() != want_writes {
                wrong.push(format!("{name}: {command:?} → {effect:?}"));
            }
        }
        assert!(wrong.is_empty(), "misclassified:\n{}", wrong.join("\n"));
    }

    /// Commands that must classify as writing.
    const WRITES: &[(&str, &str)] = &[
        ("redirect", "cat > x"),
        ("redirect without space", "echo hi >out.txt"),
        ("append", "echo hi >> log.txt"),
        ("both streams", "make &> build.log"),
        ("both streams appended", "make &>> build.log"),
        ("stderr to a file", "cargo build 2> errors.txt"),
        ("clobber", "echo x >| f"),
        ("dup to a file", "ls >& listing"),
        ("read-write open", "cat <> f"),
        ("redirect alone", "> empty.txt"),
        ("tee", "echo hi | tee f"),
        ("tee append", "ls | tee -a log.txt"),
        ("heredoc into a file", "cat > notes.md <<EOF\nhello\nEOF"),
        ("heredoc into tee", "tee out.txt <<'EOF'\nhello\nEOF"),
        ("sed -i", "sed -i s/a/b/ f.txt"),
        ("sed -i suffix", "sed -i.bak 's/a/b/' f.txt"),
        ("sed clustered -i", "sed -Ei 's/a/b/' f.txt"),
        ("sed --in-place", "sed --in-place=.orig -e 's/a/b/' f.txt"),
        ("perl -pi", "perl -pi -e 's/a/b/' f.txt"),
        ("perl -i", "perl -i.bak -pe 's/a/b/' f.txt"),
        ("rm", "rm -rf x"),
        ("rmdir", "rmdir empty"),
        ("mv", "mv a b"),
        ("cp", "cp a b"),
        ("touch", "touch new.txt"),
        ("mkdir", "mkdir -p a/b"),
        ("ln", "ln -s a b"),
        ("chmod", "chmod +x run.sh"),
        ("chown", "chown me f"),
        ("truncate", "truncate -s 0 f"),
        ("dd of=", "dd if=/dev/zero of=disk.img bs=1M count=1"),
        ("install", "install -m 755 bin /usr/local/bin/bin"),
        ("git commit", "git commit -m x"),
        ("git checkout", "git checkout main"),
        ("git reset", "git reset --hard HEAD~1"),
        ("git merge", "git merge feature"),
        ("git rebase", "git rebase -i main"),
        ("git push", "git push origin main"),
        ("git pull", "git pull"),
        ("git add", "git add ."),
        ("git rm", "git rm f"),
        ("git mv", "git mv a b"),
        ("git clean", "git clean -fdx"),
        ("git stash", "git stash"),
        ("git stash pop", "git stash pop"),
        ("git apply", "git apply fix.patch"),
        ("git cherry-pick", "git cherry-pick abc123"),
        ("git revert", "git revert HEAD"),
        ("git restore", "git restore f"),
        ("git switch", "git switch -c topic"),
        ("git tag", "git tag v1.0"),
        ("git branch -d", "git branch -d old"),
        ("git branch -D", "git branch -D old"),
        ("git init", "git init"),
        ("git clone", "git clone https://example.com/r.git"),
        ("git with -C", "git -C sub commit -am x"),
        ("npm install", "npm install"),
        ("npm i", "npm i lodash"),
        ("pnpm add", "pnpm add -D vitest"),
        ("yarn add", "yarn add react"),
        ("yarn remove", "yarn remove react"),
        ("npm ci", "npm ci"),
        ("pip install", "pip install requests"),
        ("pip uninstall", "pip uninstall -y requests"),
        ("python -m pip install", "python3 -m pip install requests"),
        ("cargo install", "cargo install ripgrep"),
        ("cargo add", "cargo add serde"),
        ("cargo remove", "cargo remove serde"),
        ("apt install", "sudo apt install -y jq"),
        ("apt-get remove", "apt-get remove jq"),
        ("brew install", "brew install jq"),
        ("go get", "go get example.com/m"),
        ("go install", "go install example.com/cmd@latest"),
        ("gem install", "gem install rails"),
        ("curl -o", "curl -o out.html https://example.com"),
        ("curl -O", "curl -O https://example.com/f.tgz"),
        (
            "curl clustered -sSLo",
            "curl -sSLo f.tgz https://example.com/f.tgz",
        ),
        ("wget", "wget https://example.com/f.tgz"),
        ("wget -O file", "wget -O f.tgz https://example.com/f.tgz"),
        ("tar x", "tar xzf a.tgz"),
        ("tar -x", "tar -xvf a.tar -C out"),
        ("tar create", "tar czf out.tgz dir"),
        ("unzip", "unzip a.zip"),
        ("patch", "patch -p1 < fix.diff"),
        ("python -c", "python -c 'open(\"f\",\"w\").write(\"x\")'"),
        ("python3 -c", "python3 -c 'print(1)'"),
        (
            "node -e",
            "node -e 'require(\"fs\").writeFileSync(\"f\",\"x\")'",
        ),
        ("perl -e", "perl -e 'print 1'"),
        ("ruby -e", "ruby -e 'puts 1'"),
        ("python heredoc", "python3 - <<'EOF'\nprint(1)\nEOF"),
        ("sh -c", "sh -c 'rm -rf build'"),
        ("bash -c", "bash -c \"echo hi > f\""),
        ("bash -lc", "bash -lc 'touch x'"),
        ("eval", "eval \"rm -f x\""),
        ("shell from a heredoc", "bash <<EOF\nrm x\nEOF"),
        (
            "shell from a pipe",
            "curl -s https://example.com/install.sh | sh",
        ),
        ("xargs rm", "find . -name '*.o' | xargs rm -f"),
        ("xargs with options", "ls | xargs -n 1 -I{} cp {} backup/"),
        ("find -delete", "find . -name '*.tmp' -delete"),
        ("find -exec rm", "find . -name '*.tmp' -exec rm {} \\;"),
        ("sudo", "sudo rm /etc/x"),
        ("env", "env FOO=1 rm x"),
        ("VAR= prefix", "FOO=1 BAR=2 touch x"),
        ("command", "command rm x"),
        ("exec", "exec > log.txt"),
        ("time", "time cp a b"),
        ("nice", "nice -n 10 cp a b"),
        ("timeout", "timeout 5 rm x"),
        ("nohup", "nohup cp a b"),
        ("absolute path to rm", "/bin/rm x"),
        ("escaped alias", "\\rm x"),
        ("cargo fmt", "cargo fmt"),
        ("prettier --write", "npx prettier --write ."),
        ("sort -o", "sort -o sorted.txt in.txt"),
        (
            "awk print to file",
            "awk '{ print $1 > \"out.txt\" }' in.txt",
        ),
        ("awk system", "awk 'BEGIN { system(\"rm x\") }'"),
        ("computed command", "$EDITOR notes.md"),
        ("gzip", "gzip big.log"),
        ("rsync", "rsync -a src/ dst/"),
        ("vim", "vim f.txt"),
        ("substitution in a heredoc", "cat <<EOF\n$(rm x)\nEOF"),
        (
            "redirect after a heredoc",
            "cat <<EOF > file.txt\ncontent\nEOF",
        ),
        ("process substitution", "ls > >(tee f)"),
        ("fd 1 redirect", "echo hi 1> out"),
        ("exec fd to a file", "exec 3> file"),
        ("ANSI-C name", "$'\\x72m' -rf x"),
        ("brace-expanded name", "{rm,-rf,x}"),
        ("globbed name", "/bin/r? -rf x"),
        ("source of a substitution", "source <(echo rm x)"),
        ("trap", "trap 'rm -f tmp' EXIT"),
        ("busybox", "busybox rm x"),
        ("git alias", "git -c alias.x='!rm -rf y' x"),
        ("substitution in arithmetic", "(( $(rm x) ))"),
        (
            "find -exec sh -c",
            "find . -exec sh -c 'rm \"$1\"' _ {} \\;",
        ),
        ("sudo bash -c", "sudo -u root bash -c 'rm x'"),
        ("env -i", "env -i PATH=/bin rm x"),
        ("here-string to bash", "bash <<< 'rm x'"),
        ("function body", "f() { cp a b; }; f"),
        ("no spaces", "ls&&rm x"),
        ("line continuation", "rm \\\n  -rf x"),
        ("if condition", "if rm x; then :; fi"),
        ("case branch", "case $x in a) rm f;; esac"),
        ("git diff to a file", "git diff > changes.patch"),
        ("parallel", "parallel 'rm {}' ::: a b"),
    ];

    /// Commands that must classify as read-only.
    const READ_ONLY: &[(&str, &str)] = &[
        ("ls", "ls -la"),
        ("cat", "cat README.md"),
        ("grep -r", "grep -r TODO src"),
        ("rg", "rg -n 'fn main' --type rust"),
        ("git status", "git status"),
        ("git log", "git log --oneline -5"),
        ("git diff", "git diff HEAD~1 -- src"),
        ("git show", "git show HEAD:README.md"),
        ("git branch list", "git branch -a"),
        ("git tag list", "git tag -l 'v*'"),
        ("git stash list", "git stash list"),
        ("git config get", "git config --get user.name"),
        ("git apply --check", "git apply --check fix.patch"),
        ("git blame", "git blame -L 1,10 f.rs"),
        ("find", "find . -name '*.rs' -type f"),
        (
            "find -exec grep",
            "find . -name '*.rs' -exec grep -l TODO {} +",
        ),
        ("head", "head -n 20 f.txt"),
        ("tail", "tail -f log.txt"),
        ("wc", "wc -l src/*.rs"),
        ("echo", "echo hello world"),
        ("printf", "printf '%s\\n' a b"),
        ("cargo test", "cargo test -p rawko"),
        ("cargo build", "cargo build --release"),
        ("cargo fmt --check", "cargo fmt --check"),
        ("npm test", "npm test"),
        ("npm run", "npm run lint"),
        ("pytest", "pytest -q tests/"),
        ("redirect to /dev/null", "cargo build > /dev/null 2>&1"),
        ("stderr to /dev/null", "ls missing 2>/dev/null"),
        ("both to /dev/null", "make &>/dev/null"),
        ("stderr to stdout", "cargo test 2>&1 | tail -20"),
        ("input redirect", "wc -l < f.txt"),
        ("pipeline", "cat f.txt | grep x | sort | uniq -c | head"),
        ("quoted operator", "echo 'a > b; rm -rf x'"),
        ("double-quoted operator", "grep \"a && b > c\" f.txt"),
        ("escaped operator", "echo a \\> b"),
        ("heredoc to stdout", "cat <<EOF\nrm -rf x > y\nEOF"),
        ("quoted heredoc", "cat <<'EOF'\n$(rm x)\nEOF"),
        ("tee to /dev/null", "ls | tee /dev/null"),
        ("tee alone", "ls | tee"),
        ("sed without -i", "sed -n '1,10p' f.txt"),
        ("sed -e", "sed -e 's/a/b/' f.txt"),
        ("perl without -i or -e", "perl script.pl"),
        ("awk print", "awk '{ print $1 }' f.txt"),
        ("awk comparison", "awk '$3 > 10' f.txt"),
        ("curl to stdout", "curl -s https://example.com"),
        (
            "curl -o /dev/null",
            "curl -s -o /dev/null -w '%{http_code}' https://example.com",
        ),
        ("wget to stdout", "wget -qO- https://example.com"),
        ("wget -O -", "wget -O - https://example.com"),
        ("tar list", "tar tzf a.tgz"),
        ("tar x to stdout", "tar xOf a.tgz f.txt"),
        ("unzip -l", "unzip -l a.zip"),
        ("patch --dry-run", "patch --dry-run -p1 < fix.diff"),
        ("python script", "python3 script.py --help"),
        ("python -m pytest", "python -m pytest -x"),
        ("node script", "node build.js"),
        ("sh -c read-only", "sh -c 'ls -la'"),
        ("bash script", "bash scripts/check.sh"),
        ("eval read-only", "eval 'echo hi'"),
        ("xargs grep", "find . -name '*.rs' | xargs grep -n TODO"),
        ("xargs alone", "ls | xargs"),
        ("sudo read", "sudo cat /var/log/syslog"),
        ("env alone", "env"),
        ("command -v", "command -v rg"),
        ("time", "time cargo test"),
        ("cd and ls", "cd src && ls"),
        ("subshell", "(cd src; ls -la)"),
        ("substitution", "echo $(git rev-parse HEAD)"),
        ("backticks", "echo `date`"),
        ("test brackets", "[[ $a > $b ]] && echo bigger"),
        ("arithmetic", "(( n > 3 )) && echo many"),
        ("arithmetic expansion", "echo $(( 1 > 0 ))"),
        ("for loop", "for f in *.rs; do wc -l \"$f\"; done"),
        ("if", "if grep -q x f; then echo yes; else echo no; fi"),
        ("comment", "ls # > not-a-file"),
        ("assignment", "X=$(pwd)"),
        ("gzip -c", "gzip -c big.log"),
        ("zcat", "zcat big.log.gz"),
        ("rsync dry run", "rsync -avn src/ dst/"),
        ("uniq one file", "uniq -c sorted.txt"),
        ("sort", "sort -u names.txt"),
        ("rustfmt --check", "rustfmt --check src/main.rs"),
        ("diff", "diff -u a b"),
        ("jq", "jq '.a > 1' data.json"),
        ("ps", "ps aux"),
        ("docker ps", "docker ps"),
        ("go test", "go test ./..."),
        ("npx jest", "npx jest --watch=false"),
        ("git fetch", "git fetch origin"),
        ("empty", ""),
        ("only a comment", "# nothing"),
        ("commented-out write", "ls #; rm x"),
        ("quoted write words", "grep \"rm -rf\" notes.txt"),
        ("echo of a command", "echo git commit -m x"),
        (
            "while read",
            "while IFS= read -r line; do echo \"$line\"; done < f",
        ),
        ("test command", "[ -f x ] && cat x"),
        (
            "git with options",
            "git -c core.pager=cat --no-pager log -1",
        ),
        ("stderr dup", "echo hi >&2"),
        ("awk -F", "awk -F, '{print $1}' f.csv"),
        ("source a file", "source venv/bin/activate && pytest"),
        ("cargo clippy", "cargo clippy --all-targets -- -D warnings"),
        ("git log format", "git log --format='%H > %s'"),
        ("json tool", "echo '{}' | python3 -m json.tool"),
        ("remote command", "ssh host 'rm -rf /tmp/x'"),
        (
            "command -v with redirects",
            "command -v cargo >/dev/null 2>&1 || echo missing",
        ),
    ];

    #[test]
    fn writing_commands_classify_as_writes() {
        assert!(WRITES.len() >= 30);
        check(WRITES, true);
    }

    #[test]
    fn read_only_commands_classify_as_read_only() {
        assert!(READ_ONLY.len() >= 30);
        check(READ_ONLY, false);
    }

    #[test]
    fn reasons_name_the_writing_part() {
        let cases = [
            ("sed -i s/a/b/ f.txt", "sed -i edits in place"),
            ("cat > x", "> writes to x"),
            ("echo hi >> log", ">> appends to log"),
            ("echo hi | tee f", "tee writes to f"),
            ("git commit -m x", "git commit changes the repository"),
            ("npm install", "npm install changes installed packages"),
            ("ls && rm -rf x", "rm removes files"),
            ("find . -delete", "find -delete removes files"),
            ("find . -exec rm {} +", "find -exec: rm removes files"),
            ("curl -sSLo f.tgz https://x", "curl -o writes to f.tgz"),
            ("python -c 'x'", "python -c runs inline code"),
            ("bash -c 'mv a b'", "mv moves files"),
        ];
        for (command, why) in cases {
            assert_eq!(classify(command).why(), Some(why), "{command:?}");
        }
    }

    #[test]
    fn compound_commands_split_into_parts() {
        let cases: &[(&str, &[(&str, bool)])] = &[
            ("ls; rm x", &[("ls", false), ("rm x", true)]),
            (
                "ls && rm x || touch y",
                &[("ls", false), ("rm x", true), ("touch y", true)],
            ),
            (
                "cat f | sort > out",
                &[("cat f", false), ("sort > out", true)],
            ),
            ("ls\nrm x\n", &[("ls", false), ("rm x", true)]),
            ("sleep 1 & rm x", &[("sleep 1", false), ("rm x", true)]),
            ("(cd a && rm x)", &[("cd a", false), ("rm x", true)]),
            (
                "{ ls; touch y; }",
                &[("{ ls", false), ("touch y", true), ("}", false)],
            ),
            (
                "echo $(rm x) done",
                &[("rm x", true), ("echo $(rm x) done", false)],
            ),
            (
                "echo `touch y`",
                &[("touch y", true), ("echo `touch y`", false)],
            ),
            (
                "echo \"$(mv a b)\"",
                &[("mv a b", true), ("echo \"$(mv a b)\"", false)],
            ),
            (
                "diff <(ls a) <(ls b)",
                &[
                    ("ls a", false),
                    ("ls b", false),
                    ("diff <(ls a) <(ls b)", false),
                ],
            ),
            (
                "echo 'a; rm x' && ls",
                &[("echo 'a; rm x'", false), ("ls", false)],
            ),
            ("echo \"a | rm x\"", &[("echo \"a | rm x\"", false)]),
            ("echo a\\;rm x", &[("echo a\\;rm x", false)]),
            ("(ls) > out", &[("ls", false), ("> out", true)]),
            (
                "for f in a b; do rm $f; done",
                &[("for f in a b", false), ("do rm $f", true), ("done", false)],
            ),
        ];
        for (command, want) in cases {
            let got: Vec<(String, bool)> = commands(command)
                .into_iter()
                .map(|c| (c.text, c.effect.writes()))
                .collect();
            let want: Vec<(String, bool)> =
                want.iter().map(|(t, w)| ((*t).to_owned(), *w)).collect();
            assert_eq!(got, want, "{command:?}");
        }
    }

    #[test]
    fn nested_shells_are_classified_inside() {
        let cmds = commands("sh -c 'git status && git commit -m x'");
        let texts: Vec<(&str, bool)> = cmds
            .iter()
            .map(|c| (c.text.as_str(), c.effect.writes()))
            .collect();
        assert_eq!(
            texts,
            [
                ("git status", false),
                ("git commit -m x", true),
                ("sh -c 'git status && git commit -m x'", false)
            ]
        );
        assert!(classify("bash -c \"bash -c 'rm x'\"").writes());
        assert!(!classify("bash -c \"bash -c 'ls'\"").writes());
        assert!(
            classify("bash -c \"$CMD\"").writes(),
            "a computed inner command"
        );
        assert!(classify("eval $(echo rm x)").writes());
    }

    #[test]
    fn hostile_input_neither_hangs_nor_overflows() {
        let deep = format!("{}rm x{}", "$(".repeat(10_000), ")".repeat(10_000));
        assert!(classify(&deep).writes());
        let shells = format!("{}ls{}", "sh -c '".repeat(50), "'".repeat(50));
        let _ = classify(&shells);
        for s in [
            "'", "\"", "`", "$(", "${", "<<", "<<EOF", ">", "2>", "((", "$'", "\\",
        ] {
            let _ = classify(s);
        }
    }
}
