//! The task methods: each checks its params, asks the task service and maps its answer.

use rawko_protocol::to_server::*;
use rawko_protocol::types::TaskId;
use tower_lsp_server::jsonrpc::Result;

use super::errors::task_error;
use super::{to_proto, Backend};
use crate::engine::tasks::{Override, StartRequest};

/// A non-empty string, or nothing.
fn given(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.trim().is_empty())
}

impl Backend {
    pub(super) async fn start_task(&self, params: StartTaskParams) -> Result<StartTaskResult> {
        let started = self
            .tasks()
            .start(StartRequest {
                description: params.description,
                workflow: given(params.workflow),
                agent: given(params.agent),
                provider: given(params.provider),
                model: given(params.model),
                script: given(params.script).map(Into::into),
                base_url: None,
                agent_command: None,
            })
            .await
            .map_err(task_error)?;
        if let Some(note) = &started.note {
            self.client
                .show_message(
                    tower_lsp_server::lsp_types::MessageType::INFO,
                    format!("rawko: {note}"),
                )
                .await;
        }
        Ok(StartTaskResult {
            task_id: TaskId(started.id),
        })
    }

    pub(super) async fn cancel_task(&self, params: CancelTaskParams) -> Result<CancelTaskResult> {
        self.tasks()
            .cancel(params.task_id.as_str())
            .map_err(task_error)?;
        Ok(CancelTaskResult {})
    }

    pub(super) async fn step(&self, params: StepParams) -> Result<StepResult> {
        let text = self
            .tasks()
            .step(
                params.task_id.as_str(),
                to_proto::step_action(params.action),
            )
            .await
            .map_err(task_error)?;
        Ok(StepResult { text })
    }

    pub(super) async fn interrupt(&self, params: InterruptParams) -> Result<InterruptResult> {
        self.tasks()
            .interrupt(params.task_id.as_str())
            .map_err(task_error)?;
        Ok(InterruptResult {})
    }

    pub(super) async fn send_message(
        &self,
        params: SendMessageParams,
    ) -> Result<SendMessageResult> {
        self.tasks()
            .send_message(params.task_id.as_str(), params.text)
            .map_err(task_error)?;
        Ok(SendMessageResult {})
    }

    pub(super) async fn server_stats(&self, _: ServerStatsParams) -> Result<ServerStatsResult> {
        let tasks = self.tasks().counts();
        let journal = crate::store::journal().stats();
        let process = crate::stats::process();
        let load = |n: &std::sync::atomic::AtomicU64| n.load(std::sync::atomic::Ordering::Relaxed);
        Ok(ServerStatsResult {
            tasks_in_memory: tasks.in_memory as u64,
            external_sessions: tasks.external_sessions as u64,
            pending_client_requests: self.outgoing.pending_count() as u64,
            runtime_tasks: tokio::runtime::Handle::current()
                .metrics()
                .num_alive_tasks() as u64,
            open_files: process.open_files,
            open_logs: load(&journal.open_logs),
            log_batches: load(&journal.batches),
            log_records: load(&journal.records),
            log_syncs: load(&journal.syncs),
            rss_bytes: process.rss_bytes,
            peak_rss_bytes: process.peak_rss_bytes,
            log_backlog_bytes: crate::pressure::LOG_BACKLOG.now(),
            peak_log_backlog_bytes: crate::pressure::LOG_BACKLOG.peak(),
            log_backlog_waits: crate::pressure::waits(),
            outgoing_bytes: self.outgoing.queued_bytes().0,
            peak_outgoing_bytes: self.outgoing.queued_bytes().1,
            announce_latency_micros: journal
                .latency_buckets()
                .into_iter()
                .map(|(bound, n)| [bound, n])
                .collect(),
        })
    }

    pub(super) async fn list_tasks(&self, _: ListTasksParams) -> Result<ListTasksResult> {
        Ok(ListTasksResult {
            tasks: self
                .tasks()
                .list_read()
                .await
                .iter()
                .map(to_proto::task_summary)
                .collect(),
        })
    }

    pub(super) async fn get_task(&self, params: GetTaskParams) -> Result<GetTaskResult> {
        let snapshot = self
            .tasks()
            .get(params.task_id.as_str())
            .await
            .map_err(task_error)?;
        let phases = self.tasks().outline(&snapshot).await;
        Ok(GetTaskResult {
            task: to_proto::task_detail(&snapshot, &phases),
        })
    }

    pub(super) async fn phase_prompt(
        &self,
        params: PhasePromptParams,
    ) -> Result<PhasePromptResult> {
        let prompt = self
            .tasks()
            .phase_prompt(params.task_id.as_str(), u64::from(params.index))
            .await
            .map_err(task_error)?;
        Ok(PhasePromptResult {
            name: prompt.name,
            breadcrumb_text: prompt.breadcrumb_text,
            prompt: prompt.prompt,
        })
    }

    pub(super) async fn phase_diff(&self, params: PhaseDiffParams) -> Result<PhaseDiffResult> {
        let diff = self
            .tasks()
            .phase_diff(params.task_id.as_str(), params.index)
            .await
            .map_err(task_error)?;
        Ok(to_proto::phase_diff(diff))
    }

    pub(super) async fn set_workflow(
        &self,
        params: SetWorkflowParams,
    ) -> Result<SetWorkflowResult> {
        let text = self
            .tasks()
            .set_workflow(params.task_id.as_str(), &params.workflow)
            .await
            .map_err(task_error)?;
        Ok(SetWorkflowResult { text })
    }

    pub(super) async fn resume_task(&self, params: ResumeTaskParams) -> Result<ResumeTaskResult> {
        self.tasks()
            .resume(params.task_id.as_str())
            .await
            .map_err(task_error)?;
        Ok(ResumeTaskResult {})
    }

    pub(super) async fn rewind_task(&self, params: RewindTaskParams) -> Result<RewindTaskResult> {
        let done = self
            .tasks()
            .rewind(
                params.task_id.as_str(),
                params.index,
                params.dry_run,
                params.force,
            )
            .await
            .map_err(task_error)?;
        Ok(RewindTaskResult {
            rewound: done.rewound,
            phase: done.phase,
            changes: done
                .changes
                .into_iter()
                .map(|c| RewindChange {
                    path: c.path,
                    action: match c.action {
                        crate::engine::rewind::Action::Restore => RewindAction::Restore,
                        crate::engine::rewind::Action::Remove => RewindAction::Remove,
                    },
                })
                .collect(),
            conflicts: done.conflicts,
            text: done.text,
        })
    }

    async fn override_task(&self, id: &TaskId, what: Override) -> Result<()> {
        self.tasks()
            .override_task(id.as_str(), what)
            .await
            .map_err(task_error)
    }

    pub(super) async fn force_agent(&self, params: ForceAgentParams) -> Result<ForceAgentResult> {
        self.override_task(&params.task_id, Override::ForceAgent(params.agent))
            .await?;
        Ok(ForceAgentResult {})
    }

    pub(super) async fn skip_step(&self, params: SkipStepParams) -> Result<SkipStepResult> {
        self.override_task(&params.task_id, Override::SkipStep)
            .await?;
        Ok(SkipStepResult {})
    }

    pub(super) async fn retry(&self, params: RetryParams) -> Result<RetryResult> {
        self.override_task(&params.task_id, Override::Retry).await?;
        Ok(RetryResult {})
    }

    pub(super) async fn reset(&self, params: ResetParams) -> Result<ResetResult> {
        self.override_task(&params.task_id, Override::Reset).await?;
        Ok(ResetResult {})
    }

    pub(super) async fn list_workflows(
        &self,
        _: ListWorkflowsParams,
    ) -> Result<ListWorkflowsResult> {
        let outcome = self.tasks().load_workflows().await;
        let set = &outcome.workflows;
        Ok(ListWorkflowsResult {
            workflows: set
                .iter()
                .map(|d| to_proto::workflow_summary(set, d))
                .collect(),
        })
    }

    pub(super) async fn validate_workflows(
        &self,
        _: ValidateWorkflowsParams,
    ) -> Result<ValidateWorkflowsResult> {
        let outcome = self.tasks().load_workflows().await;
        Ok(ValidateWorkflowsResult {
            diagnostics: outcome
                .diagnostics
                .iter()
                .map(to_proto::diagnostic)
                .collect(),
        })
    }
}
