//! JSON: the model exactly, pretty-printed (`serde_json::to_string_pretty`).
//! The report's shape is documented in docs/json.md and [`super::model`];
//! the comparison's in [`crate::compare`]. Never truncated: `top` and
//! `unit` do not apply, times are integer nanoseconds.

use super::model::Report;
use super::{RenderOptions, Renderer};
use crate::compare::Comparison;

/// The JSON renderer.
pub(crate) struct Json;

fn pretty<T: serde::Serialize>(value: &T) -> String {
    // Serialising these plain structs (string keys, finite or non-finite
    // floats written as null) cannot fail.
    let mut s = serde_json::to_string_pretty(value).expect("report structs serialise to JSON");
    s.push('\n');
    s
}

impl Renderer for Json {
    fn report(&self, r: &Report, _opts: &RenderOptions) -> String {
        pretty(r)
    }

    fn comparison(&self, c: &Comparison, _opts: &RenderOptions) -> String {
        pretty(c)
    }
}
