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

thread_local! {
    /// True while this thread writes a document in outline
    /// ([`Document::write_json`]): every table element is then one line of
    /// compact JSON, which [`table_elements`] may render ahead.
    static ELEMENTS_COMPACT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the calling thread as writing in outline until dropped
/// ([`ELEMENTS_COMPACT`]; the mark before it is restored).
pub(crate) struct ElementsCompact(bool);

impl ElementsCompact {
    /// Sets the mark.
    pub(crate) fn mark() -> ElementsCompact {
        ElementsCompact(ELEMENTS_COMPACT.replace(true))
    }
}

impl Drop for ElementsCompact {
    fn drop(&mut self) {
        ELEMENTS_COMPACT.set(self.0);
    }
}

/// Elements below which [`table_elements`] writes a table as any other.
const PARALLEL_ELEMENTS_MIN: usize = 1024;

/// Elements [`table_elements`] renders at once: a batch's text is what it
/// holds in memory (memcached's 21,884 SCI blocks are 31 MB of JSON; a
/// batch of 4,096 about 6 MB).
const ELEMENTS_PER_BATCH: usize = 4096;

/// `serialize_with` of a large table of a section (`sci.blocks`): written
/// in outline (this thread marked by [`ElementsCompact`]) and with at
/// least [`PARALLEL_ELEMENTS_MIN`] elements, its elements are rendered as
/// compact JSON on all cores, [`ELEMENTS_PER_BATCH`] at a time, and
/// written as they are (`serde_json` raw values) in order: the same bytes
/// as writing them one by one, as the outline writes them compactly
/// anyway (memcached's report: the SCI blocks were 85 ms of one core, at
/// the end of the report; docs/benchmarks.md, "Large tables written on
/// both cores"). Otherwise, or for another serialiser, the elements are
/// serialised one by one as usual. Only for a table at least
/// [`OUTLINE_LEVELS`] containers deep (a section's table: the document,
/// the section, the table), whose elements the outline writes compactly.
///
/// # Errors
/// Those of the serialiser; an element that fails to render as JSON (a
/// map with non-string keys: none of the report's) as its error.
pub(crate) fn table_elements<T, S>(elements: &[T], serializer: S) -> Result<S::Ok, S::Error>
where
    T: serde::Serialize + Sync,
    S: serde::Serializer,
{
    use rayon::prelude::*;
    use serde::ser::{Error, SerializeSeq};
    if elements.len() < PARALLEL_ELEMENTS_MIN || !ELEMENTS_COMPACT.get() {
        return serializer.collect_seq(elements);
    }
    let mut seq = serializer.serialize_seq(Some(elements.len()))?;
    for batch in elements.chunks(ELEMENTS_PER_BATCH) {
        let lines = batch
            .par_iter()
            .map(serde_json::value::to_raw_value)
            .collect::<Result<Vec<_>, _>>()
            .map_err(S::Error::custom)?;
        for line in &lines {
            seq.serialize_element(line)?;
        }
    }
    seq.end()
}

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

    fn outline(value: &impl serde::Serialize, levels: usize) -> String {
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

    /// A document shaped like a report: a section holding a large table
    /// written through [`table_elements`].
    #[derive(serde::Serialize)]
    struct Doc {
        run: u32,
        section: Section,
    }

    #[derive(serde::Serialize)]
    struct Section {
        #[serde(serialize_with = "table_elements")]
        rows: Vec<Row>,
        after: &'static str,
    }

    #[derive(serde::Serialize)]
    struct Row {
        name: String,
        share: f64,
        missing: Option<u64>,
        quantiles: Vec<(f64, u64)>,
        nested: std::collections::BTreeMap<String, Vec<u8>>,
    }

    fn doc(rows: usize) -> Doc {
        Doc {
            run: 1,
            section: Section {
                rows: (0..rows)
                    .map(|i| Row {
                        name: format!("lock \"{i}\"\t\u{e9}"),
                        share: if i % 7 == 0 { f64::NAN } else { i as f64 / 3.0 },
                        missing: (i % 2 == 0).then_some(i as u64),
                        quantiles: vec![(0.5, i as u64), (0.99, 2 * i as u64)],
                        nested: [(format!("k{}", i % 3), vec![1, 2])].into_iter().collect(),
                    })
                    .collect(),
                after: "end",
            },
        }
    }

    /// In outline, as [`Document::write_json`] writes it when `marked`.
    fn write(value: &impl serde::Serialize, marked: bool) -> String {
        let _mark = marked.then(ElementsCompact::mark);
        outline(value, OUTLINE_LEVELS)
    }

    /// A table long enough to be rendered on all cores (more than one
    /// batch, the last one short) is written byte for byte as it is one
    /// element at a time, escapes, non-finite floats and nested
    /// containers included; the mark is undone after writing; short
    /// tables take the usual way, and another serialiser (to a `Value`)
    /// reads the rendered lines back.
    #[test]
    fn large_tables_rendered_on_all_cores_are_the_same_bytes() {
        let big = doc(2 * ELEMENTS_PER_BATCH + 5);
        let one_by_one = write(&big, false);
        assert_eq!(write(&big, true), one_by_one);
        assert!(!ELEMENTS_COMPACT.get(), "the mark outlived its writer");
        let row7 = "\n      {\"name\":\"lock \\\"7\\\"\\t\u{e9}\",\"share\":null,\"missing\":null,";
        assert!(one_by_one.contains(row7), "{}", &one_by_one[..600]);
        let small = doc(3);
        assert_eq!(write(&small, true), write(&small, false));
        let _mark = ElementsCompact::mark();
        let v = serde_json::to_value(&big).unwrap();
        let rows = v["section"]["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 2 * ELEMENTS_PER_BATCH + 5);
        assert_eq!(rows[7]["share"], serde_json::Value::Null);
        assert_eq!(rows[8]["quantiles"][1][1], 16);
    }
}
