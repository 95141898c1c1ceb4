//! The classifier's command tables: what each command name does to files, given its arguments.

use super::*;

pub(super) fn classify_words(
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
