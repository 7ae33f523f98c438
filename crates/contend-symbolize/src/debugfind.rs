//! Finding separate debug information for a module that has none itself.
//!
//! Search order (the first acceptable file wins):
//! 1. by build ID: `<debug_dir>/.build-id/<xx>/<rest>.debug` for each
//!    configured debug directory (default `/usr/lib/debug`);
//! 2. by `.gnu_debuglink`: `<dir of module>/<name>`, `<dir>/.debug/<name>`,
//!    `<debug_dir>/<dir>/<name>`;
//! 3. the debuginfod client cache: `<cache>/<build-id>/debuginfo`, where
//!    `<cache>` is the configured one, `$DEBUGINFOD_CACHE_PATH`,
//!    `$XDG_CACHE_HOME/debuginfod_client` or `~/.cache/debuginfod_client`;
//! 4. `debuginfod-find debuginfo <build-id>`, only when debuginfod URLs are
//!    configured (`DEBUGINFOD_URLS`) and the program is on `PATH`; bounded by
//!    a timeout, failures ignored, and given up after repeated timeouts.
//!
//! A candidate is accepted only if it is an ELF file with DWARF or a symbol
//! table whose build ID equals the module's (or, for a debuglink match on a
//! module without build ID, whose CRC-32 equals the one in the link).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::elf::{ModuleIds, Opened};
use super::SymbolizerOptions;

/// Consecutive `debuginfod-find` timeouts after which it is not run again.
const DEBUGINFOD_MAX_TIMEOUTS: u32 = 2;

/// Mutable state of the search kept across modules.
#[derive(Debug, Default)]
pub(crate) struct SearchState {
    debuginfod_timeouts: u32,
}

/// Lowercase hexadecimal of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Finds and opens a separate debug file for the module at `module_path`.
pub(crate) fn find_debug_file(
    module_path: &Path,
    ids: &ModuleIds,
    opts: &SymbolizerOptions,
    state: &mut SearchState,
) -> Option<(Opened, PathBuf)> {
    let accept = |cand: &Path, crc: Option<u32>| -> Option<(Opened, PathBuf)> {
        if !cand.is_file() || same_file(cand, module_path) {
            return None;
        }
        let opened = Opened::open(cand).ok()?;
        if !(opened.has_dwarf() || opened.has_symtab()) {
            return None;
        }
        let cand_id = opened.ids().build_id;
        let ok = match (&ids.build_id, cand_id, crc) {
            (Some(want), Some(got), _) => *want == got,
            (_, _, Some(crc)) => opened.crc32() == crc,
            _ => false,
        };
        ok.then(|| (opened, cand.to_path_buf()))
    };

    if let Some(id) = ids.build_id.as_deref().filter(|id| id.len() >= 2) {
        let h = hex(id);
        for dir in &opts.debug_dirs {
            let p = dir
                .join(".build-id")
                .join(&h[..2])
                .join(format!("{}.debug", &h[2..]));
            if let Some(found) = accept(&p, None) {
                return Some(found);
            }
        }
    }

    if let Some((name, crc)) = &ids.debuglink {
        let name = Path::new(name);
        // Only a plain file name is meaningful in a debuglink.
        if name.components().count() == 1 {
            let dir = module_path.parent().unwrap_or(Path::new("/"));
            let mut cands = vec![dir.join(name), dir.join(".debug").join(name)];
            let rel = dir.strip_prefix("/").unwrap_or(dir);
            for d in &opts.debug_dirs {
                cands.push(d.join(rel).join(name));
            }
            for c in cands {
                if let Some(found) = accept(&c, Some(*crc)) {
                    return Some(found);
                }
            }
        }
    }

    if !opts.debuginfod {
        return None;
    }
    let id = ids.build_id.as_deref().filter(|id| !id.is_empty())?;
    let h = hex(id);
    for root in debuginfod_cache_roots(opts) {
        let p = root.join(&h).join("debuginfo");
        if let Some(found) = accept(&p, None) {
            return Some(found);
        }
    }
    let path = run_debuginfod_find(&h, opts, state)?;
    accept(&path, None)
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Directories that may hold a debuginfod client cache, most specific first.
fn debuginfod_cache_roots(opts: &SymbolizerOptions) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    if let Some(p) = &opts.debuginfod_cache {
        roots.push(p.clone());
        return roots;
    }
    if let Some(p) = std::env::var_os("DEBUGINFOD_CACHE_PATH").filter(|p| !p.is_empty()) {
        roots.push(PathBuf::from(p));
    }
    if let Some(p) = std::env::var_os("XDG_CACHE_HOME").filter(|p| !p.is_empty()) {
        roots.push(PathBuf::from(p).join("debuginfod_client"));
    }
    if let Some(home) = std::env::var_os("HOME").filter(|p| !p.is_empty()) {
        roots.push(PathBuf::from(home).join(".cache/debuginfod_client"));
    }
    roots
}

/// Resolves a program name through `PATH` (a name containing `/` is used as is).
fn find_program(prog: &Path) -> Option<PathBuf> {
    if prog.components().count() > 1 {
        return prog.is_file().then(|| prog.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

/// Runs `debuginfod-find debuginfo <hex>` with a timeout; returns the path it
/// prints on success.
fn run_debuginfod_find(
    hex_id: &str,
    opts: &SymbolizerOptions,
    state: &mut SearchState,
) -> Option<PathBuf> {
    let urls = opts
        .debuginfod_urls
        .as_deref()
        .filter(|u| !u.trim().is_empty())?;
    if state.debuginfod_timeouts >= DEBUGINFOD_MAX_TIMEOUTS {
        return None;
    }
    let prog = find_program(&opts.debuginfod_find)?;
    let mut cmd = Command::new(prog);
    cmd.arg("debuginfo")
        .arg(hex_id)
        .env("DEBUGINFOD_URLS", urls)
        .env(
            "DEBUGINFOD_TIMEOUT",
            opts.debuginfod_timeout.as_secs().max(1).to_string(),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(cache) = &opts.debuginfod_cache {
        cmd.env("DEBUGINFOD_CACHE_PATH", cache);
    }
    let mut child = cmd.spawn().ok()?;
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + opts.debuginfod_timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                state.debuginfod_timeouts += 1;
                break None;
            }
        }
    };
    let out = reader.join().unwrap_or_default();
    let status = status?;
    state.debuginfod_timeouts = 0;
    if !status.success() {
        return None;
    }
    let line = out.lines().next()?.trim();
    (!line.is_empty()).then(|| PathBuf::from(line))
}

/// Finds the dwz supplementary file named by a `.gnu_debugaltlink`: the
/// recorded path (absolute, or relative to the debug file's directory), else
/// `<debug_dir>/.build-id/<xx>/<rest>.debug` by its build ID.
pub(crate) fn find_sup_file(
    debug_file: &Path,
    link: &Path,
    build_id: &[u8],
    opts: &SymbolizerOptions,
) -> Option<Opened> {
    let mut cands = Vec::new();
    if link.is_absolute() {
        cands.push(link.to_path_buf());
    } else if let Some(dir) = debug_file.parent() {
        cands.push(dir.join(link));
    }
    if build_id.len() >= 2 {
        let h = hex(build_id);
        for d in &opts.debug_dirs {
            cands.push(
                d.join(".build-id")
                    .join(&h[..2])
                    .join(format!("{}.debug", &h[2..])),
            );
        }
    }
    cands.into_iter().find_map(|c| {
        let o = Opened::open(&c).ok()?;
        (o.ids().build_id.as_deref() == Some(build_id) || build_id.is_empty()).then_some(o)
    })
}
