//! Commands whose arguments decide whether they write: `curl`, `wget`, `tar`, `git`, the package
//! managers and `cargo`.

use super::*;

/// Short options of curl that take a value.
pub(super) const CURL_VALUE: &str = "AbcCdDeEFHKmoPQrtTuUwxXyYz";

pub(super) fn curl(args: &[Word]) -> ShellEffect {
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
pub(super) const WGET_VALUE: &str = "OoaeiItTwQPUBlADRXY";

pub(super) fn wget(args: &[Word]) -> ShellEffect {
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

pub(super) fn tar(args: &[Word]) -> ShellEffect {
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

pub(super) fn git(args: &[Word]) -> ShellEffect {
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

pub(super) fn package_change(name: &str, args: &[Word]) -> ShellEffect {
    let sub = args.first().map_or("install", |w| w.text.as_str());
    writes(format!("{name} {sub} changes installed packages"))
}

/// Options of package managers that take a value (so the value is not the subcommand).
pub(super) const PM_VALUE: [&str; 10] = [
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

pub(super) fn js_packages(
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

pub(super) fn packages(
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

pub(super) fn cargo(args: &[Word]) -> ShellEffect {
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
