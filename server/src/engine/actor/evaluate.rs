//! The arbiter's evaluation of a run, and what the not-done policy ([`super::not_done`]) decides
//! done: the Stop hooks, the cap, the countdown, the reminder, the hand-back of an external agent.

use super::drive::quote;
use super::not_done::{self, Countdown, Decision, Facts, Flow, StopHooks, Verdict};
use super::{Control, Conversation, Stop};
use crate::engine::arbiter;
use crate::engine::log::LogEvent;
use crate::engine::{OutputKind, TaskEvent, TaskState};
use crate::machine::{self, ArbiterDecision, MachineError};
use crate::provider::{Message, Provider};

impl Control {
    /// The arbiter judges the run that just ended. The not-done policy ([`not_done::decide`])
    /// says what follows; this does it: with an active workflow and a `CONTINUE`, the countdown
    /// runs here and the not-done reminder goes into the conversation.
    pub(super) async fn evaluate(
        &mut self,
        conversation: &mut Conversation,
        arbiter: &mut Option<Box<dyn Provider>>,
    ) -> Result<Result<ArbiterDecision, MachineError>, machine::Event> {
        if self.delegation.subagent.is_some() {
            // A subagent's run ends its task: its last words are its answer.
            return Ok(Ok(ArbiterDecision::Complete {
                summary: self.last_output.clone(),
            }));
        }
        let mut verdict: Option<ArbiterDecision> = None;
        let mut stop_hooks = None;
        let mut hook_message = None;
        let mut countdown = None;
        loop {
            // The facts are read afresh each time: a wait may have changed the workflow (a step)
            // or the count (a message).
            let facts = Facts {
                flow: Flow::of(self.pos.workflow.as_ref()),
                external: self.external.is_some(),
                user_message_waiting: !self.pending.messages.is_empty(),
                verdict: verdict.as_ref().map(Verdict::of),
                stop_hooks,
                countdown,
                reminders_in_row: self.not_done.reminders_in_row,
                max_reminders: self.settings.max_reminders,
                countdown_seconds: self.settings.countdown_seconds,
            };
            let decision = not_done::decide(&facts);
            match decision {
                Decision::CancelTask => return Err(machine::Event::Cancel),
                Decision::LetExternalStop => {
                    // No workflow picked yet: the external agent may stop; its session goes on.
                    if let Some(bridge) = &self.external {
                        self.durable().await;
                        bridge.answer_stop(crate::external::StopAnswer::Allow);
                    }
                    return Ok(Ok(ArbiterDecision::Continue {
                        reason: "waiting for the external agent".to_owned(),
                    }));
                }
                Decision::ContinueForUser => {
                    return Ok(Ok(ArbiterDecision::Continue {
                        reason: "the user sent a message".to_owned(),
                    }))
                }
                Decision::AskArbiter => match self.judge(arbiter).await? {
                    Ok(d) => verdict = Some(d),
                    Err(e) => return Ok(Err(e)),
                },
                Decision::RunStopHooks => match self.stop_hooks().await {
                    Ok(None) => stop_hooks = Some(StopHooks::Passed),
                    Ok(Some(message)) => {
                        hook_message = Some(message);
                        stop_hooks = Some(StopHooks::Blocked);
                    }
                    Err(Stop::Interrupt) => stop_hooks = Some(StopHooks::Interrupted),
                    Err(stop) => return Err(Self::stop_event(stop)),
                },
                Decision::StopHookReminder => {
                    // A Stop hook sends the agent on; it counts like a not-done reminder.
                    let message = hook_message.take().unwrap_or_default();
                    self.not_done.reminders_in_row += 1;
                    self.log(LogEvent::UserMessage {
                        text: message.clone(),
                        source: "stop_hook".to_owned(),
                    });
                    self.record(
                        "stop_hook",
                        None,
                        None,
                        Some(format!("reminder {}", self.not_done.reminders_in_row)),
                    );
                    self.output(OutputKind::Reminder, message.clone());
                    conversation.messages.push(Message::User(message));
                    return Ok(Ok(ArbiterDecision::Continue {
                        reason: "a Stop hook blocked the stop".to_owned(),
                    }));
                }
                Decision::WaitForUser => {
                    self.wait_for_user().await?;
                    return Ok(Ok(ArbiterDecision::Continue {
                        reason: "the user resumed after a hook stopped the task".to_owned(),
                    }));
                }
                Decision::Fail(cap) | Decision::HandBack(cap) => {
                    let phase = self
                        .pos
                        .workflow
                        .as_ref()
                        .and_then(|w| w.resolve(&self.pos.set))
                        .map(|a| format!("{} {}", a.current_phase.emoji, a.current_phase.name))
                        .unwrap_or_default();
                    let why = not_done::cap_reason(
                        cap,
                        self.not_done.reminders_in_row,
                        self.settings.max_reminders,
                        &phase,
                    );
                    if matches!(decision, Decision::HandBack(_)) {
                        return self.external_gives_up(why).await;
                    }
                    return Ok(Err(MachineError::new("reminder_limit", why)));
                }
                Decision::CountDown => countdown = Some(self.countdown().await?),
                Decision::Remind => {
                    self.send_reminder(conversation);
                    return Ok(verdict.ok_or_else(no_verdict));
                }
                Decision::Complete => {
                    return Ok(Ok(ArbiterDecision::Complete {
                        summary: self.last_output.clone(),
                    }))
                }
                Decision::Accept => return Ok(verdict.ok_or_else(no_verdict)),
            }
        }
    }

    /// The arbiter's verdict on the run: the model arbiter's answer, or the deterministic one.
    async fn judge(
        &mut self,
        arbiter: &mut Option<Box<dyn Provider>>,
    ) -> Result<Result<ArbiterDecision, MachineError>, machine::Event> {
        if !self.orch.model_arbiter {
            return Ok(arbiter::evaluate(&self.view()));
        }
        let prompt = arbiter::evaluate_prompt(&self.view());
        Ok(match self.ask_arbiter(arbiter, prompt).await? {
            Ok(text) => arbiter::parse_decision(&text).map_err(|why| {
                MachineError::new(
                    "arbiter_error",
                    format!("unparseable arbiter answer ({why}): {}", quote(&text)),
                )
            }),
            Err(e) => Err(e),
        })
    }

    /// An external agent that kept stopping past the reminder cap may stop: rawko does not own its
    /// session, so instead of failing the task it waits on the user, who sends the agent on (a
    /// new prompt), steps the workflow, or cancels.
    async fn external_gives_up(
        &mut self,
        why: String,
    ) -> Result<Result<ArbiterDecision, MachineError>, machine::Event> {
        if let Some(bridge) = &self.external {
            self.durable().await;
            bridge.answer_stop(crate::external::StopAnswer::Allow);
        }
        self.record("reminder_limit", None, None, Some(why.clone()));
        self.output(
            OutputKind::Error,
            format!("{why}. The agent may stop; the task waits for you (send a message, step the workflow, or cancel)."),
        );
        self.wait_for_user_because(format!("{why}; waiting for you"))
            .await?;
        self.not_done.reminders_in_row = 0;
        Ok(Ok(ArbiterDecision::Continue {
            reason: "the user resumed the task after the reminder cap".to_owned(),
        }))
    }

    /// Counts down before the reminder (the policy sends it at once when `countdownSeconds` is
    /// 0): it runs out, or the user steps in (a message, a step, an interrupt and then the user).
    async fn countdown(&mut self) -> Result<Countdown, machine::Event> {
        let seconds = self.settings.countdown_seconds;
        self.set_status(TaskState::Countdown, None, "countdown");
        for left in (1..=seconds).rev() {
            let label = format!("⏳ Auto-continuing in {left}s");
            self.emit(TaskEvent::Countdown {
                seconds_left: left,
                text: format!("{label} — interrupt to stop"),
                label,
            });
            match self
                .wait(tokio::time::sleep(self.settings.countdown_tick), true)
                .await
            {
                Ok(()) => {}
                Err(Stop::Interrupt) => {
                    self.record("countdown_interrupted", None, None, None);
                    self.wait_for_user().await?;
                    return Ok(Countdown::UserStepped);
                }
                Err(Stop::Message) | Err(Stop::Stepped) => {
                    self.set_status(TaskState::Running, None, "countdown_stopped");
                    return Ok(Countdown::UserStepped);
                }
                Err(stop) => return Err(Self::stop_event(stop)),
            }
        }
        Ok(Countdown::RanOut)
    }

    /// The not-done reminder of the current phase into the conversation: one more in a row.
    fn send_reminder(&mut self, conversation: &mut Conversation) {
        let Some(reminder) = self
            .pos
            .workflow
            .as_ref()
            .and_then(|w| w.resolve(&self.pos.set))
            .map(|a| a.not_done_reminder(&self.pos.set))
        else {
            return;
        };
        self.not_done.reminders_in_row += 1;
        self.log(LogEvent::UserMessage {
            text: reminder.clone(),
            source: "reminder".to_owned(),
        });
        self.record(
            "reminder",
            None,
            None,
            Some(format!("reminder {}", self.not_done.reminders_in_row)),
        );
        self.output(OutputKind::Reminder, reminder.clone());
        conversation.messages.push(Message::User(reminder));
        self.set_status(TaskState::Running, None, "reminder");
    }
}

/// The policy accepts or reminds only after the arbiter's verdict.
fn no_verdict() -> MachineError {
    MachineError::new(
        "arbiter_error",
        "the not-done policy decided without a verdict",
    )
}
