//! One workflow directory: its `workflow.yaml`, its phase files and the paths they name.

use super::*;

/// Parses one workflow directory, collecting every problem rather than stopping at the first.
pub(super) struct WorkflowParser<'a> {
    pub(super) key: &'a str,
    pub(super) dir: &'a Path,
    pub(super) root: &'a WorkflowRoot,
    pub(super) canonical_root: &'a Path,
    /// Where the files are read: the disk, or a task's pinned copies.
    pub(super) files: Files<'a>,
    pub(super) diagnostics: &'a mut Vec<Diagnostic>,
    /// The real path of `dir`, found once for all its phase files (`None` when it has none).
    pub(super) canonical_dir: std::cell::OnceCell<Option<PathBuf>>,
}

impl WorkflowParser<'_> {
    fn error(&mut self, path: &Path, line: Option<usize>, message: impl Into<String>) {
        self.diagnostics.push(
            Diagnostic::error(path, message)
                .at_line(line)
                .in_workflow(self.key),
        );
    }

    fn warning(&mut self, path: &Path, line: Option<usize>, message: impl Into<String>) {
        self.diagnostics.push(
            Diagnostic::warning(path, message)
                .at_line(line)
                .in_workflow(self.key),
        );
    }

    fn push(&mut self, d: Diagnostic) {
        self.diagnostics.push(d.in_workflow(self.key));
    }

    pub(super) fn parse(mut self) -> Option<WorkflowDefinition> {
        let file = self.dir.join(WORKFLOW_FILE);
        let errors_before = self.error_count();
        let (text, source) = match read_text(self.files, &file, WORKFLOW_FILE) {
            Ok(t) => t,
            Err(d) => {
                self.push(d);
                return None;
            }
        };
        let mut hasher = Sha256::new();
        hasher.update(WORKFLOW_FILE.as_bytes());
        hasher.update(text.as_bytes());
        let mut sources = vec![source];

        let value = match parse_yaml(&text, &file, 0) {
            Ok(v) => v,
            Err(d) => {
                self.push(d);
                return None;
            }
        };
        let map = match value {
            Value::Mapping(map) => map,
            other => {
                let msg = format!(
                    "{WORKFLOW_FILE} must be a mapping of fields (name, commandName, phases, …), found {}",
                    type_name(&other)
                );
                self.error(&file, None, msg);
                return None;
            }
        };
        let get = |k: &str| map.get(k);

        let name = self.required_string(&map, &text, &file, "name");
        let show = match get("show") {
            None | Some(Value::Null) => Show::User,
            Some(Value::String(s)) if s == "user" => Show::User,
            Some(Value::String(s)) if s == "workflows" => Show::Workflows,
            Some(other) => {
                let shown = scalar_text(other).unwrap_or_else(|| type_name(other).to_owned());
                self.warning(
                    &file,
                    key_line(&text, "show"),
                    format!("show must be \"user\" or \"workflows\", found \"{shown}\"; treated as \"user\""),
                );
                Show::User
            }
        };

        // For a workflow users start these two are required, so a wrong type is an error there.
        let (command_name, initial_message) = if show == Show::User {
            (
                self.text_field(&map, &text, &file, "commandName"),
                self.text_field(&map, &text, &file, "initialMessage"),
            )
        } else {
            (
                self.optional_string(&map, &text, &file, "commandName"),
                self.optional_string(&map, &text, &file, "initialMessage"),
            )
        };
        let wrong_type = |k: &str| {
            map.get(k)
                .is_some_and(|v| !v.is_null() && scalar_text(v).is_none())
        };
        if show == Show::User {
            match &command_name {
                None if wrong_type("commandName") => {}
                None => self.error(
                    &file,
                    None,
                    "commandName is required for a workflow users start (or set `show: workflows` for a subworkflow)",
                ),
                Some(c) if c.trim().is_empty() => {
                    self.error(&file, key_line(&text, "commandName"), "commandName is empty")
                }
                Some(c) if !c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-') => {
                    self.error(
                        &file,
                        key_line(&text, "commandName"),
                        format!("commandName \"{c}\" may only contain letters, digits, `_` and `-`"),
                    )
                }
                Some(_) => {}
            }
            match &initial_message {
                None if wrong_type("initialMessage") => {}
                None => self.error(
                    &file,
                    None,
                    "initialMessage is required for a workflow users start (or set `show: workflows` for a subworkflow)",
                ),
                Some(m) if m.trim().is_empty() => {
                    self.error(&file, key_line(&text, "initialMessage"), "initialMessage is empty")
                }
                Some(_) => {}
            }
        }

        let loopable = match get("loopable") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                let msg = format!("loopable must be true or false, found {}", type_name(other));
                self.error(&file, key_line(&text, "loopable"), msg);
                true
            }
        };
        let session_name_prefix = self
            .optional_string(&map, &text, &file, "sessionNamePrefix")
            .unwrap_or_else(|| DEFAULT_SESSION_NAME_PREFIX.to_owned());
        let session_name_max_length = match get("sessionNameMaxLength") {
            None | Some(Value::Null) => DEFAULT_SESSION_NAME_MAX_LENGTH,
            Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n > 0) => {
                usize::try_from(n.as_u64().unwrap_or_default()).unwrap_or(usize::MAX)
            }
            Some(other) => {
                let shown = scalar_text(other).unwrap_or_else(|| type_name(other).to_owned());
                self.warning(
                    &file,
                    key_line(&text, "sessionNameMaxLength"),
                    format!("sessionNameMaxLength must be a positive whole number, found {shown}; using {DEFAULT_SESSION_NAME_MAX_LENGTH}"),
                );
                DEFAULT_SESSION_NAME_MAX_LENGTH
            }
        };
        let role_instruction = self.optional_string(&map, &text, &file, "roleInstruction");
        let advance_reminder = self.optional_string(&map, &text, &file, "advanceReminder");
        let block_reason_template = self.optional_string(&map, &text, &file, "blockReasonTemplate");
        let completion_message = self.optional_string(&map, &text, &file, "completionMessage");
        let not_done_reminder = self.optional_string(&map, &text, &file, "notDoneReminder");

        let phases = self.phases(&map, &text, &file, &mut hasher, &mut sources);

        if self.error_count() > errors_before {
            return None;
        }
        let fingerprint = hasher
            .finalize()
            .iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect();
        Some(WorkflowDefinition {
            key: self.key.to_owned(),
            name: name?,
            command_name: command_name.unwrap_or_default(),
            initial_message: initial_message.unwrap_or_default(),
            phases: phases?,
            show,
            loopable,
            session_name_prefix,
            session_name_max_length,
            role_instruction,
            advance_reminder,
            block_reason_template,
            completion_message,
            not_done_reminder,
            dir: self.dir.to_owned(),
            root: self.root.clone(),
            fingerprint,
            sources,
        })
    }

    fn error_count(&self) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count()
    }

    fn required_string(
        &mut self,
        map: &Mapping,
        text: &str,
        file: &Path,
        key: &str,
    ) -> Option<String> {
        match map.get(key) {
            None | Some(Value::Null) => {
                self.error(file, key_line(text, key), format!("{key} is required"));
                None
            }
            Some(Value::String(s)) if s.trim().is_empty() => {
                self.error(file, key_line(text, key), format!("{key} is empty"));
                None
            }
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => match scalar_text(other) {
                Some(s) => Some(s),
                None => {
                    let msg = format!("{key} must be text, found {}", type_name(other));
                    self.error(file, key_line(text, key), msg);
                    None
                }
            },
        }
    }

    /// A text field whose wrong type is an error; `None` when missing or of the wrong type.
    fn text_field(&mut self, map: &Mapping, text: &str, file: &Path, key: &str) -> Option<String> {
        match map.get(key) {
            None | Some(Value::Null) => None,
            Some(v) => match scalar_text(v) {
                Some(s) => Some(s),
                None => {
                    let msg = format!("{key} must be text, found {}", type_name(v));
                    self.error(file, key_line(text, key), msg);
                    None
                }
            },
        }
    }

    /// An optional text field; a value of the wrong type is reported and ignored.
    fn optional_string(
        &mut self,
        map: &Mapping,
        text: &str,
        file: &Path,
        key: &str,
    ) -> Option<String> {
        match map.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => match scalar_text(other) {
                Some(s) => Some(s),
                None => {
                    let msg = format!("{key} must be text, found {}; ignored", type_name(other));
                    self.warning(file, key_line(text, key), msg);
                    None
                }
            },
        }
    }

    fn phases(
        &mut self,
        map: &Mapping,
        text: &str,
        file: &Path,
        hasher: &mut Sha256,
        sources: &mut Vec<SourceFile>,
    ) -> Option<Vec<PhaseEntry>> {
        let phases_line = key_line(text, "phases");
        let list = match map.get("phases") {
            None | Some(Value::Null) => {
                self.error(
                    file,
                    phases_line,
                    "phases is required: a list of phase files or {subworkflow: KEY} entries",
                );
                return None;
            }
            Some(Value::Sequence(list)) if list.is_empty() => {
                self.error(
                    file,
                    phases_line,
                    "phases is empty: a workflow needs at least one phase",
                );
                return None;
            }
            Some(Value::Sequence(list)) => list,
            Some(other) => {
                let msg = format!("phases must be a list, found {}", type_name(other));
                self.error(file, phases_line, msg);
                return None;
            }
        };

        let mut entries = Vec::with_capacity(list.len());
        let mut ids: HashMap<String, PathBuf> = HashMap::new();
        let mut ok = true;
        for (i, item) in list.iter().enumerate() {
            let entry = match item {
                Value::String(rel) => {
                    // The entry's line is found only for a problem: finding it reads the text.
                    self.phase_file(rel, || entry_line(text, i), file, hasher, sources)
                }
                Value::Mapping(m) => match m.get("subworkflow") {
                    Some(Value::String(k)) if !k.trim().is_empty() => {
                        Some(PhaseEntry::Subworkflow(k.clone()))
                    }
                    Some(Value::String(_)) => {
                        let line = entry_line(text, i);
                        self.error(
                            file,
                            line,
                            format!("phases[{i}]: subworkflow needs a workflow key"),
                        );
                        None
                    }
                    _ => {
                        self.error(
                            file,
                            entry_line(text, i),
                            format!("phases[{i}]: invalid phase entry: expected a file name or {{subworkflow: KEY}}"),
                        );
                        None
                    }
                },
                other => {
                    self.error(
                        file,
                        entry_line(text, i),
                        format!(
                            "phases[{i}]: invalid phase entry: expected a file name or {{subworkflow: KEY}}, found {}",
                            type_name(other)
                        ),
                    );
                    None
                }
            };
            match entry {
                Some(PhaseEntry::Phase(p)) => {
                    if let Some(first) = ids.get(&p.id) {
                        let msg = format!(
                            "duplicate phase id \"{}\" (also used by {})",
                            p.id,
                            first.display()
                        );
                        let phase_file = p.file.clone();
                        let line = read_text(self.files, &phase_file, "phase file")
                            .ok()
                            .and_then(|(t, _)| key_line(&t, "id"))
                            .or(Some(1));
                        self.error(&phase_file, line, msg);
                        ok = false;
                    } else {
                        ids.insert(p.id.clone(), p.file.clone());
                    }
                    entries.push(PhaseEntry::Phase(p));
                }
                Some(entry) => entries.push(entry),
                None => ok = false,
            }
        }
        ok.then_some(entries)
    }

    fn phase_file(
        &mut self,
        rel: &str,
        line: impl Fn() -> Option<usize>,
        file: &Path,
        hasher: &mut Sha256,
        sources: &mut Vec<SourceFile>,
    ) -> Option<PhaseEntry> {
        if rel.trim().is_empty() {
            self.error(file, line(), "empty phase file name");
            return None;
        }
        let path = self.dir.join(rel);
        if !self.inside_root(&path) {
            self.error(
                file,
                line(),
                format!(
                    "phase file path \"{rel}\" escapes the workflows root {}",
                    self.root.path.display()
                ),
            );
            return None;
        }
        let (content, source) = match read_text(self.files, &path, "phase file") {
            Ok(t) => t,
            Err(d) => {
                // Point at the entry in workflow.yaml for a missing file, at the file otherwise.
                if !self.files.exists(&path) {
                    self.error(file, line(), format!("phase file \"{rel}\" not found"));
                } else {
                    self.push(d);
                }
                return None;
            }
        };
        hasher.update(rel.as_bytes());
        hasher.update(content.as_bytes());
        // A file two entries name is one source.
        if !sources.iter().any(|s| s.path == source.path) {
            sources.push(source);
        }
        parse_phase(&content, &path, self.diagnostics, self.key).map(PhaseEntry::Phase)
    }

    /// The real path of `path` when it names a file right in the workflow's directory that is
    /// not a symbolic link: the directory's real path (found once) and the name. It takes one
    /// `lstat` where resolving the whole path took one per component, for each of a workflow's
    /// phase files. `None` for anything else, which is resolved in full.
    fn real_path_beside(&self, path: &Path) -> Option<PathBuf> {
        let rel = path.strip_prefix(self.dir).ok()?;
        let mut components = rel.components();
        let (Some(std::path::Component::Normal(name)), None) =
            (components.next(), components.next())
        else {
            return None;
        };
        if fs::symlink_metadata(path).ok()?.file_type().is_symlink() {
            return None;
        }
        let dir = self
            .canonical_dir
            .get_or_init(|| fs::canonicalize(self.dir).ok());
        Some(dir.as_ref()?.join(name))
    }

    /// pi-workflows' path-safety rule: the real path of the phase file must lie inside the real
    /// path of the root. A path that does not exist is checked lexically.
    fn inside_root(&self, path: &Path) -> bool {
        if self.files.is_pinned() {
            // Pinned copies were checked on disk when they were read; their paths still must
            // not lead out of the root.
            let lexical = crate::paths::lexical(path);
            return lexical.starts_with(self.canonical_root) && lexical != self.canonical_root;
        }
        if let Some(real) = self.real_path_beside(path) {
            return real.starts_with(self.canonical_root) && real != self.canonical_root;
        }
        match fs::canonicalize(path) {
            Ok(real) => real.starts_with(self.canonical_root) && real != self.canonical_root,
            Err(_) => {
                let canonical_dir =
                    fs::canonicalize(self.dir).unwrap_or_else(|_| self.dir.to_owned());
                let rel = path.strip_prefix(self.dir).unwrap_or(path);
                let lexical = crate::paths::lexical(&canonical_dir.join(rel));
                lexical.starts_with(self.canonical_root) && lexical != self.canonical_root
            }
        }
    }
}
