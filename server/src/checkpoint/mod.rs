//! Checkpoints: the workspace's files recorded as git commits while a task runs, so that what
//! each phase changed can be shown (`rawko diff`, `rawko/phaseDiff`) and the workspace taken back
//! to a phase's start (the rewind).
//!
//! A checkpoint is `git add -A` of the workspace's tracked and untracked, non-ignored files into
//! a private index (`<task dir>/checkpoint.index`, never the user's), `git write-tree` and `git
//! commit-tree` with the previous checkpoint as its parent, and `git update-ref` of
//! `refs/rawko/tasks/<id>/latest` (and of `…/phase-<index>` at a phase's entry). HEAD, the
//! user's index, branches, stash and working tree are never touched. A workspace in a git
//! repository keeps its checkpoints there (the objects beside the user's, the refs under
//! `refs/rawko/`); any other workspace gets a private repository, `<task dir>/checkpoints.git`,
//! whose work tree it is. Every git process is rawko's hardened one ([`crate::git`]): nothing the
//! repository's config names (fsmonitor, hooks, filters, textconv, diff drivers) runs.
//!
//! The private index is kept between checkpoints, so git's stat cache makes the next `add -A`
//! hash only the files that changed; the first checkpoint in a git repository seeds it with a
//! copy of the repository's own index (whose stat data is valid), so it is quick from the start.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::git::{first_line, Git, Hooks, Repo};

#[cfg(test)]
mod tests;

/// Where a task's checkpoints are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// The workspace's own git repository.
    Workspace,
    /// The task's private repository, `<task dir>/checkpoints.git`.
    Private,
}

impl Storage {
    /// As the log names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Storage::Workspace => "workspace",
            Storage::Private => "private",
        }
    }
}

/// Why a checkpoint was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The task entered a phase.
    PhaseEntered,
    /// A tool call that may have changed files completed.
    ToolCall,
    /// The workspace as it was just before a rewind changed it (so it can be undone by hand).
    BeforeRewind,
}

impl Reason {
    /// As the log names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::PhaseEntered => "phase_entered",
            Reason::ToolCall => "tool_call",
            Reason::BeforeRewind => "before_rewind",
        }
    }
}

/// One checkpoint taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The commit (40 hex digits).
    pub commit: String,
    /// Whether it is a new commit: `false` when nothing changed since the previous checkpoint,
    /// which is then the one named again.
    pub new: bool,
    pub storage: Storage,
}

/// How a file differs between two checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileStatus {
    Added,
    Modified,
    Deleted,
}

impl FileStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            FileStatus::Added => "added",
            FileStatus::Modified => "modified",
            FileStatus::Deleted => "deleted",
        }
    }
}

/// One file of a [`Diff`], its path relative to the repository's top.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    pub path: String,
    pub status: FileStatus,
}

/// What changed between two checkpoints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    /// git's unified diff.
    pub text: String,
    pub files: Vec<ChangedFile>,
}

/// Where a task's checkpoints are pushed: `rawko worker` pushes each one to the task's branch
/// (`refs/heads/rawko/<task id>`) of the repository its workers share, before the call it follows
/// is reported complete, so another worker that takes the task over starts from its files.
#[derive(Debug, Clone)]
pub struct PushTarget {
    /// The shared repository, as the worker was given it (never a remote the workspace's config
    /// names: the agent may write that).
    pub url: String,
    /// The full ref, e.g. `refs/heads/rawko/task-1`.
    pub branch_ref: String,
}

static PUSHES: std::sync::LazyLock<
    std::sync::Mutex<std::collections::HashMap<String, PushTarget>>,
> = std::sync::LazyLock::new(Default::default);

fn pushes() -> std::sync::MutexGuard<'static, std::collections::HashMap<String, PushTarget>> {
    PUSHES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Task `task_id`'s checkpoints are pushed to `target` from now on.
pub fn push_to(task_id: &str, target: PushTarget) {
    pushes().insert(task_id.to_owned(), target);
}

/// Task `task_id`'s checkpoints are no longer pushed.
pub fn stop_pushing(task_id: &str) {
    pushes().remove(task_id);
}

fn push_target(task_id: &str) -> Option<PushTarget> {
    let map = pushes();
    if map.is_empty() {
        return None;
    }
    map.get(task_id).cloned()
}

/// How long one git command of a checkpoint may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// A task's checkpoints: where they are kept, and the previous one (to chain the next to it).
pub struct Checkpoints {
    task_id: String,
    workspace: PathBuf,
    task_dir: PathBuf,
    agent_writable: Vec<PathBuf>,
    opened: Option<(Repo, Storage)>,
    /// The workspace repository's config files as they were just before `opened` read its
    /// config; `None`: read it again next time.
    config_read: Option<ConfigFiles>,
    /// The latest checkpoint's commit and tree, once known.
    previous: Option<(String, String)>,
    /// The private index is known to hold no submodule: `add -A` needs no `ls-files` first.
    no_submodules: bool,
}

impl Checkpoints {
    /// The checkpoints of the task whose folder in the store is `task_dir` (its name is the
    /// task's id), of `workspace`. Nothing is read until they are used.
    pub fn for_task(workspace: &Path, task_dir: &Path) -> Checkpoints {
        let task_id = task_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Checkpoints {
            task_id,
            workspace: workspace.to_owned(),
            task_dir: task_dir.to_owned(),
            agent_writable: Vec::new(),
            opened: None,
            config_read: None,
            previous: None,
            no_submodules: false,
        }
    }

    /// What the agent may write besides the workspace (the task's temp dir, `allowWrite`): a
    /// `.git` there is not followed.
    pub fn agent_writable(mut self, roots: Vec<PathBuf>) -> Checkpoints {
        self.agent_writable = roots;
        self
    }

    /// The refs' common prefix, `refs/rawko/tasks/<id>`: the id with anything but letters,
    /// digits, `-` and `_` as `_`, so that any id makes a valid ref name.
    pub fn ref_prefix(&self) -> String {
        ref_prefix(&self.task_id)
    }

    /// The ref of the newest checkpoint.
    pub fn latest_ref(&self) -> String {
        format!("{}/latest", self.ref_prefix())
    }

    /// The ref of the checkpoint taken when the task last entered concrete phase `index`.
    pub fn phase_ref(&self, index: u32) -> String {
        format!("{}/phase-{index}", self.ref_prefix())
    }

    /// The private index the checkpoints are built in.
    pub fn index_file(&self) -> PathBuf {
        self.task_dir.join("checkpoint.index")
    }

    /// The private repository a workspace outside git gets.
    pub fn private_dir(&self) -> PathBuf {
        self.task_dir.join("checkpoints.git")
    }

    /// The repository the checkpoints are in (opened, or created, on first use) and which one it
    /// is. Its commands use the private index.
    pub async fn repo(&mut self) -> Result<(&Repo, Storage), String> {
        let git = Git::new(&self.workspace)
            .agent_writable(self.agent_writable.clone())
            .timeout(TIMEOUT)
            .env("GIT_INDEX_FILE", self.index_file())
            // A split index would keep its shared part in the user's git directory.
            .env("GIT_CONFIG_COUNT", "1")
            .env("GIT_CONFIG_KEY_0", "core.splitIndex")
            .env("GIT_CONFIG_VALUE_0", "false")
            // `add --verbose` is read: its lines untranslated.
            .env("LC_ALL", "C")
            .env("GIT_AUTHOR_NAME", "rawko")
            .env("GIT_AUTHOR_EMAIL", "rawko@localhost")
            .env("GIT_COMMITTER_NAME", "rawko")
            .env("GIT_COMMITTER_EMAIL", "rawko@localhost");
        // Once a task has a private repository it keeps it (a `.git` the agent made later does
        // not move its checkpoints); it is out of the agent's reach, so it is opened once.
        let private = self.private_dir();
        if private.join("HEAD").is_file() || !git.has_repository() {
            if !matches!(self.opened, Some((_, Storage::Private))) {
                self.opened = Some((git.open_private(&private).await?, Storage::Private));
            }
        } else {
            // The workspace's repository: its config is read when it is opened, and only what
            // the reading found is made harmless, while the agent may set a filter, an
            // fsmonitor or hooks in it at any time. So its config files are read (a few bytes,
            // no process) before each checkpoint, and git reads the config again whenever they
            // are not byte for byte what they were before the last reading, or include others.
            let found = git.discover()?;
            let files = ConfigFiles::read(&found);
            let fresh = matches!(&self.opened, Some((repo, Storage::Workspace))
                if *repo.repository() == found && self.config_read.as_ref() == Some(&files));
            if !fresh {
                self.config_read = None;
                let repo = git.open().await?;
                if !includes_others(&repo) && *repo.repository() == found {
                    self.config_read = Some(files);
                }
                self.opened = Some((repo, Storage::Workspace));
            }
        }
        let (repo, storage) = self.opened.as_ref().expect("opened above");
        Ok((repo, *storage))
    }

    /// Takes a checkpoint: the workspace as it is now, chained to the previous one, on the
    /// `latest` ref and, at a phase's entry, on that phase's ref. When nothing changed since the
    /// previous checkpoint no commit is made and the previous one is named again.
    pub async fn take(&mut self, reason: Reason, phase: Option<u32>) -> Result<Checkpoint, String> {
        let taken = match self.take_once(reason, phase).await {
            // The `latest` ref moved under the remembered one (a rewind): read it again.
            Err(_) if self.previous.take().is_some() => self.take_once(reason, phase).await,
            taken => taken,
        }?;
        if let Some(target) = push_target(&self.task_id) {
            self.push(&target, &taken.commit).await?;
        }
        Ok(taken)
    }

    /// Pushes `commit` to the task's branch on the team's shared repository, retried a few times
    /// (a remote that is briefly unreachable).
    async fn push(&mut self, target: &PushTarget, commit: &str) -> Result<(), String> {
        let refspec = format!("+{commit}:{}", target.branch_ref);
        let (repo, _) = self.repo().await?;
        let mut last = String::new();
        for attempt in 0..5u32 {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(500 * u64::from(attempt))).await;
            }
            match repo.push_to_url(&target.url, &refspec).await {
                Ok(out) if out.ok() => return Ok(()),
                Ok(out) => last = first_line(&out.stderr),
                Err(e) => last = e,
            }
        }
        Err(format!(
            "the checkpoint could not be pushed to {} ({}): {last}",
            target.url, target.branch_ref
        ))
    }

    /// Whether this task's checkpoints are pushed to a shared repository.
    pub fn pushes(&self) -> bool {
        push_target(&self.task_id).is_some()
    }

    async fn take_once(
        &mut self,
        reason: Reason,
        phase: Option<u32>,
    ) -> Result<Checkpoint, String> {
        let index = self.index_file();
        let message = format!("rawko checkpoint: {} {}", self.task_id, reason.as_str());
        let latest = self.latest_ref();
        let phase_ref = phase
            .filter(|_| reason == Reason::PhaseEntered)
            .map(|i| self.phase_ref(i));
        let known = self.previous.clone();
        self.repo().await?;
        // Borrowed apart from the fields set below.
        let Some((repo, storage)) = self.opened.as_ref().map(|(r, s)| (r, *s)) else {
            return Err("the checkpoints' repository is not open".to_owned());
        };
        if storage == Storage::Workspace && !index.exists() {
            seed_index(&repo.repository().git_dir.join("index"), &index)?;
        }
        let no_submodules = self.no_submodules || !has_submodule(repo).await?;
        let previous = match known {
            Some(p) => Some(p),
            None => commit_and_tree(repo, &latest).await?,
        };
        if no_submodules {
            return self
                .take_in_one(&message, &latest, phase_ref.as_deref(), previous, storage)
                .await;
        }
        // A submodule: git must not look inside it (`Repo::add_all`).
        let added = repo.add_all(Hooks::Off).await?;
        if !added.ok() {
            self.no_submodules = false;
            return Err(format!("git add failed: {}", first_line(&added.stderr)));
        }
        let tree = ok_line(repo.run(Hooks::Off, &["write-tree"]).await?, "write-tree")?;
        let (commit, new) = match &previous {
            Some((commit, old_tree)) if *old_tree == tree => (commit.clone(), false),
            _ => {
                let mut args = vec!["commit-tree", "--no-gpg-sign", &tree];
                if let Some((parent, _)) = &previous {
                    args.extend(["-p", parent]);
                }
                args.extend(["-m", &message]);
                (
                    ok_line(repo.run(Hooks::Off, &args).await?, "commit-tree")?,
                    true,
                )
            }
        };
        if new {
            let mut args = vec!["update-ref", "-m", "rawko checkpoint", &latest, &commit];
            if let Some((parent, _)) = &previous {
                args.push(parent);
            }
            ok_line(repo.run(Hooks::Off, &args).await?, "update-ref")?;
        }
        if let Some(phase_ref) = &phase_ref {
            let args = ["update-ref", "-m", "rawko checkpoint", phase_ref, &commit];
            ok_line(repo.run(Hooks::Off, &args).await?, "update-ref")?;
        }
        self.previous = Some((commit.clone(), tree));
        Ok(Checkpoint {
            commit,
            new,
            storage,
        })
    }

    /// [`Checkpoints::take_once`] for a workspace with no submodule: `add -A`, `write-tree`,
    /// `commit-tree` and `update-ref` in one script, so the sandbox helper starts once (the
    /// helper's start, not git, was most of a checkpoint's time beside git's own).
    async fn take_in_one(
        &mut self,
        message: &str,
        latest: &str,
        phase_ref: Option<&str>,
        previous: Option<(String, String)>,
        storage: Storage,
    ) -> Result<Checkpoint, String> {
        let Some((repo, _)) = self.opened.as_ref() else {
            return Err("the checkpoints' repository is not open".to_owned());
        };
        let work_tree = repo.repository().work_tree.clone();
        let (parent, parent_tree) = previous.clone().unwrap_or_default();
        let env = [
            ("RAWKO_CP_MESSAGE", message),
            ("RAWKO_CP_LATEST", latest),
            ("RAWKO_CP_PHASE_REF", phase_ref.unwrap_or_default()),
            ("RAWKO_CP_PARENT", parent.as_str()),
            ("RAWKO_CP_PARENT_TREE", parent_tree.as_str()),
        ];
        let out = repo.script(TAKE_SCRIPT, &env).await?;
        // `add --verbose`'s lines, then `=tree`, `=new` and `=commit` lines (no line of `add`
        // starts with `=`).
        let mut added_plain = true;
        let (mut tree, mut commit, mut new) = (None, None, false);
        for line in out.stdout.lines() {
            if let Some(t) = line.strip_prefix("=tree ") {
                tree = Some(t.trim().to_owned());
            } else if let Some(c) = line.strip_prefix("=commit ") {
                commit = Some(c.trim().to_owned());
            } else if line == "=new" {
                new = true;
            } else if tree.is_none() {
                added_plain &= plain(line, &work_tree);
            }
        }
        let failed = match out.code {
            Some(0) => None,
            Some(101) => Some("add"),
            Some(102) => Some("write-tree"),
            Some(103) => Some("commit-tree"),
            Some(104 | 105) => Some("update-ref"),
            _ => Some("(checkpoint)"),
        };
        if let Some(what) = failed {
            self.no_submodules = false;
            return Err(format!("git {what} failed: {}", first_line(&out.stderr)));
        }
        self.no_submodules = added_plain;
        let (Some(tree), Some(commit)) = (tree, commit) else {
            return Err("git printed no checkpoint".to_owned());
        };
        self.previous = Some((commit.clone(), tree));
        Ok(Checkpoint {
            commit,
            new,
            storage,
        })
    }

    /// The newest checkpoint's commit, if the task has one.
    pub async fn latest(&mut self) -> Result<Option<String>, String> {
        let r = self.latest_ref();
        self.resolve(&r).await
    }

    /// The commit of the checkpoint taken when the task last entered phase `index`.
    pub async fn phase_entry(&mut self, index: u32) -> Result<Option<String>, String> {
        let r = self.phase_ref(index);
        self.resolve(&r).await
    }

    /// The task's first checkpoint (the root of the chain `latest` ends).
    pub async fn first(&mut self) -> Result<Option<String>, String> {
        let latest = self.latest_ref();
        if self.resolve(&latest).await?.is_none() {
            return Ok(None);
        }
        let (repo, _) = self.repo().await?;
        let out = repo
            .run(Hooks::Off, &["rev-list", "--max-parents=0", &latest, "--"])
            .await?;
        if !out.ok() {
            return Err(format!("git rev-list failed: {}", first_line(&out.stderr)));
        }
        Ok(out.stdout.lines().last().map(str::to_owned))
    }

    /// `rev` as a commit, or `None` when it names none.
    pub async fn resolve(&mut self, rev: &str) -> Result<Option<String>, String> {
        let (repo, _) = self.repo().await?;
        resolve(repo, rev).await
    }

    /// What changed from commit `from` to commit `to`: git's unified diff (no colour, no
    /// external diff or textconv, renames as a deletion and an addition) and the files.
    pub async fn diff(&mut self, from: &str, to: &str) -> Result<Diff, String> {
        let (repo, _) = self.repo().await?;
        let common = [
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--no-renames",
        ];
        let mut args = vec!["diff"];
        args.extend(common);
        args.extend([from, to, "--"]);
        let text = repo.run(Hooks::Off, &args).await?;
        if !text.ok() {
            return Err(format!("git diff failed: {}", first_line(&text.stderr)));
        }
        let mut args = vec!["diff", "--name-status", "-z"];
        args.extend(common);
        args.extend([from, to, "--"]);
        let names = repo.run(Hooks::Off, &args).await?;
        if !names.ok() {
            return Err(format!("git diff failed: {}", first_line(&names.stderr)));
        }
        Ok(Diff {
            text: text.stdout,
            files: name_status(&names.stdout),
        })
    }
}

/// Whether the private index holds a submodule (a gitlink, mode 160000).
/// The bytes of a repository's own config files (`config` and `config.worktree` of its git and
/// common directories; `None` for a missing one), as git would read them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ConfigFiles(Vec<Option<Vec<u8>>>);

impl ConfigFiles {
    fn read(repository: &crate::sandbox::repository::Repository) -> ConfigFiles {
        let (git, common) = (&repository.git_dir, &repository.common_dir);
        ConfigFiles(
            [
                common.join("config"),
                git.join("config"),
                common.join("config.worktree"),
                git.join("config.worktree"),
            ]
            .iter()
            .map(|f| std::fs::read(f).ok())
            .collect(),
        )
    }
}

/// Whether the repository's config includes other files (`include.path`, `includeIf.*.path`),
/// whose changes its own files do not show: such a config is read again for every checkpoint.
fn includes_others(repo: &Repo) -> bool {
    repo.config().entries.iter().any(|e| {
        e.scope == crate::git::config::Scope::Repository
            && (e.key.starts_with("include.") || e.key.starts_with("includeif."))
    })
}

async fn has_submodule(repo: &Repo) -> Result<bool, String> {
    let listed = repo.run(Hooks::Off, &["ls-files", "--stage", "-z"]).await?;
    if !listed.ok() {
        return Err(format!(
            "git ls-files failed: {}",
            first_line(&listed.stderr)
        ));
    }
    Ok(listed.stdout.split('\0').any(|e| e.starts_with("160000 ")))
}

/// Whether a line of `git add --verbose` names no submodule: a removal, or an addition of what
/// is not a folder. Anything else counts as one.
fn plain(line: &str, work_tree: &Path) -> bool {
    if line.starts_with("remove '") {
        return true;
    }
    let Some(path) = line
        .strip_prefix("add '")
        .and_then(|l| l.strip_suffix('\''))
    else {
        return false;
    };
    std::fs::symlink_metadata(work_tree.join(path)).is_ok_and(|m| !m.is_dir())
}

/// `refs/rawko/tasks/<id>` for task `id` (see [`Checkpoints::ref_prefix`]).
pub fn ref_prefix(task_id: &str) -> String {
    let id: String = task_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("refs/rawko/tasks/{id}")
}

/// Copies the repository's index to the private one, under a temporary name first so a
/// half-written copy is never used. A repository without an index (nothing staged ever) seeds
/// nothing.
fn seed_index(from: &Path, to: &Path) -> Result<(), String> {
    if !from.is_file() {
        return Ok(());
    }
    let temp = to.with_extension("index.seeding");
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::copy(from, &temp)
        .and_then(|_| std::fs::rename(&temp, to))
        .map_err(|e| format!("cannot copy the repository's index: {e}"))
}

async fn resolve(repo: &Repo, rev: &str) -> Result<Option<String>, String> {
    let spec = format!("{rev}^{{commit}}");
    let out = repo
        .run(Hooks::Off, &["rev-parse", "--verify", "-q", &spec])
        .await?;
    Ok(out
        .ok()
        .then(|| out.stdout.trim().to_owned())
        .filter(|s| !s.is_empty()))
}

/// A checkpoint's git commands, run as one script by [`Repo::script`] (`"$@"` is hardened
/// git). Inputs come in the environment; each step's failure has its own exit status.
const TAKE_SCRIPT: &str = r#"
"$@" add -A --verbose || exit 101
tree=$("$@" write-tree) || exit 102
echo "=tree $tree"
if [ -n "$RAWKO_CP_PARENT" ] && [ "$tree" = "$RAWKO_CP_PARENT_TREE" ]; then
    commit=$RAWKO_CP_PARENT
elif [ -n "$RAWKO_CP_PARENT" ]; then
    commit=$("$@" commit-tree --no-gpg-sign "$tree" -p "$RAWKO_CP_PARENT" -m "$RAWKO_CP_MESSAGE") || exit 103
    "$@" update-ref -m "rawko checkpoint" "$RAWKO_CP_LATEST" "$commit" "$RAWKO_CP_PARENT" || exit 104
    echo "=new"
else
    commit=$("$@" commit-tree --no-gpg-sign "$tree" -m "$RAWKO_CP_MESSAGE") || exit 103
    "$@" update-ref -m "rawko checkpoint" "$RAWKO_CP_LATEST" "$commit" || exit 104
    echo "=new"
fi
if [ -n "$RAWKO_CP_PHASE_REF" ]; then
    "$@" update-ref -m "rawko checkpoint" "$RAWKO_CP_PHASE_REF" "$commit" || exit 105
fi
echo "=commit $commit"
"#;

/// The commit `rev` names and its tree.
async fn commit_and_tree(repo: &Repo, rev: &str) -> Result<Option<(String, String)>, String> {
    let Some(commit) = resolve(repo, rev).await? else {
        return Ok(None);
    };
    let spec = format!("{commit}^{{tree}}");
    let tree = ok_line(
        repo.run(Hooks::Off, &["rev-parse", "--verify", "-q", &spec])
            .await?,
        "rev-parse",
    )?;
    Ok(Some((commit, tree)))
}

/// The first line git printed, when it succeeded.
fn ok_line(out: crate::git::Output, what: &str) -> Result<String, String> {
    if !out.ok() {
        return Err(format!("git {what} failed: {}", first_line(&out.stderr)));
    }
    Ok(out
        .stdout
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned())
}

/// `--name-status -z` output: `STATUS\0PATH\0` for each file.
fn name_status(out: &str) -> Vec<ChangedFile> {
    let mut files = Vec::new();
    let mut fields = out.split('\0');
    while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
        let status = match status.chars().next() {
            Some('A') => FileStatus::Added,
            Some('D') => FileStatus::Deleted,
            Some(_) => FileStatus::Modified,
            None => break,
        };
        files.push(ChangedFile {
            path: path.to_owned(),
            status,
        });
    }
    files
}
