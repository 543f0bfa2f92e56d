//! Java's `String` and commons-lang `StringUtils` predicates where the name server's answers
//! depend on them: what counts as blank, what `trim` removes, and case-insensitive equality.

/// Java's `Character.isWhitespace`: Unicode space separators except the non-breaking ones,
/// line and paragraph separators, and the ASCII/C0 separators.
pub(crate) fn is_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t'..='\r'
            | '\u{1c}'..='\u{1f}'
            | ' '
            | '\u{1680}'
            | '\u{2000}'..='\u{2006}'
            | '\u{2008}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// commons-lang `StringUtils.isBlank`: empty or only [`is_whitespace`] characters.
pub(crate) fn is_blank(s: &str) -> bool {
    s.chars().all(is_whitespace)
}

/// Java's `String.trim`: strips every character up to U+0020, control characters included.
pub(crate) fn trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// Java's `String.equalsIgnoreCase`: equal lengths, and each pair of characters equal as they
/// are, after a one-to-one upper-case mapping, or after mapping those to lower case.
pub(crate) fn equals_ignore_case(a: &str, b: &str) -> bool {
    fn one(mut mapped: impl ExactSizeIterator<Item = char>, c: char) -> char {
        match mapped.len() {
            1 => mapped.next().unwrap_or(c),
            _ => c,
        }
    }
    let (upper, lower) = (
        |c: char| one(c.to_uppercase(), c),
        |c: char| one(c.to_lowercase(), c),
    );
    a.encode_utf16().count() == b.encode_utf16().count()
        && a.chars()
            .zip(b.chars())
            .all(|(x, y)| x == y || upper(x) == upper(y) || lower(upper(x)) == lower(upper(y)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_follows_character_is_whitespace() {
        assert!(is_blank(""));
        assert!(is_blank(" \t\u{1f}\u{3000}"));
        assert!(
            !is_blank("\u{a0}"),
            "no-break space is not whitespace in Java"
        );
        assert!(!is_blank("\u{85}"));
    }

    #[test]
    fn trim_removes_controls_but_not_unicode_spaces() {
        assert_eq!(trim("\u{1} x \u{0}"), "x");
        assert_eq!(trim("x\u{a0}"), "x\u{a0}");
    }

    #[test]
    fn equals_ignore_case_folds_beyond_ascii() {
        assert!(equals_ignore_case("zürich", "ZÜRICH"));
        assert!(equals_ignore_case("Zone-A", "zONE-a"));
        assert!(
            !equals_ignore_case("straße", "STRASSE"),
            "no one-to-many mappings"
        );
        assert!(!equals_ignore_case("a", "ab"));
    }
}
