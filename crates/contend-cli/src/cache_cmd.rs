//! `contend cache`: lists and prunes the build-id cache
//! (`contend_trace::buildid_cache`), where `contend record` keeps copies
//! of the executables and libraries its recordings mapped.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};

use contend_trace::buildid_cache::{
    format_size, max_bytes_from_env, parse_size, BuildIdCache, SIZE_ENV,
};
use contend_trace::meta::format_utc;

#[derive(Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    command: Option<CacheCommand>,
}

#[derive(Subcommand)]
enum CacheCommand {
    /// List the cached files, most recently used first (the default)
    List,
    /// Remove the least recently used files until the cache fits the size
    Prune {
        /// Size to prune to, e.g. 500M, 2G, 0 to empty the cache [default: the cap: CONTEND_BUILDID_CACHE_SIZE, else 1G]
        #[arg(long, value_name = "SIZE", value_parser = size)]
        max_size: Option<u64>,
    },
}

fn size(s: &str) -> Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}

pub fn cmd_cache(a: CacheArgs) -> Result<ExitCode> {
    let cache = BuildIdCache::open_default()?;
    let cap = max_bytes_from_env()?;
    match a.command.unwrap_or(CacheCommand::List) {
        CacheCommand::List => {
            let entries = cache.list()?;
            let total: u64 = entries.iter().map(|e| e.bytes).sum();
            println!(
                "build-id cache {}: {} file(s), {} (cap {}{})",
                cache.root().display(),
                entries.len(),
                format_size(total),
                format_size(cap),
                if std::env::var_os(SIZE_ENV).is_some() {
                    format!(", from {SIZE_ENV}")
                } else {
                    String::new()
                }
            );
            if entries.is_empty() {
                return Ok(ExitCode::SUCCESS);
            }
            let id_width = entries.iter().map(|e| e.build_id.len()).max().unwrap_or(8);
            println!(
                "{:<id_width$}  {:>10}  {:<27}  PATH WHEN RECORDED",
                "BUILD ID", "SIZE", "LAST USED (UTC)"
            );
            for e in &entries {
                println!(
                    "{:<id_width$}  {:>10}  {:<27}  {}",
                    e.build_id,
                    format_size(e.bytes),
                    format_utc(e.last_used),
                    if e.original_path.is_empty() {
                        "?"
                    } else {
                        &e.original_path
                    }
                );
            }
        }
        CacheCommand::Prune { max_size } => {
            let max = max_size.unwrap_or(cap);
            let pruned = cache.prune(max, &[])?;
            for e in &pruned.removed {
                eprintln!(
                    "contend: removed {} ({}, {})",
                    e.build_id,
                    format_size(e.bytes),
                    if e.original_path.is_empty() {
                        "?"
                    } else {
                        &e.original_path
                    }
                );
            }
            eprintln!(
                "contend: build-id cache {}: removed {} file(s), {}; {} file(s), {} left (limit {})",
                cache.root().display(),
                pruned.removed.len(),
                format_size(pruned.freed_bytes),
                pruned.kept_entries,
                format_size(pruned.kept_bytes),
                format_size(max)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
