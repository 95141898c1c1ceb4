//! `parse_flat`, the frontmatter read without the YAML parser, against `parse_yaml`: whenever it
//! answers, it answers what the YAML parser gives the text, and it answers for the frontmatters
//! phases are written with.

use std::path::Path;

use serde_yaml_ng::Value;

use crate::workflow::yaml::{parse_flat, parse_yaml};

/// Lines of frontmatter, plain and hostile: scalars of every type YAML resolves, lists and
/// mappings in both styles, block scalars, anchors, tags, comments, odd indentation, what a
/// stream reads as its own structure (document markers, directives, a byte-order mark, line
/// breaks other than `\n`), and broken YAML.
const LINES: &[&str] = &[
    "id: plan\n",
    "name: Phase 1\n",
    "emoji: 🔧\n",
    "availableProfiles: [planner, coder]\n",
    "tools:\n  whitelist: [Read, \"Bash(git commit*)\"]\n",
    "tools:\n  blacklist:\n    - Write\n    - Edit\n",
    "agent: ~\n",
    "agent: null\n",
    "count: 0x1F\n",
    "big: 1_000\n",
    "float: .inf\n",
    "nan: .NaN\n",
    "neg: -12\n",
    "flag: yes\n",
    "flag2: true\n",
    "flag3: On\n",
    "date: 2001-12-14\n",
    "empty:\n",
    "quoted: \"a \\\"b\\\" \\u00e9\"\n",
    "single: 'it''s'\n",
    "multi: first\n  second line\n",
    "text: |\n  kept\n\n",
    "keep: |+\n  kept\n\n\n",
    "strip: >-\n  folded\n  line\n",
    "anchor: &a [x, y]\n",
    "alias: *a\n",
    "orphan: *nowhere\n",
    "tagged: !!str 12\n",
    "custom: !thing value\n",
    "? complex\n: key\n",
    "nested: {a: 1, b: [2, 3]}\n",
    "# a comment\n",
    "\n",
    "id: again\n",
    "- item\n",
    "plain scalar\n",
    "   indented: badly\n",
    "\ttab: x\n",
    "unclosed: [a, b\n",
    "unterminated: 'text\n",
    "--- inline\n",
    "...\n",
    "... # end\n",
    "%YAML 1.1\n",
    "%TAG !e! tag:example.com,2000:\n",
    "\u{feff}id: bom\n",
    "cr: one\rcr2: two\n",
    "crlf: x\r\n",
    "nel: a\u{85}--- b\n",
    "ls: a\u{2028}%YAML 1.2\n",
    "key: value # trailing comment\n",
    "colon: a:b\n",
    "url: http://example.com/x\n",
    "dash: - x\n",
    "tools:\n",
    "  whitelist: [Read, Grep]\n",
    "  blacklist: []\n",
    "  blacklist:\n",
    "  # nested comment\n",
    "    deeper: x\n",
    " one: space\n",
    "   \n",
    "words: several words here\n",
    "apostrophe: it's\n",
    "list: [\"Bash(git commit*)\", Edit(docs/**), \"\"]\n",
    "list2: [a,b , c]\n",
    "list3: [a, ]\n",
    "list4: [\"a,b\"]\n",
    "list5: [1, true, null]\n",
    "list6: [ ]\n",
    "q: \"\"\n",
    "q2: \"has # and : inside\"\n",
    "q3: \"esc \\n\"\n",
    "q4: \"a\" b\n",
    "word: True\n",
    "word2: Yes\n",
    "word3: nan\n",
    "word4: inf\n",
    "word5: y\n",
    "word6: é\n",
    "word7: a,b\n",
    "word8: a]\n",
    "word9: trailing   \n",
    "null: key\n",
    "True: key\n",
    "key :x\n",
    "key:x\n",
    "emoji2: 🚀 launch\n",
    "ctl: a\u{7}b\n",
    "nbsp: a\u{a0}b\n",
    "sp: \u{2029}\n",
];

/// A small deterministic generator (xorshift64*), so that a failure names its seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }
}

fn yaml(text: &str) -> Result<Value, String> {
    parse_yaml(text, Path::new("p.md"), 1).map_err(|d| d.message)
}

#[test]
fn the_flat_reading_gives_what_the_yaml_parser_gives() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut answered = 0;
    let texts = 20_000;
    for round in 0..texts {
        let text: String = (0..rng.below(7))
            .map(|_| LINES[rng.below(LINES.len())])
            .collect();
        if let Some(value) = parse_flat(&text) {
            answered += 1;
            assert_eq!(Ok(&value), yaml(&text).as_ref(), "round {round}: {text:?}");
        }
    }
    // Most texts hold a line it leaves to the parser; enough do not to make this a test.
    assert!(answered > texts / 20, "{answered} of {texts} answered");
}

#[test]
fn the_frontmatters_phases_are_written_with_are_read_flat() {
    for text in [
        "id: plan\nname: Plan\nemoji: 📋\ntools:\n  blacklist: [Write, Edit]\n",
        "id: p0\nname: Phase p0\nemoji: 🔧\ntools:\n  whitelist: [Read, Grep, Glob, Bash, \"Bash(git commit*)\", \"Edit(docs/**)\"]\navailableProfiles: [planner, coder]\n",
        "# the build phase\nid: build\n\nname: Build it\nemoji: 🔨\nagent: claude\n",
        "",
    ] {
        let flat = parse_flat(text).unwrap_or_else(|| panic!("read flat: {text:?}"));
        assert_eq!(Ok(flat), yaml(text), "{text:?}");
    }
}

#[test]
fn what_yaml_reads_otherwise_is_left_to_the_parser() {
    for text in [
        // YAML reads these as a number, a boolean, null, an alias, a block list and a second
        // document; a tab and a duplicate key are its errors to report, with their lines.
        "id: 12\n",
        "name: true\n",
        "agent: ~\n",
        "name: *a\n",
        "availableProfiles:\n  - coder\n",
        "id: a\n---\nid: b\n",
        "id:\ta\n",
        "id: a\nid: b\n",
        "name: a # comment\n",
        "name: Plan: the first\n",
    ] {
        assert_eq!(parse_flat(text), None, "{text:?}");
    }
}
