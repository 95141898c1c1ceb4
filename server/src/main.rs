//! The `rawko` binary: parses the command line and hands it to [`rawko::cli`], or, for
//! `rawko serve`, gives stdin and stdout to the JSON-RPC server.

use std::io::Write;

use clap::Parser;
use rawko::cli::{Cli, Command};

/// Exits once what the tasks logged is written.
fn exit(code: i32) -> ! {
    rawko::store::journal::finish_if_started();
    std::process::exit(code)
}

fn main() {
    // `rawko __exec …`: the helper every Bash command and command hook runs through (see
    // rawko::sandbox). First, and parsed by hand: it runs once per call.
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() == Some(std::ffi::OsStr::new(rawko::sandbox::exec::SUBCOMMAND)) {
        let rest: Vec<std::ffi::OsString> = args.collect();
        std::process::exit(rawko::sandbox::exec::main(&rest));
    }
    rawko::sandbox::set_helper("/proc/self/exe");
    // `rawko hook EVENT` runs once per tool call of an external agent: skip building the whole
    // command line parser when the arguments are the plain ones the hook entries use.
    if let Some(code) = fast_hook() {
        std::process::exit(code);
    }
    let cli = Cli::parse();
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    if let Command::Web {
        listen,
        tls_cert,
        tls_key,
        insecure_http,
        provider,
        model,
        script,
        base_url,
        nats,
    } = cli.command
    {
        // stdout carries the page's address: logs go to stderr, filtered by RAWKO_LOG.
        let filter = tracing_subscriber::EnvFilter::try_from_env("RAWKO_LOG")
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_env_filter(filter)
            .with_ansi(false)
            .init();
        let absolute = |p: std::path::PathBuf| if p.is_absolute() { p } else { cwd.join(p) };
        let options = rawko::web::CommandOptions {
            workspace: cli.global.workspace.map(absolute),
            web: rawko::web::WebOptions {
                listen,
                tls_cert: tls_cert.map(absolute),
                tls_key: tls_key.map(absolute),
                insecure_http,
            },
            defaults: rawko::web::StartDefaults {
                provider,
                model,
                // A relative script is the current directory's, as for `rawko run` started there.
                script: script.map(absolute),
                base_url,
            },
            nats: team_connection(&nats),
        };
        let code = match rawko::web::run_command(options) {
            Ok(code) => code,
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "error: {e}");
                1
            }
        };
        exit(code);
    }
    if let Command::Serve { web, nats, .. } = cli.command {
        // stdout belongs to the protocol: logs go to stderr, filtered by RAWKO_LOG.
        let filter = tracing_subscriber::EnvFilter::try_from_env("RAWKO_LOG")
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_env_filter(filter)
            .with_ansi(false)
            .init();
        let workspace = cli
            .global
            .workspace
            .map(|w| if w.is_absolute() { w } else { cwd.join(w) });
        let web = web.options().map(|mut w| {
            let absolute = |p: std::path::PathBuf| if p.is_absolute() { p } else { cwd.join(p) };
            w.tls_cert = w.tls_cert.map(absolute);
            w.tls_key = w.tls_key.map(absolute);
            w
        });
        let nats = team_connection(&nats);
        let code = match rawko::lsp::serve_stdio(rawko::lsp::ServeOptions {
            workspace,
            web,
            nats,
        }) {
            Ok(()) => 0,
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "error: cannot start the server: {e}");
                1
            }
        };
        exit(code);
    }
    if let Command::Acp {
        provider,
        model,
        script,
        base_url,
        workflow,
    } = cli.command
    {
        // stdout belongs to the protocol: logs go to stderr, filtered by RAWKO_LOG. The SDK
        // warns of every error response it sends; the client sees those already.
        let filter =
            tracing_subscriber::EnvFilter::try_from_env("RAWKO_LOG").unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new("warn,agent_client_protocol=error")
            });
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_env_filter(filter)
            .with_ansi(false)
            .init();
        let absolute = |p: std::path::PathBuf| if p.is_absolute() { p } else { cwd.join(p) };
        let options = rawko::acp::AcpOptions {
            workspace: cli.global.workspace.map(absolute),
            provider,
            model,
            // A relative script is the current directory's, as for `rawko run` started there.
            script: script.map(absolute),
            base_url,
            workflow,
        };
        let code = match rawko::acp::serve_stdio(options) {
            Ok(()) => 0,
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "error: cannot start the ACP server: {e}");
                1
            }
        };
        exit(code);
    }
    let env = |name: &str| std::env::var_os(name);
    if let Command::Mcp = cli.command {
        // stdout belongs to the MCP transport, which writes it from another thread: no lock here.
        let mut sink = std::io::sink();
        let mut err = std::io::stderr();
        let code = rawko::cli::run(cli, &cwd, &env, &mut sink, &mut err);
        exit(code);
    }
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let mut out = stdout.lock();
    let mut err = stderr.lock();
    let code = rawko::cli::run(cli, &cwd, &env, &mut out, &mut err);
    let _ = out.flush();
    let _ = err.flush();
    exit(code);
}

/// `rawko hook EVENT [--gemini|--codex] [--workflow KEY] [--fail-closed]`, parsed by hand; `None` for anything else
/// (help, `install`, other flags), which clap then parses as usual.
fn fast_hook() -> Option<i32> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (first, rest) = args.split_first()?;
    if first != "hook" {
        return None;
    }
    let (event, rest) = rest.split_first()?;
    if event == "install" || event.starts_with('-') {
        return None;
    }
    let mut workflow = None;
    let mut fail_closed = false;
    let mut agent = rawko_protocol::ExternalAgent::Claude;
    let mut i = 0;
    while i < rest.len() {
        match rest[i].as_str() {
            "--gemini" => {
                agent = rawko_protocol::ExternalAgent::Gemini;
                i += 1;
            }
            "--codex" => {
                agent = rawko_protocol::ExternalAgent::Codex;
                i += 1;
            }
            "--workflow" => {
                workflow = Some(rest.get(i + 1)?.clone());
                i += 2;
            }
            "--fail-closed" => {
                fail_closed = true;
                i += 1;
            }
            _ => return None,
        }
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let env = |name: &str| std::env::var_os(name);
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let mut out = stdout.lock();
    let mut err = stderr.lock();
    let code = rawko::cli::hook_command(
        &cwd,
        &env,
        &mut out,
        &mut err,
        agent,
        event,
        workflow.as_deref(),
        fail_closed,
    );
    let _ = out.flush();
    let _ = err.flush();
    Some(code)
}

/// `--nats` and its options as a connection (`None` without `--nats`); bad options end the
/// process with status 2.
fn team_connection(nats: &rawko::cli::team::NatsArgs) -> Option<rawko::team::Connection> {
    if !nats.given() {
        return None;
    }
    let env = |name: &str| std::env::var_os(name);
    match nats.connection(&env) {
        Ok(c) => Some(c),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            exit(2);
        }
    }
}
