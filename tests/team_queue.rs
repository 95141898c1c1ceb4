//! The team's work queue (issue 37, `rawko::team`) on a real three-node JetStream cluster on
//! loopback, started by scripts/nats-cluster.sh: jobs submitted once (a retried submit is
//! dropped), taken by two workers sharing the repository's consumer, held by heartbeats past the
//! ack deadline, gone once acked, and a job whose worker let go of it without acking delivered
//! again after the ack deadline.
//!
//! The server is `RAWKO_NATS_SERVER`, or the one scripts/install-nats.sh installs into the test
//! cache; without either the test is skipped, saying how to run it (not under CI, where it fails
//! instead; RAWKO_TEAM_E2E=0 skips it there too):
//!
//!   RAWKO_NATS_SERVER=$(scripts/install-nats.sh | tail -n 1) cargo test -p rawko --test team_queue

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rawko::team::{Queue, QueueConfig, Team};

const SCRIPT: &str = "scripts/nats-cluster.sh";

/// The nats-server binary, or `None` (with a note) when the test should be skipped.
#[allow(clippy::print_stderr)]
fn nats_server(test: &str) -> Option<PathBuf> {
    if std::env::var("RAWKO_TEAM_E2E").is_ok_and(|v| v == "0") {
        eprintln!("SKIPPED {test}: RAWKO_TEAM_E2E=0");
        return None;
    }
    if let Some(bin) = std::env::var_os("RAWKO_NATS_SERVER").filter(|v| !v.is_empty()) {
        let bin = PathBuf::from(bin);
        assert!(
            bin.is_file(),
            "RAWKO_NATS_SERVER={} is not a file; run scripts/install-nats.sh",
            bin.display()
        );
        return Some(bin);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))?;
    let installed = cache.join("rawko-test/nats/2.15.1/bin/nats-server");
    if installed.is_file() {
        return Some(installed);
    }
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    assert!(
        !ci,
        "{test}: RAWKO_NATS_SERVER is not set, and under CI this test must not be skipped: set it \
         to the last line of scripts/install-nats.sh (scripts/test.sh does), or RAWKO_TEAM_E2E=0 \
         to skip it"
    );
    eprintln!(
        "SKIPPED {test}: nats-server is not installed. To run it: \
         RAWKO_NATS_SERVER=$(scripts/install-nats.sh | tail -n 1) cargo test -p rawko --test team_queue"
    );
    None
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A cluster started by the script, stopped when dropped.
struct Cluster {
    dir: tempfile::TempDir,
    urls: String,
}

impl Cluster {
    fn start(server: &Path, nodes: u32) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(repo_root().join(SCRIPT))
            .arg("start")
            .arg(dir.path())
            .arg(nodes.to_string())
            .env("RAWKO_NATS_SERVER", server)
            // Away from a developer's own NATS and from the script's default.
            .env("RAWKO_NATS_PORT_BASE", "24222")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{SCRIPT} start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let urls = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .last()
            .unwrap()
            .to_owned();
        Cluster { dir, urls }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(repo_root().join(SCRIPT))
            .arg("stop")
            .arg(self.dir.path())
            .output();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_are_taken_once_held_by_heartbeats_and_redelivered_when_let_go() {
    let Some(server) = nats_server("team_queue") else {
        return;
    };
    let cluster = Cluster::start(&server, 3);
    assert_eq!(cluster.urls.split(',').count(), 3, "{}", cluster.urls);

    let repo = "https://example.com/team/app.git";
    let ack_wait = Duration::from_secs(2);
    let config = QueueConfig {
        ack_wait,
        heartbeat: Duration::from_millis(400),
        max_deliver: Some(5),
        ..QueueConfig::default()
    };
    let submitter = Team::connect(&cluster.urls, "rawko-test-submit")
        .await
        .unwrap();
    assert_eq!(submitter.default_replicas(), 3, "a three-node cluster: R3");
    let queue = Queue::open(&submitter, repo, config.clone()).await.unwrap();
    let info = submitter
        .jetstream()
        .get_stream(rawko::team::QUEUE_STREAM)
        .await
        .unwrap()
        .get_info()
        .await
        .unwrap();
    assert_eq!(info.config.num_replicas, 3);

    // Three jobs, and a retried submit of the first that is stored once.
    let mut ids = Vec::new();
    for n in 1..=3 {
        ids.push(queue.submit(format!("job {n}").into()).await.unwrap());
    }
    let retry = queue
        .submit_with_id(&ids[0], "job 1 again".into())
        .await
        .unwrap();
    assert!(retry.duplicate, "a resubmit within the window is dropped");

    // Two workers, each on its own connection, sharing the repository's consumer.
    let team_a = Team::connect(&cluster.urls, "rawko-test-a").await.unwrap();
    let team_b = Team::connect(&cluster.urls, "rawko-test-b").await.unwrap();
    let worker_a = Queue::open(&team_a, repo, config.clone()).await.unwrap();
    let worker_b = Queue::open(&team_b, repo, config.clone()).await.unwrap();
    let wait = Duration::from_secs(5);

    let a1 = worker_a.take(wait).await.unwrap().expect("A takes job 1");
    assert_eq!(a1.task_id(), ids[0]);
    assert_eq!(&a1.payload()[..], b"job 1");
    assert_eq!(a1.delivered(), 1);
    let b2 = worker_b.take(wait).await.unwrap().expect("B takes job 2");
    assert_eq!(b2.task_id(), ids[1]);
    let b3 = worker_b.take(wait).await.unwrap().expect("B takes job 3");
    assert_eq!(b3.task_id(), ids[2]);

    // Held past twice the ack deadline by heartbeats: nothing is delivered again.
    let nothing = worker_b
        .take(ack_wait * 2 + Duration::from_secs(1))
        .await
        .unwrap();
    assert!(
        nothing.is_none(),
        "a held job was delivered again: {:?}",
        nothing.map(|job| job.task_id().to_owned())
    );

    a1.done().await.unwrap();
    b2.done().await.unwrap();

    // B lets go of job 3 without acking (as a dead worker does): it comes back after the ack
    // deadline, to A, as its second delivery.
    let let_go = Instant::now();
    drop(b3);
    let again = worker_a
        .take(ack_wait + Duration::from_secs(5))
        .await
        .unwrap()
        .expect("job 3 delivered again");
    let after = let_go.elapsed();
    assert_eq!(again.task_id(), ids[2]);
    assert_eq!(again.delivered(), 2);
    assert!(
        after >= ack_wait - Duration::from_millis(500),
        "delivered again {after:?} after the let-go, before the ack deadline {ack_wait:?}"
    );
    again.done().await.unwrap();

    // All acked: the work queue is empty (the stream drops an acked job just after the ack).
    assert!(worker_b
        .take(Duration::from_secs(1))
        .await
        .unwrap()
        .is_none());
    let stream = submitter
        .jetstream()
        .get_stream(rawko::team::QUEUE_STREAM)
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let messages = stream.get_info().await.unwrap().state.messages;
        if messages == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "acked jobs stay in the work queue: {messages} left"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
