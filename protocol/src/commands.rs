//! The `workspace/executeCommand` commands rawko accepts, so that any LSP client can drive it.
//!
//! Each command takes one argument, the params object of the request it stands for, and returns
//! that request's result.

use crate::to_server::{CancelTask, StartTask, Step};
use crate::Request;

/// `rawko.startTask`: does what `rawko/startTask` does.
pub const START_TASK: &str = "rawko.startTask";
/// `rawko.cancelTask`: does what `rawko/cancelTask` does.
pub const CANCEL_TASK: &str = "rawko.cancelTask";
/// `rawko.step`: does what `rawko/step` does.
pub const STEP: &str = "rawko.step";

/// Every command with the request method it stands for, as `(command, method)`; the server
/// advertises the commands in `executeCommandProvider.commands`.
pub const ALL: [(&str, &str); 3] = [
    (START_TASK, StartTask::METHOD),
    (CANCEL_TASK, CancelTask::METHOD),
    (STEP, Step::METHOD),
];

/// The request method that `command` stands for, if rawko has such a command.
pub fn request_method(command: &str) -> Option<&'static str> {
    ALL.iter()
        .find(|(name, _)| *name == command)
        .map(|(_, method)| *method)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_command_is_named_after_its_request() {
        for (command, method) in ALL {
            assert_eq!(command.replace('.', "/"), method);
            assert_eq!(request_method(command), Some(method));
        }
        assert_eq!(request_method("rawko.nope"), None);
    }
}
