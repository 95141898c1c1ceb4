//! A Markdown agent file: its frontmatter and the sections of its body.

/// A Markdown file's parts: the frontmatter text, and the body with the 1-based line it starts on
/// (`None` when the frontmatter is not closed).
pub(super) struct Frontmatter<'a> {
    pub(super) front: &'a str,
    pub(super) body: &'a str,
    pub(super) body_line: Option<usize>,
}

/// `None` when the text does not start with a `---` line.
pub(super) fn split_frontmatter(content: &str) -> Option<Frontmatter<'_>> {
    let mut lines = content.split_inclusive('\n');
    let first = lines.next()?;
    if first.trim_end() != "---" {
        return None;
    }
    let start = first.len();
    let mut offset = start;
    for (i, line) in lines.enumerate() {
        if line.trim_end() == "---" || line.trim_end() == "..." {
            return Some(Frontmatter {
                front: &content[start..offset],
                body: &content[offset + line.len()..],
                // Line 1 is the opening `---`, line i + 2 the closing one.
                body_line: Some(i + 3),
            });
        }
        offset += line.len();
    }
    Some(Frontmatter {
        front: &content[start..],
        body: "",
        body_line: None,
    })
}

/// A `## …` section of a Markdown body: its text and the line of its heading.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Section {
    pub(super) text: String,
    pub(super) line: usize,
}

/// What SPEC-0008 reads from a Markdown body.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct BodySections {
    /// The `## System Prompt` section.
    pub(super) system_prompt: Option<Section>,
    /// The `## When to Use` section.
    pub(super) when_to_use: Option<Section>,
    /// The body without a leading `# h1` and without the When-to-Use section: the system prompt
    /// when there is no System Prompt heading.
    pub(super) rest: Section,
    /// Headings of a section given a second time (only the first counts).
    pub(super) repeated: Vec<(String, usize)>,
}

impl BodySections {
    /// The system prompt the body gives: its System Prompt section, or else the rest.
    pub(super) fn system_prompt(&self) -> Section {
        match &self.system_prompt {
            Some(s) => s.clone(),
            None => self.rest.clone(),
        }
    }
}

/// Splits a Markdown body into SPEC-0008's sections. `first_line` is the body's first line in the
/// file. Headings inside fenced code blocks are text, not headings.
pub(super) fn body_sections(body: &str, first_line: usize) -> BodySections {
    #[derive(Clone, Copy, PartialEq)]
    enum Region {
        Rest,
        SystemPrompt,
        WhenToUse,
        Ignored,
    }
    let mut system_prompt: Option<Section> = None;
    let mut when_to_use: Option<Section> = None;
    let mut rest = Section {
        text: String::new(),
        line: first_line,
    };
    let mut repeated = Vec::new();
    let mut region = Region::Rest;
    let mut fence: Option<(char, usize)> = None;
    let mut seen_text = false;

    for (i, line) in body.lines().enumerate() {
        let number = first_line + i;
        let trimmed = line.trim();
        if let Some((ch, len)) = fence {
            if fence_marker(trimmed).is_some_and(|(c, l)| c == ch && l >= len)
                && trimmed.trim_start_matches(ch).trim().is_empty()
            {
                fence = None;
            }
        } else if let Some(marker) = fence_marker(trimmed) {
            fence = Some(marker);
        } else if let Some((level, title)) = heading(trimmed) {
            if level == 1 && !seen_text {
                // The leading title of the file is not part of any prompt.
                seen_text = true;
                continue;
            }
            if level <= 2 {
                let slot = match title.as_str() {
                    "system prompt" => Some((&mut system_prompt, Region::SystemPrompt)),
                    "when to use" => Some((&mut when_to_use, Region::WhenToUse)),
                    _ => None,
                };
                match slot {
                    Some((section @ None, r)) => {
                        *section = Some(Section {
                            text: String::new(),
                            line: number,
                        });
                        region = r;
                        seen_text = true;
                        continue;
                    }
                    Some((Some(_), _)) => {
                        repeated.push((trimmed.to_owned(), number));
                        region = Region::Ignored;
                        seen_text = true;
                        continue;
                    }
                    None => region = Region::Rest,
                }
            }
        }
        if !trimmed.is_empty() {
            seen_text = true;
        }
        let target = match region {
            Region::Rest => Some(&mut rest),
            Region::SystemPrompt => system_prompt.as_mut(),
            Region::WhenToUse => when_to_use.as_mut(),
            Region::Ignored => None,
        };
        if let Some(section) = target {
            if section.text.is_empty() {
                if trimmed.is_empty() {
                    continue;
                }
                if region == Region::Rest {
                    // Point at the text itself when the rest turns out to be the prompt.
                    section.line = number;
                }
            }
            section.text.push_str(line);
            section.text.push('\n');
        }
    }
    for section in [&mut system_prompt, &mut when_to_use]
        .into_iter()
        .flatten()
        .chain([&mut rest])
    {
        section.text = section.text.trim().to_owned();
    }
    BodySections {
        system_prompt,
        when_to_use,
        rest,
        repeated,
    }
}

/// A code fence opener or closer: its character and run length.
pub(super) fn fence_marker(line: &str) -> Option<(char, usize)> {
    let ch = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = line.chars().take_while(|c| *c == ch).count();
    (len >= 3).then_some((ch, len))
}

/// An ATX heading: its level and its title, lower-cased, with closing `#`s, a trailing colon and
/// runs of spaces removed.
pub(super) fn heading(line: &str) -> Option<(usize, String)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &line[level..];
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let title = rest
        .trim()
        .trim_end_matches('#')
        .trim()
        .trim_end_matches(':');
    let title = title
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    Some((level, title))
}
