//! Figures ([`crate::report::figure`]) drawn as SVG with the `plotters`
//! crate (its SVG backend; text is left to the viewer's fonts).
//!
//! Colours: the series use a palette that reads on light and dark
//! backgrounds; text, axes and the frame use the colour [`INK`] and grid
//! lines [`GRID`], which the HTML report's style sheet turns light in dark
//! mode (`[fill="#1F1F1F"]`, `[stroke="#1F1F1F"]`). A chart alone
//! (`--format svg`) gets a white background.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::report::figure::{Bars, Figure, Lines, Plot, Timeline};

/// Text, axes and frame.
pub const INK: RGBColor = RGBColor(0x1f, 0x1f, 0x1f);
/// Grid lines.
pub const GRID: RGBColor = RGBColor(0xc8, 0xc8, 0xc8);
/// The series' colours, in order (readable on white and on dark grey).
pub const PALETTE: [RGBColor; 7] = [
    RGBColor(0x44, 0x77, 0xaa),
    RGBColor(0xee, 0x66, 0x77),
    RGBColor(0x22, 0x88, 0x33),
    RGBColor(0xcc, 0xbb, 0x44),
    RGBColor(0x66, 0xcc, 0xee),
    RGBColor(0xaa, 0x33, 0x77),
    RGBColor(0x99, 0x99, 0x99),
];
/// Line overlays' colours.
const LINE_COLOURS: [RGBColor; 3] = [
    RGBColor(0xe6, 0x7e, 0x22),
    RGBColor(0x8e, 0x44, 0xad),
    RGBColor(0x16, 0xa0, 0x85),
];

/// The legend's background (the HTML style sheet darkens it in dark mode).
pub const LEGEND: RGBColor = RGBColor(0xfe, 0xfe, 0xfe);
/// No colour (light grid lines are not drawn).
const TRANSPARENT: RGBAColor = RGBAColor(0, 0, 0, 0.0);

/// Size of a chart, pixels (SVG user units).
pub const SIZE: (u32, u32) = (760, 380);

type DrawResult<T> = Result<T, Box<dyn std::error::Error>>;

/// The SVG of `fig` (an `<svg>` element, no XML declaration);
/// `background` draws a white background (a chart alone). A figure that
/// cannot be drawn gives an SVG saying why.
pub fn svg(fig: &Figure, background: bool) -> String {
    let mut out = String::new();
    let drawn = {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        let r = (|| -> DrawResult<()> {
            if background {
                root.fill(&WHITE)?;
            }
            match &fig.plot {
                Plot::Bars(b) => bars(&root, fig, b)?,
                Plot::Lines(l) => lines(&root, fig, l)?,
                Plot::Timeline(t) => timeline(&root, fig, t)?,
            }
            root.present()?;
            Ok(())
        })();
        r.map_err(|e| e.to_string())
    };
    match drawn {
        Ok(()) => out,
        Err(e) => format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"60\"><text x=\"10\" y=\"30\" fill=\"#1F1F1F\">{}: {}</text></svg>",
            SIZE.0,
            xml_escape(&fig.title),
            xml_escape(&e)
        ),
    }
}

/// Escapes text for XML.
pub fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `s` cut to `n` characters, with `…` when cut.
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

fn font(size: u32) -> TextStyle<'static> {
    ("sans-serif", size).into_font().color(&INK)
}

/// An axis tick's label: whole numbers without decimals (`30`, not
/// `30.0`), large ones in thousands or millions (`3.5 M`, `20 k`), others
/// with at most two decimals, trailing zeros dropped (`0.25`, `1.5`).
fn tick_label(v: f64) -> String {
    fn trimmed(s: String) -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
    let a = v.abs();
    if !v.is_finite() {
        String::new()
    } else if a >= 1e6 {
        format!("{} M", trimmed(format!("{:.2}", v / 1e6)))
    } else if a >= 1e4 {
        format!("{} k", trimmed(format!("{:.1}", v / 1e3)))
    } else {
        trimmed(format!("{v:.2}"))
    }
}

/// A value axis's upper end: a little above the largest value.
fn top(max: f64) -> f64 {
    if max > 0.0 && max.is_finite() {
        max * 1.08
    } else {
        1.0
    }
}

/// The value axis's upper end for bars: room above the bars for the
/// legend when there is one.
fn headroom(max: f64, b: &Bars) -> f64 {
    if b.series.len() + b.lines.len() > 1 {
        top(max) * 1.3
    } else {
        top(max)
    }
}

fn bars(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    fig: &Figure,
    b: &Bars,
) -> DrawResult<()> {
    let n = b.categories.len().max(1);
    let mut max: f64 = 0.0;
    for i in 0..n {
        let stack: f64 = b
            .series
            .iter()
            .map(|s| s.values.get(i).copied().unwrap_or(0.0))
            .sum();
        let each = b
            .series
            .iter()
            .map(|s| s.values.get(i).copied().unwrap_or(0.0))
            .fold(0f64, f64::max);
        max = max.max(if b.stacked { stack } else { each });
        for l in &b.lines {
            max = max.max(l.values.get(i).copied().unwrap_or(0.0));
        }
    }
    // Characters of label room under each category. Labels of an ordered
    // axis that do not fit (a histogram's buckets, `1.024 µs`) are drawn
    // under every second or third category, whole, rather than cut under
    // each (`1.0 …`); names that do not fit put the bars on their side.
    let room = ((SIZE.0 as usize - 90) / n / 7).max(1);
    let longest = b
        .categories
        .iter()
        .map(|c| c.chars().count())
        .max()
        .unwrap_or(0);
    if longest > room && !b.ordered && b.lines.is_empty() {
        // Names (locks, call sites) that would be cut under each bar: the
        // bars lie on their side, names beside them.
        return bars_beside_names(root, fig, b, max);
    }
    let every = if b.ordered && longest > room && longest <= 3 * room {
        longest.div_ceil(room)
    } else {
        1
    };
    let label_chars = (room * every).clamp(4, 40);
    // Category i spans [i, i + 1] on the x axis; its label is drawn
    // under i + ½.
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .caption(&fig.title, font(16))
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..n as f64, 0f64..headroom(max, b))?;
    let categories = &b.categories;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(GRID)
        .axis_style(INK)
        .label_style(font(11))
        .axis_desc_style(font(13))
        .x_desc(b.x.title())
        .y_desc(b.y.title())
        .x_labels(0)
        .y_label_formatter(&|v| tick_label(*v))
        .draw()?;
    for (i, c) in categories.iter().enumerate().step_by(every) {
        let (px, py) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        root.draw(&Text::new(
            cut(c, label_chars),
            (px, py + 6),
            font(11).pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    for (k, s) in b.series.iter().enumerate() {
        let colour = PALETTE[k % PALETTE.len()];
        let rects: Vec<Rectangle<(f64, f64)>> = bar_spans(b, n, k)
            .map(|r| {
                let x = r.category as f64;
                Rectangle::new(
                    [(x + r.slot.0, r.from), (x + r.slot.1, r.to)],
                    colour.filled(),
                )
            })
            .collect();
        chart
            .draw_series(rects)?
            .label(s.label.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour.filled()));
    }
    for (k, l) in b.lines.iter().enumerate() {
        let colour = LINE_COLOURS[k % LINE_COLOURS.len()];
        let points: Vec<(f64, f64)> = (0..n)
            .map(|i| (i as f64 + 0.5, l.values.get(i).copied().unwrap_or(0.0)))
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))?
            .label(l.label.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 12, y)], colour.stroke_width(2))
            });
        chart.draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 3, colour.filled())),
        )?;
    }
    if b.series.len() + b.lines.len() > 1 {
        legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    }
    Ok(())
}

/// The chart's legend (its series' labels) at `position`, boxed.
fn legend<'a, 'b: 'a>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    position: SeriesLabelPosition,
) -> DrawResult<()> {
    chart
        .configure_series_labels()
        .position(position)
        .label_font(font(11))
        .border_style(INK)
        .background_style(LEGEND.mix(0.85))
        .draw()?;
    Ok(())
}

/// The axes of a chart of lanes (sideways bars, a timeline): values along
/// the bottom under `x_title`, no labels up the side; and each lane's name
/// (cut at `chars`) to the left of it, lane i spanning [n − i − 1, n − i]
/// of the y axis (the first on top).
fn lanes_with_names(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    x_title: &str,
    names: &[String],
    chars: usize,
) -> DrawResult<()> {
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(GRID)
        .axis_style(INK)
        .label_style(font(11))
        .axis_desc_style(font(13))
        .x_desc(x_title)
        .x_label_formatter(&|v| tick_label(*v))
        .y_labels(0)
        .draw()?;
    let n = names.len().max(1);
    for (i, name) in names.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(0.0, (n - 1 - i) as f64 + 0.5));
        root.draw(&Text::new(
            cut(name, chars),
            (px - 6, py),
            font(11).pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }
    Ok(())
}

/// One bar of a [`Bars`] chart, in the chart's own units.
struct BarSpan {
    /// Its category's index.
    category: usize,
    /// Where it starts and ends along the value axis (a stacked bar starts
    /// where the series before it ended).
    from: f64,
    to: f64,
    /// Its slot across the category, as fractions of the category's width:
    /// a tenth margin on each side, the rest split into one slot per
    /// series (one for stacked bars).
    slot: (f64, f64),
}

/// The bars of series `k` of `b` over its `n` categories: positive, finite
/// values only.
fn bar_spans(b: &Bars, n: usize, k: usize) -> impl Iterator<Item = BarSpan> + '_ {
    let groups = if b.stacked { 1 } else { b.series.len().max(1) };
    let width = 0.8 / groups as f64;
    let slot = if b.stacked { 0 } else { k } as f64;
    let value =
        |s: &crate::report::figure::Series, i: usize| s.values.get(i).copied().unwrap_or(0.0);
    (0..n).filter_map(move |i| {
        let v = value(&b.series[k], i);
        if v <= 0.0 || !v.is_finite() {
            return None;
        }
        let from: f64 = if b.stacked {
            b.series[..k].iter().map(|p| value(p, i).max(0.0)).sum()
        } else {
            0.0
        };
        Some(BarSpan {
            category: i,
            from,
            to: from + v,
            slot: (0.1 + slot * width, 0.1 + (slot + 1.0) * width),
        })
    })
}

/// Characters of a category name shown beside horizontal bars.
const NAME_CHARS: usize = 48;

/// [`bars`] lying on their side: one row per category, the first on top,
/// its name to the left of its bars (cut at [`NAME_CHARS`]), the values
/// along the bottom. For names too long to go under vertical bars.
fn bars_beside_names(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    fig: &Figure,
    b: &Bars,
    max: f64,
) -> DrawResult<()> {
    let n = b.categories.len().max(1);
    let longest = b
        .categories
        .iter()
        .map(|c| c.chars().count().min(NAME_CHARS))
        .max()
        .unwrap_or(0);
    // about 6 pixels per character of an 11-pixel sans-serif font
    let name_area = (longest as u32 * 6 + 16).clamp(80, 320);
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .caption(&fig.title, font(16))
        .x_label_area_size(44)
        .y_label_area_size(name_area)
        .build_cartesian_2d(0f64..headroom(max, b), 0f64..n as f64)?;
    lanes_with_names(root, &mut chart, &b.y.title(), &b.categories, NAME_CHARS)?;
    for (k, s) in b.series.iter().enumerate() {
        let colour = PALETTE[k % PALETTE.len()];
        // across its row from the top: the first series on top
        let rects: Vec<Rectangle<(f64, f64)>> = bar_spans(b, n, k)
            .map(|r| {
                let top = (n - r.category) as f64;
                Rectangle::new(
                    [(r.from, top - r.slot.1), (r.to, top - r.slot.0)],
                    colour.filled(),
                )
            })
            .collect();
        chart
            .draw_series(rects)?
            .label(s.label.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour.filled()));
    }
    if b.series.len() > 1 {
        legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    }
    Ok(())
}

fn lines(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    fig: &Figure,
    l: &Lines,
) -> DrawResult<()> {
    let xs = l.series.iter().flat_map(|s| s.1.iter().map(|p| p.0));
    let (lo, hi) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let (lo, hi) = if lo <= hi {
        (lo.min(0.0), hi.max(lo + 1e-9))
    } else {
        (0.0, 1.0)
    };
    let max = l
        .series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.1))
        .fold(0f64, f64::max);
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .caption(&fig.title, font(16))
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(lo..hi, 0f64..top(max))?;
    chart
        .configure_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(GRID)
        .axis_style(INK)
        .label_style(font(11))
        .axis_desc_style(font(13))
        .x_desc(l.x.title())
        .y_desc(l.y.title())
        .x_label_formatter(&|v| tick_label(*v))
        .y_label_formatter(&|v| tick_label(*v))
        .draw()?;
    for (k, (label, points)) in l.series.iter().enumerate() {
        let colour = PALETTE[k % PALETTE.len()];
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                colour.stroke_width(2),
            ))?
            .label(label.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 12, y)], colour.stroke_width(2))
            });
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    Ok(())
}

fn timeline(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    fig: &Figure,
    t: &Timeline,
) -> DrawResult<()> {
    let lanes = t.lanes.len().max(1);
    let end = t.spans.iter().map(|s| s.3).fold(0f64, f64::max);
    let end = if end > 0.0 { end * 1.02 } else { 1.0 };
    // Lane i spans [lanes − i − 1, lanes − i] (the first on top).
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .caption(&fig.title, font(16))
        .x_label_area_size(40)
        .y_label_area_size(90)
        .build_cartesian_2d(0f64..end, 0f64..lanes as f64)?;
    lanes_with_names(root, &mut chart, &t.x.title(), &t.lanes, 14)?;
    // A span at least one pixel wide.
    let min_width = end / f64::from(SIZE.0);
    for (kind, label) in t.kinds.iter().enumerate() {
        let colour = PALETTE[kind % PALETTE.len()];
        let spans: Vec<Rectangle<(f64, f64)>> = t
            .spans
            .iter()
            .filter(|s| usize::from(s.1) == kind)
            .map(|s| {
                let y = (lanes - 1 - (s.0 as usize).min(lanes - 1)) as f64;
                Rectangle::new(
                    [(s.2, y + 0.15), (s.3.max(s.2 + min_width), y + 0.85)],
                    colour.filled(),
                )
            })
            .collect();
        chart
            .draw_series(spans)?
            .label(label.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour.filled()));
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{svg, tick_label};
    use crate::report::figure::{Axis, Bars, Figure, Plot, Series};

    /// A bar chart of `series` over `categories`, side by side.
    fn bars_figure(categories: Vec<String>, series: Vec<Series>, ordered: bool) -> Figure {
        Figure {
            name: "bars".into(),
            title: "Bars".into(),
            caption: String::new(),
            plot: Plot::Bars(Bars {
                categories,
                series,
                stacked: false,
                lines: Vec::new(),
                x: Axis::new("Category", ""),
                y: Axis::new("Value", "ms"),
                ordered,
            }),
        }
    }

    /// A wait-time histogram's 19 bucket labels do not fit under each bar:
    /// they are drawn whole under every second one (`1.024 µs`), not cut
    /// under each (`1.0 …`), the first bucket's always.
    #[test]
    fn short_labels_that_do_not_fit_are_drawn_whole_under_every_other_bar() {
        let mut categories = vec!["0".to_string()];
        categories.extend((3..21).map(|k| {
            let ns = 1u64 << k;
            if ns < 1000 {
                format!("{ns} ns")
            } else if ns < 1_000_000 {
                format!("{:.3} µs", ns as f64 / 1e3)
            } else {
                format!("{:.3} ms", ns as f64 / 1e6)
            }
        }));
        let n = categories.len();
        let fig = bars_figure(
            categories.clone(),
            vec![Series {
                label: "Events".into(),
                values: (0..n).map(|i| (i + 1) as f64).collect(),
            }],
            true,
        );
        let out = svg(&fig, true);
        assert!(!out.contains('…'), "a label was cut:\n{out}");
        let label = |c: &str| format!(">\n{c}\n</text>");
        assert!(out.contains(&label("0")), "{out}");
        assert!(out.contains(&label("1.024 µs")), "{out}");
        let drawn = categories
            .iter()
            .filter(|c| out.contains(&label(c)))
            .count();
        assert!(drawn >= n / 3 && drawn < n, "{drawn} of {n} labels drawn");
    }

    /// Lock names too long to go under 10 bars are drawn whole beside
    /// bars lying on their side, each once, in order from the top.
    #[test]
    fn long_names_are_drawn_whole_beside_bars_on_their_side() {
        let names: Vec<String> = (0..10)
            .map(|i| format!("mutex created in memcached+0x1a{i:03x} [mutex]"))
            .collect();
        let fig = bars_figure(
            names.clone(),
            vec![
                Series {
                    label: "Wait".into(),
                    values: (0..10).map(|i| (10 - i) as f64).collect(),
                },
                Series {
                    label: "Hold".into(),
                    values: (0..10).map(|i| (20 - i) as f64).collect(),
                },
            ],
            false,
        );
        let out = svg(&fig, true);
        assert!(!out.contains('…'), "a name was cut:\n{out}");
        let at: Vec<usize> = names
            .iter()
            .map(|n| {
                let label = format!(">\n{n}\n</text>");
                assert_eq!(out.matches(&label).count(), 1, "{n}:\n{out}");
                out.find(&label).unwrap()
            })
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "names in order: {at:?}");
    }

    #[test]
    fn tick_labels_are_short_and_without_needless_decimals() {
        assert_eq!(tick_label(0.0), "0");
        assert_eq!(tick_label(30.0), "30");
        assert_eq!(tick_label(2.5), "2.5");
        assert_eq!(tick_label(0.25), "0.25");
        assert_eq!(tick_label(1.0 / 3.0), "0.33");
        assert_eq!(tick_label(9_999.0), "9999");
        assert_eq!(tick_label(20_000.0), "20 k");
        assert_eq!(tick_label(150_500.0), "150.5 k");
        assert_eq!(tick_label(3_500_000.0), "3.5 M");
        assert_eq!(tick_label(-2_000_000.0), "-2 M");
        assert_eq!(tick_label(f64::NAN), "");
    }
}
