//! Landlock, through its authors' safe crate: the probe rawko runs once, and the ruleset the
//! helper's second stage applies to itself before it becomes the command.

use std::path::PathBuf;

use landlock::{
    Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};

/// The ABI whose file-system rights rawko handles. Pinned rather than "the newest the crate
/// knows": a right a later ABI adds would be denied everywhere until rawko grants it on purpose.
/// On an older kernel the crate drops what it cannot enforce (best effort).
const TARGET: ABI = ABI::V7;

/// The Landlock ABI the kernel offers (capped at the one rawko handles), or why there is none.
/// Creates a ruleset and drops it: nothing is restricted.
pub fn probe() -> Result<u8, String> {
    let mut last_error = String::new();
    for (number, abi) in [
        (7, ABI::V7),
        (6, ABI::V6),
        (5, ABI::V5),
        (4, ABI::V4),
        (3, ABI::V3),
        (2, ABI::V2),
        (1, ABI::V1),
    ] {
        let created = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi))
            .and_then(Ruleset::create);
        match created {
            Ok(_) => return Ok(number),
            Err(e) => last_error = e.to_string(),
        }
    }
    Err(format!(
        "the kernel does not offer Landlock (it is not built in, or not enabled with the lsm= boot parameter): {last_error}"
    ))
}

/// Restricts this process (the calling thread, the only one, and every process it starts from
/// now on): `read` paths may be read and executed, `write` paths read and written, nothing else
/// in the file system; signals and abstract Unix sockets reach only processes inside the
/// sandbox. A path that does not exist is skipped. Fails when the kernel cannot enforce the
/// file-system rules at all.
///
/// No rule grants `IoctlDev` or the making of device files: no ioctl reaches a device opened
/// inside the sandbox (a terminal's `TIOCSTI` types into the shell that reads it), and no
/// device node made in the workspace can stand in for `/dev/tty` or a disk.
pub fn restrict_self(read: &[PathBuf], write: &[PathBuf]) -> Result<(), String> {
    let all = AccessFs::from_all(TARGET);
    let read_access = AccessFs::from_read(TARGET);
    let write_access = all & !(AccessFs::IoctlDev | AccessFs::MakeChar | AccessFs::MakeBlock);
    let text = |e: landlock::RulesetError| e.to_string();
    let mut ruleset = Ruleset::default()
        .handle_access(all)
        .map_err(text)?
        .scope(Scope::Signal | Scope::AbstractUnixSocket)
        .map_err(text)?
        .create()
        .map_err(text)?;
    for (paths, access) in [(read, read_access), (write, write_access)] {
        for path in paths {
            let Ok(fd) = PathFd::new(path) else {
                continue;
            };
            let access: BitFlags<AccessFs> = match std::fs::metadata(path) {
                Ok(meta) if meta.is_dir() => access,
                // A file (/dev/null) takes only the rights that make sense for a file.
                Ok(_) => access & AccessFs::from_file(TARGET),
                Err(_) => continue,
            };
            ruleset = ruleset
                .add_rule(PathBeneath::new(fd, access))
                .map_err(text)?;
        }
    }
    let status = ruleset.restrict_self().map_err(text)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("the kernel does not enforce Landlock".to_owned());
    }
    Ok(())
}
