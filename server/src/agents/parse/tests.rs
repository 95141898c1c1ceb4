use super::*;

fn sections(body: &str) -> BodySections {
    body_sections(body, 10)
}

#[test]
fn key_path_line_follows_nested_block_mappings() {
    let text = "name: a\n\
                    tools:\n  \
                      allowed: [Read]\n  \
                      bashFilter:\n    \
                        # a comment\n    \
                        blockedPatterns:\n      \
                          - x\n\
                    blockedPatterns: top\n";
    assert_eq!(key_path_line(text, &["name"]), Some(1));
    assert_eq!(key_path_line(text, &["tools", "allowed"]), Some(3));
    assert_eq!(
        key_path_line(text, &["tools", "bashFilter", "blockedPatterns"]),
        Some(6)
    );
    assert_eq!(key_path_line(text, &["blockedPatterns"]), Some(8));
    // Not found below its parent: the parent's line.
    assert_eq!(key_path_line(text, &["tools", "blocked"]), Some(2));
    assert_eq!(key_path_line(text, &["missing"]), None);
}

#[test]
fn key_path_line_does_not_leave_the_parent() {
    let text = "tools:\n  allowed: [Read]\ntransitions:\n  onSuccess: x\n";
    assert_eq!(key_path_line(text, &["tools", "onSuccess"]), Some(1));
    assert_eq!(key_path_line(text, &["transitions", "onSuccess"]), Some(4));
}

#[test]
fn item_line_counts_block_items_and_falls_back_to_the_key() {
    let text = "list:\n  - a\n  - b: |\n      c\n  - d\nnext: 1\ninline: [a, b]\n";
    assert_eq!(item_line(text, 1, 0), 2);
    assert_eq!(item_line(text, 1, 1), 3);
    assert_eq!(item_line(text, 1, 2), 5);
    assert_eq!(item_line(text, 1, 3), 1);
    assert_eq!(item_line(text, 7, 1), 7);
    let flush = "list:\n- a\n- b\n";
    assert_eq!(item_line(flush, 1, 1), 3);
}

#[test]
fn names_follow_rawko_sdks_pattern() {
    for ok in ["a", "planner", "Code-Reviewer", "dev_2", "x-"] {
        assert!(is_valid_name(ok), "{ok}");
    }
    for bad in ["", "2dev", "-a", "_a", "a b", "dév", "a.b"] {
        assert!(!is_valid_name(bad), "{bad}");
    }
}

#[test]
fn system_prompt_and_when_to_use_sections() {
    let s = sections(
            "# Planner\n\nIntro text.\n\n## When to Use\n\nAt the start.\n\n## System Prompt\n\nYou plan.\n\n### Steps\n\n1. Read.\n\n## Notes\n\nFor people.\n",
        );
    assert_eq!(
        s.system_prompt,
        Some(Section {
            text: "You plan.\n\n### Steps\n\n1. Read.".to_owned(),
            line: 18,
        })
    );
    assert_eq!(
        s.when_to_use,
        Some(Section {
            text: "At the start.".to_owned(),
            line: 14,
        })
    );
    assert_eq!(s.system_prompt().text, "You plan.\n\n### Steps\n\n1. Read.");
}

#[test]
fn without_a_system_prompt_heading_the_rest_of_the_body_is_the_prompt() {
    let s = sections(
            "\n# Tester\n\nRun the tests.\n\n## When to Use\nAfter changes.\n\n## How\n\nUse cargo test.\n",
        );
    assert_eq!(s.system_prompt, None);
    assert_eq!(
        s.rest,
        Section {
            text: "Run the tests.\n\n## How\n\nUse cargo test.".to_owned(),
            line: 13,
        }
    );
    assert_eq!(
        s.when_to_use.map(|w| w.text),
        Some("After changes.".to_owned())
    );
}

#[test]
fn only_a_leading_h1_is_dropped() {
    let s = sections("Text first.\n# Not a title\nMore.\n");
    assert_eq!(s.rest.text, "Text first.\n# Not a title\nMore.");
}

#[test]
fn headings_in_code_fences_are_text() {
    let s = sections(
            "## System Prompt\nRun:\n```bash\n# install\n## When to Use\n```\nDone.\n~~~~\n## x\n~~~\n~~~~\n",
        );
    assert_eq!(
        s.system_prompt.map(|p| p.text),
        Some(
            "Run:\n```bash\n# install\n## When to Use\n```\nDone.\n~~~~\n## x\n~~~\n~~~~"
                .to_owned()
        )
    );
    assert_eq!(s.when_to_use, None);
}

#[test]
fn headings_match_loosely_and_repeats_are_noted() {
    let s = sections("##   system   PROMPT: ##\nA\n## System Prompt\nB\n## when to use\nC\n");
    assert_eq!(s.system_prompt.map(|p| p.text), Some("A".to_owned()));
    assert_eq!(s.repeated, vec![("## System Prompt".to_owned(), 12)]);
    assert_eq!(s.when_to_use.map(|p| p.text), Some("C".to_owned()));
    assert_eq!(heading("#hashtag"), None);
    assert_eq!(heading("####### seven"), None);
    assert_eq!(heading("##"), Some((2, String::new())));
}

#[test]
fn frontmatter_split_reports_the_body_line() {
    let f = split_frontmatter("---\nname: a\n---\nbody\n").expect("frontmatter");
    assert_eq!(f.front, "name: a\n");
    assert_eq!(f.body, "body\n");
    assert_eq!(f.body_line, Some(4));
    let open = split_frontmatter("---\nname: a\n").expect("frontmatter");
    assert_eq!(open.body_line, None);
    assert!(split_frontmatter("name: a\n").is_none());
    assert!(split_frontmatter("").is_none());
}
