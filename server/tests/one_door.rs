//! One door per workspace (DESIGN.md, invariant 11): the task service opens a workspace
//! (`Tasks::open`), and no face loads its settings (`Place::load`), builds one (`Place { .. }`),
//! makes a service another way (`Tasks::new`) or checks its trust (`trust::check`) to decide
//! what the service does. The commands that manage the trust store (`rawko trust`, `rawko hook`,
//! in `cli/hooks.rs`) read it to say what they changed. The test reads files only.

use std::path::{Path, PathBuf};

/// The source files under `dir`.
fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read the source folder")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn only_the_task_service_opens_a_workspace() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let service = src.join("engine/tasks");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut doors = Vec::new();
    for file in files.iter().filter(|f| !f.starts_with(&service)) {
        let text = std::fs::read_to_string(file).expect("read a source file");
        let rel = file
            .strip_prefix(&src)
            .expect("under src")
            .display()
            .to_string();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            let opens = ["Place::load(", "Place {", "Tasks::new("]
                .iter()
                .any(|door| code.contains(door));
            let checks = code.contains("trust::check(") && rel != "cli/hooks.rs";
            if opens || checks {
                doors.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        doors.is_empty(),
        "a face opens the workspace itself instead of through Tasks::open:\n{}",
        doors.join("\n")
    );
}
