//! The not-done policy, pure: what the task does when its agent stops. The effectful side
//! ([`super::evaluate`]) gathers the [`Facts`], asks [`decide`], does what the [`Decision`] says
//! (ask the arbiter, run the Stop hooks, count down, remind, give up…), records what it learnt in
//! the facts and asks again, until a decision ends the evaluation.
//!
//! The rules: a cancelled workflow cancels the task; an external agent with no workflow yet may
//! stop; a message from the user goes first; else the arbiter judges. When it says continue or
//! complete, the Stop hooks run; one that sends the agent on counts as a reminder. While the
//! workflow is active and the arbiter says continue, the agent gets the not-done reminder after a
//! countdown. `maxReminders` in a row (the user speaking or the workflow moving starts the count
//! afresh) is the cap: past it the task fails, or an external agent, whose session rawko does not
//! own, may stop and the task waits for the user.

/// Where the task's workflow is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    /// The task runs no workflow.
    None,
    Active,
    /// Finished (not active, not cancelled).
    Finished,
    Cancelled,
}

impl Flow {
    pub(super) fn of(workflow: Option<&crate::workflow::WorkflowState>) -> Flow {
        match workflow {
            None => Flow::None,
            Some(w) if w.active => Flow::Active,
            Some(w) if w.cancelled => Flow::Cancelled,
            Some(_) => Flow::Finished,
        }
    }
}

/// What the arbiter said of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    Continue,
    Complete,
    /// Anything else (select another agent, fail…): the policy lets it stand.
    Other,
}

impl Verdict {
    pub(super) fn of(decision: &crate::machine::ArbiterDecision) -> Verdict {
        use crate::machine::ArbiterDecision;
        match decision {
            ArbiterDecision::Continue { .. } => Verdict::Continue,
            ArbiterDecision::Complete { .. } => Verdict::Complete,
            _ => Verdict::Other,
        }
    }
}

/// What the Stop hooks answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StopHooks {
    /// None sent the agent on (or there are none).
    Passed,
    /// One blocked the stop: the agent goes on with its message.
    Blocked,
    /// One stopped the task, or the user interrupted while they ran.
    Interrupted,
}

/// How the countdown ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Countdown {
    /// It ran out: the reminder is due.
    RanOut,
    /// The user stepped in (a message, a step, an interrupt and then the user).
    UserStepped,
}

/// Everything the policy looks at. What an effect has not found out yet is `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Facts {
    pub(super) flow: Flow,
    /// The task stands for an external agent (Claude Code through its hooks).
    pub(super) external: bool,
    /// The user sent a message the agent has not seen yet.
    pub(super) user_message_waiting: bool,
    pub(super) verdict: Option<Verdict>,
    pub(super) stop_hooks: Option<StopHooks>,
    pub(super) countdown: Option<Countdown>,
    /// Reminders (and Stop hooks that sent the agent on) in a row so far.
    pub(super) reminders_in_row: u32,
    /// The `maxReminders` setting.
    pub(super) max_reminders: u32,
    /// The `countdownSeconds` setting.
    pub(super) countdown_seconds: u32,
}

/// Which stops in a row reached the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cap {
    /// Stop hooks kept sending the agent on.
    StopHook,
    /// The agent kept stopping before the phase was done.
    Phase,
}

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Decision {
    /// The workflow was cancelled: so is the task.
    CancelTask,
    /// An external agent with no workflow yet may stop; its session goes on.
    LetExternalStop,
    /// The user's message goes first: the agent continues with it.
    ContinueForUser,
    /// Ask the arbiter for its verdict.
    AskArbiter,
    /// Run the Stop hooks.
    RunStopHooks,
    /// A Stop hook sent the agent on: one more reminder in a row, its message to the agent.
    StopHookReminder,
    /// A hook stopped the task (or the user interrupted): wait for the user, then continue.
    WaitForUser,
    /// The cap is reached: the task fails.
    Fail(Cap),
    /// The cap is reached by an external agent: it may stop, and the task waits for the user.
    HandBack(Cap),
    /// Count down before the reminder.
    CountDown,
    /// Send the not-done reminder: one more in a row.
    Remind,
    /// The workflow ended meanwhile: the task is complete.
    Complete,
    /// The arbiter's verdict stands.
    Accept,
}

/// The not-done policy.
pub(super) fn decide(f: &Facts) -> Decision {
    let Some(verdict) = f.verdict else {
        if f.flow == Flow::Cancelled {
            return Decision::CancelTask;
        }
        if f.external && f.flow == Flow::None {
            return Decision::LetExternalStop;
        }
        if f.user_message_waiting {
            return Decision::ContinueForUser;
        }
        return Decision::AskArbiter;
    };
    let at_cap = f.reminders_in_row >= f.max_reminders;
    let give_up = |cap| match f.external {
        true => Decision::HandBack(cap),
        false => Decision::Fail(cap),
    };
    if matches!(verdict, Verdict::Continue | Verdict::Complete) {
        match f.stop_hooks {
            None => return Decision::RunStopHooks,
            Some(StopHooks::Passed) => {}
            Some(StopHooks::Blocked) if at_cap => return give_up(Cap::StopHook),
            Some(StopHooks::Blocked) => return Decision::StopHookReminder,
            Some(StopHooks::Interrupted) => return Decision::WaitForUser,
        }
    }
    // After the countdown, the workflow may have moved (the user stepped it): what it was when
    // the countdown began decided, what it is now only says whether it ended.
    match f.countdown {
        Some(Countdown::RanOut) => return Decision::Remind,
        Some(Countdown::UserStepped) => {
            return match f.flow {
                Flow::Finished | Flow::Cancelled => Decision::Complete,
                Flow::None | Flow::Active => Decision::Accept,
            }
        }
        None => {}
    }
    if !(f.flow == Flow::Active && verdict == Verdict::Continue) {
        return Decision::Accept;
    }
    // The agent stopped while the workflow is still active.
    if at_cap {
        give_up(Cap::Phase)
    } else if f.countdown_seconds == 0 {
        Decision::Remind
    } else {
        Decision::CountDown
    }
}

/// Why the task gives up at the cap: `reminders_in_row` stops were followed by one more.
pub(super) fn cap_reason(
    cap: Cap,
    reminders_in_row: u32,
    max_reminders: u32,
    phase: &str,
) -> String {
    let stops = reminders_in_row + 1;
    match cap {
        Cap::StopHook => format!(
            "a Stop hook kept the agent going {stops} times in a row; giving up (maxReminders is {max_reminders})"
        ),
        Cap::Phase => format!(
            "the agent stopped {stops} times in a row without finishing the {phase} phase; giving up (maxReminders is {max_reminders})"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Decision as D;

    /// Facts with the defaults the table changes: an active workflow, a local agent, no message,
    /// nothing found out yet, no reminders so far, a cap of 3 and a 5 s countdown.
    fn facts() -> Facts {
        Facts {
            flow: Flow::Active,
            external: false,
            user_message_waiting: false,
            verdict: None,
            stop_hooks: None,
            countdown: None,
            reminders_in_row: 0,
            max_reminders: 3,
            countdown_seconds: 5,
        }
    }

    #[test]
    fn the_table() {
        use Countdown::*;
        use StopHooks::*;
        use Verdict::*;
        let f = facts();
        let after_hooks = |verdict, flow| Facts {
            verdict: Some(verdict),
            stop_hooks: Some(Passed),
            flow,
            ..f
        };
        #[rustfmt::skip]
        let cases: Vec<(&str, Facts, Decision)> = vec![
            // Before the arbiter.
            ("a cancelled workflow cancels the task", Facts { flow: Flow::Cancelled, user_message_waiting: true, ..f }, D::CancelTask),
            ("an external agent without a workflow may stop", Facts { flow: Flow::None, external: true, user_message_waiting: true, ..f }, D::LetExternalStop),
            ("an external agent with a workflow is judged", Facts { external: true, ..f }, D::AskArbiter),
            ("a local task without a workflow is judged", Facts { flow: Flow::None, ..f }, D::AskArbiter),
            ("the user's message goes first", Facts { user_message_waiting: true, ..f }, D::ContinueForUser),
            ("else the arbiter judges", f, D::AskArbiter),
            ("a finished workflow is judged too", Facts { flow: Flow::Finished, ..f }, D::AskArbiter),
            // The arbiter said; the Stop hooks.
            ("continue runs the Stop hooks", Facts { verdict: Some(Continue), ..f }, D::RunStopHooks),
            ("complete runs the Stop hooks", Facts { verdict: Some(Complete), ..f }, D::RunStopHooks),
            ("another verdict stands, without hooks", Facts { verdict: Some(Other), ..f }, D::Accept),
            ("another verdict stands at the cap", Facts { verdict: Some(Other), reminders_in_row: 9, ..f }, D::Accept),
            ("a message after the verdict changes nothing", Facts { verdict: Some(Other), user_message_waiting: true, ..f }, D::Accept),
            ("a blocking Stop hook is a reminder", Facts { verdict: Some(Complete), stop_hooks: Some(Blocked), reminders_in_row: 2, ..f }, D::StopHookReminder),
            ("a blocking Stop hook at the cap fails the task", Facts { verdict: Some(Complete), stop_hooks: Some(Blocked), reminders_in_row: 3, ..f }, D::Fail(Cap::StopHook)),
            ("past the cap too", Facts { verdict: Some(Continue), stop_hooks: Some(Blocked), reminders_in_row: 7, ..f }, D::Fail(Cap::StopHook)),
            ("an external agent is handed back at the Stop hook cap", Facts { verdict: Some(Continue), stop_hooks: Some(Blocked), reminders_in_row: 3, external: true, ..f }, D::HandBack(Cap::StopHook)),
            ("a cap of 0 gives up at the first Stop hook", Facts { verdict: Some(Continue), stop_hooks: Some(Blocked), max_reminders: 0, ..f }, D::Fail(Cap::StopHook)),
            ("a hook that stops the task waits for the user", Facts { verdict: Some(Continue), stop_hooks: Some(Interrupted), reminders_in_row: 9, ..f }, D::WaitForUser),
            ("without a workflow a passed Stop hook lets continue stand", after_hooks(Continue, Flow::None), D::Accept),
            ("complete stands in an active workflow", after_hooks(Complete, Flow::Active), D::Accept),
            ("continue stands in a finished workflow", after_hooks(Continue, Flow::Finished), D::Accept),
            // Continue in an active workflow: the countdown and the reminder.
            ("continue in an active workflow counts down", after_hooks(Continue, Flow::Active), D::CountDown),
            ("without a countdown the reminder goes at once", Facts { countdown_seconds: 0, ..after_hooks(Continue, Flow::Active) }, D::Remind),
            ("below the cap it counts down", Facts { reminders_in_row: 2, ..after_hooks(Continue, Flow::Active) }, D::CountDown),
            ("at the cap the task fails", Facts { reminders_in_row: 3, ..after_hooks(Continue, Flow::Active) }, D::Fail(Cap::Phase)),
            ("at the cap without a countdown too", Facts { reminders_in_row: 3, countdown_seconds: 0, ..after_hooks(Continue, Flow::Active) }, D::Fail(Cap::Phase)),
            ("at the cap an external agent is handed back", Facts { reminders_in_row: 3, external: true, ..after_hooks(Continue, Flow::Active) }, D::HandBack(Cap::Phase)),
            ("an external agent counts down too", Facts { external: true, ..after_hooks(Continue, Flow::Active) }, D::CountDown),
            ("a countdown that ran out sends the reminder", Facts { countdown: Some(RanOut), ..after_hooks(Continue, Flow::Active) }, D::Remind),
            ("the user stepped in: continue stands", Facts { countdown: Some(UserStepped), ..after_hooks(Continue, Flow::Active) }, D::Accept),
            ("the user finished the workflow meanwhile: complete", Facts { countdown: Some(UserStepped), ..after_hooks(Continue, Flow::Active) }.with_flow(Flow::Finished), D::Complete),
            ("the user cancelled the workflow meanwhile: complete", Facts { countdown: Some(UserStepped), ..after_hooks(Continue, Flow::Active) }.with_flow(Flow::Cancelled), D::Complete),
        ];
        for (what, facts, expected) in cases {
            assert_eq!(decide(&facts), expected, "{what}: {facts:?}");
        }
    }

    impl Facts {
        /// These facts with the workflow moved on (by the user, during a countdown).
        fn with_flow(self, flow: Flow) -> Facts {
            Facts { flow, ..self }
        }
    }

    #[test]
    fn cap_reasons_count_the_stop_that_reached_the_cap() {
        assert_eq!(
            cap_reason(Cap::StopHook, 3, 3, ""),
            "a Stop hook kept the agent going 4 times in a row; giving up (maxReminders is 3)"
        );
        assert_eq!(
            cap_reason(Cap::Phase, 2, 2, "🛠️ Implement"),
            "the agent stopped 3 times in a row without finishing the 🛠️ Implement phase; giving up (maxReminders is 2)"
        );
    }
}
