//! Commands that run other code: shells, `python`, `perl`/`ruby`/`node`, `sed`, `awk`, `find`.

use super::*;

pub(super) fn skip_assignments(args: &[Word], mut i: usize) -> usize {
    while args.get(i).is_some_and(|w| is_assignment(&w.text)) {
        i += 1;
    }
    i
}

/// A program that runs code it reads from standard input when given no script.
pub(super) fn from_input(name: &str, script: Option<&str>, stdin: &Stdin) -> ShellEffect {
    let reads_input = matches!(script, None | Some("-"));
    match stdin {
        Stdin::Pipe | Stdin::Text(_) if reads_input => {
            writes(format!("{name} runs code from its input"))
        }
        _ => ShellEffect::ReadOnly,
    }
}

pub(super) fn shell(
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

pub(super) fn is_python(name: &str) -> bool {
    let rest = name
        .strip_prefix("python")
        .or_else(|| name.strip_prefix("pypy"));
    rest.is_some_and(|r| r.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
}

pub(super) fn python(
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

pub(super) fn perlish(name: &str, args: &[Word], stdin: &Stdin) -> ShellEffect {
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

pub(super) fn sed(name: &str, args: &[Word]) -> ShellEffect {
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

pub(super) fn awk(name: &str, args: &[Word]) -> ShellEffect {
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
pub(super) fn awk_program_writes(program: &str) -> Option<&'static str> {
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

pub(super) fn find(
    args: &[Word],
    stdin: &Stdin,
    depth: usize,
    out: &mut Vec<SimpleCommand>,
) -> ShellEffect {
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
