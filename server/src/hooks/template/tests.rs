use super::*;

fn vars() -> Vars {
    let mut v = Vars::new();
    v.insert("taskDescription", "$(touch /tmp/pwned) it's".into());
    v.insert("taskId", "task-1".into());
    v.insert("duration", "1500".into());
    v.insert(
        "filesModified",
        TemplateValue::List(vec!["a b.txt".into(), "c.rs".into()]),
    );
    v
}

fn text(t: &str) -> String {
    render_command(t, &vars()).text
}

#[test]
fn each_context_gets_its_reference() {
    assert_eq!(
        text("echo {{taskDescription}} {{taskId}}"),
        r#"echo "${RAWKO_VAR_taskDescription}" "${RAWKO_VAR_taskId}""#
    );
    assert_eq!(
        text("echo 'a {{taskId}} b'"),
        r#"echo 'a '"${RAWKO_VAR_taskId}"' b'"#
    );
    assert_eq!(
        text(r#"echo "a {{taskId}} b""#),
        r#"echo "a ${RAWKO_VAR_taskId} b""#
    );
    assert_eq!(
        text("ls {{filesModified}}"),
        r#"ls "${RAWKO_VAR_filesModified_0}" "${RAWKO_VAR_filesModified_1}""#
    );
    assert_eq!(
        text("echo \"{{filesModified}}\""),
        r#"echo "${RAWKO_VAR_filesModified}""#
    );
    assert_eq!(
        text("echo $(( {{duration}} / 1000 )) $(( {{taskId}} ))"),
        "echo $(( 1500 / 1000 )) $(( {{taskId}} ))"
    );
    assert_eq!(text("true # it's {{taskId}}"), "true # it's {{taskId}}");
    assert_eq!(
        text("cat <<EOF\n$x {{taskId}}\nEOF\necho {{taskId}}"),
        "cat <<EOF\n$x ${RAWKO_VAR_taskId}\nEOF\necho \"${RAWKO_VAR_taskId}\""
    );
    assert_eq!(
        text("cat <<'EOF'\n$x \\ `{{taskId}}`\nEOF\n"),
        "cat <<RAWKO_EOF\n\\$x \\\\ \\`${RAWKO_VAR_taskId}\\`\nRAWKO_EOF\n"
    );
    assert_eq!(text("cat <<'EOF'\n$x\nEOF"), "cat <<'EOF'\n$x\nEOF");
}

#[test]
fn only_the_used_values_go_into_the_environment() {
    let c = render_command("echo {{taskId}} \"{{filesModified}}\"", &vars());
    assert_eq!(
        c.env,
        vec![
            ("RAWKO_VAR_filesModified".into(), "a b.txt c.rs".into()),
            ("RAWKO_VAR_filesModified_0".into(), "a b.txt".into()),
            ("RAWKO_VAR_filesModified_1".into(), "c.rs".into()),
            ("RAWKO_VAR_taskId".into(), "task-1".into()),
        ]
    );
    assert_eq!(
        render_command("true", &vars()),
        ShellCommand {
            text: "true".into(),
            env: vec![]
        }
    );
}

/// Values that broke (or ran) hooks when they were pasted into the command as text.
const NASTY: &[&str] = &[
    "it's",
    "say \"hi\" and 'bye'",
    "$(touch marker-subst)",
    "`touch marker-backtick`",
    "back\\slash \\n \\\\ \\",
    "paren ( unbalanced )) (",
    "semi; touch marker-semi & | > x",
    "multi\nline\nEOF\nRAWKO_EOF\n'EOF'\n\tEOF",
    "EOF",
    "non-ASCII: é ü 日本 🎉",
    "${HOME} $HOME $$ $1 ${x:-y}",
    "-n",
    "",
    "* ? [a]",
    "a  b\tc   ",
    "}} {{taskId}} {{taskDescription}}",
    "#not a comment",
];

/// A shell to run the rendered commands with: `sh` (dash on Debian) and bash, when present.
fn shells() -> Vec<&'static str> {
    ["/bin/sh", "/bin/bash", "/usr/bin/bash"]
        .into_iter()
        .filter(|s| std::path::Path::new(s).exists())
        .collect()
}

/// Runs `template` rendered with `value` as `{{taskDescription}}` (and a number as
/// `{{duration}}`) in `shell`; returns stdout and whether a marker file appeared.
fn run(shell: &str, template: &str, vars: &Vars) -> (Vec<u8>, String, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let c = render_command(template, vars);
    let out = std::process::Command::new(shell)
        .arg("-c")
        .arg(&c.text)
        .envs(c.env.iter().map(|(k, v)| (k, v)))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    (
        out.stdout,
        format!(
            "{shell} -c {:?}: exit {:?}, stderr {}",
            c.text,
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        ),
        left,
    )
}

/// Every quoting context × every nasty value, run by the real shells: the output is the value
/// byte for byte, and nothing in the value ran.
#[test]
fn every_context_passes_every_value_exactly_and_runs_none() {
    type Expect = fn(&str) -> String;
    let contexts: &[(&str, Expect, bool)] = &[
            // (template, what it prints for the value, whether only bash runs it)
            ("printf '%s|' {{taskDescription}}", |v| format!("{v}|"), false),
            ("printf '%s|' 'a {{taskDescription}} b'", |v| format!("a {v} b|"), false),
            ("printf '%s|' 'about '{{taskDescription}}", |v| format!("about {v}|"), false),
            ("printf '%s|' \"a {{taskDescription}} b\"", |v| format!("a {v} b|"), false),
            ("printf '%s|' \"it's {{taskDescription}}\" 'say \"{{taskDescription}}\"'", |v| format!("it's {v}|say \"{v}\"|"), false),
            ("cat <<EOF\na {{taskDescription}} b\nEOF", |v| format!("a {v} b\n"), false),
            ("cat <<EOF; printf '%s|' {{taskDescription}}\n{{taskDescription}}\nEOF\nprintf '%s|' '{{taskDescription}}'", |v| format!("{v}\n{v}|{v}|"), false),
            ("cat <<'EOF'\na {{taskDescription}} $HOME \\ `x` $(y) \\\nEOF", |v| format!("a {v} $HOME \\ `x` $(y) \\\n"), false),
            ("cat <<\"EOF\"\n'{{taskDescription}}'\nEOF\nprintf '%s|' {{taskDescription}}", |v| format!("'{v}'\n{v}|"), false),
            ("cat <<\\EOF\n{{taskDescription}}\nEOF", |v| format!("{v}\n"), false),
            ("cat <<-'EOF'\n\t{{taskDescription}}\n\tEOF", |v| format!("{}\n", v.trim_start_matches('\t')), false),
            ("cat <<A <<'B'\n{{taskDescription}}\nA\n$x {{taskDescription}}\nB", |v| format!("$x {v}\n"), false),
            ("printf '%s|' \"$(printf '%s' {{taskDescription}})\"", |v| format!("{v}|"), false),
            ("printf '%s|' \"x$(printf '%s' \"{{taskDescription}}\")y\"", |v| format!("x{v}y|"), false),
            ("printf '%s|' \"$(printf '%s' '{{taskDescription}}')\"", |v| format!("{v}|"), false),
            ("printf '%s|' \"`printf '%s' {{taskDescription}}`\"", |v| format!("{v}|"), false),
            ("x=`printf '%s' \"{{taskDescription}}\"`; printf '%s|' \"$x\"", |v| format!("{v}|"), false),
            ("printf '%s|' \"${nothing:-{{taskDescription}}}\"", |v| format!("{v}|"), false),
            ("printf '%s|' ${nothing:-{{taskDescription}}}", |v| format!("{v}|"), false),
            ("printf '%s|' x # {{taskDescription}} it's", |_| "x|".to_owned(), false),
            ("(printf '%s|' {{taskDescription}}); printf '%s|' \"$(( {{duration}} + 1 ))\"", |v| format!("{v}|1501|"), false),
            ("printf '%s|' $'tab\\t{{taskDescription}}'", |v| format!("tab\t{v}|"), true),
            ("(( {{duration}} > 1000 )) && printf '%s|' big", |_| "big|".to_owned(), true),
        ];
    let shells = shells();
    assert!(!shells.is_empty(), "no shell to test with");
    let mut failures = Vec::new();
    for shell in &shells {
        let bash = shell.ends_with("bash");
        for (template, expect, bash_only) in contexts {
            if *bash_only && !bash {
                continue;
            }
            for value in NASTY {
                let mut v = vars();
                v.insert("taskDescription", (*value).into());
                let (stdout, how, left) = run(shell, template, &v);
                if stdout != expect(value).into_bytes() {
                    failures.push(format!(
                        "{template:?} with {value:?}: printed {:?}, wanted {:?}\n  {how}",
                        String::from_utf8_lossy(&stdout),
                        expect(value)
                    ));
                }
                if !left.is_empty() {
                    failures.push(format!(
                        "{template:?} with {value:?} ran something: {left:?}\n  {how}"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A list is one word per item unquoted and one string inside quotes; a value in
/// arithmetic is put in only when it is a number.
#[test]
fn lists_and_arithmetic_in_the_shells() {
    for shell in shells() {
        let mut v = vars();
        v.insert(
            "filesModified",
            TemplateValue::List(vec![
                "a b.txt".into(),
                "$(touch marker)".into(),
                "it's".into(),
                "*".into(),
            ]),
        );
        let (out, how, left) = run(shell, "printf '<%s>' {{filesModified}}", &v);
        assert_eq!(
            String::from_utf8_lossy(&out),
            "<a b.txt><$(touch marker)><it's><*>",
            "{how}"
        );
        let (out, how, _) = run(
            shell,
            "printf '<%s>' \"{{filesModified}}\" '{{filesModified}}'",
            &v,
        );
        assert_eq!(
            String::from_utf8_lossy(&out),
            "<a b.txt $(touch marker) it's *><a b.txt $(touch marker) it's *>",
            "{how}"
        );
        v.insert("filesModified", TemplateValue::List(vec![]));
        let (out, how, _) = run(shell, "printf '<%s>' x {{filesModified}}", &v);
        assert_eq!(String::from_utf8_lossy(&out), "<x>", "{how}");
        assert!(left.is_empty(), "{left:?}");
        // Not a number: the placeholder stays, the arithmetic fails, nothing runs.
        v.insert("duration", "a[$(touch marker)]".into());
        let (out, how, left) = run(shell, "echo $(( {{duration}} + 1 ))", &v);
        assert!(out.is_empty() && left.is_empty(), "{how} {left:?}");
    }
}

/// Whatever the command (it is the user's config), rendering never panics, and the text of a
/// value never appears in it.
#[test]
fn any_command_renders() {
    const PIECES: [&str; 30] = [
        "{{taskDescription}}",
        "{{taskId}}",
        "{{filesModified}}",
        "{{duration}}",
        "{{",
        "}}",
        "'",
        "\"",
        "$'",
        "$(",
        "$((",
        "${",
        "`",
        "(",
        ")",
        "}",
        "{",
        "\\",
        "\n",
        "<<",
        "<<-",
        "<<'E'",
        "E",
        "#",
        " ",
        ";",
        "é",
        "日本",
        "\t",
        "$",
    ];
    let mut v = vars();
    v.insert("taskDescription", "VALUE-TEXT".into());
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..20_000 {
        let mut t = String::new();
        for _ in 0..(seed % 12) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            t.push_str(PIECES[(seed % PIECES.len() as u64) as usize]);
        }
        seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let c = render_command(&t, &v);
        assert!(!c.text.contains("VALUE-TEXT"), "{t:?} → {:?}", c.text);
    }
}

#[test]
fn text_is_put_in_as_it_is() {
    assert_eq!(
        render_text("x{{taskId}}y {{filesModified}} {{nope}}", &vars()),
        "xtask-1y a b.txt c.rs {{nope}}"
    );
}

#[test]
fn unknown_and_broken_placeholders_stay() {
    assert_eq!(
        text("{{nope}} {{ taskId }} {{taskId"),
        "{{nope}} {{ taskId }} {{taskId"
    );
    assert_eq!(text("{{{{taskId}}"), "{{\"${RAWKO_VAR_taskId}\"");
    assert_eq!(text("é{{taskId}}ü"), "é\"${RAWKO_VAR_taskId}\"ü");
    assert_eq!(shell_quote(""), "''");
}
