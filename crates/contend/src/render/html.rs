//! One self-contained HTML page (`--format html`): the figures of the
//! document as inline SVG ([`super::chart`]), then every panel of the
//! table formats as an HTML table whose columns sort on a click (by the
//! raw value: nanoseconds, counts, fractions). Styles and the small
//! sorting script are inline; the page loads nothing from the network.
//! It follows the reader's light or dark colour scheme
//! (`prefers-color-scheme`), the charts included.

use std::fmt::Write as _;

use super::{chart, Document, Renderer};
use crate::report::fmt::PLAIN;
use crate::report::layout::{Body, Panel, Table, AT_A_GLANCE};
use crate::report::{Figure, RenderOptions};

/// The HTML renderer.
pub(crate) struct Html;

impl Renderer for Html {
    fn render(&self, doc: &Document<'_>, opts: &RenderOptions) -> String {
        let (title, what) = match doc {
            Document::Comparison(c) => (
                "contend comparison".to_string(),
                c.runs
                    .iter()
                    .map(|r| r.label.as_str())
                    .collect::<Vec<_>>()
                    .join(" · "),
            ),
            Document::Scale(s) => (
                "contend scale report".to_string(),
                s.speedup.scale_dir.clone(),
            ),
            Document::Report(r) => ("contend report".to_string(), r.run.recording.clone()),
            Document::Analysis(a) => ("contend report".to_string(), a.report.run.recording.clone()),
            Document::Numa(_) => (
                "contend numa".to_string(),
                "memory contention on NUMA nodes".to_string(),
            ),
        };
        page(&title, &what, &doc.figures(), &doc.panels(opts), opts)
    }
}

/// Escapes text for HTML.
fn esc(s: &str) -> String {
    chart::xml_escape(s)
}

const STYLE: &str = r##"
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1f1f1f; --muted: #5f6368; --rule: #d0d0d0; --head: #f1f3f4; --warn-bg: #fff4e5; --warn: #8a4b00; --link: #1a5fb4; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #17191a; --fg: #e3e3e3; --muted: #a0a4a8; --rule: #3c4043; --head: #24272a; --warn-bg: #3a2a12; --warn: #f5c27a; --link: #8ab4f8; }
  svg [fill="#1F1F1F"] { fill: #e3e3e3; }
  svg [stroke="#1F1F1F"] { stroke: #e3e3e3; }
  svg [stroke="#C8C8C8"] { stroke: #4a4d50; }
  svg [fill="#FEFEFE"] { fill: #17191a; }
}
body { background: var(--bg); color: var(--fg); font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; padding: 1em 2em 3em; max-width: 1200px; }
h1 { font-size: 1.6em; margin: .2em 0; } h2 { font-size: 1.2em; margin: 1.6em 0 .3em; border-bottom: 1px solid var(--rule); padding-bottom: .2em; }
.sub, .caption, figcaption { color: var(--muted); }
a { color: var(--link); }
nav { margin: .6em 0 1em; font-size: .92em; display: flex; flex-wrap: wrap; gap: .15em .9em; } nav a { white-space: nowrap; }
.figures { display: flex; flex-wrap: wrap; gap: 1.2em; }
figure { margin: 0; flex: 1 1 560px; max-width: 780px; }
figure svg { width: 100%; height: auto; display: block; }
figcaption { font-size: .9em; margin-top: .2em; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: .4em 0 .2em; font-variant-numeric: tabular-nums; }
th, td { padding: .25em .7em; border-bottom: 1px solid var(--rule); vertical-align: top; }
th { background: var(--head); text-align: left; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[aria-sort="ascending"]::after { content: " ▲"; }
table.sortable th[aria-sort="descending"]::after { content: " ▼"; }
td.num, th.num { text-align: right; white-space: nowrap; }
.warnings { background: var(--warn-bg); color: var(--warn); padding: .5em 1em; border-radius: 4px; }
.more { color: var(--muted); font-size: .9em; }
"##;

const SCRIPT: &str = r#"
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var numeric = th.classList.contains("num");
      var asc = th.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      function key(r) {
        var v = r.cells[col] ? r.cells[col].getAttribute("data-v") : "";
        if (numeric) { var x = parseFloat(v); return isNaN(x) ? -Infinity : x; }
        return (v || "").toLowerCase();
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"#;

fn page(
    title: &str,
    what: &str,
    figures: &[Figure],
    panels: &[Panel],
    opts: &RenderOptions,
) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"color-scheme\" content=\"light dark\">\n<title>{} — {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<header><h1>{}</h1><p class=\"sub\">{}</p></header>\n<nav>",
        esc(title),
        esc(what),
        esc(title),
        esc(what)
    );
    // The run header, the warnings and "At a glance" open the page, before
    // the figures: what a reader needs first.
    let leading = panels
        .iter()
        .take_while(|p| matches!(p.id, "run" | "runs" | "warnings") || p.id == AT_A_GLANCE)
        .count();
    let (leading, panels) = panels.split_at(leading);
    for p in leading {
        let _ = write!(out, "<a href=\"#{}\">{}</a>", anchor(p), esc(&p.title));
    }
    if !figures.is_empty() {
        out.push_str("<a href=\"#figures\">Figures</a>");
    }
    for p in panels {
        let _ = write!(out, "<a href=\"#{}\">{}</a>", anchor(p), esc(&p.title));
    }
    out.push_str("</nav>\n<main>\n");
    for p in leading {
        panel(&mut out, p, opts);
    }
    if !figures.is_empty() {
        out.push_str("<section id=\"figures\"><h2>Figures</h2>\n<div class=\"figures\">\n");
        for f in figures {
            let _ = write!(
                out,
                "<figure id=\"chart-{}\" data-chart=\"{}\">\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
                esc(&f.name),
                esc(&f.name),
                chart::svg(f, false),
                esc(&f.caption)
            );
        }
        out.push_str("</div>\n</section>\n");
    }
    for p in panels {
        panel(&mut out, p, opts);
    }
    let _ = write!(
        out,
        "</main>\n<footer class=\"sub\"><p>Generated by contend {}.</p></footer>\n<script>{SCRIPT}</script>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    );
    out
}

/// One panel as a `<section>`: its heading, then its table, warnings, list
/// or paragraph.
fn panel(out: &mut String, p: &Panel, opts: &RenderOptions) {
    let _ = writeln!(
        out,
        "<section id=\"{}\"><h2>{}</h2>",
        anchor(p),
        esc(&p.title)
    );
    match &p.body {
        Body::Table(t) => {
            if !t.fields && !p.caption.is_empty() {
                let _ = writeln!(out, "<p class=\"caption\">{}</p>", esc(&p.caption));
            }
            table(out, &t.without_empty_columns(), opts);
        }
        Body::Warnings(ws) => {
            out.push_str("<div class=\"warnings\"><ul>\n");
            for w in ws {
                let _ = writeln!(out, "<li>{}</li>", esc(w));
            }
            out.push_str("</ul></div>\n");
        }
        Body::List(items) => {
            let _ = writeln!(out, "<p class=\"caption\">{}</p>\n<ul>", esc(&p.caption));
            for i in items {
                let _ = writeln!(out, "<li>{}</li>", esc(i));
            }
            out.push_str("</ul>\n");
        }
        Body::Paragraph(text) => {
            let _ = writeln!(out, "<p>{}</p>", esc(text));
        }
    }
    out.push_str("</section>\n");
}

/// The element id of a panel.
fn anchor(p: &Panel) -> String {
    format!(
        "t-{}",
        p.id.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
    )
}

fn table(out: &mut String, t: &Table, opts: &RenderOptions) {
    if t.rows.is_empty() {
        out.push_str("<p class=\"more\">(none)</p>\n");
        return;
    }
    let sortable = !t.fields && t.rows.len() > 1;
    // A table wider than the page (many number columns, names that do not
    // break) scrolls by itself instead of widening the whole page.
    let _ = writeln!(
        out,
        "<div class=\"scroll\"><table{}>",
        if sortable { " class=\"sortable\"" } else { "" }
    );
    if !t.fields {
        out.push_str("<thead><tr>");
        for c in &t.columns {
            let _ = write!(
                out,
                "<th{}>{}</th>",
                if c.numeric { " class=\"num\"" } else { "" },
                esc(&c.title)
            );
        }
        out.push_str("</tr></thead>\n");
    }
    out.push_str("<tbody>\n");
    for row in &t.rows {
        out.push_str("<tr>");
        for (c, cell) in t.columns.iter().zip(&row.cells) {
            let shown = cell.display(opts.unit, &PLAIN, esc);
            let _ = write!(
                out,
                "<td data-v=\"{}\"{}>{}</td>",
                esc(&cell.raw()),
                if c.numeric { " class=\"num\"" } else { "" },
                shown
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    if t.omitted > 0 {
        let _ = writeln!(
            out,
            "<p class=\"more\">… {} more not shown (top {}; <code>--top 0</code> shows all).</p>",
            t.omitted, opts.top
        );
    }
}
