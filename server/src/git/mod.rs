//! rawko's own git: every git command rawko runs for itself (the git-commit and git-push hooks,
//! the files a task changed, a session's branch) is built here, hardened (invariant 10).
//!
//! rawko's git runs outside the sandbox (a push needs `~/.ssh` and the user's credential
//! helpers), in a repository whose config the agent can write. So nothing that config names is
//! run: [`config::harden`] overrides on the command line every repository value that names a
//! program (fsmonitor, hooks path, filters, diff and merge drivers, askpass, credential helpers,
//! signing programs, ssh and proxy commands, remote helpers) with the user's own value or one
//! under which nothing runs, and refuses a push whose network settings the agent chose. The
//! repository is the one [`crate::sandbox::repository`] found and verified, named to git
//! explicitly (`GIT_DIR`, `GIT_COMMON_DIR`, `GIT_WORK_TREE`, so `core.worktree` and a `.git`
//! rewritten meanwhile are not followed); the variables that describe another repository (those
//! a git hook inherits, `git rev-parse --local-env-vars`, `-c` values of a parent git among them)
//! are removed from rawko's environment; no pager, no editor, no prompt (`GIT_TERMINAL_PROMPT=0`,
//! stdin null), and no terminal: git runs through the sandbox helper like any command rawko
//! starts, without Landlock, and what it leaves running is ended with it.
//!
//! Hooks run only where the user chose them: [`Hooks::Repository`] (the user's `core.hooksPath`,
//! else the repository's `hooks` directory) for the commit of a git-commit hook without
//! `noVerify` and for a push; [`Hooks::Off`] for everything else, `status` included (git runs
//! `post-index-change` when it refreshes the index).
//!
//! ```no_run
//! # async fn f() -> Result<(), String> {
//! use rawko::git::{Git, Hooks};
//! let repo = Git::new("/work/project").open().await?;
//! let status = repo.run(Hooks::Off, &["status", "--porcelain"]).await?;
//! # Ok(()) }
//! ```

pub mod config;

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::sandbox::repository::{self, Repository};
use crate::sandbox::{self, Supervised, LEFT_RUNNING};
use config::{Config, Hardened, HooksPath};

pub use config::Scope;

/// How long git gets between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(2);
/// How long what git leaves running may go on after it exits.
const LINGER: Duration = Duration::from_millis(200);
/// The most of each output stream kept (the rest is read and dropped).
const OUTPUT_CAP: usize = 16 * 1024 * 1024;

/// Variables of rawko's environment git does not get: those that name another repository, an
/// index, objects or config a parent git was working with (a git hook that started rawko gets
/// them all), and programs the commands here have no use for.
const REMOVED_ENV: &[&str] = &[
    // `git rev-parse --local-env-vars` (2.47).
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
    // More of the same kind.
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_QUARANTINE_PATH",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_REFLOG_ACTION",
    "GIT_LITERAL_PATHSPECS",
    "GIT_GLOB_PATHSPECS",
    "GIT_NOGLOB_PATHSPECS",
    "GIT_ICASE_PATHSPECS",
    "GIT_EXTERNAL_DIFF",
    "GIT_DIFF_OPTS",
];

/// Which hooks a command may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hooks {
    /// None.
    Off,
    /// Those in the user's `core.hooksPath`, else in the repository's `hooks` directory (never a
    /// hooks path the repository's config sets).
    Repository,
}

/// What a git command printed and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }
}

/// How to run git for a directory: where, with what the agent may write, for how long. Opening
/// it ([`Git::open`]) finds the repository and reads its config.
#[derive(Debug, Clone)]
pub struct Git {
    workdir: PathBuf,
    agent_writable: Vec<PathBuf>,
    timeout: Duration,
    env: Vec<(OsString, OsString)>,
}

/// A repository rawko's git may run in, with its config read.
#[derive(Debug, Clone)]
pub struct Repo {
    git: Git,
    repository: Repository,
    config: Config,
}

impl Git {
    /// Git for `workdir` (a workspace); the agent may write it. 60 s per command.
    pub fn new(workdir: impl Into<PathBuf>) -> Self {
        let workdir = workdir.into();
        Git {
            agent_writable: vec![workdir.clone()],
            workdir,
            timeout: Duration::from_secs(60),
            env: Vec::new(),
        }
    }

    /// What the agent may write besides the workdir (the task's temp dir, the user's
    /// `allowWrite` paths): a `.git` or a push remote there is not followed.
    pub fn agent_writable(mut self, roots: Vec<PathBuf>) -> Self {
        for root in roots {
            if !self.agent_writable.contains(&root) {
                self.agent_writable.push(root);
            }
        }
        self
    }

    /// The time limit of each git command.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// A variable every git command gets, set after rawko's own (a private `GIT_INDEX_FILE`;
    /// tests give `HOME`). It is also read in place of rawko's for `GIT_SSH_COMMAND`, `GIT_SSH`
    /// and `GIT_PROXY_COMMAND`.
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    /// rawko's variable `name`, or the one given with [`Git::env`].
    fn var(&self, name: &str) -> Option<OsString> {
        self.env
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var_os(name))
    }

    /// The repository, verified; the reason for the user when there is none rawko's git may use.
    fn find(&self) -> Result<Repository, String> {
        let workdir = self
            .workdir
            .canonicalize()
            .map_err(|e| format!("cannot use {}: {e}", self.workdir.display()))?;
        let found = repository::discover(&workdir, &self.agent_writable);
        match (found.repository, found.ignored) {
            (Some(r), _) => Ok(r),
            (None, Some(why)) => Err(why),
            (None, None) => Err(format!("{} is not a git repository", workdir.display())),
        }
    }

    /// Finds the repository and reads its config (one git process, which runs nothing).
    pub async fn open(self) -> Result<Repo, String> {
        let repo = self.unread()?;
        let out = repo.run(Hooks::Off, &LIST_CONFIG).await?;
        repo.with_config(&out)
    }

    /// [`Git::open`] for a caller that cannot wait asynchronously.
    pub fn open_blocking(self) -> Result<Repo, String> {
        let repo = self.unread()?;
        let out = repo.run_blocking(Hooks::Off, &LIST_CONFIG)?;
        repo.with_config(&out)
    }

    /// The repository the workdir is in, as [`Git::open`] would find it (discovery alone: no
    /// git process, the config unread).
    pub fn discover(&self) -> Result<Repository, String> {
        self.find()
    }

    /// Whether the workdir is in a repository rawko's git may use (discovery alone: no git
    /// process, the config unread).
    pub fn has_repository(&self) -> bool {
        self.find().is_ok()
    }

    /// A repository of rawko's own at `git_dir` whose work tree is the workdir (a task's private
    /// checkpoints of a workspace that is no git repository), created on first use. Nothing is
    /// discovered: `git_dir` is rawko's, outside what the agent may write.
    pub async fn open_private(self, git_dir: &Path) -> Result<Repo, String> {
        let work_tree = self
            .workdir
            .canonicalize()
            .map_err(|e| format!("cannot use {}: {e}", self.workdir.display()))?;
        std::fs::create_dir_all(git_dir)
            .map_err(|e| format!("cannot create {}: {e}", git_dir.display()))?;
        let git_dir = git_dir
            .canonicalize()
            .map_err(|e| format!("cannot use {}: {e}", git_dir.display()))?;
        let repo = Repo {
            git: self,
            repository: Repository {
                work_tree,
                common_dir: git_dir.clone(),
                git_dir: git_dir.clone(),
            },
            config: Config::default(),
        };
        if !git_dir.join("HEAD").is_file() {
            // `init` with GIT_DIR and GIT_WORK_TREE named makes the repository at GIT_DIR.
            let out = repo.run(Hooks::Off, &["init", "-q"]).await?;
            if !out.ok() {
                return Err(format!(
                    "cannot create a git repository in {}: {}",
                    git_dir.display(),
                    first_line(&out.stderr)
                ));
            }
        }
        let out = repo.run(Hooks::Off, &LIST_CONFIG).await?;
        repo.with_config(&out)
    }

    fn unread(self) -> Result<Repo, String> {
        let repository = self.find()?;
        Ok(Repo {
            git: self,
            repository,
            config: Config::default(),
        })
    }
}

const LIST_CONFIG: [&str; 4] = ["config", "--list", "--show-scope", "-z"];

impl Repo {
    fn with_config(mut self, out: &Output) -> Result<Repo, String> {
        if !out.ok() {
            return Err(format!(
                "cannot read the repository's git config: {}",
                first_line(&out.stderr)
            ));
        }
        self.config = Config::parse(out.stdout.as_bytes());
        self.check_owner()?;
        Ok(self)
    }

    pub fn repository(&self) -> &Repository {
        &self.repository
    }

    /// The same repository, its commands run with one more variable (a later value of a name
    /// replaces an earlier one): a scratch `GIT_INDEX_FILE`, say.
    pub fn with_env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Repo {
        self.git = self.git.env(name, value);
        self
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// git refuses a repository another user owns unless the user's `safe.directory` allows
    /// it; naming the repository explicitly, as rawko does, skips that check, so it is made here.
    fn check_owner(&self) -> Result<(), String> {
        let me = nix::unistd::geteuid().as_raw();
        let sudo = std::env::var("SUDO_UID")
            .ok()
            .and_then(|u| u.parse::<u32>().ok());
        let mine = |p: &Path| {
            std::fs::metadata(p)
                .map(|m| m.uid() == me || (me == 0 && Some(m.uid()) == sudo))
                .unwrap_or(false)
        };
        let work_tree = &self.repository.work_tree;
        if mine(work_tree) && mine(&self.repository.git_dir) {
            return Ok(());
        }
        let mut allowed = false;
        for value in self.config.user_all("safe.directory") {
            allowed = match value {
                "" => false,
                "*" => true,
                v => {
                    let v = match (v.strip_prefix("~/"), self.git.var("HOME")) {
                        (Some(rest), Some(home)) => Path::new(&home).join(rest),
                        _ => PathBuf::from(v),
                    };
                    allowed
                        || match v.to_str().and_then(|v| v.strip_suffix("/*")) {
                            Some(prefix) => work_tree.starts_with(prefix),
                            None => v.canonicalize().is_ok_and(|p| &p == work_tree),
                        }
                }
            };
        }
        if allowed {
            return Ok(());
        }
        Err(format!(
            "git does not trust {0}: it is owned by someone else (if you trust it: git config --global --add safe.directory {0})",
            work_tree.display()
        ))
    }

    /// The overrides for a command with `hooks` (pushing to `remote`).
    fn hardened(&self, hooks: Hooks, remote: Option<&str>) -> Hardened {
        let path = match hooks {
            Hooks::Off => HooksPath::Off,
            Hooks::Repository => HooksPath::Users(self.repository.common_dir.join("hooks")),
        };
        config::harden(&self.config, &path, remote, &|name| self.git.var(name))
    }

    /// The command that runs `git ARGS` hardened, through the sandbox helper when this process
    /// has one (the second value says whether it does). Output and stdin are the caller's.
    pub fn command(&self, hooks: Hooks, args: &[&str]) -> (tokio::process::Command, bool) {
        self.command_with(&self.hardened(hooks, None), args)
    }

    fn command_with(&self, hardened: &Hardened, args: &[&str]) -> (tokio::process::Command, bool) {
        self.command_in(hardened, None, args)
    }

    /// `git ARGS` hardened or, with `script`, `sh -c SCRIPT` given the hardened git command as
    /// its positional parameters (so `"$@" ARGS` in the script runs git as [`Repo::run`] would).
    fn command_in(
        &self,
        hardened: &Hardened,
        script: Option<&str>,
        args: &[&str],
    ) -> (tokio::process::Command, bool) {
        let mut argv: Vec<OsString> = vec!["--no-pager".into()];
        let mut config_env: Vec<(String, &str)> = Vec::new();
        for (key, value) in &hardened.config {
            if key.contains('=') {
                // `-c` splits at the first `=`; `--config-env` at the last.
                let name = format!("RAWKO_GIT_CONFIG_{}", config_env.len());
                argv.push(format!("--config-env={key}={name}").into());
                config_env.push((name, value));
            } else {
                argv.push("-c".into());
                argv.push(format!("{key}={value}").into());
            }
        }
        argv.extend(args.iter().map(OsString::from));
        let (program, argv) = match script {
            None => ("git".into(), argv),
            Some(script) => {
                let mut sh: Vec<OsString> = vec!["-c".into(), script.into(), "rawko-git".into()];
                sh.push("git".into());
                sh.extend(argv);
                ("sh".into(), sh)
            }
        };
        let (mut cmd, helper) = sandbox::program_command(program, argv, None, GRACE, LINGER);
        for name in REMOVED_ENV {
            cmd.env_remove(name);
        }
        let r = &self.repository;
        cmd.env("GIT_DIR", &r.git_dir)
            .env("GIT_COMMON_DIR", &r.common_dir)
            .env("GIT_WORK_TREE", &r.work_tree)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_EDITOR", "true")
            .env("GIT_SEQUENCE_EDITOR", "true")
            .env("GIT_PAGER", "cat");
        for (name, value) in &hardened.env {
            cmd.env(name, value);
        }
        for (name, value) in config_env {
            cmd.env(name, value);
        }
        for (name, value) in &self.git.env {
            cmd.env(name, value);
        }
        cmd.current_dir(&self.git.workdir);
        (cmd, helper)
    }

    /// Runs `git ARGS` to its end (or its time limit).
    pub async fn run(&self, hooks: Hooks, args: &[&str]) -> Result<Output, String> {
        let (cmd, helper) = self.command(hooks, args);
        self.finish(cmd, helper, args).await
    }

    /// Runs `script` with `sh -c` through one start of the sandbox helper, its positional
    /// parameters the hardened git command with hooks off: several git commands for the price of
    /// one helper (a checkpoint's four). `env` is set for the script. The script's text is
    /// rawko's own, never an input's; inputs reach it only through `env`.
    pub async fn script(&self, script: &str, env: &[(&str, &str)]) -> Result<Output, String> {
        let (mut cmd, helper) =
            self.command_in(&self.hardened(Hooks::Off, None), Some(script), &[]);
        // What a shell reads at its start beside the script.
        cmd.env_remove("ENV").env_remove("BASH_ENV");
        for (name, value) in env {
            cmd.env(name, value);
        }
        self.finish(cmd, helper, &["(script)"]).await
    }

    async fn finish(
        &self,
        mut cmd: tokio::process::Command,
        helper: bool,
        args: &[&str],
    ) -> Result<Output, String> {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut process = Supervised::spawn(cmd, helper, GRACE).map_err(cannot_run)?;
        let child = process.child();
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let work = async {
            let (out, err, status) = tokio::join!(read(stdout), read(stderr), process.wait());
            (out, err, status)
        };
        match tokio::time::timeout(self.git.timeout, work).await {
            Ok((out, err, Ok(status))) => output(status.code(), &out, &err),
            Ok((_, _, Err(e))) => Err(format!("cannot run git: {e}")),
            // Dropping the process ends git and what it started.
            Err(_) => Err(timed_out(args, self.git.timeout)),
        }
    }

    /// [`Repo::run`] for a caller that cannot wait asynchronously.
    pub fn run_blocking(&self, hooks: Hooks, args: &[&str]) -> Result<Output, String> {
        let (cmd, helper) = self.command(hooks, args);
        let built = cmd.as_std();
        let mut std_cmd = std::process::Command::new(built.get_program());
        std_cmd.args(built.get_args());
        for (name, value) in built.get_envs() {
            match value {
                Some(v) => std_cmd.env(name, v),
                None => std_cmd.env_remove(name),
            };
        }
        if let Some(dir) = built.get_current_dir() {
            std_cmd.current_dir(dir);
        }
        if helper {
            std_cmd.arg0("rawko");
        }
        std_cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = std_cmd.spawn().map_err(cannot_run)?;
        let stdout = child.stdout.take().map(drain);
        let stderr = child.stderr.take().map(drain);
        let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
        let until = Instant::now() + self.git.timeout;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
                _ => break None,
            }
        };
        let Some(status) = status else {
            // The helper ends what git started within its grace; then everything is killed.
            let _ = if helper {
                kill(pid, Signal::SIGTERM)
            } else {
                killpg(pid, Signal::SIGKILL)
            };
            let until = Instant::now() + GRACE + Duration::from_secs(1);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = killpg(pid, Signal::SIGKILL);
            let _ = child.kill();
            let _ = child.wait();
            return Err(timed_out(args, self.git.timeout));
        };
        let joined = |r: Option<std::thread::JoinHandle<Vec<u8>>>| {
            r.and_then(|r| r.join().ok()).unwrap_or_default()
        };
        let (out, err) = (joined(stdout), joined(stderr));
        output(status.code(), &out, &err)
    }

    /// `git add -A` without looking inside a submodule: git would run `git status` there, under
    /// the submodule's own config (the agent's too, with its filters). The submodules are left
    /// out of the `add`, and each one's checked-out commit is staged as it is (or its removal).
    pub async fn add_all(&self, hooks: Hooks) -> Result<Output, String> {
        let listed = self.run(Hooks::Off, &["ls-files", "--stage", "-z"]).await?;
        if !listed.ok() {
            return Ok(listed);
        }
        // `MODE SHA STAGE\tPATH`, NUL after each.
        let links: Vec<(&str, &str)> = listed
            .stdout
            .split('\0')
            .filter_map(|entry| {
                let (meta, path) = entry.split_once('\t')?;
                let mut meta = meta.split(' ');
                (meta.next()? == "160000").then_some((meta.next()?, path))
            })
            .collect();
        if links.is_empty() {
            return self.run(hooks, &["add", "-A"]).await;
        }
        let excluded: Vec<String> = links
            .iter()
            .map(|(_, path)| format!(":(top,exclude,literal){path}"))
            .collect();
        let mut args = vec!["add", "-A", "--", ":/"];
        args.extend(excluded.iter().map(String::as_str));
        let added = self.run(hooks, &args).await?;
        if !added.ok() {
            return Ok(added);
        }
        for (staged, path) in links {
            let dir = self.repository.work_tree.join(path);
            let entry = if std::fs::symlink_metadata(&dir).is_err() {
                vec![
                    "update-index".to_owned(),
                    "--force-remove".into(),
                    "--".into(),
                    path.into(),
                ]
            } else {
                match self.submodule_head(&dir).await {
                    Some(head) if head != staged => vec![
                        "update-index".to_owned(),
                        "--cacheinfo".into(),
                        format!("160000,{head},{path}"),
                    ],
                    _ => continue,
                }
            };
            let args: Vec<&str> = entry.iter().map(String::as_str).collect();
            let out = self.run(hooks, &args).await?;
            if !out.ok() {
                return Ok(out);
            }
        }
        Ok(added)
    }

    /// The commit checked out in the submodule at `dir`, read by rawko's git there (so through
    /// the same discovery: a `.git` the agent pointed elsewhere is not followed).
    async fn submodule_head(&self, dir: &Path) -> Option<String> {
        let git = Git {
            workdir: dir.to_owned(),
            ..self.git.clone()
        };
        let sub = git.open().await.ok()?;
        if Some(&sub.repository.work_tree) != dir.canonicalize().ok().as_ref() {
            // Not checked out: what was found is the superproject.
            return None;
        }
        let out = sub
            .run(Hooks::Off, &["rev-parse", "--verify", "-q", "HEAD"])
            .await
            .ok()?;
        out.ok().then(|| out.stdout.trim().to_owned())
    }

    /// The URLs a push to `remote` goes to (`url.<base>.insteadOf` and `pushInsteadOf`
    /// applied), checked: a repository on this machine the agent can write is refused, since a
    /// push runs that repository's hooks, outside the sandbox.
    pub async fn check_push_remote(&self, remote: &str) -> Result<(), String> {
        let out = self
            .run(
                Hooks::Off,
                &["remote", "get-url", "--push", "--all", remote],
            )
            .await?;
        if !out.ok() {
            return Err(first_line(&out.stderr));
        }
        for url in out.stdout.lines().filter(|l| !l.is_empty()) {
            let Some(path) = local_path(url, &self.repository.work_tree) else {
                continue;
            };
            if self.agent_can_write(&path) {
                return Err(format!(
                    "{remote} leads to {}, a repository the agent can write: a push runs its hooks outside the sandbox, so rawko does not push there",
                    path.display()
                ));
            }
        }
        Ok(())
    }

    /// Whether `path` (absolute) is within what the agent may write, by name or once its
    /// links are followed (also as git tries it: `PATH.git`, `PATH/.git`).
    fn agent_can_write(&self, path: &Path) -> bool {
        let mut roots: Vec<PathBuf> = Vec::new();
        for root in &self.git.agent_writable {
            roots.push(root.clone());
            roots.extend(root.canonicalize().ok());
        }
        let within = |p: &Path| roots.iter().any(|r| p.starts_with(r));
        let with_git = {
            let mut name = path.as_os_str().to_owned();
            name.push(".git");
            PathBuf::from(name)
        };
        within(path)
            || [path.to_owned(), with_git, path.join(".git")]
                .iter()
                .filter_map(|p| p.canonicalize().ok())
                .any(|p| within(&p))
    }

    /// `git push` of `branch` to `remote` with `--set-upstream --porcelain`, hardened for a push:
    /// the remote's programs are git's own (`--receive-pack`), submodules are not pushed (their
    /// config is the agent's too) unless the user's `push.recurseSubmodules` is `check`, and a
    /// push whose network settings the repository chose is refused.
    pub async fn push(&self, remote: &str, branch: &str) -> Result<Output, String> {
        let hardened = self.hardened(Hooks::Repository, Some(remote));
        if let Some(why) = &hardened.push_refusal {
            return Err(why.clone());
        }
        let receive_pack = self
            .config
            .user(&format!("remote.{remote}.receivepack"))
            .unwrap_or("git-receive-pack");
        let recurse = match self.config.user("push.recursesubmodules") {
            Some("check") => "check",
            _ => "no",
        };
        let receive_pack = format!("--receive-pack={receive_pack}");
        let recurse = format!("--recurse-submodules={recurse}");
        let args = [
            "push",
            "--set-upstream",
            "--porcelain",
            &receive_pack,
            &recurse,
            remote,
            branch,
        ];
        let (cmd, helper) = self.command_with(&hardened, &args);
        self.finish(cmd, helper, &args).await
    }
}

impl Repo {
    /// Pushes `refspec` to the repository at `url` (a URL rawko was given, never a remote the
    /// repository's config names): `rawko worker`'s push of a task's checkpoint to its branch.
    /// No upstream is set and no hook runs.
    pub async fn push_to_url(&self, url: &str, refspec: &str) -> Result<Output, String> {
        let hardened = self.hardened(Hooks::Off, None);
        if let Some(why) = &hardened.push_refusal {
            return Err(why.clone());
        }
        let args = [
            "push",
            "--porcelain",
            "--recurse-submodules=no",
            "--no-verify",
            url,
            refspec,
        ];
        let (cmd, helper) = self.command_with(&hardened, &args);
        self.finish(cmd, helper, &args).await
    }
}

/// The local path a git URL names, or `None` for a network URL or a remote helper's
/// (`transport::address`). git's rules: `file://`; a `scheme://`; `host:path` when no `/` comes
/// before the `:`; anything else is a path, relative to the work tree's top.
fn local_path(url: &str, work_tree: &Path) -> Option<PathBuf> {
    let path = if let Some(rest) = url.strip_prefix("file://") {
        rest.strip_prefix("localhost").unwrap_or(rest).to_owned()
    } else {
        let before_slash = url.split('/').next().unwrap_or_default();
        if url.contains("://") || before_slash.contains(':') {
            return None;
        }
        url.to_owned()
    };
    Some(crate::paths::lexical(&work_tree.join(path)))
}

async fn read(stream: Option<impl AsyncRead + Unpin>) -> Vec<u8> {
    let mut kept = Vec::new();
    let Some(mut stream) = stream else {
        return kept;
    };
    let mut buf = vec![0; 64 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return kept,
            Ok(n) => {
                let room = OUTPUT_CAP.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}

/// Reads a blocking stream to its end on a thread of its own.
fn drain(mut stream: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = vec![0; 64 * 1024];
        loop {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => return kept,
                Ok(n) => {
                    let room = OUTPUT_CAP.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
    })
}

fn output(code: Option<i32>, out: &[u8], err: &[u8]) -> Result<Output, String> {
    // The helper's word that it ended what git left running is not git's.
    let err = err.strip_suffix(LEFT_RUNNING).unwrap_or(err);
    let stderr = String::from_utf8_lossy(err).into_owned();
    if code == Some(127) && stderr.starts_with("rawko: cannot start git") {
        // The helper could not find git.
        return Err("git is not installed (not found on PATH)".to_owned());
    }
    Ok(Output {
        code,
        stdout: String::from_utf8_lossy(out).into_owned(),
        stderr,
    })
}

fn cannot_run(e: std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "git is not installed (not found on PATH)".to_owned(),
        _ => format!("cannot run git: {e}"),
    }
}

fn timed_out(args: &[&str], timeout: Duration) -> String {
    format!(
        "git {} did not finish within {} s",
        args.first().unwrap_or(&""),
        timeout.as_secs()
    )
}

/// The first line of git's message, without its `fatal: ` or `error: `.
pub fn first_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .trim_start_matches("fatal: ")
        .trim_start_matches("error: ")
        .to_owned()
}

#[cfg(test)]
mod tests;
