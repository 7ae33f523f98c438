//! JSON: the model exactly, written as it is serialised when written to a
//! file or standard output, in outline ([`OutlineFormatter`]): the outer
//! levels indented, each element of a table (a lock, a call site, an SCI
//! block) on one line of compact JSON.
//! The report's shape is documented in docs/json.md and
//! [`crate::report::model`]; the comparison's in [`crate::compare`]. Never
//! truncated: `top` and `unit` do not apply, times are integer nanoseconds.

use super::{Document, Renderer};
use crate::report::RenderOptions;

/// The JSON renderer.
pub(crate) struct Json;

impl Renderer for Json {
    fn render(&self, doc: &Document<'_>, _opts: &RenderOptions) -> String {
        doc.to_json()
    }

    fn render_to(
        &self,
        doc: &Document<'_>,
        _opts: &RenderOptions,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        doc.write_json(out)
    }
}

/// Levels of containers [`Document::write_json`] indents: the document,
/// its sections, their tables (`locks.by_lock`, `sci.blocks`); what a
/// table holds (one lock, one block) is one line.
pub(crate) const OUTLINE_LEVELS: usize = 3;

/// A `serde_json` formatter that indents the outer `levels` of containers
/// as `serde_json`'s pretty writer does (two spaces, `": "` after a key)
/// and writes every container below them compactly, on the line of its
/// key, as `jq -c` would. The same JSON values as any other layout; less
/// than half the bytes of indenting every level for a report whose tables
/// are long (memcached's report: 73 MB indented throughout, 31 MB in
/// outline), and one element per line still reads with `grep` and `less`.
pub(crate) struct OutlineFormatter {
    levels: usize,
    /// Containers open.
    depth: usize,
    /// Whether the innermost open indented container has a value yet.
    has_value: bool,
}

impl OutlineFormatter {
    /// Indents the outer `levels` of containers (0: all compact).
    pub(crate) fn new(levels: usize) -> OutlineFormatter {
        OutlineFormatter {
            levels,
            depth: 0,
            has_value: false,
        }
    }

    /// Whether the innermost open container is indented.
    fn indented(&self) -> bool {
        self.depth <= self.levels
    }

    fn begin<W: ?Sized + std::io::Write>(&mut self, w: &mut W, open: &[u8]) -> std::io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(open)
    }

    fn end<W: ?Sized + std::io::Write>(&mut self, w: &mut W, close: &[u8]) -> std::io::Result<()> {
        if self.indented() && self.has_value {
            self.newline(w, self.depth - 1)?;
        }
        self.depth -= 1;
        w.write_all(close)
    }

    /// Before an element (`first` or not) of the innermost container.
    fn element<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        if self.indented() {
            self.newline(w, self.depth)?;
        }
        Ok(())
    }

    fn newline<W: ?Sized + std::io::Write>(&self, w: &mut W, indent: usize) -> std::io::Result<()> {
        w.write_all(b"\n")?;
        for _ in 0..indent {
            w.write_all(b"  ")?;
        }
        Ok(())
    }
}

impl serde_json::ser::Formatter for OutlineFormatter {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.begin(w, b"[")
    }

    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.end(w, b"]")
    }

    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.element(w, first)
    }

    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _w: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.begin(w, b"{")
    }

    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.end(w, b"}")
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.element(w, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(if self.indented() { b": " } else { b":" })
    }

    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _w: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outline(value: &serde_json::Value, levels: usize) -> String {
        let mut out = Vec::new();
        let mut ser =
            serde_json::Serializer::with_formatter(&mut out, OutlineFormatter::new(levels));
        serde::Serialize::serialize(value, &mut ser).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Indented to the given level, compact below, empty containers as
    /// `[]` and `{}`; the same values read back.
    #[test]
    fn outline_indents_the_outer_levels_and_writes_each_table_element_on_a_line() {
        let v = json!({
            "run": {"pid": 7, "name": "a b"},
            "locks": {"by_lock": [{"name": "m", "quantiles": [{"q": 0.5, "ns": 10}]}, {"name": "n", "empty": []}], "none": [], "also": {}},
            "warnings": []
        });
        let text = outline(&v, 3);
        // (serde_json::Value keeps its keys sorted)
        let want = r#"{
  "locks": {
    "also": {},
    "by_lock": [
      {"name":"m","quantiles":[{"ns":10,"q":0.5}]},
      {"empty":[],"name":"n"}
    ],
    "none": []
  },
  "run": {
    "name": "a b",
    "pid": 7
  },
  "warnings": []
}"#;
        assert_eq!(text, want);
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v);
        // All levels indented: serde_json's pretty writer exactly.
        assert_eq!(
            outline(&v, usize::MAX),
            serde_json::to_string_pretty(&v).unwrap()
        );
        // None: its compact writer.
        assert_eq!(outline(&v, 0), serde_json::to_string(&v).unwrap());
    }
}
