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
        let want: Vec<(String, bool)> = want.iter().map(|(t, w)| ((*t).to_owned(), *w)).collect();
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
