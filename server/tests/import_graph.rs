//! The import graph of `server/src` has no circle (docs/architecture.md: modules import
//! downwards only).
//!
//! The graph has a node per source file of the library crate (`lib.rs` and every module file
//! reached from it by `mod` declarations, `#[path]` included) and an edge from a file to the file
//! of every module one of its paths names: `use crate::…`, `use super::…`, `use self::…`, a
//! `use` of a child module, and the same paths written inline in code (`crate::store::flush()`),
//! through the names a `use` gave a module (`use crate::store; store::journal::x()`). A path
//! names the deepest module it reaches (`crate::store::journal::Writer` is `store/journal.rs`,
//! `crate::store::TaskFiles` is `store/mod.rs`, whatever that re-exports). An edge between a
//! module and one of its own ancestors is not counted: a folder's `mod.rs` declares and uses its
//! files, and they use what it holds, which is the folder's own business. Every other circle
//! (siblings, or across folders) fails the test, listed with the lines that close it.
//!
//! Comments, strings and character literals are skipped, so a path in a doc comment is not an
//! import. The test reads files only; it needs no build of the crate's code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A token of Rust source, as far as paths need: identifiers, `::`, and single punctuation.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Punct(char),
    /// A string literal's contents (kept for `#[path = "…"]`).
    Str(String),
}

/// Splits `source` into tokens with their line numbers, dropping comments and literals' insides.
fn tokenize(source: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if c == '"' || ((c == 'r' || c == 'b') && starts_raw_or_byte_string(&chars, i)) {
            let start_line = line;
            let (text, end) = read_string(&chars, i, &mut line);
            tokens.push((Token::Str(text), start_line));
            i = end;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{1F600}') or a lifetime ('a).
            if chars.get(i + 1) == Some(&'\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            tokens.push((Token::Ident(word.trim_start_matches("r#").to_owned()), line));
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            tokens.push((Token::PathSep, line));
            i += 2;
        } else {
            tokens.push((Token::Punct(c), line));
            i += 1;
        }
    }
    tokens
}

/// Whether a string literal with a prefix (`r"`, `r#"`, `b"`, `br"`, `br#"`) starts at `i`.
fn starts_raw_or_byte_string(chars: &[char], i: usize) -> bool {
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return false;
    }
    let mut j = i;
    if chars[j] == 'b' {
        j += 1;
    }
    if chars.get(j) == Some(&'r') {
        j += 1;
        while chars.get(j) == Some(&'#') {
            j += 1;
        }
    }
    j > i && chars.get(j) == Some(&'"')
}

/// Reads the string literal starting at `i` (prefix included); returns its text and the index
/// after it.
fn read_string(chars: &[char], mut i: usize, line: &mut usize) -> (String, usize) {
    let mut raw = false;
    if chars[i] == 'b' {
        i += 1;
    }
    if chars[i] == 'r' {
        raw = true;
        i += 1;
    }
    let mut hashes = 0;
    while chars[i] == '#' {
        hashes += 1;
        i += 1;
    }
    i += 1; // the opening quote
    let mut text = String::new();
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            *line += 1;
        }
        if !raw && c == '\\' {
            if chars.get(i + 1) == Some(&'\n') {
                *line += 1;
            }
            i += 2;
            continue;
        }
        if c == '"' && (0..hashes).all(|k| chars.get(i + 1 + k) == Some(&'#')) {
            return (text, i + 1 + hashes);
        }
        text.push(c);
        i += 1;
    }
    (text, i)
}

/// A module of the crate: its path from the crate root and the file it is written in.
struct Module {
    file: PathBuf,
    /// Where its child modules' files are (`foo/` beside `foo.rs`; the folder of `mod.rs`).
    child_dir: PathBuf,
}

/// A `mod NAME;` declaration: the module path it declares and an explicit `#[path]`, if any.
fn mod_declarations(tokens: &[(Token, usize)]) -> Vec<(Vec<String>, Option<String>)> {
    let mut found = Vec::new();
    // The inline modules (`mod tests { … }`) open at this point, with the brace depth they
    // opened at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i].0 {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth -= 1;
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            Token::Ident(word) if word == "mod" => {
                if let (Some((Token::Ident(name), _)), Some((next, _))) =
                    (tokens.get(i + 1), tokens.get(i + 2))
                {
                    match next {
                        Token::Punct(';') => {
                            let mut path: Vec<String> =
                                inline.iter().map(|(n, _)| n.clone()).collect();
                            path.push(name.clone());
                            found.push((path, path_attribute(tokens, i)));
                        }
                        Token::Punct('{') => {
                            inline.push((name.clone(), depth));
                            depth += 1;
                            i += 3;
                            continue;
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// The `#[path = "…"]` among the attributes just before the `mod` at `at` (visibility skipped).
fn path_attribute(tokens: &[(Token, usize)], at: usize) -> Option<String> {
    let mut j = at;
    // Skip `pub`, `pub(crate)` and the like.
    while j > 0 {
        match &tokens[j - 1].0 {
            Token::Ident(w) if w == "pub" || w == "crate" || w == "super" || w == "in" => j -= 1,
            Token::Punct('(') | Token::Punct(')') => j -= 1,
            _ => break,
        }
    }
    // Walk back over `#[…]` attributes.
    while j > 0 && tokens[j - 1].0 == Token::Punct(']') {
        let close = j - 1;
        let mut k = close;
        while k > 0 && tokens[k].0 != Token::Punct('[') {
            k -= 1;
        }
        if k == 0 || tokens[k - 1].0 != Token::Punct('#') {
            break;
        }
        let inside = &tokens[k + 1..close];
        if let [(Token::Ident(w), _), (Token::Punct('='), _), (Token::Str(p), _)] = inside {
            if w == "path" {
                return Some(p.clone());
            }
        }
        j = k - 1;
    }
    None
}

/// Every module of the crate rooted at `lib`, found by following its `mod` declarations.
fn modules(lib: &Path) -> BTreeMap<Vec<String>, Module> {
    let mut all = BTreeMap::new();
    let mut queue = vec![(
        Vec::new(),
        Module {
            file: lib.to_path_buf(),
            child_dir: lib.parent().expect("lib.rs has a folder").to_path_buf(),
        },
    )];
    while let Some((path, module)) = queue.pop() {
        let source = std::fs::read_to_string(&module.file)
            .unwrap_or_else(|e| panic!("read {}: {e}", module.file.display()));
        for (declared, explicit) in mod_declarations(&tokenize(&source)) {
            let mut dir = module.child_dir.clone();
            for inline in &declared[..declared.len() - 1] {
                dir.push(inline);
            }
            let name = declared.last().expect("a declaration names a module");
            let (file, child_dir) = match explicit {
                // A `#[path]` outside inline modules is relative to the declaring file's folder.
                Some(p) => {
                    let file = module.file.parent().expect("a file has a folder").join(p);
                    let child_dir = file.with_extension("");
                    (file, child_dir)
                }
                None => {
                    let flat = dir.join(format!("{name}.rs"));
                    if flat.exists() {
                        (flat, dir.join(name))
                    } else {
                        (dir.join(name).join("mod.rs"), dir.join(name))
                    }
                }
            };
            let mut child = path.clone();
            child.extend(declared.iter().cloned());
            queue.push((child, Module { file, child_dir }));
        }
        all.insert(path, module);
    }
    all
}

/// One import: the line it is on and the path as written.
struct Use {
    line: usize,
    text: String,
    target: Vec<String>,
}

/// The module a path names from `current` (a module path, inline modules included): the
/// deepest module of `known` it reaches, or `None` for a path outside the crate.
fn resolve(
    known: &BTreeMap<Vec<String>, Module>,
    current: &[String],
    segments: &[String],
    aliases: &BTreeMap<String, Vec<String>>,
) -> Option<Vec<String>> {
    let mut at: Vec<String> = current.to_vec();
    let mut rest = segments;
    match segments.first().map(String::as_str) {
        Some("crate") => {
            at.clear();
            rest = &segments[1..];
        }
        Some("super") | Some("self") => {}
        Some(first) => {
            let mut child = at.clone();
            child.push(first.to_owned());
            if let Some(alias) = aliases.get(first) {
                at = alias.clone();
                rest = &segments[1..];
            } else if !known.contains_key(&child) {
                return None;
            }
        }
        None => return None,
    }
    for segment in rest {
        match segment.as_str() {
            "super" => {
                at.pop();
            }
            "self" => {}
            name => {
                let mut child = at.clone();
                child.push(name.to_owned());
                if known.contains_key(&child) {
                    at = child;
                } else {
                    break;
                }
            }
        }
    }
    Some(at)
}

/// Expands the use tree starting at `i` (after `use`) into full paths; returns them and the
/// index after the `;`.
fn use_tree(tokens: &[(Token, usize)], mut i: usize) -> (Vec<Vec<String>>, usize) {
    fn tree(
        tokens: &[(Token, usize)],
        i: &mut usize,
        prefix: Vec<String>,
        out: &mut Vec<Vec<String>>,
    ) {
        let mut path = prefix;
        loop {
            match tokens.get(*i).map(|t| &t.0) {
                Some(Token::Ident(w)) if w == "as" => {
                    *i += 2;
                }
                Some(Token::Ident(w)) => {
                    path.push(w.clone());
                    *i += 1;
                }
                Some(Token::PathSep) => *i += 1,
                Some(Token::Punct('*')) => {
                    *i += 1;
                }
                Some(Token::Punct('{')) => {
                    *i += 1;
                    loop {
                        match tokens.get(*i).map(|t| &t.0) {
                            Some(Token::Punct('}')) => {
                                *i += 1;
                                return;
                            }
                            Some(Token::Punct(',')) => *i += 1,
                            None => return,
                            _ => tree(tokens, i, path.clone(), out),
                        }
                    }
                }
                _ => {
                    // `,`, `}` or `;` ends this branch.
                    out.push(path);
                    return;
                }
            }
        }
    }
    let mut out = Vec::new();
    tree(tokens, &mut i, Vec::new(), &mut out);
    while i < tokens.len() && tokens[i].0 != Token::Punct(';') {
        i += 1;
    }
    (out, i + 1)
}

/// Every import of the file of module `path`, resolved to the modules they name.
fn imports(known: &BTreeMap<Vec<String>, Module>, path: &[String], source: &str) -> Vec<Use> {
    let tokens = tokenize(source);
    let mut found = Vec::new();
    let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < tokens.len() {
        let mut current = path.to_vec();
        current.extend(inline.iter().map(|(n, _)| n.clone()));
        let (token, line) = &tokens[i];
        match token {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth -= 1;
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            Token::Ident(w) if w == "mod" => {
                if let (Some((Token::Ident(name), _)), Some((Token::Punct('{'), _))) =
                    (tokens.get(i + 1), tokens.get(i + 2))
                {
                    inline.push((name.clone(), depth));
                    depth += 1;
                    i += 3;
                    continue;
                }
            }
            Token::Ident(w) if w == "use" => {
                let (paths, next) = use_tree(&tokens, i + 1);
                for segments in paths {
                    if let Some(target) = resolve(known, &current, &segments, &aliases) {
                        // A use that names a module itself gives it a name for later paths.
                        if let Some(last) = segments.last() {
                            if target.last() == Some(last) && last != "self" && last != "super" {
                                aliases.insert(last.clone(), target.clone());
                            }
                        }
                        found.push(Use {
                            line: *line,
                            text: segments.join("::"),
                            target,
                        });
                    }
                }
                i = next;
                continue;
            }
            Token::Ident(w)
                if tokens.get(i + 1).map(|t| &t.0) == Some(&Token::PathSep)
                    && (i == 0 || tokens[i - 1].0 != Token::PathSep)
                    && (w == "crate" || w == "super" || w == "self" || aliases.contains_key(w)) =>
            {
                let mut segments = vec![w.clone()];
                let mut j = i + 1;
                while let (Some(Token::PathSep), Some(Token::Ident(next))) =
                    (tokens.get(j).map(|t| &t.0), tokens.get(j + 1).map(|t| &t.0))
                {
                    segments.push(next.clone());
                    j += 2;
                }
                if let Some(target) = resolve(known, &current, &segments, &aliases) {
                    found.push(Use {
                        line: *line,
                        text: segments.join("::"),
                        target,
                    });
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// The file module a module path is written in (an inline module is part of its file).
fn file_module(known: &BTreeMap<Vec<String>, Module>, path: &[String]) -> Vec<String> {
    let mut at = path.to_vec();
    while !known.contains_key(&at) {
        at.pop();
    }
    at
}

/// The strongly connected components of more than one node (Tarjan's algorithm).
fn circles(
    nodes: &[Vec<String>],
    edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
) -> Vec<Vec<Vec<String>>> {
    struct State<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<Vec<String>, usize>,
        low: BTreeMap<Vec<String>, usize>,
        stack: Vec<Vec<String>>,
        on_stack: BTreeSet<Vec<String>>,
        next: usize,
        found: Vec<Vec<Vec<String>>>,
    }
    fn visit(s: &mut State, v: &[String]) {
        s.index.insert(v.to_vec(), s.next);
        s.low.insert(v.to_vec(), s.next);
        s.next += 1;
        s.stack.push(v.to_vec());
        s.on_stack.insert(v.to_vec());
        let targets: Vec<Vec<String>> = s.edges.get(v).into_iter().flatten().cloned().collect();
        for w in targets {
            if !s.index.contains_key(&w) {
                visit(s, &w);
                let low = s.low[v].min(s.low[&w]);
                s.low.insert(v.to_vec(), low);
            } else if s.on_stack.contains(&w) {
                let low = s.low[v].min(s.index[&w]);
                s.low.insert(v.to_vec(), low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().expect("v is on the stack");
                s.on_stack.remove(&w);
                let done = w.as_slice() == v;
                component.push(w);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in nodes {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.found.sort();
    s.found
}

/// The import circles of the crate whose `lib.rs` is in `src`: each as its files, and a report
/// naming them with the lines that close them.
fn import_circles(src: &Path) -> (Vec<Vec<String>>, String) {
    let known = modules(&src.join("lib.rs"));
    let name = |path: &Vec<String>| -> String {
        let file = &known[path].file;
        file.strip_prefix(src).unwrap_or(file).display().to_string()
    };
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    // Each edge's lines, for the message.
    let mut evidence: BTreeMap<(Vec<String>, Vec<String>), Vec<String>> = BTreeMap::new();
    for (path, module) in &known {
        let source = std::fs::read_to_string(&module.file).expect("read a module's file");
        for found in imports(&known, path, &source) {
            let target = file_module(&known, &found.target);
            let related = target.starts_with(path) || path.starts_with(&target);
            if related {
                continue;
            }
            edges
                .entry(path.clone())
                .or_default()
                .insert(target.clone());
            evidence
                .entry((path.clone(), target))
                .or_default()
                .push(format!("{}:{} uses {}", name(path), found.line, found.text));
        }
    }
    let nodes: Vec<Vec<String>> = known.keys().cloned().collect();
    let found = circles(&nodes, &edges);
    let mut report = String::new();
    let mut named = Vec::new();
    for component in &found {
        let files: Vec<String> = component.iter().map(&name).collect();
        report.push_str(&format!("circle: {}\n", files.join(" ")));
        for from in component {
            for to in component {
                if let Some(lines) = evidence.get(&(from.clone(), to.clone())) {
                    for line in lines {
                        report.push_str(&format!("  {line}\n"));
                    }
                }
            }
        }
        named.push(files);
    }
    (named, report)
}

#[test]
fn server_src_has_no_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (found, report) = import_circles(&src);
    assert!(
        found.is_empty(),
        "{} import circle(s) in server/src (docs/architecture.md: no source file imports one that imports it back):\n{report}",
        found.len()
    );
}

/// The check finds a circle closed by a `use` and an inline path, and one closed through the name a
/// `use` gave a folder; and none between a folder's `mod.rs` and its files, or from comments,
/// strings and a test module's `super::*`.
#[test]
fn the_check_finds_circles_and_only_circles() {
    let dir = std::env::temp_dir().join(format!("rawko-import-graph-{}", std::process::id()));
    let write = |rel: &str, text: &str| {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "mod a;\nmod b;\nmod c;\nmod d;\n");
    // a.rs and b.rs: a `use` one way, an inline path the other.
    write("a.rs", "use crate::b::X;\n");
    write("b.rs", "fn f() { super::a::y(); }\n");
    // c/inner.rs and d.rs: d.rs names the folder, then its file through that name.
    // What c/mod.rs says of d.rs in a comment and a string would close a third circle.
    write(
        "c/mod.rs",
        "mod inner;\npub use inner::Z;\n// use crate::d::k;\nconst S: &str = \"crate::d::k\";\n",
    );
    write(
        "c/inner.rs",
        "use super::Z as _;\nuse crate::d::k;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
    );
    write("d.rs", "use crate::c;\nfn g() { c::inner::h(); }\n");
    let (found, report) = import_circles(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        found,
        vec![
            vec!["a.rs".to_owned(), "b.rs".to_owned()],
            vec!["c/inner.rs".to_owned(), "d.rs".to_owned()],
        ],
        "{report}"
    );
}
