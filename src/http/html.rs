//! A small HTML writer that escapes every piece of data, and the formats the status page
//! uses for durations and timestamps.
//!
//! Markup goes in only as `&'static str`; anything that came from a broker, a client or the
//! configuration goes through [`Html::text`] (or [`Html::param`] inside a link), so topic,
//! broker and key names can never inject markup.

use std::fmt::Display;
use std::time::Duration;

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};

/// An HTML document being written.
#[derive(Debug, Default)]
pub(super) struct Html(String);

impl Html {
    /// Markup, written as is.
    pub(super) fn raw(&mut self, markup: &'static str) -> &mut Self {
        self.0.push_str(markup);
        self
    }

    /// Text or an attribute value, escaped.
    pub(super) fn text(&mut self, text: &str) -> &mut Self {
        for c in text.chars() {
            match c {
                '&' => self.0.push_str("&amp;"),
                '<' => self.0.push_str("&lt;"),
                '>' => self.0.push_str("&gt;"),
                '"' => self.0.push_str("&quot;"),
                '\'' => self.0.push_str("&#39;"),
                c => self.0.push(c),
            }
        }
        self
    }

    /// A number (escaped all the same, like any displayed value).
    pub(super) fn num(&mut self, n: impl Display) -> &mut Self {
        self.text(&n.to_string())
    }

    /// A query-string value inside an `href`: percent-encoded, then escaped.
    pub(super) fn param(&mut self, value: &str) -> &mut Self {
        let encoded = utf8_percent_encode(value, NON_ALPHANUMERIC).to_string();
        self.text(&encoded)
    }

    /// `<td>text</td>`.
    pub(super) fn cell(&mut self, text: &str) -> &mut Self {
        self.raw("<td>").text(text).raw("</td>")
    }

    /// The finished document.
    pub(super) fn finish(self) -> String {
        self.0
    }
}

/// A short human form of a duration: `850 ms`, `12 s`, `3 min 4 s`, `2 h 5 min`, `3 d 4 h`.
pub(super) fn age(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0 => format!("{} ms", d.as_millis()),
        1..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        3600..86_400 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        _ => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
    }
}

/// Milliseconds since the Unix epoch as `YYYY-MM-DD hh:mm:ss UTC`.
pub(super) fn utc(millis: i64) -> String {
    let t = crate::civil::Utc::from_unix_secs(millis.div_euclid(1000));
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_is_escaped_and_markup_is_not() {
        let mut h = Html::default();
        h.raw("<td>")
            .text("<script>alert('x')</script> & \"q\"")
            .raw("</td>");
        assert_eq!(
            h.finish(),
            "<td>&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;</td>"
        );
        let mut h = Html::default();
        h.param("a b&c/é");
        assert_eq!(h.finish(), "a%20b%26c%2F%C3%A9");
    }

    #[test]
    fn durations_and_dates() {
        assert_eq!(age(Duration::from_millis(850)), "850 ms");
        assert_eq!(age(Duration::from_secs(12)), "12 s");
        assert_eq!(age(Duration::from_secs(184)), "3 min 4 s");
        assert_eq!(age(Duration::from_secs(7500)), "2 h 5 min");
        assert_eq!(age(Duration::from_secs(3 * 86_400 + 4 * 3600)), "3 d 4 h");
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_700_000_000_123), "2023-11-14 22:13:20 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
    }
}
