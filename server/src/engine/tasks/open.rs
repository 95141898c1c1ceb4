//! The one way into a workspace: a face opens it with [`Tasks::open`] and gets the service that
//! owns it from then on — the folder (canonical), its settings and its workflow and agent roots
//! (the [`Place`]), whether its hooks and settings that need trust apply, the task store (WAL
//! recovery runs once, here), the session record, and the workflow set new tasks and a face's
//! listing share (`engine::loaded`). No face loads a [`Place`] or checks trust itself: a face
//! that can ask the user (the editor, a terminal) asks with what the service found and hands it
//! the answer ([`Tasks::answer_trust`]).
//!
//! Where a task's events go is a [`Route`]: the service's own (given at the opening) for faces
//! that show every task the same way (the LSP server, `rawko run`), or one per call
//! ([`Tasks::start_with`], [`Tasks::resume_with`]) for a face whose service several sessions
//! share (`rawko acp`). A task keeps its route: a later resume, retry or reset of it goes the
//! same way until the face releases the route ([`Tasks::release`]).

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::Value;

use super::{Place, Sink, Tasks};
use crate::config::{self, ConfigProblem, Settings};
use crate::hooks::trust::{self, Trust};
use crate::tools::ClientIo;

/// Where the events of a task go, and who does its tools' file and process I/O.
#[derive(Clone)]
pub struct Route {
    /// Tells routes apart (see [`Tasks::release`]).
    id: u64,
    pub sink: Sink,
    /// The client that does the task's file and process I/O, when the face has one that offers
    /// to (`rawko acp` with an editor's `fs` and `terminal`); `None`: the tools do it themselves.
    pub client_io: Option<Arc<dyn ClientIo>>,
}

impl Route {
    pub fn new(sink: Sink) -> Route {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Route {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            sink,
            client_io: None,
        }
    }

    pub fn with_client_io(mut self, client_io: Option<Arc<dyn ClientIo>>) -> Route {
        self.client_io = client_io;
        self
    }

    /// The route of a service whose every task is routed by its face: a task that comes without
    /// one (there should be none) is shown nowhere, and the log says so.
    fn nowhere() -> Route {
        Route::new(Arc::new(|id, _events| {
            tracing::warn!("task {id} has no face to show its events");
        }))
    }

    pub(super) fn same(&self, other: &Route) -> bool {
        self.id == other.id
    }
}

/// How a face opens a workspace (see [`Tasks::open`]); built with its methods.
pub struct Opening<'a> {
    workspace: PathBuf,
    env: &'a dyn Fn(&str) -> Option<OsString>,
    options: Option<&'a Value>,
    /// `None`: the state directory the environment names.
    store: Option<Option<PathBuf>>,
    route: Option<Route>,
    asks_trust: bool,
    record: Record,
    fixed: Option<Adjust<'a>>,
}

/// What a face changes in the defaults of fixed settings ([`Opening::fixed`]).
type Adjust<'a> = Box<dyn FnOnce(&mut Settings) + 'a>;

/// When the service starts its session record (AutoAgent's session file and its Stop hooks).
enum Record {
    Never,
    /// At the opening, as this command.
    Now(String),
    /// When the first task starts, as this command, naming that task's provider.
    FirstTask(String),
}

impl<'a> Opening<'a> {
    /// Opens `workspace` with its config files as `env` finds them, persisting tasks in the state
    /// directory, its tasks' events going nowhere until a route is given, recording no session.
    pub fn new(workspace: PathBuf, env: &'a dyn Fn(&str) -> Option<OsString>) -> Opening<'a> {
        Opening {
            workspace,
            env,
            options: None,
            store: None,
            route: None,
            asks_trust: false,
            record: Record::Never,
            fixed: None,
        }
    }

    /// The editor's settings (`initializationOptions`), over the config files'.
    pub fn options(mut self, options: Option<&'a Value>) -> Self {
        self.options = options;
        self
    }

    /// Where tasks are persisted; `None` keeps them in memory only.
    pub fn store(mut self, store: Option<PathBuf>) -> Self {
        self.store = Some(store);
        self
    }

    /// Where the events of a task started without a route of its own go.
    pub fn route(mut self, route: Route) -> Self {
        self.route = Some(route);
        self
    }

    /// The face asks the user whether to trust the workspace when it is not trusted: until it
    /// answers ([`Tasks::answer_trust`]) new tasks wait. Without this an untrusted workspace's
    /// hooks and settings that need trust are left out at once.
    pub fn asks_trust(mut self) -> Self {
        self.asks_trust = true;
        self
    }

    /// The session is recorded as `command` from the opening on.
    pub fn records_session_now(mut self, command: &str) -> Self {
        self.record = Record::Now(command.to_owned());
        self
    }

    /// The session is recorded as `command` when the first task starts.
    pub fn records_session(mut self, command: &str) -> Self {
        self.record = Record::FirstTask(command.to_owned());
        self
    }

    /// No config file is read: the defaults as `adjust` changes them, nothing to trust, the
    /// agents of the workspace's `.rawko/agents` only. `rawko demo` shows the same thing on
    /// every machine with it.
    pub fn fixed(mut self, adjust: impl FnOnce(&mut Settings) + 'a) -> Self {
        self.fixed = Some(Box::new(adjust));
        self
    }
}

/// An opened workspace: its service, and what the face should tell the user.
pub struct Opened {
    pub tasks: Arc<Tasks>,
    pub found: Found,
}

/// What opening a workspace found: whether it is trusted (a face that asks the user asks when
/// it is not) and the problems of its settings.
#[derive(Debug)]
pub struct Found {
    pub trust: Trust,
    pub problems: Vec<ConfigProblem>,
}

/// Whether a face asks the user about trust, and where a yes is recorded.
pub(super) struct Asking {
    pub(super) asks: std::sync::atomic::AtomicBool,
    pub(super) store: Option<PathBuf>,
}

/// The workspace as `opening` finds it: its place and trust.
fn find(
    workspace: PathBuf,
    options: Option<&Value>,
    env: &dyn Fn(&str) -> Option<OsString>,
    fixed: Option<Adjust<'_>>,
) -> (Place, Found) {
    let workspace = std::fs::canonicalize(&workspace).unwrap_or(workspace);
    if let Some(adjust) = fixed {
        let (mut settings, problems) = config::load(&[], None);
        adjust(&mut settings);
        let place = Place {
            workflow_roots: crate::workflow::default_roots(&workspace, env),
            agent_roots: vec![workspace.join(".rawko/agents")],
            workspace,
            settings,
        };
        let trust = Trust::Nothing;
        return (place, Found { trust, problems });
    }
    let (place, problems) = Place::load(workspace, options, env);
    let trust = trust::check(
        trust::store_path(env).as_deref(),
        &place.workspace,
        place.settings.trust_section().as_ref(),
    );
    (place, Found { trust, problems })
}

impl Tasks {
    /// Opens a workspace: the one way a face gets a task service (the LSP server and `rawko
    /// run` one per process, `rawko acp` one per folder its sessions name).
    pub fn open(opening: Opening<'_>) -> Opened {
        let Opening {
            workspace,
            env,
            options,
            store,
            route,
            asks_trust,
            record,
            fixed,
        } = opening;
        let (place, found) = find(workspace, options, env, fixed);
        let store = store.unwrap_or_else(|| crate::store::state_dir(env));
        let tasks = Tasks::new(
            place,
            store,
            route.unwrap_or_else(Route::nowhere),
            Asking {
                asks: asks_trust.into(),
                store: trust::store_path(env),
            },
        );
        tasks.trusted_as(found.trust);
        match record {
            Record::Never => {}
            Record::Now(command) => {
                let provider = tasks.settings().providers.first().map(|p| p.name.clone());
                tasks.start_session(&command, provider);
            }
            Record::FirstTask(command) => {
                let _ = tasks.session_command.set(command);
            }
        }
        Opened { tasks, found }
    }

    /// Moves the service to another folder (or the same one with new editor settings: the
    /// editor's `initialize`): its settings and roots are found again and its trust checked
    /// again (`asks_trust` as [`Opening::asks_trust`]: the face asks from now on); tasks already
    /// running keep what they were started with. The store, the routes and the session record
    /// stay.
    pub fn reopen(
        &self,
        workspace: PathBuf,
        options: Option<&Value>,
        env: &dyn Fn(&str) -> Option<OsString>,
        asks_trust: bool,
    ) -> Found {
        let (place, found) = find(workspace, options, env, None);
        self.asks_trust.asks.store(asks_trust, Ordering::Relaxed);
        self.trusted_as(found.trust);
        self.configure(place);
        found
    }

    /// The trust as the opening found it, before anyone was asked.
    pub fn trust_found(&self) -> Trust {
        self.found.read().map(|t| *t).unwrap_or(Trust::Untrusted)
    }

    /// Sets the trust found: a trusted workspace (or one with nothing to trust) is trusted; an
    /// untrusted one waits for the face's question if it asks one, else is not.
    fn trusted_as(&self, found: Trust) {
        if let Ok(mut f) = self.found.write() {
            *f = found;
        }
        self.set_trust(match found {
            t if t.allows() => Some(true),
            _ if self.asks_trust.asks.load(Ordering::Relaxed) => None,
            _ => Some(false),
        });
    }

    /// The user's answer to the face's question whether to trust the workspace: a yes is
    /// recorded (so the next opening finds it trusted) and the workspace's hooks and settings
    /// that need trust apply from now on; a no leaves them out. An error recording the yes is
    /// returned for the user (the yes holds for this service all the same).
    pub fn answer_trust(&self, trusted: bool) -> Result<(), String> {
        let mut recorded = Ok(());
        if trusted {
            let place = self.place();
            if let (Some(store), Some(section)) =
                (&self.asks_trust.store, place.settings.trust_section())
            {
                recorded = trust::record(store, &place.workspace, &section)
                    .map_err(|e| format!("cannot record that you trust this workspace: {e}"));
            }
        }
        self.set_trust(Some(trusted));
        recorded
    }
}
