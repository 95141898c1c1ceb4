//! Telling a phone that an approval waits: `notify.webhook` of the user's config gets a JSON POST
//! in ntfy's publishing format (`topic`, `title`, `message`, `priority`, `tags`, `click`), which
//! ntfy (and a webhook of one's own) takes as it is. The body names the call and links to the
//! page without its token: the token never leaves this machine.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::approval::Approval;
use crate::config::Notify;

/// How long a notification may take before it is given up.
const TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Body<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    topic: Option<&'a str>,
    title: String,
    message: String,
    priority: u8,
    tags: [&'static str; 2],
    #[serde(skip_serializing_if = "str::is_empty")]
    click: &'a str,
    /// The same in rawko's own words, for a webhook that wants them.
    task_id: &'a str,
    tool_call_id: &'a str,
    tool: &'a str,
    expires_at: u64,
}

/// The body announcing `approval`.
pub fn body<'a>(notify: &'a Notify, approval: &'a Approval, page: &'a str) -> Body<'a> {
    let p = &approval.params;
    let task = if approval.task_description.is_empty() {
        String::new()
    } else {
        format!(" (task: {})", crate::clip::clip(&approval.task_description))
    };
    Body {
        topic: notify.topic.as_deref(),
        title: format!("rawko: {} waits for you", p.tool),
        message: format!("{}{task}. {} — {}", p.summary, p.detail, p.timeout_text),
        priority: 4,
        tags: ["rawko", "lock"],
        click: page,
        task_id: p.task_id.as_str(),
        tool_call_id: &p.tool_call_id,
        tool: &p.tool,
        expires_at: p.expires_at,
    }
}

/// Sends the notification; a failure is logged (never the webhook's query, which may hold a
/// secret) and changes nothing else.
pub async fn approval_waits(notify: Notify, approval: Arc<Approval>, page: String) {
    let where_to = notify
        .webhook
        .split(['?', '#'])
        .next()
        .unwrap_or_default()
        .to_owned();
    let client = match reqwest::Client::builder().timeout(TIMEOUT).build() {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!("web: cannot notify {where_to}: {e}");
            return;
        }
    };
    let body = body(&notify, &approval, &page);
    match client.post(&notify.webhook).json(&body).send().await {
        Ok(r) if r.status().is_success() => {}
        Ok(r) => tracing::warn!(
            "web: the notification to {where_to} was refused: HTTP {}",
            r.status()
        ),
        Err(e) => tracing::warn!("web: cannot notify {where_to}: {}", e.without_url()),
    }
}
