//! Keeping the agent in the mode that asks ([`super::modes`]): set when its session opens, put
//! back as soon as the agent says it left it. The connection's handler sees the agent's
//! `current_mode_update` and `config_option_update` as they arrive (the turn may be waiting on
//! the user for minutes meanwhile), so the mode is put back from there, and the task is told.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionId, SessionModeState, SetSessionConfigOptionRequest,
    SetSessionModeRequest,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Agent;
use tokio::sync::mpsc;

use super::from_agent::FromAgent;
use super::modes::{self, Mode, Via};

/// How often rawko puts an agent's mode back before it gives up on it.
const PUT_BACK_LIMIT: u32 = 10;

/// How long the agent may take to answer a mode change.
const SET_LIMIT: Duration = Duration::from_secs(30);

/// What the start of a session found about the agent's asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Asking {
    /// It runs in `mode`, which asks; `from`: the mode rawko moved it out of.
    Kept { mode: Mode, from: Option<String> },
    /// It cannot be made to ask: why.
    Cannot(String),
}

/// The mode rawko keeps the agent in.
struct Held {
    session: SessionId,
    via: Via,
    has_set_mode: bool,
    mode: Mode,
    put_back: u32,
    /// The mode rawko is putting it back from (a change the agent announces twice, as
    /// `current_mode_update` and `config_option_update`, is put back once).
    leaving: Option<String>,
}

/// The agent's mode as rawko holds it, shared with the connection's handler.
pub(super) struct Keeper {
    held: Mutex<Option<Held>>,
    tx: mpsc::UnboundedSender<FromAgent>,
}

impl Keeper {
    pub(super) fn new(tx: mpsc::UnboundedSender<FromAgent>) -> Arc<Keeper> {
        Arc::new(Keeper {
            held: Mutex::new(None),
            tx,
        })
    }

    /// Puts the agent's new (or loaded) `session` in the mode that asks, from what it advertised.
    pub(super) async fn start(
        &self,
        cx: &ConnectionTo<Agent>,
        session: &SessionId,
        modes: Option<&SessionModeState>,
        config: Option<&[SessionConfigOption]>,
    ) -> Asking {
        if let Ok(mut held) = self.held.lock() {
            *held = None;
        }
        let Some(advertised) = modes::advertised(modes, config) else {
            return Asking::Cannot("it advertises no modes".to_owned());
        };
        let mode = match modes::choose(&advertised) {
            Ok(mode) => mode,
            Err(why) => return Asking::Cannot(why),
        };
        let from = (mode.id != advertised.current).then(|| advertised.current.clone());
        if from.is_some() {
            let set = set(
                cx,
                session,
                &advertised.via,
                &mode.id,
                advertised.has_set_mode,
            )
            .await;
            if let Err(e) = set {
                return Asking::Cannot(format!(
                    "it refused to go to its mode {}: {e}",
                    mode.shown()
                ));
            }
        }
        // Held only now: what the agent said of its mode before it took rawko's is no change.
        if let Ok(mut held) = self.held.lock() {
            *held = Some(Held {
                session: session.clone(),
                via: advertised.via,
                has_set_mode: advertised.has_set_mode,
                mode: mode.clone(),
                put_back: 0,
                leaving: None,
            });
        }
        Asking::Kept { mode, from }
    }

    /// The agent says its mode is now `id` (`current_mode_update`).
    pub(super) fn mode_now(self: &Arc<Self>, cx: &ConnectionTo<Agent>, id: &str) {
        self.check(cx, id);
    }

    /// The agent sent its config options (`config_option_update`): its mode among them.
    pub(super) fn config_now(
        self: &Arc<Self>,
        cx: &ConnectionTo<Agent>,
        options: &[SessionConfigOption],
    ) {
        let current = {
            let Ok(held) = self.held.lock() else { return };
            let Some(held) = held.as_ref() else { return };
            let wanted = match &held.via {
                Via::Config(id) => options.iter().find(|o| o.id.0.as_ref() == id),
                Via::Mode => None,
            };
            let found = match wanted {
                Some(option) => modes::mode_option(std::slice::from_ref(option)),
                None => modes::mode_option(options),
            };
            match found {
                Some((_, current, _)) => current,
                None => return,
            }
        };
        self.check(cx, &current);
    }

    /// Puts the mode back when `current` is not the one held.
    fn check(self: &Arc<Self>, cx: &ConnectionTo<Agent>, current: &str) {
        let Ok(mut held) = self.held.lock() else {
            return;
        };
        let Some(h) = held.as_mut() else { return };
        if h.mode.id == current {
            h.leaving = None;
            return;
        }
        if h.leaving.as_deref() == Some(current) {
            return;
        }
        h.leaving = Some(current.to_owned());
        h.put_back += 1;
        if h.put_back > PUT_BACK_LIMIT {
            let note = format!(
                "[rawko: the agent left its mode {} again, for \"{current}\"; after {PUT_BACK_LIMIT} times rawko stops putting it back: what it does without asking now is confined only by the sandbox around its process]\n",
                h.mode.shown()
            );
            let _ = self.tx.send(FromAgent::Note(note));
            *held = None;
            return;
        }
        let _ = self.tx.send(FromAgent::Note(format!(
            "[rawko: the agent switched itself to its mode \"{current}\"; rawko put it back in {}, in which it asks before it writes or runs a command]\n",
            h.mode.shown()
        )));
        let (cx, session, via, id, has_set_mode, shown) = (
            cx.clone(),
            h.session.clone(),
            h.via.clone(),
            h.mode.id.clone(),
            h.has_set_mode,
            h.mode.shown(),
        );
        let keeper = self.clone();
        tokio::spawn(async move {
            match set(&cx, &session, &via, &id, has_set_mode).await {
                Ok(()) => {
                    if let Ok(mut held) = keeper.held.lock() {
                        if let Some(h) = held.as_mut() {
                            h.leaving = None;
                        }
                    }
                }
                Err(e) => {
                    let _ = keeper.tx.send(FromAgent::Note(format!(
                        "[rawko: the agent refused to go back to its mode {shown} ({e}): what it does without asking is confined only by the sandbox around its process]\n"
                    )));
                }
            }
        });
    }
}

/// Sets the agent's mode to `id`: through its config option, else (or when that fails and it has
/// modes too) `session/set_mode`.
async fn set(
    cx: &ConnectionTo<Agent>,
    session: &SessionId,
    via: &Via,
    id: &str,
    has_set_mode: bool,
) -> Result<(), String> {
    let first = match via {
        Via::Config(option) => {
            let request = SetSessionConfigOptionRequest::new(session.clone(), option.clone(), id);
            let sent = cx.send_request(request).block_task();
            match tokio::time::timeout(SET_LIMIT, sent).await {
                Ok(Ok(_)) => return Ok(()),
                Ok(Err(e)) => format!("session/set_config_option: {e}"),
                Err(_) => format!(
                    "session/set_config_option got no answer within {} s",
                    SET_LIMIT.as_secs()
                ),
            }
        }
        Via::Mode => String::new(),
    };
    if !first.is_empty() && !has_set_mode {
        return Err(first);
    }
    let request = SetSessionModeRequest::new(session.clone(), id.to_owned());
    let sent = cx.send_request(request).block_task();
    let second = match tokio::time::timeout(SET_LIMIT, sent).await {
        Ok(Ok(_)) => return Ok(()),
        Ok(Err(e)) => format!("session/set_mode: {e}"),
        Err(_) => format!(
            "session/set_mode got no answer within {} s",
            SET_LIMIT.as_secs()
        ),
    };
    Err(if first.is_empty() {
        second
    } else {
        format!("{first}; {second}")
    })
}
