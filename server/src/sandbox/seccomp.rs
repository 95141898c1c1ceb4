//! What Landlock (up to ABI 7) leaves open to a confined command, closed with a seccomp filter:
//! Unix-domain sockets. Landlock governs opening files by path, not connecting to a socket by
//! path, so a confined shell could still reach a server that runs commands for whoever connects:
//! the D-Bus session bus (`systemd-run --user`), the Docker socket (`docker run -v /:/host`), a
//! terminal multiplexer's socket (`tmux send-keys` types into the user's shell), or an ssh or gpg
//! agent (the user's keys). The filter makes `socket(AF_UNIX, …)` fail with EACCES (a socket
//! pair, which names nothing, still works), and io_uring, whose requests can make a socket
//! without that system call, unavailable the same way. The `sandbox` setting's
//! `"unixSockets": true` allows them.
//!
//! seccompiler (rust-vmm's, Firecracker's filter compiler) builds the BPF program and installs it
//! with safe calls. Its filter kills a process that makes a system call of another architecture's
//! numbering (a 32-bit call on x86_64), which the rules would not see.

use std::collections::BTreeMap;

use nix::libc;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// x86_64's x32 ABI numbers its system calls from this bit, under the same architecture value:
/// they get the same rules.
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// The filter's program for this machine's architecture.
fn program() -> Result<BpfProgram, String> {
    let text = |e: seccompiler::BackendError| e.to_string();
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(text)?;
    let unix_domain = || -> Result<Vec<SeccompRule>, String> {
        let domain = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            libc::AF_UNIX as u64,
        )
        .map_err(text)?;
        Ok(vec![SeccompRule::new(vec![domain]).map_err(text)?])
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, unix_domain()?);
    // No conditions: every call.
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    if arch == TargetArch::x86_64 {
        rules.insert(libc::SYS_socket | X32_SYSCALL_BIT, unix_domain()?);
        rules.insert(libc::SYS_io_uring_setup | X32_SYSCALL_BIT, Vec::new());
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(text)?;
    BpfProgram::try_from(filter).map_err(text)
}

/// Denies this process, and everything it starts from now on, Unix-domain sockets and io_uring.
/// Sets `no_new_privs` (as Landlock does).
pub fn deny_unix_sockets() -> Result<(), String> {
    let program = program()?;
    seccompiler::apply_filter(&program).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_filter_compiles_for_this_machine() {
        let program = super::program().unwrap();
        assert!(!program.is_empty());
    }
}
