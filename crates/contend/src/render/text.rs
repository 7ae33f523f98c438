//! Plain-text format for an 80–100 column terminal: a header block,
//! warnings first, then one table per section (comfy-table), durations in
//! human units, thousands separators, and the wait histogram drawn with
//! block characters. ANSI colour only when [`RenderOptions::color`] is set.

use std::fmt::Write as _;

use comfy_table::{Attribute, CellAlignment};

use super::{Document, Renderer};
use crate::report::fmt::PLAIN;
use crate::report::layout::{Body, Cell, Panel, Row, Table};
use crate::report::RenderOptions;

/// The text renderer.
pub(crate) struct Text;

/// Widest a table may get before its text columns are shortened.
const WIDTH: usize = 100;
/// Width of a histogram bar, characters.
const BAR: usize = 14;
/// Table lines: only a rule under the heading (comfy-table preset order;
/// a space is "not drawn").
const STYLE: &str = "     ─             ";
/// Text columns are shortened (`…` in the middle) before the table gets
/// wider than [`WIDTH`], but not below this many characters.
const MIN_TEXT: usize = 16;

impl Renderer for Text {
    fn render(&self, doc: &Document<'_>, opts: &RenderOptions) -> String {
        let title = match doc {
            Document::Comparison(c) => format!(
                "contend comparison of {} runs (changes relative to `{}`)",
                c.runs.len(),
                c.runs.first().map_or("", |r| r.label.as_str())
            ),
            Document::Report(_) | Document::Scale(_) => "contend report".to_string(),
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
    let _ = writeln!(out, "{}", paint.heading(title));
    for (i, s) in sections.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match &s.body {
            Body::Table(t) if t.fields => fields(&mut out, t, opts),
            Body::Table(t) => {
                let _ = writeln!(out, "{}", paint.heading(&s.title));
                table(&mut out, t, opts, &paint);
            }
            Body::Warnings(ws) => {
                let _ = writeln!(
                    out,
                    "{}",
                    paint.warning(&format!("WARNINGS ({})", ws.len()))
                );
                for w in ws {
                    let _ = writeln!(out, "  {} {w}", paint.warning("!"));
                }
            }
            Body::List(items) => {
                let _ = writeln!(out, "{}", paint.heading(&s.title));
                let _ = writeln!(out, "{}", paint.dim(&s.caption));
                for item in items {
                    let _ = writeln!(out, "  - {item}");
                }
            }
            Body::Paragraph(p) => {
                let _ = writeln!(out, "{}", paint.heading(&s.title));
                let _ = writeln!(out, "  {p}");
            }
        }
    }
    out
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
    for (label, value) in texts {
        let _ = writeln!(out, "  {label:<w$}  {value}");
    }
}

/// `s` cut to `width` characters with `…` in the middle, which keeps both
/// the start of a name and the end of a path (`src/net/…/queue.c:82`).
fn ellipsize(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width || width == 0 {
        return s.to_string();
    }
    let head = (width - 1) / 2;
    let tail = width - 1 - head;
    let mut out: String = s.chars().take(head).collect();
    out.push('…');
    out.extend(s.chars().skip(n - tail));
    out
}

/// `s` broken into lines of at most `width` characters, after spaces and
/// `/` where it can (a word longer than `width` is split): nothing of a
/// long name is lost.
fn wrap_text(s: &str, width: usize) -> String {
    if width == 0 || s.chars().count() <= width {
        return s.to_string();
    }
    let mut tokens: Vec<String> = Vec::new();
    let mut cur = String::new();
    for c in s.chars() {
        cur.push(c);
        if c == ' ' || c == '/' {
            tokens.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        tokens.push(cur);
    }
    let mut lines: Vec<String> = vec![String::new()];
    for tok in tokens {
        let mut tok = tok.as_str();
        loop {
            let line = lines.last_mut().expect("one line");
            let room = width - line.chars().count();
            let n = tok.chars().count();
            if n <= room {
                line.push_str(tok);
                break;
            }
            if !line.is_empty() && n <= width {
                lines.push(String::new());
                continue;
            }
            // a word longer than the column: as much as fits
            let cut = tok
                .char_indices()
                .nth(room.max(1))
                .map_or(tok.len(), |(i, _)| i);
            line.push_str(&tok[..cut]);
            tok = &tok[cut..];
            lines.push(String::new());
            if tok.is_empty() {
                break;
            }
        }
    }
    lines
        .iter()
        .map(|l| l.trim_end())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
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
    let mut squeezable: Vec<bool> = Vec::new();
    let mut wraps: Vec<bool> = Vec::new();
    for (i, col) in t.columns.iter().enumerate().filter(|(_, c)| !c.detail) {
        header.push(&col.title);
        numeric.push(col.numeric);
        squeezable.push(!col.numeric);
        wraps.push(col.wrap);
        if t.bars.contains(&i) {
            header.push("");
            numeric.push(false);
            squeezable.push(false);
            wraps.push(false);
        }
    }
    let mut rows: Vec<Vec<String>> = t
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

    // Fit WIDTH: shorten the widest text column until the table fits or
    // every text column is down to MIN_TEXT; numbers are never cut.
    let chars = |s: &str| s.chars().count();
    let mut widths: Vec<usize> = (0..header.len())
        .map(|j| rows.iter().map(|r| chars(&r[j])).max().unwrap_or(0))
        .collect();
    let headings = |widths: &[usize]| -> Vec<String> {
        header
            .iter()
            .zip(widths)
            .map(|(h, w)| wrap_words(h, *w))
            .collect()
    };
    loop {
        let total: usize = headings(&widths)
            .iter()
            .zip(&widths)
            .map(|(h, w)| h.lines().map(chars).max().unwrap_or(0).max(*w) + 2)
            .sum();
        let widest = (0..widths.len())
            .filter(|&j| squeezable[j] && widths[j] > MIN_TEXT)
            .max_by_key(|&j| widths[j]);
        match widest {
            Some(j) if total > WIDTH => widths[j] -= (total - WIDTH).min(widths[j] - MIN_TEXT),
            _ => break,
        }
    }
    for row in &mut rows {
        for ((cell, w), wrap) in row.iter_mut().zip(&widths).zip(&wraps) {
            *cell = if *wrap {
                wrap_text(cell, *w)
            } else {
                ellipsize(cell, *w)
            };
        }
    }

    let mut ct = comfy_table::Table::new();
    ct.load_preset(STYLE).force_no_tty();
    if opts.color {
        ct.enforce_styling();
    }
    ct.set_header(
        headings(&widths)
            .into_iter()
            .map(|h| comfy_table::Cell::new(h).add_attribute(Attribute::Bold)),
    );
    ct.add_rows(rows);
    for (j, right) in numeric.iter().enumerate() {
        if let (true, Some(c)) = (*right, ct.column_mut(j)) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    for line in ct.lines() {
        let _ = writeln!(out, "{}", line.trim_end());
    }
    for (i, col) in t.columns.iter().enumerate().filter(|(_, c)| c.detail) {
        let _ = writeln!(out, "  {}:", col.title);
        for row in &t.rows {
            let detail = cell_text(&row.cells[i], opts);
            if !detail.is_empty() {
                let _ = writeln!(out, "    {}: {detail}", cell_text(&row.cells[0], opts));
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
    use super::wrap_text;

    #[test]
    fn long_names_are_wrapped_whole_not_cut() {
        let name = "computation after MPI_Recv at exchange (src/halo/kernel.c:40) before MPI_Send";
        let w = wrap_text(name, 20);
        assert!(w.lines().all(|l| l.chars().count() <= 20), "{w}");
        // nothing lost: the lines joined give the name back (spaces at the
        // breaks aside)
        let joined: String = w.lines().collect::<Vec<_>>().join(" ");
        assert_eq!(joined.replace(' ', ""), name.replace(' ', ""));
        assert!(w.contains("kernel.c:40)"), "{w}");
        // short names are left alone; a word longer than the column is split
        assert_eq!(wrap_text("MPI_Send", 20), "MPI_Send");
        let long = wrap_text("averyveryverylongfunctionname", 10);
        assert_eq!(long, "averyveryv\nerylongfun\nctionname");
    }
}
