//! The `contend` command: parses arguments into the plain option structs of
//! the `contend` and `contend-record` libraries and calls them. Nothing here
//! analyses or records anything.
//!
//! Built without the default `record` feature (`cargo build
//! --no-default-features -p contend-cli`), the binary reads, reports,
//! compares and exports recordings made elsewhere and needs no C compiler
//! to build; `record`, `scale` and `stress` are then absent.

mod cache_cmd;
#[cfg(feature = "record")]
mod meters_cmd;
mod numa_cmd;
mod otf2_cmd;
mod progress;
#[cfg(feature = "record")]
mod record_cmd;
mod report_cmd;
#[cfg(feature = "record")]
mod watch_cmd;

use std::process::ExitCode;

use anyhow::Result;
use clap::{CommandFactory, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "contend",
    version,
    about = "Find and measure resource contention (locks, futexes, OpenMP, MPI, memory) in unmodified Linux programs",
    long_about = "contend records the synchronisation of an unmodified, dynamically linked \
program: pthread mutexes, rwlocks, spinlocks, condition variables, barriers and semaphores \
(C++ std::mutex through them), futex waits and wakes (Rust and custom locks), OpenMP regions \
and, with --mpi, every rank's MPI calls; beside them it samples the threads' service time and \
counters. It reports how long threads and ranks waited, for what, at which lines of source, \
how much of it lay on the critical path, and what the recording itself cost. `contend scale` \
models the speed-up lost to memory contention, `contend numa` the time lost to remote memory.",
    after_help = "Examples:\n  contend record -- ./server --threads 8\n  contend report\n  contend report contend.data --format json\n  contend compare before.data after.data\n  contend export --format folded -o waits.folded"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a program with the collectors preloaded and record its lock, futex, OpenMP (and MPI) operations
    #[command(
        after_help = "Examples:\n  contend record -- ./app arg1 arg2\n  contend record -o run1.data --force -- ./app\n  contend record --cores 1 -o one.data -- ./app --threads 4\n  contend record --cpus 0,2-3 -- ./app\n  contend record -p 4242 --duration 10s -o attach.data\n  contend record --stack-every 100 -- ./app\n  contend record --mpi -o mpi.data -- mpirun -np 4 ./mpi_app\n\nThe exit status is the program's (128+N if a signal N ended it)."
    )]
    #[cfg(feature = "record")]
    Record(record_cmd::RecordArgs),
    /// Analyse a recording and print its contention report (locks, futexes, OpenMP, MPI, service time)
    #[command(
        after_help = "Examples:\n  contend report\n  contend report run1.data --format markdown\n  contend report --critical-only --top 5\n  contend report --lock queue_lock --min-duration 10us\n  contend report --site 'dequeue|enqueue' --thread 4242\n  contend report --format json | jq .locks.summary\n\nFilters can also be kept in contend.toml (in the recording or the current directory); see docs/usage.md."
    )]
    Report(report_cmd::ReportArgs),
    /// Compare recordings: every metric of the first beside the others, with % change
    #[command(
        after_help = "Examples:\n  contend compare single.data two.data\n  contend compare a.data b.data c.data --format markdown\n  contend compare before.data after.data --format json"
    )]
    Compare(report_cmd::CompareArgs),
    /// Write a recording in another tool's format (Perfetto, Chrome, pprof, folded stacks, flame graph, OTF2)
    #[command(
        after_help = "Examples:\n  contend export --format folded                  # contend.data -> contend.folded\n  contend export run.data --format folded -o - | inferno-flamegraph > waits.svg\n  contend export --format folded --weight hold --critical-only -o cp-hold.folded"
    )]
    Export(report_cmd::ExportArgs),
    /// Run a program with m threads on 1 core and on m cores, repeatedly, for the speed-up loss model
    #[command(
        after_help = "Examples:\n  contend scale --threads 2,4,8 -- ./app --threads {threads}\n  contend scale --threads 2 --repeat 3 -o xz.scale -- xz -T{threads} -k -c big.tar\n  OMP_SCHEDULE=static contend scale --threads 1,2,4 -- ./omp_app   # OMP_NUM_THREADS is set\n  contend scale --threads 2,4 --stress 2 -- ./app {threads}\n  contend report contend.scale\n\n{threads} is replaced by m in every word (also inside one, as in -T{threads}).\nEach run is a recording in DIR/m<m>-n<n>-r<repeat>[-stress], with the program's\nstdout.txt and stderr.txt beside it (--show-output to see them instead); DIR/scale.json\nlists the runs and is rewritten after each one. A failing run is recorded and the\nexperiment goes on (exit status 1 at the end); Ctrl-C interrupts the current run\nand stops the experiment (the runs made are kept).\nSee docs/scale.md."
    )]
    #[cfg(feature = "record")]
    Scale(record_cmd::ScaleArgs),
    /// Generate load: `stress memory` streams to and from memory (memory contention generator)
    #[command(subcommand)]
    #[cfg(feature = "record")]
    Stress(record_cmd::StressCommand),
    /// Print the folder holding contend/region.h (compile with -I "$(contend include-dir)")
    #[command(
        after_help = "Examples:\n  cc -O2 -I \"$(contend include-dir)\" -o app app.c\n  contend record -- ./app && contend report\n\nThe header marks regions for the interference (SCI) analysis; a program built\nwith it runs unchanged without contend (see docs/sci.md)."
    )]
    #[cfg(feature = "record")]
    IncludeDir,
    /// Meter shared-resource contention while programs run and publish it in a shared-memory blackboard
    #[command(
        after_help = "Examples:\n  contend meters                                   # until Ctrl-C, /dev/shm/contend-meters\n  contend meters --duration 10s --format json\n  contend meters --interval 1ms --cpus 0-3 --calibration meters-calibration.json\n  contend meters --trigger memory_latency=250,200 --blackboard /tmp/bb\n  contend meters --daemon                          # detached; kill $(cat /dev/shm/contend-meters.pid) stops it\n  contend meters calibrate -o meters-calibration.json\n\nSee docs/meters.md for the meters, the triggers and the blackboard layout."
    )]
    #[cfg(feature = "record")]
    Meters(meters_cmd::MetersArgs),
    /// Watch the meters of a running `contend meters` live in the terminal (q to quit)
    #[command(
        after_help = "Examples:\n  contend watch\n  contend watch --blackboard /tmp/bb --refresh 1s"
    )]
    #[cfg(feature = "record")]
    Watch(watch_cmd::WatchArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    #[command(
        after_help = "Examples:\n  contend completions bash > ~/.local/share/bash-completion/completions/contend\n  contend completions zsh > ~/.zfunc/_contend\n  contend completions fish > ~/.config/fish/completions/contend.fish"
    )]
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the manual pages (contend.1 and one per command) into a directory
    #[command(
        after_help = "Examples:\n  contend man -o /usr/local/share/man/man1\n  contend man -o man && man -l man/contend-record.1"
    )]
    Man {
        /// Directory to write the pages into (created if missing)
        #[arg(short, long, value_name = "DIR", default_value = ".")]
        output: std::path::PathBuf,
    },
    /// Memory contention on NUMA machines: calibrate latencies, estimate the time lost, plan and apply page migrations
    #[command(subcommand)]
    Numa(numa_cmd::NumaCommand),
    /// List or prune the build-id cache (copies of the programs and libraries recordings mapped)
    #[command(
        after_help = "Examples:\n  contend cache\n  contend cache prune --max-size 500M\n  contend cache prune --max-size 0      # empty it\n\nThe cache is $XDG_CACHE_HOME/contend/buildid (or ~/.cache/contend/buildid); its cap is\nCONTEND_BUILDID_CACHE_SIZE (default 1G). See docs/usage.md."
    )]
    Cache(cache_cmd::CacheArgs),
}

fn main() -> ExitCode {
    contend::analysis::configure_allocator();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            eprintln!("contend: error: {}", message(&e));
            ExitCode::from(2)
        }
    }
}

/// The error and its causes, each said once: a cause whose text the message
/// already holds (errors that name their source) is not repeated.
fn message(e: &anyhow::Error) -> String {
    let mut msg = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !msg.contains(&c) {
            msg.push_str(": ");
            msg.push_str(&c);
        }
    }
    msg
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        #[cfg(feature = "record")]
        Command::Record(a) => record_cmd::cmd_record(a),
        Command::Report(a) => report_cmd::cmd_report(a),
        Command::Compare(a) => report_cmd::cmd_compare(a),
        Command::Export(a) => report_cmd::cmd_export(a),
        #[cfg(feature = "record")]
        Command::Scale(a) => record_cmd::cmd_scale(a),
        #[cfg(feature = "record")]
        Command::Stress(record_cmd::StressCommand::Memory(a)) => record_cmd::cmd_stress_memory(a),
        #[cfg(feature = "record")]
        Command::IncludeDir => record_cmd::cmd_include_dir(),
        #[cfg(feature = "record")]
        Command::Meters(a) => meters_cmd::cmd_meters(a),
        #[cfg(feature = "record")]
        Command::Watch(a) => watch_cmd::cmd_watch(a),
        Command::Completions { shell } => {
            let mut cmd = Cli::command();
            clap_complete::generate(shell, &mut cmd, "contend", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { output } => cmd_man(&output),
        Command::Numa(c) => numa_cmd::cmd_numa(c),
        Command::Cache(a) => cache_cmd::cmd_cache(a),
    }
}

/// Writes `contend.1` and `contend-<command>.1` (and `contend-stress-memory.1`)
/// into `dir`.
fn cmd_man(dir: &std::path::Path) -> Result<ExitCode> {
    use anyhow::Context;
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let cmd = Cli::command();
    let mut written = Vec::new();
    fn pages(
        cmd: &clap::Command,
        name: String,
        dir: &std::path::Path,
        written: &mut Vec<std::path::PathBuf>,
    ) -> Result<()> {
        use anyhow::Context;
        let cmd = cmd.clone().name(name.clone());
        let path = dir.join(format!("{name}.1"));
        let mut buf = Vec::new();
        clap_mangen::Man::new(cmd.clone()).render(&mut buf)?;
        std::fs::write(&path, buf).with_context(|| format!("{}: cannot write", path.display()))?;
        written.push(path);
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            pages(sub, format!("{name}-{}", sub.get_name()), dir, written)?;
        }
        Ok(())
    }
    pages(&cmd, "contend".into(), dir, &mut written)?;
    eprintln!(
        "contend: wrote {} manual page(s) to {}",
        written.len(),
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// clap's own consistency checks of every command and argument.
    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }
}
