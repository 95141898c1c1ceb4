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

use std::time::{Duration, Instant};

use rawko::team::{Queue, QueueConfig, Team};

mod team_support;

use team_support::{nats_server, Cluster};

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

/// A team task's log in JetStream (`rawko::team::LogWriter`, the replica `rawko worker` gives
/// each task): records stored in order, what is announced after a record waits until it is
/// stored, and a worker whose append comes after another worker's (it was thought lost and took
/// its task back) is fenced: its record is refused, it is told once, and nothing it announces
/// afterwards goes out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_log_is_stored_in_order_and_a_second_writer_fences_the_first() {
    use rawko::store::replica::Replica;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let Some(server) = nats_server("team_queue") else {
        return;
    };
    let cluster = Cluster::start_at(&server, 1, 25222);
    let team = Team::connect(&cluster.urls, "log-test").await.unwrap();
    let id = "task-log-1";
    let fenced_a = Arc::new(AtomicUsize::new(0));
    let told = fenced_a.clone();
    let a = rawko::team::LogWriter::start(
        team.clone(),
        id,
        0,
        "a.1".to_owned(),
        None,
        Box::new(move || {
            told.fetch_add(1, Ordering::SeqCst);
        }),
    );
    let announced = Arc::new(AtomicUsize::new(0));
    for seq in 1..=3u64 {
        a.append(seq, format!("{{\"seq\":{seq},\"by\":\"a\"}}\n").as_bytes());
        let announced = announced.clone();
        let stored_before = team.clone();
        a.then(Box::new(move || {
            // Runs on the writer's task after the record's ack: the stream has it.
            let _ = stored_before;
            announced.fetch_add(1, Ordering::SeqCst);
        }));
    }
    a.flush().await;
    assert_eq!(announced.load(Ordering::SeqCst), 3);
    let (records, last) = rawko::team::read_log(&team, id).await.unwrap();
    let records: Vec<String> = records
        .iter()
        .map(|r| String::from_utf8(r.to_vec()).unwrap())
        .collect();
    assert_eq!(
        records,
        [
            r#"{"seq":1,"by":"a"}"#,
            r#"{"seq":2,"by":"a"}"#,
            r#"{"seq":3,"by":"a"}"#
        ]
    );
    assert!(last > 0);

    // Another worker takes the task over from the log and appends.
    let b = rawko::team::LogWriter::start(
        team.clone(),
        id,
        last,
        "b.2".to_owned(),
        None,
        Box::new(|| panic!("the writer that took over is not fenced")),
    );
    b.append(4, br#"{"seq":4,"by":"b"}"#);
    b.flush().await;
    // The first one comes back: its record is refused and its announcement never made.
    a.append(4, br#"{"seq":4,"by":"a"}"#);
    let late = announced.clone();
    a.then(Box::new(move || {
        late.fetch_add(100, Ordering::SeqCst);
    }));
    a.flush().await;
    assert_eq!(
        fenced_a.load(Ordering::SeqCst),
        1,
        "the first writer is told once"
    );
    assert!(a.fenced());
    assert_eq!(
        announced.load(Ordering::SeqCst),
        3,
        "nothing announced after the fence"
    );
    a.append(5, br#"{"seq":5,"by":"a"}"#);
    a.flush().await;
    let (records, _) = rawko::team::read_log(&team, id).await.unwrap();
    let by: Vec<String> = records
        .iter()
        .map(|r| String::from_utf8(r.to_vec()).unwrap())
        .collect();
    assert_eq!(by.len(), 4, "{by:?}");
    assert_eq!(by[3], r#"{"seq":4,"by":"b"}"#);
    // Another task of the same worker and delivery: its records are its own, not duplicates of
    // the first task's with the same numbers (a run of 100 tasks found that once).
    let other = rawko::team::LogWriter::start(
        team.clone(),
        "task-log-2",
        0,
        "a.1".to_owned(),
        None,
        Box::new(|| panic!("a task of its own is not fenced")),
    );
    other.append(1, br#"{"seq":1,"by":"a","task":2}"#);
    other.append(2, br#"{"seq":2,"by":"a","task":2}"#);
    other.flush().await;
    let (records, _) = rawko::team::read_log(&team, "task-log-2").await.unwrap();
    assert_eq!(records.len(), 2);
    assert!(!other.fenced());
    // An unknown task has no records.
    let (none, last) = rawko::team::read_log(&team, "task-none").await.unwrap();
    assert!(none.is_empty());
    assert_eq!(last, 0);
}
