//! The `rawko` binary: parses the command line and hands it to [`rawko::cli`], or, for
//! `rawko serve`, gives stdin and stdout to the JSON-RPC server.

use std::io::Write;

use clap::Parser;
use rawko::cli::{Cli, Command};

fn main() {
    let cli = Cli::parse();
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    if let Command::Serve { .. } = cli.command {
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
        let code = match rawko::lsp::serve_stdio(rawko::lsp::ServeOptions { workspace }) {
            Ok(()) => 0,
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "error: cannot start the server: {e}");
                1
            }
        };
        std::process::exit(code);
    }
    let env = |name: &str| std::env::var_os(name);
    if let Command::Mcp = cli.command {
        // stdout belongs to the MCP transport, which writes it from another thread: no lock here.
        let mut sink = std::io::sink();
        let mut err = std::io::stderr();
        let code = rawko::cli::run(cli, &cwd, &env, &mut sink, &mut err);
        std::process::exit(code);
    }
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let mut out = stdout.lock();
    let mut err = stderr.lock();
    let code = rawko::cli::run(cli, &cwd, &env, &mut out, &mut err);
    let _ = out.flush();
    let _ = err.flush();
    std::process::exit(code);
}
