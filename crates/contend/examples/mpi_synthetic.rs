//! Builds a synthetic MPI recording in memory and times the wait-state
//! analysis on it (bench/mpi_analysis.sh).
//!
//! Usage: `mpi_synthetic [EVENTS] [RANKS] [ROUNDS]` (default 1000000, 16, 3),
//! or `mpi_synthetic --read DIR [ROUNDS]` to time reading and analysing a
//! recording made by `contend record --mpi`.
//!
//! The program is a ring halo exchange: every iteration each rank posts
//! `MPI_Irecv` from its left neighbour, `MPI_Isend` to its right neighbour
//! and completes both with `MPI_Waitall` after a pseudo-random amount of
//! "computation"; every 8th iteration ends with an `MPI_Allreduce`, every
//! 32nd with an `MPI_Barrier`. That mixes late senders (a slow left
//! neighbour) with N×N and barrier waits, and every event is matched. Prints
//! the time to analyse (`analyze` + `build_report`, median of ROUNDS), the
//! CPU time of the process it took (all threads, from `/proc/self/stat`),
//! the bytes per call of the in-memory model (`MpiEvents`), and what it found.

use std::time::Instant;

use contend::mpi::{
    analyze, build_report, critical_path, delay_analysis, statistics, MpiAnalysis, MpiOptions,
    SiteResolver, SiteTable, Timeline,
};
use contend::symbols::ResolvedSite;
use contend_trace::mpi::{
    Completion, CompletionKind, MpiComm, MpiEvent, MpiOp, MpiRankTrace, MpiRecording, Peer,
    RecvPost, SendPost, SELF_COMM, WORLD_COMM,
};

struct Sites;
impl SiteResolver for Sites {
    fn site(&mut self, _pid: u32, address: u64) -> ResolvedSite {
        ResolvedSite {
            function: Some("halo".into()),
            file: Some("/src/halo.c".into()),
            line: Some(address as u32),
            module: Some("/src/halo".into()),
            offset: address,
            debug: "dwarf",
            display: format!("halo (halo.c:{address})"),
        }
    }
}

fn event(op: MpiOp, enter_ns: u64, exit_ns: u64) -> MpiEvent {
    MpiEvent {
        op,
        tid: 1,
        enter_ns,
        exit_ns,
        site: 100 + op as u64,
        comm: WORLD_COMM,
        root: None,
        coll_bytes_sent: 0,
        coll_bytes_recv: 0,
        send: None,
        recv: None,
        starts: Vec::new(),
        completions: Vec::new(),
        created_comm: None,
        return_code: 0,
        probed: None,
        request: 0,
    }
}

/// CPU time of the whole process so far (user + system, every thread),
/// seconds, from `/proc/self/stat` (clock ticks, 100 per second on Linux);
/// 0 when it cannot be read.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // fields after the command name (which is in parentheses)
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of stat(5): 12 and 13 here
    (ticks(11) + ticks(12)) / 100.0
}

/// A small deterministic pseudo-random generator (xorshift64).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn build(events: usize, ranks: u32) -> MpiRecording {
    // Events per rank per iteration: 3, plus 1/8 + 1/32 for collectives.
    let per_iter = 3.0 + 1.0 / 8.0 + 1.0 / 32.0;
    let iters = ((events as f64) / (ranks as f64 * per_iter)).ceil() as u64;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut traces: Vec<MpiRankTrace> = (0..ranks)
        .map(|r| MpiRankTrace {
            path: format!("mpi/rank-{r}.cmpi").into(),
            rank: r,
            world_size: ranks,
            pid: 10_000 + r,
            host: "synthetic".into(),
            library: "synthetic".into(),
            finalized: true,
            comms: vec![
                MpiComm {
                    id: WORLD_COMM,
                    world_ranks: (0..ranks).collect(),
                },
                MpiComm {
                    id: SELF_COMM,
                    world_ranks: vec![r],
                },
            ],
            ..MpiRankTrace::default()
        })
        .collect();
    // Each rank's clock: when it is ready for the next step.
    let mut now: Vec<u64> = vec![1_000; ranks as usize];
    for it in 0..iters {
        // Post receive and send; then compute for a random time.
        let mut send_at = vec![0u64; ranks as usize];
        for r in 0..ranks as usize {
            let t = now[r];
            let left = (r as u32 + ranks - 1) % ranks;
            let right = (r as u32 + 1) % ranks;
            let mut irecv = event(MpiOp::Irecv, t, t + 200);
            irecv.recv = Some(RecvPost {
                source: Peer::Rank(left),
                tag: 1,
                bytes: 4096,
                request: 2 * it + 1,
            });
            let mut isend = event(MpiOp::Isend, t + 300, t + 600);
            isend.send = Some(SendPost {
                dest: Peer::Rank(right),
                tag: 1,
                bytes: 4096,
                request: 2 * it + 2,
            });
            send_at[r] = t + 300;
            traces[r].events.push(irecv);
            traces[r].events.push(isend);
            now[r] = t + 600 + 5_000 + rng.next() % 20_000;
        }
        // Waitall: the receive completes once the left neighbour's send was
        // posted.
        for r in 0..ranks as usize {
            let left = (r + ranks as usize - 1) % ranks as usize;
            let right = (r as u32 + 1) % ranks;
            let enter = now[r];
            let exit = enter.max(send_at[left]) + 500;
            let mut w = event(MpiOp::Waitall, enter, exit);
            w.completions = vec![
                Completion {
                    request: 2 * it + 1,
                    kind: CompletionKind::Recv,
                    source: Some(left as u32),
                    tag: 1,
                    bytes: 4096,
                    cancelled: false,
                },
                Completion {
                    request: 2 * it + 2,
                    kind: CompletionKind::Send,
                    source: Some(right),
                    tag: 1,
                    bytes: 4096,
                    cancelled: false,
                },
            ];
            traces[r].events.push(w);
            now[r] = exit + 1_000 + rng.next() % 3_000;
        }
        for (every, op) in [(8, MpiOp::Allreduce), (32, MpiOp::Barrier)] {
            if it % every == every - 1 {
                let last = *now.iter().max().unwrap_or(&0);
                for r in 0..ranks as usize {
                    let mut e = event(op, now[r], last + 2_000);
                    e.coll_bytes_sent = if op == MpiOp::Barrier { 0 } else { 8 };
                    e.coll_bytes_recv = e.coll_bytes_sent;
                    traces[r].events.push(e);
                    now[r] = last + 2_000 + rng.next() % 1_000;
                }
            }
        }
    }
    MpiRecording {
        ranks: traces,
        world_size: ranks,
        missing_ranks: Vec::new(),
        problems: Vec::new(),
    }
}

/// Times, separately, the passes `build_report` runs after the wait-state
/// tables (one round each, seconds): the site table and time lines, the
/// delay analysis (root causes), the critical path, and the mpiP-style
/// statistics (wait matrix, messages per site, per site and rank).
fn time_passes(rec: &MpiRecording, a: &MpiAnalysis) -> [f64; 4] {
    let t = Instant::now();
    let sites = SiteTable::resolve(rec, &mut Sites);
    let tl = Timeline::new(rec, a, &sites, &MpiOptions::default());
    let t_timeline = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let d = delay_analysis(&tl, a);
    let t_delay = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let cp = critical_path(&tl);
    let t_cp = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let m = statistics::wait_matrix(&tl);
    let (ms, _) = statistics::message_statistics(&tl);
    let sr = statistics::site_rank_statistics(&tl, &Default::default(), &Default::default());
    let t_stats = t.elapsed().as_secs_f64();
    std::hint::black_box((d.costs.len(), cp.segments, m.len(), ms.len(), sr.len()));
    [t_timeline, t_delay, t_cp, t_stats]
}

fn print_passes(label: &str, passes: &mut [[f64; 4]], total: f64) {
    let median = |i: usize, p: &mut [[f64; 4]]| {
        let mut v: Vec<f64> = p.iter().map(|x| x[i]).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let [a, b, c, d] = [0, 1, 2, 3].map(|i| median(i, passes));
    println!(
        "{label}: of the whole analysis {total:.3} s: site table and time lines {a:.3} s, delay analysis (root causes) {b:.3} s, critical path {c:.3} s, statistics (wait matrix, messages, per site and rank) {d:.3} s (medians)"
    );
}

/// `mpi_synthetic --read DIR [ROUNDS]`: times reading `DIR/mpi/` with the
/// MPI trace reader and analysing it, for recordings made by
/// `contend record --mpi`.
fn read_and_analyse(dir: &std::path::Path, rounds: usize) {
    let mut reads = Vec::new();
    let mut analyses = Vec::new();
    let mut passes = Vec::new();
    let mut events = 0;
    let mut model_bytes = 0usize;
    let mut cpus = Vec::new();
    for _ in 0..rounds.max(1) {
        let c = cpu_seconds();
        let t = Instant::now();
        let rec = match contend_trace::read_mpi_recording(dir) {
            Ok(Some(rec)) => rec,
            Ok(None) => {
                eprintln!("{}: no mpi/ directory", dir.display());
                std::process::exit(1);
            }
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        };
        reads.push(t.elapsed().as_secs_f64());
        events = rec.ranks.iter().map(|t| t.events.len()).sum::<usize>();
        model_bytes = rec.ranks.iter().map(|t| t.events.heap_bytes()).sum();
        let t = Instant::now();
        let a = analyze(&rec);
        let _ = build_report(&rec, &a, &MpiOptions::default(), &mut Sites);
        analyses.push(t.elapsed().as_secs_f64());
        cpus.push(cpu_seconds() - c);
        passes.push(time_passes(&rec, &a));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (r, a) = (median(&mut reads), median(&mut analyses));
    let cpu = median(&mut cpus);
    println!(
        "{events} events: read {r:.3} s, analysis {a:.3} s (medians of {}), {:.2} million events/s together; CPU time of read + analysis {cpu:.2} s, {:.2} million events per CPU second",
        reads.len(),
        events as f64 / (r + a) / 1e6,
        events as f64 / cpu.max(1e-9) / 1e6
    );
    println!(
        "in-memory model: {:.1} bytes per call (MpiEvents arrays)",
        model_bytes as f64 / events.max(1) as f64
    );
    print_passes("recording", &mut passes, a);
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("--read") {
        args.next();
        let dir = args.next().expect("--read DIR");
        let rounds = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
        read_and_analyse(std::path::Path::new(&dir), rounds);
        return;
    }
    let events: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let ranks: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(16);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let t0 = Instant::now();
    let rec = build(events, ranks.max(2));
    let total: usize = rec.ranks.iter().map(|t| t.events.len()).sum();
    println!(
        "built {total} events on {} ranks in {:.3} s",
        rec.ranks.len(),
        t0.elapsed().as_secs_f64()
    );
    let mut times = Vec::new();
    let mut passes = Vec::new();
    let mut summary = String::new();
    let mut cpus = Vec::new();
    for _ in 0..rounds.max(1) {
        let c = cpu_seconds();
        let t = Instant::now();
        let a = analyze(&rec);
        let r = build_report(&rec, &a, &MpiOptions::default(), &mut Sites);
        times.push(t.elapsed().as_secs_f64());
        cpus.push(cpu_seconds() - c);
        passes.push(time_passes(&rec, &a));
        summary = format!(
            "messages {}, unmatched {}, collectives {}, late sender {} ({} ns), wait at N×N {}, wait at barrier {}, warnings {}",
            r.matching.messages,
            r.matching.unmatched_sends + r.matching.unmatched_receives,
            r.matching.collectives,
            r.late_sender.count,
            r.late_sender.wait_ns,
            r.wait_at_nxn.count,
            r.wait_at_barrier.count,
            a.warnings.len()
        );
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    cpus.sort_by(f64::total_cmp);
    let cpu = cpus[cpus.len() / 2];
    println!("{summary}");
    println!(
        "in-memory model: {:.1} bytes per call (MpiEvents arrays); CPU time of the analysis {cpu:.2} s (median), {:.2} million events per CPU second",
        rec.ranks
            .iter()
            .map(|t| t.events.heap_bytes())
            .sum::<usize>() as f64
            / total.max(1) as f64,
        total as f64 / cpu.max(1e-9) / 1e6
    );
    println!(
        "analysis of {total} events: median {median:.3} s over {} rounds (runs: {}), {:.2} million events/s",
        times.len(),
        times
            .iter()
            .map(|t| format!("{t:.3}"))
            .collect::<Vec<_>>()
            .join(" "),
        total as f64 / median / 1e6
    );
    print_passes("synthetic", &mut passes, median);
}
