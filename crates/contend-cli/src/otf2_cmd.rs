//! `contend export --format otf2`: the OTF2 archive, written by the
//! `contend-otf2` crate through libotf2 (cargo feature `otf2`, default).

use std::path::Path;

use anyhow::Result;
use contend::export::{ExportOptions, ExportSummary};
use contend::Analysis;

/// Writes the OTF2 archive of `analysis` into the directory `path`.
#[cfg(feature = "otf2")]
pub fn write(
    analysis: &Analysis<'_>,
    options: &ExportOptions,
    path: &Path,
    force: bool,
) -> Result<ExportSummary> {
    Ok(contend_otf2::write(analysis, options, path, force)?)
}

/// Without the `otf2` feature: says so, and how to get it.
#[cfg(not(feature = "otf2"))]
pub fn write(
    _analysis: &Analysis<'_>,
    _options: &ExportOptions,
    _path: &Path,
    _force: bool,
) -> Result<ExportSummary> {
    anyhow::bail!(
        "--format otf2: this contend was built without OTF2 support (cargo feature `otf2` of contend-cli); \
         install libotf2 (Debian/Ubuntu: apt-get install libotf2-trace-dev) and build with the default features"
    )
}
