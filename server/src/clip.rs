//! Short quotes of what a client sent, for messages. An error names the value it refuses by a
//! short prefix, so a huge value (a 64 MiB task id, a method name of a megabyte) never comes back
//! whole in an answer or a log line. Pure: no I/O.

use std::borrow::Cow;

/// How many characters of a value a message quotes.
pub const QUOTED_CHARS: usize = 64;

/// How many characters a whole message may take (see [`clip_message`]).
pub const MESSAGE_CHARS: usize = 512;

/// `value`, or its first [`QUOTED_CHARS`] characters and an ellipsis.
pub fn clip(value: &str) -> Cow<'_, str> {
    clip_to(value, QUOTED_CHARS)
}

/// How many characters of a path a message quotes: more than of other values, since a path's
/// end (the file name) matters too, yet no longer than a path that can exist.
pub const PATH_CHARS: usize = 256;

/// `path` as text, or its first [`PATH_CHARS`] characters and an ellipsis.
pub fn clip_path(path: &std::path::Path) -> String {
    clip_to(&path.to_string_lossy(), PATH_CHARS).into_owned()
}

/// `value`, or its first `chars` characters and an ellipsis.
pub fn clip_to(value: &str, chars: usize) -> Cow<'_, str> {
    match value.char_indices().nth(chars) {
        None => Cow::Borrowed(value),
        Some((end, _)) => Cow::Owned(format!("{}…", &value[..end])),
    }
}

/// The first line of `text`, clipped to `chars` characters as [`clip_to`] does.
pub fn clip_line(text: &str, chars: usize) -> Cow<'_, str> {
    clip_to(text.lines().next().unwrap_or_default(), chars)
}

/// `text`, or its longest prefix of at most `max` bytes ending on a character boundary and an
/// ellipsis: for output whose budget is counted in bytes (hook output, tool results).
pub fn clip_bytes(text: &str, max: usize) -> Cow<'_, str> {
    let prefix = prefix_bytes(text, max);
    if prefix.len() == text.len() {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(format!("{prefix}…"))
    }
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
pub fn prefix_bytes(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A message made from text rawko does not control (a parser's error, which quotes the input):
/// every quoted part (`"…"` or `` `…` ``) longer than [`QUOTED_CHARS`] is clipped, and the whole
/// is cut at [`MESSAGE_CHARS`]. The safety net at each face's edge, behind the clips at the
/// places that quote input.
pub fn clip_message(message: &str) -> Cow<'_, str> {
    if message.len() <= QUOTED_CHARS {
        return Cow::Borrowed(message);
    }
    let mut out = String::new();
    let mut changed = false;
    let mut rest = message;
    while let Some(open) = rest.find(['"', '`']) {
        let quote = rest.as_bytes()[open] as char;
        let body = &rest[open + 1..];
        let Some(close) = body.find(quote) else { break };
        let quoted = &body[..close];
        out.push_str(&rest[..=open]);
        let clipped = clip(quoted);
        changed |= matches!(clipped, Cow::Owned(_));
        out.push_str(&clipped);
        out.push(quote);
        rest = &body[close + 1..];
    }
    if !changed && message.chars().nth(MESSAGE_CHARS).is_none() {
        return Cow::Borrowed(message);
    }
    out.push_str(rest);
    Cow::Owned(clip_to(&out, MESSAGE_CHARS).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_stay_and_long_ones_keep_a_prefix_and_an_ellipsis() {
        assert_eq!(clip("task-1"), "task-1");
        let long = "é".repeat(1000);
        let clipped = clip(&long);
        assert_eq!(clipped.chars().count(), QUOTED_CHARS + 1);
        assert!(clipped.ends_with("é…"));
        assert_eq!(clip(&"x".repeat(QUOTED_CHARS)), "x".repeat(QUOTED_CHARS));
    }

    #[test]
    fn byte_budgets_end_on_a_character_boundary() {
        assert_eq!(prefix_bytes("héllo", 2), "h");
        assert_eq!(prefix_bytes("héllo", 3), "hé");
        assert_eq!(prefix_bytes("abc", 10), "abc");
        assert_eq!(clip_bytes("héllo", 2), "h…");
        assert!(matches!(clip_bytes("abc", 3), Cow::Borrowed("abc")));
        assert_eq!(clip_line("first line\nsecond", 5), "first…");
        assert_eq!(clip_line("", 5), "");
    }

    #[test]
    fn a_message_clips_its_long_quotes_and_its_length() {
        let huge = "x".repeat(100_000);
        let serde = format!("unknown variant `{huge}`, expected one of `next`, `loop`");
        let m = clip_message(&serde);
        assert_eq!(
            m,
            format!(
                "unknown variant `{}…`, expected one of `next`, `loop`",
                "x".repeat(QUOTED_CHARS)
            )
        );
        let m =
            clip_message(&format!("invalid type: string \"{huge}\", expected u32")).into_owned();
        assert!(m.ends_with("…\", expected u32"), "{m}");
        let m = clip_message(&format!("Unexpected params: [{}]", "1,".repeat(10_000))).into_owned();
        assert_eq!(m.chars().count(), MESSAGE_CHARS + 1);
        assert!(m.ends_with('…'));
        let plain = "unknown task \"task-1\"; it's gone";
        assert!(matches!(clip_message(plain), Cow::Borrowed(_)));
        // An unclosed quote is left as it is (and the length cut still applies).
        let m = clip_message(&format!("bad \"{huge}")).into_owned();
        assert_eq!(m.chars().count(), MESSAGE_CHARS + 1);
    }
}
