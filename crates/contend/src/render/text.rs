//! Plain-text format for a terminal: a header block,
//! warnings first, then one table per section (comfy-table), durations in
//! human units, thousands separators, and the wait histogram drawn with
//! block characters. ANSI colour only when [`RenderOptions::color`] is set.

use std::fmt::Write as _;

use comfy_table::{Attribute, CellAlignment, ColumnConstraint, ContentArrangement, Width};

/// The narrowest a text column gets when a table is fitted to the terminal.
const MIN_TEXT: usize = 20;

use super::{Document, Renderer};
use crate::report::fmt::PLAIN;
use crate::report::layout::{Body, Cell, Panel, Row, Table};
use crate::report::RenderOptions;

/// The text renderer.
pub(crate) struct Text;

/// Width of a histogram bar, characters.
const BAR: usize = 14;
/// Table lines: only a rule under the heading (comfy-table preset order;
/// a space is "not drawn").
const STYLE: &str = "     ─             ";

impl Renderer for Text {
    fn render(&self, doc: &Document<'_>, opts: &RenderOptions) -> String {
        let title = match doc {
            Document::Comparison(c) => format!(
                "contend comparison of {} runs (changes relative to `{}`)",
                c.runs.len(),
                c.runs.first().map_or("", |r| r.label.as_str())
            ),
            Document::Report(_)
            | Document::Analysis(_)
            | Document::Scale(_)
            | Document::Numa(_) => "contend report".to_string(),
        };
        render(&title, &doc.panels(opts), opts)
    }
}

/// ANSI styling, or none.
struct Paint(bool);

impl Paint {
    fn wrap(&self, code: &str, s: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn heading(&self, s: &str) -> String {
        self.wrap("1", s)
    }
    fn warning(&self, s: &str) -> String {
        self.wrap("1;33", s)
    }
    fn dim(&self, s: &str) -> String {
        self.wrap("2", s)
    }
}

fn render(title: &str, sections: &[Panel], opts: &RenderOptions) -> String {
    let paint = Paint(opts.color);
    let mut out = String::new();
    let mut explained: std::collections::HashSet<String> = Default::default();
    let _ = writeln!(out, "{}", paint.heading(title));
    for (i, s) in sections.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match &s.body {
            Body::Table(t) if t.fields => fields(&mut out, t, opts),
            Body::Table(t) => {
                let _ = writeln!(out, "{}", paint.heading(&s.title));
                let t = &t.without_empty_columns();
                table(&mut out, t, opts, &paint);
                if opts.legend && !t.rows.is_empty() {
                    legend(&mut out, t, opts, &paint, &mut explained);
                }
            }
            Body::Warnings(ws) => {
                let _ = writeln!(
                    out,
                    "{}",
                    paint.warning(&format!("WARNINGS ({})", ws.len()))
                );
                for w in ws {
                    let text = hanging(w, opts.width, 4);
                    let _ = writeln!(out, "  {} {text}", paint.warning("!"));
                }
            }
            Body::List(items) => {
                let _ = writeln!(out, "{}", paint.heading(&s.title));
                let _ = writeln!(out, "{}", paint.dim(&wrap(&s.caption, opts.width, 0)));
                for item in items {
                    let _ = writeln!(out, "  - {}", hanging(item, opts.width, 4));
                }
            }
            Body::Paragraph(p) => {
                let _ = writeln!(out, "{}", paint.heading(&s.title));
                let _ = writeln!(out, "{}", wrap(p, opts.width, 2));
            }
        }
    }
    out
}

/// `text` indented by `indent` spaces and, with a `width`, broken at
/// spaces into lines no wider than it (a word longer than a line keeps its
/// own line, whole: nothing is ever cut).
fn wrap(text: &str, width: Option<usize>, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let Some(width) = width.filter(|&w| w > indent + 8) else {
        return format!("{pad}{text}");
    };
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(format!("{pad}{word}")),
        }
    }
    lines.join("\n")
}

/// `text` broken as [`wrap`] breaks it, its lines after the first
/// indented by `indent` spaces and the first not: text that follows a
/// prefix `indent` characters wide (`  - `, a label) and wraps under
/// itself.
fn hanging(text: &str, width: Option<usize>, indent: usize) -> String {
    wrap(text, width, indent)[indent..].to_string()
}

/// Under a table, what its headings mean, each heading the first time it
/// appears in the document (`explained` holds those already said).
fn legend(
    out: &mut String,
    t: &Table,
    opts: &RenderOptions,
    paint: &Paint,
    explained: &mut std::collections::HashSet<String>,
) {
    let new: Vec<(&str, &str)> = t
        .columns
        .iter()
        .filter(|c| !c.detail)
        .filter_map(|c| Some((c.title.as_str(), c.legend.as_deref()?)))
        .filter(|(title, _)| explained.insert((*title).to_string()))
        .collect();
    let w = new
        .iter()
        .map(|(t, _)| t.chars().count())
        .max()
        .unwrap_or(0);
    // the meaning wraps under itself, past the headings
    let indent = w + 4;
    for (title, meaning) in new {
        let text = format!("  {title:<w$}  {}", hanging(meaning, opts.width, indent));
        let _ = writeln!(out, "{}", paint.dim(&text));
    }
}

fn cell_text(c: &Cell, opts: &RenderOptions) -> String {
    c.display(opts.unit, &PLAIN, str::to_string)
}

/// A field/value list, labels aligned.
fn fields(out: &mut String, t: &Table, opts: &RenderOptions) {
    let texts: Vec<(String, String)> = t
        .rows
        .iter()
        .map(|r| (cell_text(&r.cells[0], opts), cell_text(&r.cells[1], opts)))
        .collect();
    let w = texts
        .iter()
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(0);
    // A long value (a command line) wraps under itself, past the labels.
    let indent = w + 4;
    for (label, value) in texts {
        let value = hanging(&value, opts.width, indent);
        let _ = writeln!(out, "  {label:<w$}  {value}");
    }
}

/// `title` broken at spaces into lines of at most `width` characters (or
/// its longest word), so a heading is no wider than its column's values.
fn wrap_words(title: &str, width: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    for word in title.split(' ') {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines.join("\n")
}

/// `value` of `max` as a bar of `BAR` characters, in eighths.
fn bar(value: u64, max: u64) -> String {
    const EIGHTHS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    if max == 0 || value == 0 {
        return String::new();
    }
    let eighths = ((value as f64 / max as f64) * (BAR * 8) as f64)
        .round()
        .max(1.0) as usize;
    let mut s = "█".repeat(eighths / 8);
    let rest = eighths % 8;
    if rest > 0 {
        s.push(EIGHTHS[rest]);
    }
    s
}

fn table(out: &mut String, t: &Table, opts: &RenderOptions, paint: &Paint) {
    if t.rows.is_empty() {
        let _ = writeln!(out, "  {}", paint.dim("(none)"));
        return;
    }
    let ns_at = |row: &Row, i: usize| {
        if let Cell::Ns(ns) = row.cells[i] {
            ns
        } else {
            0
        }
    };
    let bar_max = t
        .rows
        .iter()
        .flat_map(|r| t.bars.iter().map(move |&i| ns_at(r, i)))
        .max()
        .unwrap_or(0);

    // Headings and cell texts of the shown columns, a bar column after each
    // column in `t.bars`; detail columns are listed below the table.
    let mut header: Vec<&str> = Vec::new();
    let mut numeric: Vec<bool> = Vec::new();
    let mut is_bar: Vec<bool> = Vec::new();
    for (i, col) in t.columns.iter().enumerate().filter(|(_, c)| !c.detail) {
        header.push(&col.title);
        numeric.push(col.numeric);
        is_bar.push(false);
        if t.bars.contains(&i) {
            header.push("");
            numeric.push(false);
            is_bar.push(true);
        }
    }
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|row| {
            let mut cells = Vec::new();
            for (i, _) in t.columns.iter().enumerate().filter(|(_, c)| !c.detail) {
                cells.push(cell_text(&row.cells[i], opts));
                if t.bars.contains(&i) {
                    cells.push(bar(ns_at(row, i), bar_max));
                }
            }
            cells
        })
        .collect();

    // Headings no wider than their column's values (long headings break at
    // spaces); names are never cut: on a terminal narrower than the table
    // the text columns wrap onto more lines, numbers keep their width.
    let chars = |s: &str| s.chars().count();
    let widths: Vec<usize> = (0..header.len())
        .map(|j| rows.iter().map(|r| chars(&r[j])).max().unwrap_or(0))
        .collect();
    let headings: Vec<String> = header
        .iter()
        .zip(&widths)
        .map(|(h, w)| wrap_words(h, *w))
        .collect();
    // Each column's width as drawn: its values, or its heading's longest
    // line; every column has a space on either side.
    let mut drawn: Vec<usize> = headings
        .iter()
        .zip(&widths)
        .map(|(h, w)| h.lines().map(chars).max().unwrap_or(0).max(*w))
        .collect();
    let natural = drawn.clone();
    'drawn: {
        let Some(limit) = opts.width else {
            draw(out, &headings, &rows, &drawn, &numeric, false, opts.color);
            break 'drawn;
        };
        // Too wide for the terminal: narrow the widest text column, but not
        // below the next widest, again and again (so a long note and a long
        // name share what is left instead of one becoming a sliver), never
        // below MIN_TEXT (a name wraps, but not into a sliver); numbers keep
        // their width.
        let total = |drawn: &[usize]| drawn.iter().map(|w| w + 2).sum::<usize>();
        while total(&drawn) > limit {
            let text: Vec<usize> = (0..drawn.len())
                .filter(|&j| !numeric[j] && drawn[j] > MIN_TEXT)
                .collect();
            let Some(&j) = text.iter().max_by_key(|&&j| drawn[j]) else {
                break;
            };
            let next = text
                .iter()
                .filter(|&&k| k != j)
                .map(|&k| drawn[k])
                .max()
                .unwrap_or(MIN_TEXT)
                .max(MIN_TEXT);
            // down to the next widest; by one where they are as wide
            let step = if drawn[j] > next { drawn[j] - next } else { 1 };
            drawn[j] -= (total(&drawn) - limit).min(step).min(drawn[j] - MIN_TEXT);
        }
        let narrowed = drawn != natural;
        if total(&drawn) <= limit {
            draw(
                out, &headings, &rows, &drawn, &numeric, narrowed, opts.color,
            );
            break 'drawn;
        }
        // Still too wide (many number columns: the terminal would break every
        // line in two): the bars go first, then the columns are drawn in
        // blocks one under the other, each no wider than the terminal and each
        // beginning with the table's first column, which names the row.
        // In blocks, text columns keep their natural width (one line a
        // row) unless a column beside the first cannot fit so: then it
        // wraps to what is left.
        let keep: Vec<usize> = (0..header.len()).filter(|&j| !is_bar[j]).collect();
        let mut drawn = natural.clone();
        if !numeric[keep[0]] {
            drawn[keep[0]] = drawn[keep[0]].min((limit / 3).max(MIN_TEXT));
        }
        let room = limit.saturating_sub(drawn[keep[0]] + 4).max(MIN_TEXT);
        for &j in &keep[1..] {
            if !numeric[j] {
                drawn[j] = drawn[j].min(room);
            }
        }
        let mut blocks: Vec<Vec<usize>> = Vec::new();
        let first = drawn[keep[0]] + 2;
        for &j in &keep[1..] {
            match blocks.last_mut() {
                Some(block)
                    if first
                        + block.iter().map(|&k| drawn[k] + 2).sum::<usize>()
                        + drawn[j]
                        + 2
                        <= limit =>
                {
                    block.push(j)
                }
                _ => blocks.push(vec![j]),
            }
        }
        if blocks.is_empty() {
            blocks.push(Vec::new()); // one column alone
        }
        for (b, block) in blocks.iter().enumerate() {
            if b > 0 {
                out.push('\n');
            }
            let cols: Vec<usize> = std::iter::once(keep[0])
                .chain(block.iter().copied())
                .collect();
            let pick = |v: &[usize]| cols.iter().map(|&j| v[j]).collect::<Vec<usize>>();
            let narrowed = pick(&drawn) != pick(&natural);
            draw(
                out,
                &cols
                    .iter()
                    .map(|&j| headings[j].clone())
                    .collect::<Vec<_>>(),
                &rows
                    .iter()
                    .map(|r| cols.iter().map(|&j| r[j].clone()).collect())
                    .collect::<Vec<_>>(),
                &pick(&drawn),
                &cols.iter().map(|&j| numeric[j]).collect::<Vec<_>>(),
                narrowed,
                opts.color,
            );
        }
    }
    details_and_omitted(out, t, opts, paint);
}

/// One table drawn with comfy-table: `headings` and `rows` of the columns
/// to draw, each column exactly `drawn[j]` characters wide plus a space on
/// either side (text wraps where `narrowed` made it narrower than its
/// values), numbers right-aligned.
fn draw(
    out: &mut String,
    headings: &[String],
    rows: &[Vec<String>],
    drawn: &[usize],
    numeric: &[bool],
    narrowed: bool,
    color: bool,
) {
    let mut ct = comfy_table::Table::new();
    ct.load_preset(STYLE).force_no_tty();
    if color {
        ct.enforce_styling();
    }
    ct.set_header(
        headings
            .iter()
            .map(|h| comfy_table::Cell::new(h).add_attribute(Attribute::Bold)),
    );
    ct.add_rows(rows.iter().cloned());
    if narrowed {
        ct.set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(
                u16::try_from(drawn.iter().map(|w| w + 2).sum::<usize>()).unwrap_or(u16::MAX),
            );
    }
    for (j, right) in numeric.iter().enumerate() {
        let Some(c) = ct.column_mut(j) else { continue };
        if *right {
            c.set_cell_alignment(CellAlignment::Right);
        }
        // Exactly the width chosen: wrapped text where narrowed.
        let w = u16::try_from(drawn[j] + 2).unwrap_or(u16::MAX);
        c.set_constraint(ColumnConstraint::Absolute(Width::Fixed(w)));
    }
    for line in ct.lines() {
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

/// Under a table: its detail columns as lists keyed by the row's first
/// cell, and how many rows were left out.
fn details_and_omitted(out: &mut String, t: &Table, opts: &RenderOptions, paint: &Paint) {
    for (i, col) in t.columns.iter().enumerate().filter(|(_, c)| c.detail) {
        let _ = writeln!(out, "  {}:", col.title);
        for row in &t.rows {
            let detail = cell_text(&row.cells[i], opts);
            if !detail.is_empty() {
                // wrapped under the row's name, indented
                let line = format!("{}: {detail}", cell_text(&row.cells[0], opts));
                let _ = writeln!(out, "    {}", hanging(&line, opts.width, 6));
            }
        }
    }
    if t.omitted > 0 {
        let _ = writeln!(
            out,
            "  {}",
            paint.dim(&format!(
                "… {} more not shown (top {})",
                t.omitted, opts.top
            ))
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::layout::Column;

    /// A table with a long name column and a longer note column, fitted
    /// to 100 columns: the two share what the numbers leave, so neither
    /// becomes a sliver (before, the widest was cut to the minimum of 20
    /// while the other kept its full width), and no line is wider than
    /// the terminal.
    /// A long legend wraps under its meaning, past the headings, and a
    /// detail list under its row's name: no line wider than the terminal
    /// (the continuation lines of a legend were indented past the width).
    #[test]
    fn legends_and_details_fit_the_terminal() {
        let meaning = "few = fewer than 10 executions, no score; unstable = the fastest 1% spread \
                       more than 2×; sampled 1/N = one execution in N recorded";
        let mut details = Column::text("Call sites", "sites");
        details.detail = true;
        let t = Table {
            columns: vec![
                Column::text("Lock", "lock"),
                Column::text("Notes", "notes").explained(meaning),
                Column::num("Max/thread", "m").explained("the largest SCI of one thread"),
                details,
            ],
            rows: vec![Row {
                key: "a".into(),
                cells: vec![
                    Cell::Text("mutex created in memcached+0x1a486".into()),
                    Cell::Text("few".into()),
                    Cell::Count(1),
                    Cell::Text(
                        (0..12)
                            .map(|k| format!("memcached+0x1{k:04x}"))
                            .collect::<Vec<_>>()
                            .join(", "),
                    ),
                ],
            }],
            ..Table::default()
        };
        let opts = RenderOptions {
            width: Some(60),
            ..RenderOptions::default()
        };
        let mut out = String::new();
        table(&mut out, &t, &opts, &Paint(false));
        legend(&mut out, &t, &opts, &Paint(false), &mut Default::default());
        for line in out.lines() {
            assert!(line.chars().count() <= 60, "wider than 60: {line}\n{out}");
        }
        // the meaning's words all there, its lines starting under its first
        let lines: Vec<&str> = out.lines().collect();
        let first = lines
            .iter()
            .position(|l| l.trim_start().starts_with("Notes"))
            .unwrap();
        let at = lines[first].find("few =").unwrap();
        assert_eq!(lines[first + 1].find(|c: char| c != ' '), Some(at), "{out}");
        for word in meaning.split_whitespace() {
            assert!(out.contains(word), "{word}:\n{out}");
        }
        assert!(out.contains("memcached+0x1000b"), "{out}");
    }

    /// A field list's long value (the command line) wraps under itself on
    /// a terminal, aligned past the labels, every word kept; into a pipe it
    /// stays on one line.
    #[test]
    fn a_long_field_value_wraps_under_itself() {
        let command = "mpirun.openmpi --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 -np 4 hpcc";
        let t = Table {
            columns: vec![
                Column::label("Field", "field"),
                Column::text("Value", "value"),
            ],
            rows: vec![
                Row {
                    key: "command".into(),
                    cells: vec![Cell::Text("Command".into()), Cell::Text(command.into())],
                },
                Row {
                    key: "exit".into(),
                    cells: vec![Cell::Text("Exit status".into()), Cell::Text("0".into())],
                },
            ],
            fields: true,
            ..Table::default()
        };
        let opts = RenderOptions {
            width: Some(60),
            ..RenderOptions::default()
        };
        let mut out = String::new();
        fields(&mut out, &t, &opts);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.len() > 2, "{out}");
        let at = lines[0].find("mpirun").unwrap();
        for line in &lines {
            assert!(line.chars().count() <= 60, "wider than 60: {line}\n{out}");
        }
        for line in &lines[1..lines.len() - 1] {
            assert_eq!(line.find(|c: char| c != ' '), Some(at), "{out}");
        }
        // nothing cut: the value's lines joined are the command
        let value: Vec<&str> = lines[..lines.len() - 1]
            .iter()
            .map(|l| l[at..].trim_end())
            .collect();
        assert_eq!(value.join(" "), command, "{out}");
        let mut one = String::new();
        fields(&mut one, &t, &RenderOptions::default());
        assert_eq!(one.lines().count(), 2, "{one}");
    }

    /// A table of twelve number columns and a bar, too wide for 60
    /// columns even with no text to wrap: the bar is left out and the
    /// columns are drawn in blocks one under the other, each no wider than
    /// the terminal and each beginning with the first column; every value
    /// is there once per block it belongs to. Without a width it is one
    /// table with its bar.
    #[test]
    fn number_columns_too_wide_for_the_terminal_are_drawn_in_blocks() {
        let columns: Vec<Column> = std::iter::once(Column::num("Rank", "rank"))
            .chain((1..12).map(|k| Column::num(&format!("Col{k:02}"), &format!("c{k}"))))
            .collect();
        let rows: Vec<Row> = (0..3u64)
            .map(|r| Row {
                key: r.to_string(),
                cells: std::iter::once(Cell::Count(r))
                    .chain((1..12u64).map(|k| Cell::Ns(1_000_000 * k + 100_000 * r)))
                    .collect(),
            })
            .collect();
        let t = Table {
            columns,
            rows,
            bars: vec![1],
            ..Table::default()
        };
        let mut wide = String::new();
        table(&mut wide, &t, &RenderOptions::default(), &Paint(false));
        assert!(wide.contains('█'), "{wide}");
        assert_eq!(wide.lines().filter(|l| l.contains("Rank")).count(), 1);
        let opts = RenderOptions {
            width: Some(60),
            ..RenderOptions::default()
        };
        let mut out = String::new();
        table(&mut out, &t, &opts, &Paint(false));
        for line in out.lines() {
            assert!(line.chars().count() <= 60, "wider than 60: {line}\n{out}");
        }
        assert!(!out.contains('█'), "the bar is left out:\n{out}");
        let blocks = out.lines().filter(|l| l.contains("Rank")).count();
        assert!(blocks >= 2, "{out}");
        for k in 1..12u64 {
            let heading = format!("Col{k:02}");
            assert_eq!(out.matches(&heading).count(), 1, "{heading}:\n{out}");
            for r in 0..3u64 {
                let value = cell_text(&Cell::Ns(1_000_000 * k + 100_000 * r), &opts);
                assert_eq!(out.matches(&value).count(), 1, "{value}:\n{out}");
            }
        }
        // each block's rows begin with the rank
        let rank_rows = out
            .lines()
            .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            .count();
        assert_eq!(rank_rows, 3 * blocks, "{out}");
    }

    #[test]
    fn long_text_columns_share_the_terminal_width() {
        let name = "Active threads A, modelled on n CPUs (Venter 2016, Listing 3.4)";
        let note = "scheduler events (9 threads) until 1.081 s, then schedstat: 184134 records \
                    per second cost the program more than reading schedstat";
        let t = Table {
            columns: vec![
                Column::label("Metric", "metric"),
                Column::num("Value", "value"),
                Column::wrapped("Note", "note"),
            ],
            rows: vec![Row {
                key: "source".into(),
                cells: vec![
                    Cell::Text(name.into()),
                    Cell::Text("events → schedstat".into()),
                    Cell::Text(note.into()),
                ],
            }],
            ..Table::default()
        };
        let opts = RenderOptions {
            width: Some(100),
            ..RenderOptions::default()
        };
        let mut out = String::new();
        table(&mut out, &t, &opts, &Paint(false));
        let lines: Vec<&str> = out.lines().collect();
        for line in &lines {
            assert!(line.chars().count() <= 100, "wider than 100: {line}\n{out}");
        }
        // The note starts after the value on the first row, and both text
        // columns keep more than the minimum: the name's first line and the
        // note's first line each hold at least 30 characters.
        let first = lines[2];
        let value_end = first.find("schedstat").unwrap() + "schedstat".len();
        let name_part = first[..first.find("events →").unwrap()].trim();
        let note_part = first[value_end..].trim();
        assert!(name_part.chars().count() >= 30, "{out}");
        assert!(note_part.chars().count() >= 30, "{out}");
        // Nothing is cut: every word of both texts is there.
        for word in name.split_whitespace().chain(note.split_whitespace()) {
            assert!(out.contains(word), "{word} missing:\n{out}");
        }
    }
}
