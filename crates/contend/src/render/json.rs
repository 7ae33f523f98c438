//! JSON: the model exactly, pretty-printed (`serde_json`'s pretty writer),
//! written as it is serialised when written to a file or standard output.
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
