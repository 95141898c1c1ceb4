//! The `rawko` command line: argument parsing and dispatch. Each command writes to the writers it
//! is given, so tests run it in process and the binary hands it stdout and stderr.

mod agents;
mod demo;
mod diff;
mod external;
mod hooks;
mod init;
mod rewind;
mod run;
mod tasks;
pub mod team;
mod terminal;
mod workflows;

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

/// What a command hands to the process: its exit status.
pub type ExitCode = i32;

/// Everything went as asked.
pub const EXIT_OK: ExitCode = 0;
/// The command ran and found problems (an invalid workflow, an unknown key).
pub const EXIT_PROBLEMS: ExitCode = 1;
/// The command could not run as given (bad arguments, a missing workspace).
pub const EXIT_USAGE: ExitCode = 2;

#[derive(Debug, Parser)]
#[command(
    name = "rawko",
    version,
    about = "Runs coding-agent tasks through phased workflows and keeps agents on the rails",
    long_about = "rawko runs coding-agent tasks through phased workflows: it gates every tool call by the \
current phase, injects the phase's context before each agent turn, and reminds an agent that stops early.\n\n\
Workflows are read from ~/.config/rawko/workflows, ~/.pi/agent/workflows, <workspace>/.pi/workflows and \
<workspace>/.rawko/workflows (later roots override earlier ones by key).\n\n\
Start with `rawko demo` (a whole task, offline), `rawko init` (a starter workflow and agents), then \
`rawko workflows show feature` and `rawko run \"TASK\" --workflow feature`. Settings: docs/configuration.md."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// The project directory [default: the current directory]
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Print machine-readable JSON instead of text
    #[arg(long, global = true)]
    pub json: bool,
}

/// `--web [ADDR]` of `rawko serve` and `rawko run`: the page beside the editor or the terminal.
#[derive(Debug, Args, Clone, Default)]
pub struct WebArgs {
    /// Also serve the web page of the tasks and their approvals (docs/web.md) on ADDR; its
    /// address, with its token, goes to stderr [default ADDR: 127.0.0.1:0, a free port]
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::web::DEFAULT_LISTEN)]
    pub web: Option<String>,
    /// The page's TLS certificate chain (PEM), needed for an ADDR other machines reach
    #[arg(long, value_name = "FILE", requires = "web")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM)
    #[arg(long, value_name = "FILE", requires = "web")]
    pub tls_key: Option<PathBuf>,
    /// Serve the page over plain HTTP on an ADDR other machines reach (a network that is all
    /// yours, such as a tailnet)
    #[arg(long, requires = "web")]
    pub insecure_http: bool,
}

impl WebArgs {
    /// The web face's options, if `--web` was given.
    pub fn options(&self) -> Option<crate::web::WebOptions> {
        let listen = self.web.clone()?;
        Some(crate::web::WebOptions {
            listen: Some(listen),
            tls_cert: self.tls_cert.clone(),
            tls_key: self.tls_key.clone(),
            insecure_http: self.insecure_http,
        })
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List, validate and preview workflows
    #[command(subcommand)]
    Workflows(WorkflowsCommand),
    /// List and validate agents (from ~/.config/rawko/agents and <workspace>/.rawko/agents)
    #[command(subcommand)]
    Agents(AgentsCommand),
    /// Write the starter workflows and agents into <workspace>/.rawko
    Init {
        /// Overwrite files that already exist
        #[arg(long)]
        force: bool,
    },
    /// Run a task headless in this terminal: streamed text, a line per phase, approvals asked
    /// here; exit status 0 complete, 1 failed, 130 cancelled (Ctrl-C)
    Run {
        /// What the task is
        task: Option<String>,
        /// The workflow to run it through (key or command name)
        #[arg(long, value_name = "KEY")]
        workflow: Option<String>,
        /// The agent to start with
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
        /// The model provider: anthropic, openai (any OpenAI-compatible server), scripted, or acp
        /// (an ACP agent such as claude-code-acp, run on rawko's rails)
        #[arg(long, value_name = "NAME")]
        provider: Option<String>,
        /// The model to ask
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
        /// The file of turns for `--provider scripted`
        #[arg(long, value_name = "FILE")]
        script: Option<PathBuf>,
        /// The provider's base URL (an Ollama, llama.cpp or vLLM server, say)
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        /// The agent to run for `--provider acp`, as a command line, e.g. "claude-code-acp" or
        /// "gemini --acp" (default: the acp provider's command in config.json)
        #[arg(long, value_name = "COMMAND")]
        agent_command: Option<String>,
        /// Allow every blocked tool call without asking
        #[arg(long, conflicts_with = "deny")]
        yes: bool,
        /// Deny every blocked tool call without asking
        #[arg(long)]
        deny: bool,
        /// Continue a task from the task store instead of starting one
        #[arg(long, value_name = "ID", conflicts_with = "task")]
        resume: Option<String>,
        #[command(flatten)]
        web: WebArgs,
    },
    /// List and inspect the tasks kept in the task store
    #[command(subcommand)]
    Tasks(TasksCommand),
    /// Show what a task changed in the workspace, or what one phase of it changed, as a unified
    /// diff between the checkpoints rawko took (at each phase's entry and after each call that
    /// may have changed files)
    #[command(
        after_help = "PHASE is the phase's id (its file name without .md, e.g. implement), its name (any case) or its number in the workflow (from 1). A phase's diff runs from the checkpoint taken when the task (last) entered it to the one taken when it next entered a phase, or to the latest while it is still there; without --phase, from the task's first checkpoint to its latest. Paths are relative to the top of the repository.

Examples:
  rawko diff task-1767225600000-1                    # everything the task changed
  rawko diff task-1767225600000-1 --phase implement    # what Implement changed
  rawko diff task-1767225600000-1 --phase 2 --json     # {diff, files, from, to}

See docs/checkpoints.md for where checkpoints are kept and what they cost."
    )]
    Diff {
        /// The task id, as `rawko tasks list` shows it
        task: String,
        /// Only what this phase changed: its id, name or number (from 1)
        #[arg(long, value_name = "PHASE")]
        phase: Option<String>,
    },
    /// Take a task back to the start of one of its phases: the workspace's files as they were
    /// when the task entered it, and the task itself (its conversation and position) back
    /// there, ready to resume
    #[command(
        after_help = "rawko keeps a checkpoint of the workspace each time a task enters a phase and after \
each call that may change files (docs/checkpoints.md). A rewind restores the files the task changed \
since the phase's checkpoint and removes the ones created since; ignored files, anything outside the \
workspace, and your HEAD, index, branches and stash are left alone, and a symlink is never followed. \
It prints one line per file, `restore PATH` or `remove PATH`.\n\n\
A file changed after the task's last checkpoint by someone other than the task (you, say) stops the \
rewind with exit status 1, naming it, unless --force. The workspace as it was just before a rewind \
is kept as a checkpoint too (`rawko tasks show TASK` names it), so a rewind can be undone by hand.\n\n\
Examples:\n  rawko rewind task-1795-1 --to implement --dry-run   # what would change\n  \
rawko rewind task-1795-1 --to implement             # then: rawko run --resume task-1795-1\n  \
rawko rewind task-1795-1 --to 2 --force"
    )]
    Rewind {
        /// The task id, as `rawko tasks list` shows it
        #[arg(value_name = "TASK")]
        task: String,
        /// The phase to go back to the start of: its id (the phase file's name without .md, e.g.
        /// implement), its name (in any case) or its number in the workflow (from 1)
        #[arg(long, value_name = "PHASE")]
        to: String,
        /// List what would change and change nothing
        #[arg(long)]
        dry_run: bool,
        /// Also overwrite or remove files changed after the task's last checkpoint by someone
        /// other than the task
        #[arg(long)]
        force: bool,
    },
    /// Show the orchestrator's state machine
    Machine {
        /// Print it as a Mermaid state chart (stateDiagram-v2)
        #[arg(long)]
        mermaid: bool,
    },
    /// Trust this workspace's hooks (from <workspace>/.rawko/config.json) so they run; rawko asks
    /// again when they change
    Trust {
        /// Stop trusting the workspace: its hooks no longer run
        #[arg(long)]
        revoke: bool,
    },
    /// The sessions recorded: each `rawko serve` or `rawko run` is one
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Show the settings and hooks in effect, or turn the git hooks on and off
    #[command(subcommand)]
    Config(ConfigCommand),
    /// For an external agent's hooks: answer one hook event (its JSON on stdin) from the rawko
    /// server of the workspace, in the agent's format; `rawko hook install --claude`,
    /// `--gemini` or `--codex` sets the hooks up
    #[command(
        after_help = "Examples:\n  rawko hook install --claude --workflow feature   # Claude Code: .claude/settings.local.json, .mcp.json\n  rawko hook install --gemini --workflow feature   # Gemini CLI: .gemini/settings.json\n  rawko hook install --codex --workflow feature    # Codex: .codex/hooks.json, .codex/config.toml\n  rawko hook install --gemini --uninstall          # remove rawko's entries, nothing else\n\nSee docs/external-agents.md for what each event does."
    )]
    Hook {
        /// The hook event (Claude Code's SessionStart, UserPromptSubmit, PreToolUse, PostToolUse,
        /// Stop, SessionEnd; with --gemini, Gemini CLI's SessionStart, BeforeAgent,
        /// BeforeToolSelection, BeforeTool, AfterTool, AfterAgent, PreCompress; with --codex,
        /// Codex's SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop, SessionEnd), or
        /// `install`
        #[arg(value_name = "EVENT")]
        event: String,
        /// The workflow a new session runs [default: the configured defaultWorkflow]
        #[arg(long, value_name = "KEY")]
        workflow: Option<String>,
        /// Block (exit 2) when no rawko server answers, instead of letting the call through
        #[arg(long)]
        fail_closed: bool,
        /// With `install`: set up Claude Code (.claude/settings.local.json and .mcp.json)
        #[arg(long, conflicts_with_all = ["gemini", "codex"])]
        claude: bool,
        /// The event is Gemini CLI's; with `install`: set up Gemini CLI (.gemini/settings.json)
        #[arg(long, conflicts_with = "codex")]
        gemini: bool,
        /// The event is Codex CLI's; with `install`: set up Codex (.codex/hooks.json and
        /// .codex/config.toml)
        #[arg(long)]
        codex: bool,
        /// With `install`: remove what `install` added
        #[arg(long)]
        uninstall: bool,
    },
    /// An MCP server on stdio with workflow_step, workflow_status and workflow_start, for an
    /// external agent to move its rawko workflow itself
    Mcp,
    /// Run the JSON-RPC server on stdin/stdout (LSP framing) for an editor; with --nats, the
    /// team's tasks on NATS are shown beside the editor's own and their blocked calls asked
    /// there (docs/team.md)
    Serve {
        /// Accepted for editors that pass it; stdio is the only transport
        #[arg(long)]
        stdio: bool,
        #[command(flatten)]
        web: WebArgs,
        #[command(flatten)]
        nats: team::NatsArgs,
    },
    /// Take queued team tasks of this clone's repository from NATS and run them (docs/team.md):
    /// each in a clone of its own on the branch rawko/TASK_ID, its log in JetStream, its
    /// checkpoints pushed to the branch; a lost worker's task goes on on another worker
    #[command(
        after_help = "The workspace (--workspace DIR) is a clone: the worker serves the repository its `origin` \
names and pushes each task's work to the branch rawko/<task id> there. Tasks run as `rawko serve` runs its \
own: the same workflows, gate, hooks and sandbox settings of the user running the worker. Stop with Ctrl-C \
or SIGTERM: the tasks it holds go back to the queue at once."
    )]
    Worker {
        #[command(flatten)]
        nats: team::NatsArgs,
        /// The worker's name, shown with its tasks [default: HOST-PID]
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
        /// How many tasks it runs at once
        #[arg(long, value_name = "N", default_value_t = 4)]
        max_tasks: usize,
        /// Seconds after a lost worker's last heartbeat before its task goes to another worker
        /// (the repository's workers share it: the last worker started sets it)
        #[arg(long, value_name = "SECS", default_value_t = 25)]
        ack_wait: u64,
        /// Where it keeps its task store and the tasks' clones [default:
        /// $XDG_STATE_HOME/rawko/workers/NAME]
        #[arg(long, value_name = "DIR")]
        state_dir: Option<PathBuf>,
    },
    /// Queue a task for the team's workers of a repository (docs/team.md); prints its id
    Submit {
        /// What the task is
        task: String,
        #[command(flatten)]
        nats: team::NatsArgs,
        /// The workflow to run it through (key or command name)
        #[arg(long, value_name = "KEY")]
        workflow: Option<String>,
        /// The model provider (as for `rawko run`)
        #[arg(long, value_name = "NAME")]
        provider: Option<String>,
        /// The model to ask
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
        /// The file of turns for `--provider scripted`: its contents travel with the task
        #[arg(long, value_name = "FILE")]
        script: Option<PathBuf>,
        /// The provider's base URL
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        /// The repository [default: the workspace clone's origin]
        #[arg(long, value_name = "URL")]
        repo: Option<String>,
    },
    /// Serve a web page of the workspace's tasks and their approvals, for any browser (a phone
    /// included): follow tasks, answer blocked calls, start, cancel, interrupt and resume tasks;
    /// with --nats, the team's tasks and their blocked calls too (docs/team.md). Prints one
    /// line, `rawko web: http://HOST:PORT/?token=TOKEN`, and runs until Ctrl-C
    #[command(
        after_help = "The address carries a token made for this start: open it once and the browser keeps a \
cookie. The page listens on this machine only (127.0.0.1) unless --listen names another address, \
which then needs --tls-cert and --tls-key (or --insecure-http). From a phone, forward the port \
(`ssh -L 8080:127.0.0.1:8080 host`) or use a tailnet. See docs/web.md."
    )]
    Web {
        /// Where to listen [default: 127.0.0.1:0, a free port on this machine]
        #[arg(long, value_name = "ADDR")]
        listen: Option<String>,
        /// The TLS certificate chain (PEM), needed for an address other machines reach
        #[arg(long, value_name = "FILE")]
        tls_cert: Option<PathBuf>,
        /// The private key of --tls-cert (PEM)
        #[arg(long, value_name = "FILE")]
        tls_key: Option<PathBuf>,
        /// Serve plain HTTP on an address other machines reach (a network that is all yours,
        /// such as a tailnet)
        #[arg(long)]
        insecure_http: bool,
        /// The model provider of tasks started from the page: anthropic, openai, scripted or
        /// acp [default: the first configured]
        #[arg(long, value_name = "NAME")]
        provider: Option<String>,
        /// The model to ask
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
        /// The file of turns for `--provider scripted`
        #[arg(long, value_name = "FILE")]
        script: Option<PathBuf>,
        /// The provider's base URL (an Ollama, llama.cpp or vLLM server, say)
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        #[command(flatten)]
        nats: team::NatsArgs,
    },
    /// Serve an Agent Client Protocol client (Zed, JetBrains, Neovim, Emacs) on stdin/stdout:
    /// each prompt runs a rawko task with its workflow's phases, gate, approvals and reminders
    Acp {
        /// The model provider each task uses: anthropic, openai or scripted [default: the first
        /// configured]
        #[arg(long, value_name = "NAME")]
        provider: Option<String>,
        /// The model to ask
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
        /// The file of turns for `--provider scripted`
        #[arg(long, value_name = "FILE")]
        script: Option<PathBuf>,
        /// The provider's base URL (an Ollama, llama.cpp or vLLM server, say)
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        /// The mode (workflow) a new session starts in [default: the defaultWorkflow setting]
        #[arg(long, value_name = "KEY")]
        workflow: Option<String>,
    },
    /// Watch a scripted agent run the starter workflow, offline: breadcrumb, streamed text, a
    /// blocked tool call, the countdown and reminder, completion
    Demo {
        /// Ask about the blocked tool call instead of answering it automatically
        #[arg(long)]
        interactive: bool,
        /// Run in this directory instead of a fresh temporary one (existing files are kept)
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Length of one countdown tick in milliseconds
        #[arg(long, value_name = "MS", default_value_t = 1000, hide = true)]
        tick_ms: u64,
    },
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// The sessions of this workspace, newest first: id, status, command, start, tasks
    List {
        /// Sessions of every workspace
        #[arg(long)]
        all: bool,
    },
    /// One session: its status, command, tasks, git branch and commit
    Show {
        /// The session id (or the start of it), or `current`
        #[arg(default_value = "current")]
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// The config files, the settings in effect and every hook with where it comes from
    Show,
    /// Commit every change after each task (a git-commit hook in PostExecutionEnd)
    SetAutoCommit {
        #[arg(value_name = "true|false", value_parser = hooks::parse_bool, action = clap::ArgAction::Set)]
        value: bool,
        /// Edit ~/.config/rawko/config.json instead of <workspace>/.rawko/config.json
        #[arg(long, short = 'g')]
        global: bool,
    },
    /// Push the branch after each task (a git-push hook in PostExecutionEnd)
    SetAutoPush {
        #[arg(value_name = "true|false", value_parser = hooks::parse_bool, action = clap::ArgAction::Set)]
        value: bool,
        /// Edit ~/.config/rawko/config.json instead of <workspace>/.rawko/config.json
        #[arg(long, short = 'g')]
        global: bool,
    },
    /// Commit with --no-verify (skip the repository's git hooks)
    SetGitNoVerify {
        #[arg(value_name = "true|false", value_parser = hooks::parse_bool, action = clap::ArgAction::Set)]
        value: bool,
        /// Edit ~/.config/rawko/config.json instead of <workspace>/.rawko/config.json
        #[arg(long, short = 'g')]
        global: bool,
    },
    /// The remote the git-push hook pushes to
    SetPushRemote {
        #[arg(value_name = "NAME")]
        remote: String,
        /// Edit ~/.config/rawko/config.json instead of <workspace>/.rawko/config.json
        #[arg(long, short = 'g')]
        global: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// List the agents found: name, display name, tools, where a success leads and the file
    List,
    /// Check every agent file and the transitions between agents; print each problem with its
    /// file and line (exit status 1 when any agent is invalid)
    Validate,
}

#[derive(Debug, Subcommand)]
pub enum TasksCommand {
    /// The tasks of this workspace, newest first: id, state, start, where it is; with --nats,
    /// the team's tasks on NATS (docs/team.md): id, state, worker, where it is
    List {
        /// Tasks of every workspace
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        nats: team::NatsArgs,
    },
    /// One task: its state and its whole history (every orchestrator transition with the guard
    /// that decided, every phase change, tool call and approval), and the records its log was
    /// found to have damaged when it was recovered after a crash (the file and the byte each
    /// started at; a task that lost a record cannot be resumed); with --nats, a team task's
    /// whole log as JetStream holds it (docs/team.md)
    Show {
        /// The task id, as `rawko tasks list` shows it
        id: String,
        #[command(flatten)]
        nats: team::NatsArgs,
    },
    /// Remove finished tasks (complete, failed, cancelled) of this workspace from the task
    /// store, with the checkpoint refs they keep in its git repository (refs/rawko/tasks/ID/*),
    /// so that git can collect those checkpoints; prints each task removed. A task that has not
    /// finished is never removed
    Prune {
        /// Only the tasks last updated more than DAYS days ago [default: every finished task]
        #[arg(long, value_name = "DAYS")]
        older_than: Option<u64>,
        /// Tasks of every workspace
        #[arg(long)]
        all: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum WorkflowsCommand {
    /// List the workflows found: key, name, command, phase count and where each comes from
    List,
    /// Check every workflow and print each problem with its file and line (exit status 1 when
    /// any workflow is invalid)
    Validate,
    /// Preview a workflow: every phase with its breadcrumb, tool policy and the context prompt
    /// the agent will see
    Show {
        /// The workflow's key (its directory name) or its commandName
        key: String,
        /// The task description to fill into the prompts
        #[arg(long, value_name = "TEXT")]
        task: Option<String>,
    },
}

/// What a command needs from its surroundings.
pub struct Context<'a> {
    pub workspace: PathBuf,
    pub json: bool,
    pub env: &'a dyn Fn(&str) -> Option<OsString>,
    pub out: &'a mut dyn Write,
    pub err: &'a mut dyn Write,
}

impl Context<'_> {
    /// A path as the user should see it: relative to the workspace when inside it.
    pub fn display_path(&self, path: &Path) -> String {
        match path.strip_prefix(&self.workspace) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
            _ => path.display().to_string(),
        }
    }
}

/// Runs a parsed command line. `cwd` is the default workspace.
pub fn run(
    cli: Cli,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<OsString>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> ExitCode {
    let workspace = match &cli.global.workspace {
        Some(dir) if dir.is_absolute() => dir.clone(),
        Some(dir) => cwd.join(dir),
        None => cwd.to_path_buf(),
    };
    // `init` may create the project directory; every other command needs an existing one.
    if matches!(cli.command, Command::Init { .. }) && !workspace.exists() {
        if let Err(e) = std::fs::create_dir_all(&workspace) {
            let _ = writeln!(
                err,
                "error: cannot create workspace {}: {e}",
                workspace.display()
            );
            return EXIT_USAGE;
        }
    }
    if !workspace.is_dir() {
        let _ = writeln!(
            err,
            "error: workspace {} is not a directory (pass an existing project with --workspace DIR)",
            workspace.display()
        );
        return EXIT_USAGE;
    }
    let workspace = std::fs::canonicalize(&workspace).unwrap_or(workspace);
    let mut ctx = Context {
        workspace,
        json: cli.global.json,
        env,
        out,
        err,
    };
    let result = match cli.command {
        Command::Workflows(WorkflowsCommand::List) => workflows::list(&mut ctx),
        Command::Workflows(WorkflowsCommand::Validate) => workflows::validate(&mut ctx),
        Command::Workflows(WorkflowsCommand::Show { key, task }) => {
            workflows::show(&mut ctx, &key, task.as_deref())
        }
        Command::Agents(AgentsCommand::List) => agents::list(&mut ctx),
        Command::Agents(AgentsCommand::Validate) => agents::validate(&mut ctx),
        Command::Init { force } => init::init(&mut ctx, force),
        Command::Run {
            task,
            workflow,
            agent,
            provider,
            model,
            script,
            base_url,
            agent_command,
            yes,
            deny,
            resume,
            web,
        } => run::run(
            &mut ctx,
            run::RunOptions {
                task,
                workflow,
                agent,
                provider,
                model,
                script,
                base_url,
                agent_command,
                approvals: if yes {
                    run::Approvals::Yes
                } else if deny {
                    run::Approvals::Deny
                } else {
                    run::Approvals::Ask
                },
                resume,
                web,
            },
        ),
        Command::Tasks(TasksCommand::List { nats, .. }) if nats.given() => {
            team::list(&mut ctx, &nats)
        }
        Command::Tasks(TasksCommand::List { all, .. }) => tasks::list(&mut ctx, all),
        Command::Tasks(TasksCommand::Show { id, nats }) if nats.given() => {
            team::show(&mut ctx, &id, &nats)
        }
        Command::Tasks(TasksCommand::Show { id, .. }) => tasks::show(&mut ctx, &id),
        Command::Worker {
            nats,
            name,
            max_tasks,
            ack_wait,
            state_dir,
        } => team::worker(
            &mut ctx,
            team::WorkerArgs {
                nats,
                name,
                max_tasks,
                ack_wait,
                state_dir,
            },
        ),
        Command::Submit {
            task,
            nats,
            workflow,
            provider,
            model,
            script,
            base_url,
            repo,
        } => team::submit(
            &mut ctx,
            team::SubmitArgs {
                task,
                nats,
                workflow,
                provider,
                model,
                script,
                base_url,
                repo,
            },
        ),
        Command::Diff { task, phase } => diff::diff(&mut ctx, &task, phase.as_deref()),
        Command::Tasks(TasksCommand::Prune { older_than, all }) => {
            rewind::prune(&mut ctx, older_than, all)
        }
        Command::Rewind {
            task,
            to,
            dry_run,
            force,
        } => rewind::rewind(
            &mut ctx,
            rewind::RewindOptions {
                task,
                to,
                dry_run,
                force,
            },
        ),
        Command::Machine { mermaid } => machine(&mut ctx, mermaid),
        Command::Trust { revoke } => hooks::trust_workspace(&mut ctx, revoke),
        Command::Hook {
            event,
            workflow,
            fail_closed,
            claude,
            gemini,
            codex,
            uninstall,
        } => {
            let agent = if gemini {
                rawko_protocol::ExternalAgent::Gemini
            } else if codex {
                rawko_protocol::ExternalAgent::Codex
            } else {
                rawko_protocol::ExternalAgent::Claude
            };
            if event == "install" {
                if !claude && !gemini && !codex {
                    let _ = writeln!(
                        ctx.err,
                        "error: say which agent to install for: rawko hook install --claude, --gemini or --codex"
                    );
                    return EXIT_USAGE;
                }
                external::install(&mut ctx, agent, workflow.as_deref(), uninstall)
            } else {
                let stdin = std::io::stdin();
                let mut lock = stdin.lock();
                external::hook(
                    &mut ctx,
                    agent,
                    &event,
                    workflow.as_deref(),
                    fail_closed,
                    &mut lock,
                )
            }
        }
        Command::Mcp => external::mcp(&mut ctx),
        Command::Sessions(SessionsCommand::List { all }) => hooks::sessions_list(&mut ctx, all),
        Command::Sessions(SessionsCommand::Show { id }) => hooks::sessions_show(&mut ctx, &id),
        Command::Config(ConfigCommand::Show) => hooks::config_show(&mut ctx),
        Command::Config(ConfigCommand::SetAutoCommit { value, global }) => {
            hooks::config_edit(&mut ctx, hooks::ConfigEdit::AutoCommit(value), global)
        }
        Command::Config(ConfigCommand::SetAutoPush { value, global }) => {
            hooks::config_edit(&mut ctx, hooks::ConfigEdit::AutoPush(value), global)
        }
        Command::Config(ConfigCommand::SetGitNoVerify { value, global }) => {
            hooks::config_edit(&mut ctx, hooks::ConfigEdit::GitNoVerify(value), global)
        }
        Command::Config(ConfigCommand::SetPushRemote { remote, global }) => {
            hooks::config_edit(&mut ctx, hooks::ConfigEdit::PushRemote(remote), global)
        }
        Command::Demo {
            interactive,
            dir,
            tick_ms,
        } => demo::demo(
            &mut ctx,
            demo::DemoOptions {
                interactive,
                dir,
                tick: std::time::Duration::from_millis(tick_ms.max(1)),
            },
        ),
        Command::Serve { .. } => {
            let _ = writeln!(
                ctx.err,
                "error: `rawko serve` is started by the binary's main, not here"
            );
            return EXIT_USAGE;
        }
        Command::Acp { .. } => {
            let _ = writeln!(
                ctx.err,
                "error: `rawko acp` is started by the binary's main, not here"
            );
            return EXIT_USAGE;
        }
        Command::Web { .. } => {
            let _ = writeln!(
                ctx.err,
                "error: `rawko web` is started by the binary's main, not here"
            );
            return EXIT_USAGE;
        }
    };
    match result {
        Ok(code) => code,
        // The reader went away (`rawko … | head`): nothing to say.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => EXIT_OK,
        Err(e) => {
            let _ = writeln!(ctx.err, "error: {e}");
            EXIT_PROBLEMS
        }
    }
}

/// `rawko hook EVENT` without clap (see main.rs): the workspace is the current directory.
#[allow(clippy::too_many_arguments)]
pub fn hook_command(
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<OsString>,
    out: &mut dyn Write,
    err: &mut dyn Write,
    agent: rawko_protocol::ExternalAgent,
    event: &str,
    workflow: Option<&str>,
    fail_closed: bool,
) -> ExitCode {
    let mut ctx = Context {
        workspace: cwd.to_path_buf(),
        json: false,
        env,
        out,
        err,
    };
    let stdin = std::io::stdin();
    let mut lock = stdin.lock();
    match external::hook(&mut ctx, agent, event, workflow, fail_closed, &mut lock) {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(ctx.err, "rawko: {e}");
            if fail_closed {
                2
            } else {
                EXIT_OK
            }
        }
    }
}

/// `rawko machine [--mermaid]`
fn machine(ctx: &mut Context<'_>, mermaid: bool) -> std::io::Result<ExitCode> {
    if mermaid {
        write!(ctx.out, "{}", crate::machine::mermaid())?;
        return Ok(EXIT_OK);
    }
    writeln!(
        ctx.out,
        "FROM            EVENT                   GUARD                   TO"
    )?;
    for row in crate::machine::TRANSITIONS {
        writeln!(
            ctx.out,
            "{:<15} {:<23} {:<23} {}",
            row.from.name(),
            row.event.unwrap_or("(always)"),
            row.guard.unwrap_or("-"),
            row.to.name()
        )?;
    }
    writeln!(ctx.out)?;
    writeln!(
        ctx.out,
        "`rawko machine --mermaid` prints it as a state chart"
    )?;
    Ok(EXIT_OK)
}

/// Lines of a table, columns padded to their widest cell; the last column is not padded.
pub(crate) fn table<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> Vec<String> {
    let header = header.map(str::to_owned);
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    std::iter::once(&header)
        .chain(rows)
        .map(|row| {
            let mut line = String::new();
            for (i, (cell, w)) in row.iter().zip(widths).enumerate() {
                line.push_str(cell);
                if i + 1 < N {
                    line.push_str(&" ".repeat(w - cell.chars().count() + 2));
                }
            }
            line.trim_end().to_owned()
        })
        .collect()
}
