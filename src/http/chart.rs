//! Line charts as inline SVG, written on the server: no script, no external asset, every
//! label escaped through [`Html`]. A chart spans a fixed window of time ending now; each
//! sample gets an invisible column whose `<title>` is its hover text (every series' value
//! there), and the legend below says each series' latest value.
//!
//! The `viewBox` is sized for a phone's width and scales up on a laptop, so text stays
//! readable on both; the colours are classes of the page's stylesheet (`c0` … `c7`).

use std::fmt::Write as _;
use std::time::Duration;

use super::html::{Html, age};

/// The `viewBox`: width and height, in user units (CSS pixels on a 360-pixel-wide screen).
const WIDTH: f64 = 360.0;
const HEIGHT: f64 = 170.0;
/// The plot area's margins: room for the y labels on the left and the x labels below.
const LEFT: f64 = 40.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 8.0;
const BOTTOM: f64 = 20.0;
/// Colour classes the stylesheet defines.
const COLOURS: usize = 8;

/// One line: a name and a value per point of the chart (`None`: a gap).
#[derive(Debug)]
pub(super) struct Series {
    pub(super) name: String,
    pub(super) values: Vec<Option<f64>>,
}

/// A chart of series over the last `window`.
#[derive(Debug)]
pub(super) struct Chart<'a> {
    /// The element's id (`chart-…`).
    pub(super) id: &'static str,
    pub(super) title: &'static str,
    /// The unit after each value (`req/s`, `ms`…), or empty.
    pub(super) unit: &'static str,
    /// Whether values are whole numbers (brokers, connections): no fractional ticks.
    pub(super) whole: bool,
    /// How long before now each point is, in the series' order.
    pub(super) ages: &'a [Duration],
    /// How far back the x axis goes.
    pub(super) window: Duration,
    pub(super) series: Vec<Series>,
}

/// The scale from values to the plot area.
struct Scale {
    top: f64,
    step: f64,
    window: f64,
}

impl Scale {
    fn new(chart: &Chart<'_>) -> Scale {
        let max = (chart.series.iter())
            .flat_map(|s| s.values.iter().flatten())
            .fold(0.0f64, |m, &v| m.max(v));
        let mut step = nice_step(max / 4.0);
        if chart.whole {
            step = step.max(1.0).round();
        }
        let top = (step * (max / step).ceil()).max(step);
        Scale {
            top,
            step,
            window: chart.window.as_secs_f64(),
        }
    }

    fn x(&self, age: Duration) -> f64 {
        let plot = WIDTH - LEFT - RIGHT;
        LEFT + plot * (1.0 - age.as_secs_f64() / self.window)
    }

    fn y(&self, value: f64) -> f64 {
        let plot = HEIGHT - TOP - BOTTOM;
        TOP + plot * (1.0 - value / self.top)
    }
}

/// 1, 2 or 5 times a power of ten, at least `rough` (and above 0).
fn nice_step(rough: f64) -> f64 {
    if rough <= 0.0 || !rough.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(rough.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|&s| s >= rough)
        .unwrap_or(10.0 * power)
}

/// A value for a label: three significant digits at most, `k`/`M` for thousands and
/// millions, no trailing zeros.
pub(super) fn number(v: f64) -> String {
    let a = v.abs();
    let (scaled, suffix) = match a {
        _ if a >= 1e6 => (v / 1e6, "M"),
        _ if a >= 1e3 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    let decimals = match scaled.abs() {
        s if s >= 100.0 || s == 0.0 => 0,
        s if s >= 10.0 => 1,
        s if s >= 1.0 => 2,
        _ => 3,
    };
    let mut text = format!("{scaled:.decimals$}");
    if text.contains('.') {
        text.truncate(text.trim_end_matches('0').trim_end_matches('.').len());
    }
    text + suffix
}

/// A value with the chart's unit.
fn with_unit(v: f64, unit: &str) -> String {
    match unit {
        "" => number(v),
        unit => format!("{} {unit}", number(v)),
    }
}

/// Writes `chart` as a `<figure>`: the SVG, then the legend.
pub(super) fn render(h: &mut Html, chart: &Chart<'_>) {
    let scale = Scale::new(chart);
    h.raw("<figure class=\"chart\" id=\"")
        .raw(chart.id)
        .raw("\"><figcaption>")
        .raw(chart.title)
        .raw("</figcaption><svg viewBox=\"0 0 360 170\" role=\"img\" aria-label=\"")
        .raw(chart.title)
        .raw("\">");
    axes(h, &scale);
    let points = chart.ages.iter().filter(|a| **a <= chart.window).count();
    if points == 0 {
        h.raw("<text class=\"none\" x=\"196\" y=\"80\">no samples yet</text>");
    }
    for (i, series) in chart.series.iter().enumerate() {
        line(h, &scale, chart.ages, series, i % COLOURS);
    }
    hover_columns(h, &scale, chart);
    h.raw("</svg>");
    legend(h, chart);
    h.raw("</figure>");
}

fn axes(h: &mut Html, scale: &Scale) {
    h.raw("<g class=\"axes\">");
    let mut value = 0.0;
    while value <= scale.top * 1.0001 {
        let y = scale.y(value);
        h.raw("<line x1=\"")
            .num(LEFT)
            .raw("\" x2=\"")
            .num(WIDTH - RIGHT)
            .raw("\" y1=\"")
            .num(coord(y))
            .raw("\" y2=\"")
            .num(coord(y))
            .raw("\"/><text class=\"y\" x=\"")
            .num(LEFT - 4.0)
            .raw("\" y=\"")
            .num(coord(y + 4.0))
            .raw("\">")
            .text(&number(value))
            .raw("</text>");
        value += scale.step;
    }
    let minutes = (scale.window / 60.0).round() as u64;
    for quarter in 0..=4u64 {
        let ago = minutes * (4 - quarter) / 4;
        let x = scale.x(Duration::from_secs(ago * 60));
        // The last label ends at the plot's edge rather than straddling it.
        h.raw(match ago {
            0 => "<text class=\"x end\" x=\"",
            _ => "<text class=\"x\" x=\"",
        })
        .num(coord(x))
        .raw("\" y=\"")
        .num(HEIGHT - 4.0)
        .raw("\">");
        match ago {
            0 => h.raw("now"),
            _ if quarter == 0 => h.raw("−").num(ago).raw(" min"),
            _ => h.raw("−").num(ago),
        };
        h.raw("</text>");
    }
    h.raw("</g>");
}

/// A coordinate rounded to a tenth of a unit, which keeps the markup short.
fn coord(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// The series as a path (gaps split it) and a dot on its newest point.
fn line(h: &mut Html, scale: &Scale, ages: &[Duration], series: &Series, colour: usize) {
    let mut d = String::new();
    let mut pen_down = false;
    let mut newest = None;
    for (age, value) in ages.iter().zip(&series.values) {
        match value {
            Some(v) if *age <= Duration::from_secs_f64(scale.window) => {
                let (x, y) = (coord(scale.x(*age)), coord(scale.y(*v)));
                let _ = write!(d, "{}{x} {y}", if pen_down { "L" } else { "M" });
                pen_down = true;
                newest = Some((x, y));
            }
            _ => pen_down = false,
        }
    }
    let class = COLOUR_CLASSES[colour];
    if !d.is_empty() {
        h.raw("<path class=\"line ")
            .raw(class)
            .raw("\" d=\"")
            .text(&d)
            .raw("\"/>");
    }
    if let Some((x, y)) = newest {
        h.raw("<circle class=\"dot ")
            .raw(class)
            .raw("\" r=\"2.5\" cx=\"")
            .num(x)
            .raw("\" cy=\"")
            .num(y)
            .raw("\"/>");
    }
}

const COLOUR_CLASSES: [&str; COLOURS] = ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"];

/// One invisible column per point, from half way to its neighbours, whose `<title>` the
/// browser shows on hover (and a screen reader reads).
fn hover_columns(h: &mut Html, scale: &Scale, chart: &Chart<'_>) {
    let xs: Vec<f64> = chart.ages.iter().map(|a| scale.x(*a)).collect();
    h.raw("<g class=\"hover\">");
    for (i, &x) in xs.iter().enumerate() {
        if chart.ages[i] > chart.window {
            continue;
        }
        let left = i
            .checked_sub(1)
            .map_or(x - 2.0, |j| (xs[j] + x) / 2.0)
            .max(LEFT);
        let right = xs
            .get(i + 1)
            .map_or(x + 2.0, |n| (x + n) / 2.0)
            .min(WIDTH - RIGHT);
        h.raw("<rect x=\"")
            .num(coord(left))
            .raw("\" y=\"")
            .num(TOP)
            .raw("\" width=\"")
            .num(coord((right - left).max(1.0)))
            .raw("\" height=\"")
            .num(HEIGHT - TOP - BOTTOM)
            .raw("\"><title>");
        let when = match chart.ages[i] {
            a if a < Duration::from_secs(1) => "now".to_owned(),
            a => format!("{} ago", age(Duration::from_secs(a.as_secs()))),
        };
        h.text(&when);
        for series in &chart.series {
            let value = series.values.get(i).copied().flatten();
            let shown = value.map_or("–".to_owned(), |v| with_unit(v, chart.unit));
            h.raw("\n").text(&series.name).raw(": ").text(&shown);
        }
        h.raw("</title></rect>");
    }
    h.raw("</g>");
}

/// The series' names, colours and newest values.
fn legend(h: &mut Html, chart: &Chart<'_>) {
    h.raw("<ul class=\"legend\">");
    for (i, series) in chart.series.iter().enumerate() {
        let newest = series.values.iter().rev().flatten().next();
        h.raw("<li><i class=\"")
            .raw(COLOUR_CLASSES[i % COLOURS])
            .raw("\"></i>")
            .text(&series.name);
        if let Some(v) = newest {
            h.raw(" <b>").text(&with_unit(*v, chart.unit)).raw("</b>");
        }
        h.raw("</li>");
    }
    h.raw("</ul>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short() {
        assert_eq!(number(0.0), "0");
        assert_eq!(number(0.025), "0.025");
        assert_eq!(number(1.5), "1.5");
        assert_eq!(number(12.0), "12");
        assert_eq!(number(250.0), "250");
        assert_eq!(number(1250.0), "1.25k");
        assert_eq!(number(48_000.0), "48k");
        assert_eq!(number(3_500_000.0), "3.5M");
    }

    #[test]
    fn steps_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(nice_step(0.0), 1.0);
        assert_eq!(nice_step(0.3), 0.5);
        assert_eq!(nice_step(1.0), 1.0);
        assert_eq!(nice_step(1.1), 2.0);
        assert_eq!(nice_step(33.0), 50.0);
    }

    #[test]
    fn a_chart_has_axes_a_line_per_series_hover_titles_and_escaped_names() {
        let ages = [
            Duration::from_secs(120),
            Duration::from_secs(60),
            Duration::ZERO,
        ];
        let chart = Chart {
            id: "chart-test",
            title: "Test",
            unit: "req/s",
            whole: false,
            ages: &ages,
            window: Duration::from_secs(3600),
            series: vec![
                Series {
                    name: "<b>".into(),
                    values: vec![Some(1.0), None, Some(3.0)],
                },
                Series {
                    name: "flat".into(),
                    values: vec![Some(0.0); 3],
                },
            ],
        };
        let mut h = Html::default();
        render(&mut h, &chart);
        let svg = h.finish();
        assert_eq!(svg.matches("<path class=\"line").count(), 2, "{svg}");
        assert_eq!(svg.matches("<rect").count(), 3);
        assert!(svg.contains("&lt;b&gt;: 3 req/s"), "{svg}");
        assert!(!svg.contains("<b>:"));
        assert!(svg.contains(">now</text>") && svg.contains("−60 min"));
        // The gap splits the first line in two moves.
        let first = svg.split(" d=\"").nth(1).unwrap();
        assert_eq!(first.split('"').next().unwrap().matches('M').count(), 2);
    }
}
