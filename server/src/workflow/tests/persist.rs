//! The persisted workflow record.

use super::*;

// ── Persistence ──

#[test]
fn record_round_trips_and_names_its_definitions() {
    let set = set_of(&[
        wf("root", "Root", &["a", "@sub"]),
        wf("sub", "Sub", &["b", "@deep"]),
        wf("deep", "Deep", &["c"]),
        wf("other", "Other", &["x"]),
    ]);
    let s = start(&set, "root").advance(&set).unwrap().state;
    let record = WorkflowRecord::new(&s, &set);
    let keys: Vec<&str> = record.definitions.iter().map(|d| d.key.as_str()).collect();
    assert_eq!(keys, ["deep", "root", "sub"]);
    let json = record.to_json();
    assert!(json.starts_with("{\"version\":1,"), "{json}");
    assert!(json.contains("\"currentPath\":[{\"workflowKey\":\"root\",\"phaseIndex\":1}"));
    let back = WorkflowRecord::from_json(&json).unwrap();
    assert_eq!(back, record);
}

#[test]
fn bad_records_are_clear_errors() {
    let set = set_of(&[wf("lin", "Linear", &["a"])]);
    let good = WorkflowRecord::new(&start(&set, "lin"), &set).to_json();
    let cases: Vec<(String, &str)> = vec![
        ("not json".into(), "not valid JSON"),
        ("[]".into(), "no \"version\""),
        ("{}".into(), "no \"version\""),
        (
            good.replace("\"version\":1", "\"version\":2"),
            "has version 2, but this rawko reads version 1",
        ),
        (
            good.replace("\"version\":1", "\"version\":\"1\""),
            "has version \"1\"",
        ),
        (
            good.replace("\"active\":true", "\"active\":\"yes\""),
            "is invalid",
        ),
        (
            good.replace(
                "\"currentPath\":[{\"workflowKey\":\"lin\",\"phaseIndex\":0}]",
                "\"currentPath\":[]",
            ),
            "currentPath is empty",
        ),
        (
            good.replace("\"phaseIndex\":0", "\"phaseIndex\":-1"),
            "is invalid",
        ),
        (
            good.replace(
                "\"workflowKey\":\"lin\",\"phaseIndex\"",
                "\"workflowKey\":\"x\",\"phaseIndex\"",
            ),
            "currentPath starts at \"x\"",
        ),
        (
            good.replace("{\"version\":1,", "{\"version\":1,\"extra\":1,"),
            "is invalid",
        ),
        (
            good.replace(",\"definitions\":", ",\"nodefs\":"),
            "is invalid",
        ),
    ];
    for (text, want) in cases {
        let err = WorkflowRecord::from_json(&text).expect_err(&text);
        let shown = err.to_string();
        assert!(shown.contains(want), "{text}\n→ {shown}\nwanted {want}");
        assert!(matches!(
            err,
            RecordError::Json(_)
                | RecordError::MissingVersion
                | RecordError::UnknownVersion { .. }
                | RecordError::Invalid(_)
        ));
    }
}
