//! Figures ([`crate::report::figure`]) drawn as SVG with the `plotters`
//! crate (its SVG backend; text is left to the viewer's fonts).
//!
//! Colours: the series use a palette that reads on light and dark
//! backgrounds; text, axes and the frame use the colour [`INK`] and grid
//! lines [`GRID`], which the HTML report's style sheet turns light in dark
//! mode (`[fill="#1F1F1F"]`, `[stroke="#1F1F1F"]`). A chart alone
//! (`--format svg`) gets a white background.

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
    let label_chars = ((SIZE.0 as usize - 90) / n / 7).clamp(4, 40);
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
        .draw()?;
    for (i, c) in categories.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        root.draw(&Text::new(
            cut(c, label_chars),
            (px, py + 6),
            font(11).pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    // Grouped bars share a category: a tenth of it margin on each side,
    // the rest split into one slot per series.
    let groups = if b.stacked { 1 } else { b.series.len().max(1) };
    let slot_width = 0.8 / groups as f64;
    for (k, s) in b.series.iter().enumerate() {
        let colour = PALETTE[k % PALETTE.len()];
        let slot = if b.stacked { 0 } else { k };
        let rects: Vec<Rectangle<(f64, f64)>> = (0..n)
            .filter_map(|i| {
                let v = s.values.get(i).copied().unwrap_or(0.0);
                if v <= 0.0 || !v.is_finite() {
                    return None;
                }
                let below: f64 = if b.stacked {
                    b.series[..k]
                        .iter()
                        .map(|p| p.values.get(i).copied().unwrap_or(0.0).max(0.0))
                        .sum()
                } else {
                    0.0
                };
                let x0 = i as f64 + 0.1 + slot as f64 * slot_width;
                Some(Rectangle::new(
                    [(x0, below), (x0 + slot_width, below + v)],
                    colour.filled(),
                ))
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
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font(font(11))
            .border_style(INK)
            .background_style(LEGEND.mix(0.85))
            .draw()?;
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
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(font(11))
        .border_style(INK)
        .background_style(LEGEND.mix(0.85))
        .draw()?;
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
    let names = &t.lanes;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(GRID)
        .axis_style(INK)
        .label_style(font(11))
        .axis_desc_style(font(13))
        .x_desc(t.x.title())
        .y_labels(0)
        .draw()?;
    for (i, name) in names.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(0.0, (lanes - 1 - i) as f64 + 0.5));
        root.draw(&Text::new(
            cut(name, 14),
            (px - 6, py),
            font(11).pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }
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
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(font(11))
        .border_style(INK)
        .background_style(LEGEND.mix(0.85))
        .draw()?;
    Ok(())
}
