//! Checks across workflows: subworkflow cycles, dangling references, duplicate commands.

use super::*;

/// The line in `def`'s workflow.yaml of its reference to subworkflow `target`.
pub(super) fn ref_line(def: &WorkflowDefinition, target: &str) -> Option<usize> {
    let index = def
        .phases
        .iter()
        .position(|e| matches!(e, PhaseEntry::Subworkflow(k) if k == target))?;
    let text = fs::read_to_string(def.workflow_file()).ok()?;
    entry_line(&text, index)
}

/// Drops every workflow that takes part in a subworkflow cycle (a self-reference counts).
pub(super) fn remove_cycles(
    defs: &mut IndexMap<String, WorkflowDefinition>,
    skipped: &mut Vec<SkippedWorkflow>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut in_cycle: Vec<(String, Vec<String>)> = Vec::new();
    let mut done: HashSet<String> = HashSet::new();
    for start in defs.keys() {
        if done.contains(start) {
            continue;
        }
        // Iterative depth-first search; `stack` is the current path (grey nodes).
        let mut stack: Vec<(String, usize)> = vec![(start.clone(), 0)];
        let mut on_path: HashSet<String> = HashSet::from([start.clone()]);
        while let Some((node, next_edge)) = stack.last().cloned() {
            let refs: Vec<&String> = defs[&node]
                .phases
                .iter()
                .filter_map(|e| match e {
                    PhaseEntry::Subworkflow(k) if defs.contains_key(k) => Some(k),
                    _ => None,
                })
                .collect();
            if let Some(target) = refs.get(next_edge) {
                if let Some(last) = stack.last_mut() {
                    last.1 += 1;
                }
                let target = (*target).clone();
                if on_path.contains(&target) {
                    let pos = stack.iter().position(|(k, _)| *k == target).unwrap_or(0);
                    let mut cycle: Vec<String> =
                        stack[pos..].iter().map(|(k, _)| k.clone()).collect();
                    cycle.push(target.clone());
                    in_cycle.push((target, cycle));
                } else if !done.contains(&target) {
                    on_path.insert(target.clone());
                    stack.push((target, 0));
                }
            } else {
                stack.pop();
                on_path.remove(&node);
                done.insert(node);
            }
        }
    }
    let mut removed: HashSet<String> = HashSet::new();
    for (_, cycle) in &in_cycle {
        let shown = cycle
            .iter()
            .map(|k| format!("\"{k}\""))
            .collect::<Vec<_>>()
            .join(" → ");
        for (j, key) in cycle[..cycle.len() - 1].iter().enumerate() {
            if !removed.insert(key.clone()) {
                continue;
            }
            if let Some(def) = defs.get(key) {
                let line = ref_line(def, &cycle[j + 1]);
                diagnostics.push(
                    Diagnostic::error(
                        def.workflow_file(),
                        format!("subworkflow cycle {shown}; workflow \"{key}\" skipped"),
                    )
                    .at_line(line)
                    .in_workflow(key),
                );
            }
        }
    }
    for key in removed {
        if let Some(def) = defs.shift_remove(&key) {
            skipped.push(SkippedWorkflow {
                key,
                dir: def.dir,
                root: def.root,
            });
        }
    }
}

/// Drops workflows that reference a subworkflow the set lacks, repeating until none do (a removal
/// can strand the workflows that referenced the removed one).
pub(super) fn remove_dangling_refs(
    defs: &mut IndexMap<String, WorkflowDefinition>,
    invalid: &HashSet<String>,
    skipped: &mut Vec<SkippedWorkflow>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut removed_here: HashSet<String> = HashSet::new();
    loop {
        let dangling: Vec<(String, String)> = defs
            .values()
            .filter_map(|def| {
                def.phases.iter().find_map(|e| match e {
                    PhaseEntry::Subworkflow(k) if !defs.contains_key(k) => {
                        Some((def.key.clone(), k.clone()))
                    }
                    _ => None,
                })
            })
            .collect();
        if dangling.is_empty() {
            break;
        }
        for (key, target) in dangling {
            let Some(def) = defs.shift_remove(&key) else {
                continue;
            };
            let why = if removed_here.contains(&target) {
                format!("references subworkflow \"{target}\", which was skipped because it references a missing workflow")
            } else if invalid.contains(&target) || skipped.iter().any(|s| s.key == target) {
                format!("references subworkflow \"{target}\", which was skipped because of its own errors")
            } else {
                format!("references unknown subworkflow \"{target}\"")
            };
            let file = def.workflow_file();
            let line = ref_line(&def, &target);
            diagnostics.push(
                Diagnostic::error(file, format!("{why}; workflow \"{key}\" skipped"))
                    .at_line(line)
                    .in_workflow(&key),
            );
            removed_here.insert(key.clone());
            skipped.push(SkippedWorkflow {
                key,
                dir: def.dir,
                root: def.root,
            });
        }
    }
}

/// Two user workflows with one commandName: the first keeps it (pi-workflows' rule), the rest
/// get a warning.
pub(super) fn warn_duplicate_commands(
    defs: &IndexMap<String, WorkflowDefinition>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut first: HashMap<&str, &WorkflowDefinition> = HashMap::new();
    for def in defs.values().filter(|d| d.show == Show::User) {
        match first.get(def.command_name.as_str()) {
            Some(winner) => {
                let file = def.workflow_file();
                let line = fs::read_to_string(&file)
                    .ok()
                    .and_then(|t| key_line(&t, "commandName"));
                diagnostics.push(
                    Diagnostic::warning(
                        file,
                        format!(
                            "commandName \"{}\" is also used by workflow \"{}\" ({}); that one is used for the command",
                            def.command_name,
                            winner.key,
                            winner.workflow_file().display()
                        ),
                    )
                    .at_line(line)
                    .in_workflow(&def.key),
                );
            }
            None => {
                first.insert(def.command_name.as_str(), def);
            }
        }
    }
}
