//! Failover across configured providers (AutoAgent's behaviour): a provider that stays rate
//! limited after its own retries gets a cooldown, and the turn goes to the next provider that is
//! not cooling down. When every provider cools down, the error says which comes back first.
//!
//! Cooldowns are shared by every task of the process (one provider account, one limit) through a
//! [`Cooldowns`] handle, and may be kept in a file so a restart remembers them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{ErrorKind, Provider, ProviderError, TextSink, TurnFuture, TurnRequest};

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// When each provider may be used again (seconds since the epoch), shared and optionally stored.
#[derive(Debug, Clone, Default)]
pub struct Cooldowns {
    until: Arc<Mutex<HashMap<String, u64>>>,
    file: Option<PathBuf>,
}

/// The cooldown of a provider that stays rate limited (AutoAgent's `rateLimitCooldown`).
pub fn default_cooldown() -> Duration {
    let secs = COOLDOWN_SECS.load(std::sync::atomic::Ordering::Relaxed);
    Duration::from_secs(secs)
}

static COOLDOWN_SECS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(3600);

/// Sets the cooldown of rate limited providers for this process (from `rateLimitCooldownSeconds`).
pub fn set_default_cooldown(cooldown: Duration) {
    COOLDOWN_SECS.store(
        cooldown.as_secs().max(1),
        std::sync::atomic::Ordering::Relaxed,
    );
}

impl Cooldowns {
    /// The process's cooldowns, kept in `<state dir>/rate-limits.json` when there is a state
    /// directory, so every task (and the next start of rawko) knows them.
    pub fn global() -> Cooldowns {
        static GLOBAL: std::sync::OnceLock<Cooldowns> = std::sync::OnceLock::new();
        GLOBAL
            .get_or_init(|| match crate::store::state_dir(|k| std::env::var_os(k)) {
                Some(dir) => {
                    let _ = std::fs::create_dir_all(&dir);
                    Cooldowns::stored(dir.join("rate-limits.json"))
                }
                None => Cooldowns::default(),
            })
            .clone()
    }

    /// Cooldowns kept in `file` (read now, written on every change).
    pub fn stored(file: PathBuf) -> Self {
        let until = std::fs::read(&file)
            .ok()
            .and_then(|b| serde_json::from_slice::<HashMap<String, u64>>(&b).ok())
            .unwrap_or_default();
        Self {
            until: Arc::new(Mutex::new(until)),
            file: Some(file),
        }
    }

    /// Seconds until `provider` may be used again; `None` when it may be used now.
    pub fn remaining(&self, provider: &str) -> Option<u64> {
        let until = *self.until.lock().ok()?.get(provider)?;
        let now = now_secs();
        (until > now).then(|| until - now)
    }

    pub fn start(&self, provider: &str, cooldown: Duration) {
        if let Ok(mut map) = self.until.lock() {
            map.insert(provider.to_owned(), now_secs() + cooldown.as_secs().max(1));
            if let Some(file) = &self.file {
                if let Ok(body) = serde_json::to_vec(&*map) {
                    let tmp = file.with_extension("json.tmp");
                    if std::fs::write(&tmp, body).is_ok() {
                        let _ = std::fs::rename(&tmp, file);
                    }
                }
            }
        }
    }
}

/// Told `(from, to)` when a turn moves to another provider.
type SwitchCallback = Box<dyn Fn(&str, &str) + Send + Sync>;

/// Providers in order of preference; a rate limited one is skipped while it cools down.
pub struct Failover {
    providers: Vec<(String, Box<dyn Provider>)>,
    cooldowns: Cooldowns,
    cooldown: Duration,
    /// Called when a turn moves to another provider (for the task's output).
    on_switch: Option<SwitchCallback>,
    /// The provider that answered the last turn.
    answered: Option<usize>,
}

impl Failover {
    /// `providers` pairs a label (`anthropic`, `openai:gpt-4.1`, …) with each provider.
    pub fn new(
        providers: Vec<(String, Box<dyn Provider>)>,
        cooldowns: Cooldowns,
        cooldown: Duration,
    ) -> Self {
        Self {
            providers,
            cooldowns,
            cooldown,
            on_switch: None,
            answered: None,
        }
    }

    pub fn on_switch(mut self, f: impl Fn(&str, &str) + Send + Sync + 'static) -> Self {
        self.on_switch = Some(Box::new(f));
        self
    }
}

impl Provider for Failover {
    fn name(&self) -> &str {
        "failover"
    }

    fn resume_after(&mut self, turns: usize) {
        for (_, p) in &mut self.providers {
            p.resume_after(turns);
        }
    }

    fn context_usage(&self) -> Option<super::ContextUsage> {
        self.providers.get(self.answered?)?.1.context_usage()
    }

    fn turn<'a>(&'a mut self, request: TurnRequest<'a>, on_text: TextSink<'a>) -> TurnFuture<'a> {
        Box::pin(async move {
            let mut last_error: Option<ProviderError> = None;
            let mut previous: Option<String> = None;
            let count = self.providers.len();
            for i in 0..count {
                let label = self.providers[i].0.clone();
                if self.cooldowns.remaining(&label).is_some() {
                    continue;
                }
                if let (Some(from), Some(cb)) = (&previous, &self.on_switch) {
                    cb(from, &label);
                }
                let req = TurnRequest {
                    system: request.system,
                    messages: request.messages,
                    context: request.context,
                    tools: request.tools,
                };
                match self.providers[i].1.turn(req, on_text).await {
                    Ok(turn) => {
                        self.answered = Some(i);
                        return Ok(turn);
                    }
                    Err(e) if e.kind == ErrorKind::RateLimited => {
                        // The configured cooldown, or longer when the provider asks for longer.
                        let cooldown = e
                            .retry_after
                            .map_or(self.cooldown, |r| r.max(self.cooldown));
                        self.cooldowns.start(&label, cooldown);
                        previous = Some(label);
                        last_error = Some(e);
                    }
                    Err(e) => return Err(e),
                }
            }
            // Every provider cools down: say which comes back first.
            let next = self
                .providers
                .iter()
                .filter_map(|(label, _)| {
                    self.cooldowns.remaining(label).map(|s| (label.clone(), s))
                })
                .min_by_key(|(_, s)| *s);
            let mut error = last_error.unwrap_or_else(|| {
                ProviderError::new(ErrorKind::RateLimited, "every provider is rate limited")
            });
            if let Some((label, secs)) = next {
                error.message = format!(
                    "all providers rate limited; next available: {label} in {} minute{} ({})",
                    secs.div_ceil(60),
                    if secs.div_ceil(60) == 1 { "" } else { "s" },
                    error.message
                );
                error.retry_after = Some(Duration::from_secs(secs));
            }
            Err(error)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{StopReason, Turn};

    struct Fixed {
        result: Result<&'static str, ErrorKind>,
        calls: Arc<Mutex<u32>>,
    }

    impl Provider for Fixed {
        fn name(&self) -> &str {
            "fixed"
        }
        fn turn<'a>(&'a mut self, _: TurnRequest<'a>, _: TextSink<'a>) -> TurnFuture<'a> {
            *self.calls.lock().unwrap() += 1;
            let r = self.result;
            Box::pin(async move {
                match r {
                    Ok(t) => Ok(Turn {
                        text: t.to_owned(),
                        tool_calls: Vec::new(),
                        stop_reason: StopReason::EndTurn,
                        runner: Default::default(),
                    }),
                    Err(kind) => Err(ProviderError::new(kind, "no")),
                }
            })
        }
    }

    fn request() -> TurnRequest<'static> {
        TurnRequest {
            system: None,
            messages: &[],
            context: None,
            tools: &[],
        }
    }

    fn fixed(result: Result<&'static str, ErrorKind>) -> (Box<dyn Provider>, Arc<Mutex<u32>>) {
        let calls = Arc::new(Mutex::new(0));
        (
            Box::new(Fixed {
                result,
                calls: calls.clone(),
            }),
            calls,
        )
    }

    #[tokio::test]
    async fn a_rate_limited_provider_cools_down_and_the_next_one_answers() {
        let (a, a_calls) = fixed(Err(ErrorKind::RateLimited));
        let (b, b_calls) = fixed(Ok("from b"));
        let switched = Arc::new(Mutex::new(Vec::new()));
        let s = switched.clone();
        let cooldowns = Cooldowns::default();
        let mut f = Failover::new(
            vec![("a".into(), a), ("b".into(), b)],
            cooldowns.clone(),
            Duration::from_secs(600),
        )
        .on_switch(move |from, to| s.lock().unwrap().push(format!("{from}->{to}")));
        let sink = |_: &str| {};
        assert_eq!(f.turn(request(), &sink).await.unwrap().text, "from b");
        assert_eq!(*switched.lock().unwrap(), ["a->b"]);
        assert!(cooldowns.remaining("a").is_some_and(|s| s > 500));
        // While a cools down it is not asked again.
        assert_eq!(f.turn(request(), &sink).await.unwrap().text, "from b");
        assert_eq!(*a_calls.lock().unwrap(), 1);
        assert_eq!(*b_calls.lock().unwrap(), 2);
    }

    #[tokio::test]
    async fn the_usage_reported_is_the_answering_providers() {
        use crate::provider::scripted::ScriptedProvider;
        let a = ScriptedProvider::parse(
            "turns:\n  - error: rate_limited\n    usage: {input_tokens: 99, output_tokens: 1}\n",
        )
        .unwrap();
        let b = ScriptedProvider::parse(
            "turns:\n  - text: hi\n    usage: {input_tokens: 10, output_tokens: 2, context_window: 1000}\n",
        )
        .unwrap();
        let mut f = Failover::new(
            vec![("a".into(), Box::new(a)), ("b".into(), Box::new(b))],
            Cooldowns::default(),
            Duration::from_secs(600),
        );
        assert_eq!(f.context_usage(), None, "nothing before a turn");
        f.turn(request(), &|_| {}).await.unwrap();
        assert_eq!(
            f.context_usage(),
            Some(crate::provider::ContextUsage {
                used: 12,
                window: Some(1000)
            })
        );
    }

    #[tokio::test]
    async fn when_every_provider_cools_down_the_error_names_the_first_back() {
        let (a, _) = fixed(Err(ErrorKind::RateLimited));
        let (b, _) = fixed(Err(ErrorKind::RateLimited));
        let mut f = Failover::new(
            vec![("a".into(), a), ("b".into(), b)],
            Cooldowns::default(),
            Duration::from_secs(120),
        );
        let sink = |_: &str| {};
        let e = f.turn(request(), &sink).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::RateLimited);
        assert!(
            e.message
                .starts_with("all providers rate limited; next available: a in 2 minutes"),
            "{}",
            e.message
        );
        assert!(e.retry_after.is_some());
    }

    #[tokio::test]
    async fn other_errors_do_not_fail_over() {
        let (a, _) = fixed(Err(ErrorKind::AuthenticationFailed));
        let (b, b_calls) = fixed(Ok("b"));
        let mut f = Failover::new(
            vec![("a".into(), a), ("b".into(), b)],
            Cooldowns::default(),
            Duration::from_secs(60),
        );
        let sink = |_: &str| {};
        assert_eq!(
            f.turn(request(), &sink).await.unwrap_err().kind,
            ErrorKind::AuthenticationFailed
        );
        assert_eq!(*b_calls.lock().unwrap(), 0);
    }

    #[test]
    fn stored_cooldowns_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("rate-limits.json");
        Cooldowns::stored(file.clone()).start("anthropic", Duration::from_secs(300));
        assert!(Cooldowns::stored(file).remaining("anthropic").is_some());
    }
}
