//! The scan of a command template: the quoting context of each placeholder, heredocs included.

use super::*;

/// The placeholder `{{name}}` of a known variable at byte `at` of `s`: its name and length.
pub(super) fn placeholder<'v>(s: &str, at: usize, vars: &'v Vars) -> Option<(&'v str, usize)> {
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
pub(super) enum Frame {
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
pub(super) struct Pending {
    delimiter: Vec<u8>,
    strip_tabs: bool,
    quoted: bool,
    /// Where the delimiter word is in the output, to rewrite it.
    word: std::ops::Range<usize>,
}

pub(super) struct Renderer<'v> {
    pub(super) vars: &'v Vars,
    pub(super) used: BTreeMap<&'v str, &'v TemplateValue>,
}

/// Bytes that end a word (and start a new one after them).
pub(super) fn separates(b: u8) -> bool {
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
    pub(super) fn scan(&mut self, src: &str, base: Frame) -> String {
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
pub(super) fn heredoc_word(b: &[u8]) -> (Vec<u8>, bool, usize) {
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
pub(super) fn heredoc_body(b: &[u8], doc: &Pending) -> (usize, usize) {
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
