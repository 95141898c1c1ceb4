//! Problems found while loading workflows: each names the file (and the line where the parser
//! knows it), so an editor can put it in its problems list and a terminal user can jump to it.

use std::fmt;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// The workflow cannot be used; it was skipped.
    Error,
    /// The workflow loads, but something is probably not what its author meant.
    Warning,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub path: PathBuf,
    /// 1-based.
    pub line: Option<usize>,
    /// 1-based.
    pub column: Option<usize>,
    /// The workflow key the problem belongs to, when there is one.
    pub workflow: Option<String>,
    pub message: String,
}

impl Diagnostic {
    pub fn error(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            path: path.into(),
            line: None,
            column: None,
            workflow: None,
            message: message.into(),
        }
    }

    pub fn warning(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            ..Self::error(path, message)
        }
    }

    pub fn at_line(mut self, line: Option<usize>) -> Self {
        self.line = line;
        self
    }

    pub fn at(mut self, line: usize, column: usize) -> Self {
        self.line = Some(line);
        self.column = Some(column);
        self
    }

    pub fn in_workflow(mut self, key: &str) -> Self {
        self.workflow = Some(key.to_owned());
        self
    }
}

impl fmt::Display for Diagnostic {
    /// `path:line:column: severity: message`, the shape compilers print and editors parse.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.column {
                write!(f, ":{col}")?;
            }
        }
        write!(f, ": {}: {}", self.severity.as_str(), self.message)
    }
}
