//! GitHub-flavoured Markdown: a heading per section, its caption in
//! italics, and a pipe table (numbers right-aligned). Free text is escaped
//! so names like `__lll_lock` or `operator|` render literally.

use std::fmt::Write as _;

use super::{Document, Renderer};
use crate::report::fmt::PLAIN;
use crate::report::layout::{Body, Panel, Table};
use crate::report::RenderOptions;

/// The Markdown renderer.
pub(crate) struct Markdown;

impl Renderer for Markdown {
    fn render(&self, doc: &Document<'_>, opts: &RenderOptions) -> String {
        let title = match doc {
            Document::Comparison(_) => "contend comparison",
            Document::Report(_)
            | Document::Analysis(_)
            | Document::Scale(_)
            | Document::Numa(_) => "contend report",
        };
        render(title, &doc.panels(opts), opts)
    }
}

/// Escapes Markdown syntax; line breaks become spaces.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | '|' | '*' | '_' | '`' | '<' | '>' | '[' | ']' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

fn render(title: &str, sections: &[Panel], opts: &RenderOptions) -> String {
    let mut out = format!("# {title}\n");
    for s in sections {
        let _ = writeln!(out, "\n## {}\n", escape(&s.title));
        match &s.body {
            Body::Table(t) => {
                if !t.fields {
                    let _ = writeln!(out, "_{}_\n", escape(&s.caption));
                }
                table(&mut out, &t.without_empty_columns(), opts);
            }
            Body::Warnings(ws) => {
                for w in ws {
                    // One quote each: consecutive `>` lines would merge into one paragraph.
                    let _ = writeln!(out, "> **Warning:** {}\n", escape(w));
                }
            }
            Body::List(items) => {
                let _ = writeln!(out, "_{}_\n", escape(&s.caption));
                for item in items {
                    let _ = writeln!(out, "- {}", escape(item));
                }
            }
            Body::Paragraph(p) => {
                let _ = writeln!(out, "{}", escape(p));
            }
        }
    }
    out
}

fn table(out: &mut String, t: &Table, opts: &RenderOptions) {
    if t.rows.is_empty() {
        out.push_str("_(none)_\n");
        return;
    }
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    out.push_str(&line(t.columns.iter().map(|c| escape(&c.title)).collect()));
    out.push_str(&line(
        t.columns
            .iter()
            .map(|c| if c.numeric { "---:" } else { ":---" }.to_string())
            .collect(),
    ));
    for row in &t.rows {
        out.push_str(&line(
            row.cells
                .iter()
                .map(|c| c.display(opts.unit, &PLAIN, escape))
                .collect(),
        ));
    }
    if t.omitted > 0 {
        let _ = writeln!(
            out,
            "\n_… {} more not shown (top {})._",
            t.omitted, opts.top
        );
    }
}
