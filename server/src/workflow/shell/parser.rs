//! Splitting a command the way a shell does: words, redirections, simple commands, heredocs and
//! nested commands.

use super::*;

/// One word after quote removal. Expansions (`$x`, `$( … )`, backticks) stay in `text` as written.
#[derive(Debug, Clone)]
pub(super) struct Word {
    pub(super) text: String,
    /// No expansion: the text is what the command receives.
    pub(super) literal: bool,
    /// Some part was quoted or escaped.
    quoted: bool,
}

#[derive(Debug, Clone, Default)]
pub(super) enum Stdin {
    #[default]
    Inherited,
    Pipe,
    /// A heredoc body or here-string.
    Text(String),
}

#[derive(Debug, Default)]
pub(super) struct Segment {
    id: usize,
    start: usize,
    end: usize,
    pub(super) text: String,
    pub(super) words: Vec<Word>,
    /// File-writing redirections: operator and target.
    pub(super) writes_to: Vec<(&'static str, String)>,
    pub(super) stdin: Stdin,
    /// Between `[[` and `]]`, where `<` and `>` compare.
    in_test: bool,
}

pub(super) struct PendingHeredoc {
    segment: usize,
    delimiter: Vec<u8>,
    strip_tabs: bool,
    expand: bool,
}

pub(super) struct Parser<'a> {
    src: &'a [u8],
    pos: usize,
    pub(super) out: Vec<Segment>,
    heredocs: Vec<PendingHeredoc>,
    next_id: usize,
    depth: usize,
    pub(super) too_deep: bool,
}

pub(super) fn is_blank(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r')
}

pub(super) fn ends_word(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\r' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
    )
}

pub(super) fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

impl<'a> Parser<'a> {
    pub(super) fn new(src: &'a [u8], depth: usize) -> Self {
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
    pub(super) fn parse_list(&mut self, nested: bool) {
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
pub(super) fn in_test(cur: &Option<Segment>) -> bool {
    cur.as_ref().is_some_and(|s| s.in_test)
}
