//! How a setting's text becomes a typed value and back: [`SettingValue`] for each field type of
//! [`super::Settings`], the typed values parsed once when a key is set ([`Millis`],
//! [`Seconds`], [`Parsed`]), and [`InvalidSetting`], the error every refused value becomes.
//!
//! Rendering gives back what Java's `NamesrvConfig` / `NettyServerConfig` getters print, so a
//! typed field lists exactly as the raw number or string did.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A refused value: the key, the value as given, and what was expected. Operators read it as
/// `invalid value for KEY: "VALUE" (REASON)`, after the file's name when it came from one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid value for {key}: {value:?} ({reason})")]
pub struct InvalidSetting {
    /// The Java key.
    pub(crate) key: String,
    /// The value as given (set) or as held (range checks).
    pub(crate) value: String,
    /// What was expected.
    pub(crate) reason: String,
}

/// Why a text does not parse as a setting's type (the key is added by the caller).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ValueError(pub String);

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A setting's type: how its text is parsed and rendered.
pub(super) trait SettingValue: Sized {
    /// Parses a value. Strings are trimmed as Java trims them; numbers and booleans are not
    /// (booleans accept `true`/`false` in any case).
    fn parse_setting(text: &str) -> Result<Self, ValueError>;
    /// The text Java would print, or `None` for an unset (null) value.
    fn render_setting(&self) -> Option<String>;
}

fn blank_hint(text: &str) -> &'static str {
    if crate::java_str::trim(text).len() != text.len() {
        " (the value has leading or trailing blanks)"
    } else {
        ""
    }
}

impl SettingValue for bool {
    fn parse_setting(text: &str) -> Result<Self, ValueError> {
        // Not trimmed: Java's `Boolean.parseBoolean("true ")` is false, so a value with
        // surrounding blanks is refused rather than read either way.
        match text {
            t if t.eq_ignore_ascii_case("true") => Ok(true),
            t if t.eq_ignore_ascii_case("false") => Ok(false),
            _ => Err(ValueError(format!(
                "expected true or false{}",
                blank_hint(text)
            ))),
        }
    }
    fn render_setting(&self) -> Option<String> {
        Some(self.to_string())
    }
}

macro_rules! int_setting {
    ($($t:ty),*) => {$(
        impl SettingValue for $t {
            fn parse_setting(text: &str) -> Result<Self, ValueError> {
                // Not trimmed, as Java's `parseInt` does not trim.
                text.parse::<$t>().map_err(|_| {
                    ValueError(format!(
                        "expected an integer between {} and {}{}",
                        <$t>::MIN,
                        <$t>::MAX,
                        blank_hint(text)
                    ))
                })
            }
            fn render_setting(&self) -> Option<String> {
                Some(self.to_string())
            }
        }
    )*};
}
int_setting!(i32, i64);

impl SettingValue for String {
    fn parse_setting(text: &str) -> Result<Self, ValueError> {
        Ok(crate::java_str::trim(text).to_owned())
    }
    fn render_setting(&self) -> Option<String> {
        Some(self.clone())
    }
}

impl SettingValue for Option<String> {
    fn parse_setting(text: &str) -> Result<Self, ValueError> {
        Ok(Some(crate::java_str::trim(text).to_owned()))
    }
    fn render_setting(&self) -> Option<String> {
        self.clone()
    }
}

/// A number of milliseconds (a Java `long`), parsed and listed as that number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Millis(pub i64);

impl Millis {
    /// The number as written.
    pub(crate) fn get(self) -> i64 {
        self.0
    }

    /// As a duration; a negative number (which validation refuses) counts as zero.
    pub fn duration(self) -> Duration {
        Duration::from_millis(self.0.max(0) as u64)
    }
}

/// A number of seconds (a Java `int`), parsed and listed as that number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Seconds(pub i32);

impl Seconds {
    /// The number as written.
    pub(crate) fn get(self) -> i32 {
        self.0
    }

    /// As a duration; a negative number (which validation refuses) counts as zero.
    pub(crate) fn duration(self) -> Duration {
        Duration::from_secs(self.0.max(0) as u64)
    }

    /// As a timeout where 0 means none (`serverChannelMaxIdleTimeSeconds`).
    pub(crate) fn timeout(self) -> Option<Duration> {
        (self.0 > 0).then(|| self.duration())
    }
}

macro_rules! number_setting {
    ($($name:ident($t:ty)),*) => {$(
        impl SettingValue for $name {
            fn parse_setting(text: &str) -> Result<Self, ValueError> {
                <$t>::parse_setting(text).map($name)
            }
            fn render_setting(&self) -> Option<String> {
                self.0.render_setting()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    )*};
}
number_setting!(Millis(i64), Seconds(i32));

/// A string setting with a structure (an address list): kept as written, since that is what
/// is listed, and parsed into `T` whenever it is set. Setting never fails: a text that does not
/// parse is refused by [`super::Settings::validate`] in its turn among the range checks, and
/// reads as `T::default()` (empty: nobody, no peers) meanwhile.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed<T> {
    text: String,
    value: T,
    error: Option<String>,
}

impl<T> Parsed<T>
where
    T: FromStr + Default,
    T::Err: fmt::Display,
{
    /// Parses `text`, trimmed as Java trims strings.
    pub(crate) fn new(text: &str) -> Parsed<T> {
        let text = crate::java_str::trim(text).to_owned();
        let (value, error) = match text.parse::<T>() {
            Ok(value) => (value, None),
            Err(e) => (T::default(), Some(e.to_string())),
        };
        Parsed { text, value, error }
    }
}

impl<T> From<&str> for Parsed<T>
where
    T: FromStr + Default,
    T::Err: fmt::Display,
{
    fn from(text: &str) -> Parsed<T> {
        Parsed::new(text)
    }
}

impl<T> From<String> for Parsed<T>
where
    T: FromStr + Default,
    T::Err: fmt::Display,
{
    fn from(text: String) -> Parsed<T> {
        Parsed::new(&text)
    }
}

impl<T> Parsed<T> {
    /// The value as written (trimmed).
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The parsed value (`T::default()` while the text does not parse).
    pub fn value(&self) -> &T {
        &self.value
    }

    /// Why the text does not parse, if it does not.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }
}

impl<T> SettingValue for Parsed<T>
where
    T: FromStr + Default,
    T::Err: fmt::Display,
{
    fn parse_setting(text: &str) -> Result<Self, ValueError> {
        Ok(Parsed::new(text))
    }
    fn render_setting(&self) -> Option<String> {
        Some(self.text.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::HostPortList;

    #[test]
    fn numbers_render_as_written_and_convert_once() {
        let ms = Millis::parse_setting("1500").unwrap();
        assert_eq!(ms.render_setting().as_deref(), Some("1500"));
        assert_eq!(ms.duration(), Duration::from_millis(1500));
        assert_eq!(Millis(-1).duration(), Duration::ZERO);
        assert!(Millis::parse_setting("15 ").is_err());
        assert_eq!(Seconds(0).timeout(), None);
        assert_eq!(Seconds(3).timeout(), Some(Duration::from_secs(3)));
        assert_eq!(Seconds(-3).duration(), Duration::ZERO);
    }

    #[test]
    fn parsed_keeps_the_text_and_the_error() {
        let ok = Parsed::<HostPortList>::new(" a:1;b:2 ");
        assert_eq!(ok.render_setting().as_deref(), Some("a:1;b:2"));
        assert_eq!(ok.value().entries(), ["a:1", "b:2"]);
        assert_eq!(ok.error(), None);
        let bad = Parsed::<HostPortList>::new("a:1;b");
        assert_eq!(bad.text(), "a:1;b");
        assert!(bad.value().is_empty());
        assert!(bad.error().unwrap().contains("\"b\""));
    }

    #[test]
    fn invalid_setting_renders_as_operators_read_it() {
        let e = InvalidSetting {
            key: "listenPort".into(),
            value: "abc".into(),
            reason: "expected an integer between -2147483648 and 2147483647".into(),
        };
        assert_eq!(
            e.to_string(),
            "invalid value for listenPort: \"abc\" (expected an integer between -2147483648 and 2147483647)"
        );
    }
}
