//! The JSON Schemas in `protocol/schema/` are what the crate generates now: a change to a wire
//! type or a file format without regenerating them fails here.
//!
//! `UPDATE_SCHEMA=1 cargo test -p rawko-protocol` rewrites them.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use rawko_protocol::schema::schema_files;

fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("schema")
}

/// The `.json` files in `protocol/schema/` now.
fn files_on_disk(dir: &Path) -> BTreeSet<String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return BTreeSet::new();
    };
    entries
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".json"))
        .collect()
}

#[test]
fn schema_files_are_current() {
    let dir = schema_dir();
    let generated = schema_files();
    let on_disk = files_on_disk(&dir);

    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        fs::create_dir_all(&dir).unwrap();
        let keep: BTreeSet<_> = generated.iter().map(|(name, _)| name.clone()).collect();
        for stale in on_disk.difference(&keep) {
            fs::remove_file(dir.join(stale)).unwrap();
        }
        for (name, text) in &generated {
            fs::write(dir.join(name), text).unwrap();
        }
        return;
    }

    let mut problems = Vec::new();
    for (name, text) in &generated {
        match fs::read_to_string(dir.join(name)) {
            Ok(current) if current == *text => {}
            Ok(_) => problems.push(format!("{name} is out of date")),
            Err(_) => problems.push(format!("{name} is missing")),
        }
    }
    let generated_names: BTreeSet<_> = generated.iter().map(|(name, _)| name.clone()).collect();
    for stale in on_disk.difference(&generated_names) {
        problems.push(format!("{stale} is no longer generated"));
    }
    assert!(
        problems.is_empty(),
        "protocol/schema/ is stale:\n  {}\nrun `UPDATE_SCHEMA=1 cargo test -p rawko-protocol` to rewrite it",
        problems.join("\n  ")
    );
}

#[test]
fn readme_lists_every_schema_file() {
    let readme = fs::read_to_string(schema_dir().join("README.md"))
        .expect("protocol/schema/README.md is missing");
    let missing: Vec<_> = schema_files()
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| !readme.contains(&format!("`{name}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "protocol/schema/README.md does not list {missing:?}"
    );
}
