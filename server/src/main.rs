//! The `rawko` binary: parses the command line and hands it to [`rawko::cli`].

use std::io::Write;

use clap::Parser;

fn main() {
    let cli = rawko::cli::Cli::parse();
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let env = |name: &str| std::env::var_os(name);
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let mut out = stdout.lock();
    let mut err = stderr.lock();
    let code = rawko::cli::run(cli, &cwd, &env, &mut out, &mut err);
    let _ = out.flush();
    let _ = err.flush();
    std::process::exit(code);
}
