//! rawko's own git (the git-commit and git-push hooks) runs nothing the repository's config names:
//! the agent can write `.git/config` from Bash, and rawko's git runs outside the sandbox.

use super::*;

/// The hooks of every task here: commit, then push.
fn commit_and_push(sb: &Sandbox, no_verify: bool) {
    sb.write_json(
        &sb.user_config_file(),
        &json!({"hooks": {"PostExecutionEnd": [
            {"type": "git-commit", "message": "rawko: {{taskDescription}}", "noVerify": no_verify},
            {"type": "git-push"}
        ]}}),
    );
}

/// The directory the planted commands leave their marks in, outside the project (Bash cannot
/// write there).
fn markers(sb: &Sandbox) -> PathBuf {
    let dir = sb.root.join("markers");
    std::fs::create_dir_all(&dir).expect("mkdir");
    dir
}

fn marks(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("markers")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A task whose agent writes `plant.sh` and runs it with Bash (in a phase that allows writing),
/// then writes greet.txt.
fn planting(plant: &str) -> String {
    let indented: String = plant
        .lines()
        .map(|l| format!("            {l}\n"))
        .collect();
    format!(
        r#"
turns:
  - tool_calls:
      - name: Write
        input:
          path: plant.sh
          content: |
{indented}
  - tool_calls:
      - {{name: Bash, input: {{command: "sh plant.sh && rm plant.sh && echo planted"}}}}
  - tool_calls:
      - {{name: Write, input: {{path: greet.txt, content: "hello\n"}}}}
  - text: "Done."
"#
    )
}

#[test]
fn what_the_agent_sets_in_git_config_never_runs_at_auto_commit() {
    let sb = Sandbox::new();
    let bare = git_project(&sb);
    commit_and_push(&sb, false);
    let m = markers(&sb);
    let plant = format!(
        r#"M={m}
git config core.fsmonitor "touch $M/fsmonitor"
mkdir -p .hooks
for h in pre-commit prepare-commit-msg commit-msg post-commit post-index-change reference-transaction pre-push; do
  printf '#!/bin/sh\ntouch %s/hooks-path-%s\n' "$M" "$h" > .hooks/$h
  chmod +x .hooks/$h
done
git config core.hooksPath .hooks
echo '* filter=evil' > .gitattributes
git config filter.evil.clean "touch $M/clean; cat"
git config filter.evil.smudge "touch $M/smudge; cat"
git config filter.evil.required true
printf '#!/bin/sh\ntouch %s/gpg\n' "$M" > .hooks/gpg
chmod +x .hooks/gpg
git config gpg.program "$PWD/.hooks/gpg"
git config commit.gpgSign true
git config remote.origin.receivepack "touch $M/receivepack; git-receive-pack"
git config remote.origin.uploadpack "touch $M/uploadpack; git-upload-pack"
git config push.negotiate true
git config core.sshCommand "touch $M/ssh"
git config credential.helper "!touch $M/credential"
git config core.pager "touch $M/pager"
git config diff.external "$PWD/.hooks/gpg"
git config core.askPass "$PWD/.hooks/gpg"
"#,
        m = m.display()
    );
    let script = sb.script("plant", &planting(&plant));
    let out = sb.run(&["run", "Add a greeting", "--script", &script, "--yes"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("↳ planted"), "{shown}");
    assert_eq!(marks(&m), Vec::<String>::new(), "{shown}");
    // The commit was made (unsigned) and pushed.
    assert_eq!(
        git(&bare, &["log", "--format=%s", "main"]),
        "rawko: Add a greeting\ninitial",
        "{shown}"
    );
    assert_eq!(git(&bare, &["show", "main:greet.txt"]), "hello");
    assert!(shown.contains("  🪝 Pushed main to origin"), "{shown}");
}

#[test]
fn a_push_to_a_repository_the_agent_can_write_is_refused() {
    let sb = Sandbox::new();
    let bare = git_project(&sb);
    commit_and_push(&sb, false);
    let m = markers(&sb);
    // A bare repository in the workspace with a hook of the agent's, reached through a URL
    // rewrite.
    let plant = format!(
        r#"git init -q --bare .inner.git
printf '#!/bin/sh\ntouch %s/pre-receive\n' "{m}" > .inner.git/hooks/pre-receive
chmod +x .inner.git/hooks/pre-receive
git config url."$PWD/".insteadOf inside:
git remote set-url origin inside:.inner.git
"#,
        m = m.display()
    );
    let script = sb.script("plant", &planting(&plant));
    let out = sb.run(&["run", "Add a greeting", "--script", &script, "--yes"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("↳ planted"), "{shown}");
    assert_eq!(marks(&m), Vec::<String>::new(), "{shown}");
    assert!(
        shown.contains(&format!(
            "git-push: origin leads to {}/.inner.git, a repository the agent can write: a push runs its hooks outside the sandbox, so rawko does not push there",
            sb.project().display()
        )),
        "{shown}"
    );
    // The commit was made all the same; the real remote has not got it.
    assert_eq!(
        git(&sb.project(), &["log", "-1", "--format=%s"]),
        "rawko: Add a greeting"
    );
    assert_eq!(git(&bare, &["log", "--format=%s", "main"]), "initial");
}

/// The repository's own hooks (`.git/hooks`) run at auto-commit, as git runs them, unless the
/// user set noVerify: then none runs, not even those `--no-verify` leaves on.
#[test]
fn the_repositorys_hooks_run_at_auto_commit_unless_no_verify() {
    let sb = Sandbox::new();
    git_project(&sb);
    let m = markers(&sb);
    let hooks = sb.project().join(".git/hooks");
    for h in ["pre-commit", "post-commit"] {
        let path = hooks.join(h);
        sb.write(
            &path,
            &format!("#!/bin/sh\necho {h} >> {}/{h}\n", m.display()),
        );
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let script = sb.script("write", WRITE_THEN_DONE);
    commit_and_push(&sb, false);
    let out = sb.run(&["run", "Add a greeting", "--script", &script, "--yes"]);
    let shown = text(&out);
    assert!(shown.contains("  🪝 Committed 1 file as"), "{shown}");
    assert_eq!(marks(&m), ["post-commit", "pre-commit"], "{shown}");

    std::fs::remove_dir_all(&m).expect("rm");
    let m = markers(&sb);
    commit_and_push(&sb, true);
    sb.write(&sb.project().join("other.txt"), "more\n");
    let script = sb.script("write", WRITE_THEN_DONE);
    let out = sb.run(&["run", "Greet again", "--script", &script, "--yes"]);
    let shown = text(&out);
    assert!(shown.contains("  🪝 Committed 1 file as"), "{shown}");
    assert_eq!(git(&sb.project(), &["status", "--porcelain"]), "");
    assert_eq!(marks(&m), Vec::<String>::new(), "{shown}");
}

/// A `.git` file the agent writes points rawko's git nowhere: nothing runs in the repository it
/// names, and the hook says why.
#[test]
fn rawkos_git_does_not_follow_a_git_file_the_agent_wrote() {
    let sb = Sandbox::new();
    let elsewhere = sb.root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    git(&elsewhere, &["init", "-q", "-b", "main"]);
    sb.write(&elsewhere.join("a.txt"), "a\n");
    git(&elsewhere, &["add", "-A"]);
    git(
        &elsewhere,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e.invalid",
            "commit",
            "-qm",
            "theirs",
        ],
    );
    commit_and_push(&sb, false);
    let script = sb.script(
        "plant",
        &format!(
            r#"
turns:
  - tool_calls:
      - {{name: Write, input: {{path: .git, content: "gitdir: {}\n"}}}}
      - {{name: Write, input: {{path: greet.txt, content: "hello\n"}}}}
  - text: "Done."
"#,
            elsewhere.join(".git").display()
        ),
    );
    let out = sb.run(&["run", "Add a greeting", "--script", &script, "--yes"]);
    let shown = text(&out);
    assert!(
        shown.contains(&format!(
            "git-commit: the workspace's .git names {}, which git does not know as a worktree or submodule of {}: Bash gets no access to it, and rawko's git does not run there; nothing committed",
            elsewhere.join(".git").display(),
            sb.project().display()
        )),
        "{shown}"
    );
    assert_eq!(git(&elsewhere, &["log", "--format=%s"]), "theirs");
    assert_eq!(git(&elsewhere, &["status", "--porcelain"]), "");
}

/// rawko started from inside another repository's git hook inherits `GIT_DIR`, `GIT_WORK_TREE`,
/// `GIT_INDEX_FILE` and the `-c` values of that git: its own git ignores them and commits in the
/// workspace's repository.
#[test]
fn a_parent_gits_repository_variables_are_not_inherited() {
    let sb = Sandbox::new();
    let bare = git_project(&sb);
    let elsewhere = sb.root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    git(&elsewhere, &["init", "-q", "-b", "main"]);
    commit_and_push(&sb, false);
    let m = markers(&sb);
    let script = sb.script("write", WRITE_THEN_DONE);
    let out = sb
        .command(&["run", "Add a greeting", "--script", &script, "--yes"])
        .env("GIT_DIR", elsewhere.join(".git"))
        .env("GIT_WORK_TREE", &elsewhere)
        .env("GIT_INDEX_FILE", elsewhere.join(".git/index"))
        .env(
            "GIT_CONFIG_PARAMETERS",
            format!("'core.fsmonitor'='touch {}/parameters'", m.display()),
        )
        .output()
        .expect("run rawko");
    let shown = text(&out);
    assert!(shown.contains("  🪝 Pushed main to origin"), "{shown}");
    assert_eq!(
        git(&bare, &["log", "--format=%s", "main"]),
        "rawko: Add a greeting\ninitial"
    );
    assert!(!elsewhere.join(".git/index").exists(), "{shown}");
    assert_eq!(marks(&m), Vec::<String>::new(), "{shown}");
}
