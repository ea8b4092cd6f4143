//! Escaping of untrusted text (session ids, detection details, labels, paths
//! from logs) for every output: terminal, Markdown, JUnit, HTML and CSV cells.

use std::borrow::Cow;

/// Escape text for HTML element content and double-quoted attributes.
pub fn html(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A character a terminal would act on instead of print: C0 and C1 controls,
/// DEL, and the bidirectional overrides that can reorder what is shown.
fn is_unsafe_for_terminal(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Text for one terminal line: line breaks and tabs become spaces, every other
/// control character (ESC sequences, BEL, backspace, C1, bidi overrides) is
/// shown escaped (`\u{1b}`), so a log cannot move the cursor, retitle the
/// window or hide text.
pub fn terminal(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe_for_terminal) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' | '\r' | '\t' => out.push(' '),
            c if is_unsafe_for_terminal(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Like [`terminal`] but keeps line breaks: for multi-line messages (errors).
pub fn terminal_lines(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c != '\n' && is_unsafe_for_terminal(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push(' '),
            c if is_unsafe_for_terminal(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Text for Markdown: every ASCII punctuation character is backslash-escaped
/// (CommonMark allows it for all of them, so no link, image, emphasis, code
/// span, table cell or heading can start), `<`, `>` and `&` become entities
/// (no raw HTML such as `</details><script>`), and line breaks and other
/// controls are shown as escapes (`\n`, `\u{1b}`), so no new block can start
/// and the text reads as it was.
pub fn md_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    let push = |c: char, out: &mut String| match c {
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        '&' => out.push_str("&amp;"),
        c if c.is_ascii_punctuation() => {
            out.push('\\');
            out.push(c);
        }
        c => out.push(c),
    };
    for c in s.chars() {
        if is_unsafe_for_terminal(c) {
            let shown: String = match c {
                '\n' => "\\n".into(),
                '\r' => "\\r".into(),
                '\t' => "\\t".into(),
                c => c.escape_unicode().collect(),
            };
            for e in shown.chars() {
                push(e, &mut out);
            }
        } else {
            push(c, &mut out);
        }
    }
    out
}

/// Make a text cell safe for spreadsheets: a cell that starts with `=`, `+`,
/// `-`, `@`, tab or carriage return would be evaluated as a formula, so it gets
/// a leading apostrophe (session ids and excerpts come from untrusted logs).
pub fn safe_cell(s: &str) -> Cow<'_, str> {
    match s.as_bytes().first() {
        Some(b'=' | b'+' | b'-' | b'@' | b'\t' | b'\r') => format!("'{s}").into(),
        _ => s.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_text_has_no_control_characters() {
        let s = terminal("a\u{1b}]0;pwned\u{7}b\nc\u{202e}d\u{9b}");
        assert!(!s.chars().any(|c| c.is_control()), "{s:?}");
        assert!(s.contains("\\u{1b}") && s.contains("\\u{202e}"), "{s:?}");
        assert_eq!(terminal("plain id-1"), "plain id-1");
        assert_eq!(terminal_lines("a\nb\u{1b}"), "a\nb\\u{1b}");
    }

    #[test]
    fn markdown_text_cannot_open_images_links_or_html() {
        let t = md_text("a\n\n![x](http://evil.example/p.png) </details><script> | *b*");
        assert!(!t.contains('\n'));
        assert!(t.starts_with("a\\\\n\\\\n\\!\\["), "{t}");
        assert!(!t.contains("!["), "{t}");
        assert!(
            !t.contains('<') && !t.contains("](") && !t.contains(" | "),
            "{t}"
        );
        assert!(t.contains("\\!\\[x\\]\\(http"), "{t}");
    }
}
