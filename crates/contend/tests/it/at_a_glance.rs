//! "At a glance": each section's headlines, worked out by hand from the
//! numbers of hand-built sections, and where the panel goes in each format.

use contend::futex::{FutexReport, FutexSummary, FutexWordRow};
use contend::locks::{CriticalPathSummary, LockReport, LockRow, LockSummary, WaitKindRow};
use contend::openmp::{OmpBarrierRow, OmpMutexRow, OpenMpReport, OpenMpSummary};
use contend::recording_cost::{RecordingCost, RecordingReport};
use contend::render::{render_report, OutputFormat};
use contend::report::{RenderOptions, Report, ReportSection, RunInfo};
use contend::service::{ServiceReport, ServiceThreadRow};

fn lock(name: &str, kind: &str, wait_ns: u64, critical_wait_ns: u64, site: &str) -> LockRow {
    LockRow {
        name: name.into(),
        address: format!("0x{:x}", 0x1000 + wait_ns % 4096),
        kind: kind.into(),
        wait_ns,
        critical_wait_ns,
        sites: vec![site.into()],
        ..LockRow::default()
    }
}

/// Two locks and a condition variable: 10,000 acquisitions, 250 of them
/// contended, 80 ms of wait of which `hot` has 60 ms (75 %); 20 ms of the
/// wait on the critical path, 15 ms of it at `cold`; the condition
/// variable 5 ms on the path.
fn locks() -> LockReport {
    LockReport {
        summary: LockSummary {
            events: 10_000,
            contended_events: 250,
            wait_ns: 80_000_000,
            max_wait_ns: 1_500_000,
            ..LockSummary::default()
        },
        critical_path: CriticalPathSummary {
            wait_ns: 20_000_000,
            ..CriticalPathSummary::default()
        },
        other_waits: vec![WaitKindRow {
            kind: "cond".into(),
            events: 40,
            contended_events: 40,
            wait_ns: 900_000_000,
            critical_wait_ns: 5_000_000,
            timeouts: 0,
        }],
        by_lock: vec![
            lock(
                "ready",
                "cond",
                900_000_000,
                5_000_000,
                "wait_ready (q.c:9)",
            ),
            lock("hot", "mutex", 60_000_000, 5_000_000, "push (q.c:20)"),
            lock("cold", "rwlock", 20_000_000, 15_000_000, "scan (q.c:40)"),
        ],
        ..LockReport::default()
    }
}

/// A parent (pid 10) that waited for its child (pid 20): the path lies in
/// the parent, which finished last (its one lock event on it), all the
/// lock wait (30 ms) in the child. The walk cannot cross the parent's
/// waitpid, so the headline must not say that shortening the child's
/// waits would not shorten the run; with the path in the waiting process
/// itself it still does.
#[test]
fn a_path_in_another_process_than_the_waits_says_so() {
    let report = |child_pid: u32| {
        let mut parent = lock("log_lock", "mutex", 0, 0, "main (git.c:10)");
        parent.pid = 10;
        parent.critical_events = 1;
        let mut child = lock("pack_lock", "mutex", 30_000_000, 0, "work (pack.c:5)");
        child.pid = child_pid;
        LockReport {
            summary: LockSummary {
                events: 101,
                contended_events: 7,
                wait_ns: 30_000_000,
                max_wait_ns: 9_000_000,
                ..LockSummary::default()
            },
            by_lock: vec![child, parent],
            ..LockReport::default()
        }
    };
    assert_eq!(
        report(20).headlines()[2],
        "Critical path: 0 ns of the lock wait lies on it (0.00 %): the path stays in pid 10, which \
         finished last, and does not follow a process's wait for its children (not recorded), so pid \
         20's 30.00 ms of lock wait may still lie on the run's critical path."
    );
    assert_eq!(
        report(10).headlines()[2],
        "Critical path: 0 ns of the lock wait lies on it (0.00 %): shortening these waits would not \
         shorten the run."
    );
}

#[test]
fn locks_name_the_wait_the_lock_waited_for_most_and_the_critical_path() {
    assert_eq!(
        locks().headlines(),
        [
            "Lock wait: 80.00 ms in 250 contended acquisitions of 10,000 (2.50 %); the longest wait 1.500 ms.",
            "Waited for most: hot, 60.00 ms (75.00 % of the lock wait), most of it at push (q.c:20).",
            "Critical path: 20.00 ms of the lock wait lies on it (25.00 %), 15.00 ms of it at cold.",
            "Waits on the critical path for condition variables: cond 5.000 ms (at ready).",
        ]
    );
}

#[test]
fn locks_off_the_critical_path_or_uncontended_say_so() {
    let mut l = locks();
    l.critical_path.wait_ns = 0;
    for k in &mut l.by_lock {
        k.critical_wait_ns = 0;
    }
    l.other_waits.clear();
    assert_eq!(
        l.headlines()[2],
        "Critical path: 0 ns of the lock wait lies on it (0.00 %): shortening these waits would not shorten the run."
    );
    let quiet = LockReport {
        summary: LockSummary {
            events: 1_234_567,
            ..LockSummary::default()
        },
        ..LockReport::default()
    };
    assert_eq!(
        quiet.headlines(),
        ["Locks: 1,234,567 acquisitions, none contended."]
    );
    let none = LockReport {
        no_events_reason: Some("no lock operation was recorded".into()),
        ..LockReport::default()
    };
    assert!(none.headlines().is_empty());
}

/// A service section of a 2 s run on 2 CPUs, sampled.
fn service(cpu_s: f64, active_threads: f64) -> ServiceReport {
    ServiceReport {
        wall_s: 2.0,
        cpu_s,
        active_threads,
        cpus: 2,
        samples: 200,
        ..ServiceReport::default()
    }
}

#[test]
fn service_futex_openmp_and_recording_cost() {
    let service = ServiceReport {
        threads: vec![
            ServiceThreadRow {
                run_queue_wait_s: 0.25,
                ..ServiceThreadRow::default()
            },
            ServiceThreadRow {
                run_queue_wait_s: 0.5,
                ..ServiceThreadRow::default()
            },
        ],
        ..service(3.0, 1.75)
    };
    assert_eq!(
        service.headlines(),
        ["Service time: 3.000 s of CPU in 2.000 s of wall time, 1.75 threads active on average on 2 CPUs; the threads waited 750.0 ms runnable for a CPU."]
    );
    assert!(ServiceReport::default().headlines().is_empty());

    let futex = FutexReport {
        summary: FutexSummary {
            events: 5_000,
            contended_events: 1_200,
            wait_ns: 400_000_000,
            max_wait_ns: 9_000_000,
            critical_events: 30,
            critical_wait_ns: 12_000_000,
            ..FutexSummary::default()
        },
        by_word: vec![
            FutexWordRow {
                name: "queue.state".into(),
                wait_ns: 100_000_000,
                ..FutexWordRow::default()
            },
            FutexWordRow {
                name: "pool.lock".into(),
                wait_ns: 300_000_000,
                ..FutexWordRow::default()
            },
        ],
        ..FutexReport::default()
    };
    assert_eq!(
        futex.headlines(),
        [
            "Futex wait: 400.0 ms in 5,000 futex waits, 1,200 of which slept; the longest wait 9.000 ms.",
            "Futex word waited on most: pool.lock, 300.0 ms (75.00 % of the futex wait).",
            "Futex waits on the critical path: 12.00 ms in 30 waits.",
        ]
    );
    assert!(FutexReport::default().headlines().is_empty());

    let openmp = OpenMpReport {
        summary: OpenMpSummary {
            mutex_events: 100,
            mutex_wait_ns: 3_000_000,
            barrier_events: 64,
            barrier_wait_ns: 40_000_000,
            parallel_regions: 8,
            imbalance_ns: 25_000_000,
            critical_wait_ns: 10_000_000,
            ..OpenMpSummary::default()
        },
        barriers: vec![OmpBarrierRow {
            name: "solve (cg.c:120)".into(),
            wait_ns: 40_000_000,
            ..OmpBarrierRow::default()
        }],
        mutexes: vec![OmpMutexRow {
            name: "critical at cg.c:88".into(),
            wait_ns: 3_000_000,
            ..OmpMutexRow::default()
        }],
        ..OpenMpReport::default()
    };
    assert_eq!(
        openmp.headlines(),
        ["OpenMP: 40.00 ms waiting at barriers, 3.000 ms for critical sections and locks; load imbalance of the parallel regions 25.00 ms; 10.00 ms of the wait on the critical path; the most at solve (cg.c:120) (40.00 ms)."]
    );
    assert!(OpenMpReport::default().headlines().is_empty());

    let cost = recording_cost();
    assert_eq!(
        cost.headlines(),
        ["Recording cost: an estimated 30.00 ms added, 1.50 % of the program's CPU time."]
    );
    assert!(RecordingReport::default().headlines().is_empty());
}

/// An estimated 30 ms of recording cost, 1.5 % of the program's CPU time.
fn recording_cost() -> RecordingReport {
    RecordingReport {
        cost: RecordingCost {
            estimated_ns: Some(30_000_000),
            estimated_share: Some(0.015),
            share_of: "cpu_time".into(),
            ..RecordingCost::default()
        },
        ..RecordingReport::default()
    }
}

fn report() -> Report {
    let mut r = Report::new(RunInfo {
        recording: "q.data".into(),
        command: vec!["./q".into()],
        wall_ns: 2_000_000_000,
        ..RunInfo::default()
    })
    .with(locks())
    .with(service(3.0, 1.75));
    r.warnings = vec!["a warning".into()];
    r
}

#[test]
fn the_panel_follows_the_warnings_and_opens_the_html_page() {
    let opts = RenderOptions::default();
    let text = render_report(&report(), OutputFormat::Text, &opts);
    let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s} in\n{text}"));
    assert!(at("a warning") < at("At a glance"));
    // every section's lines, in registration order, before any section
    assert!(at("At a glance") < at("  - Lock wait: 80.00 ms"));
    assert!(at("  - Lock wait: 80.00 ms") < at("  - Service time: 3.000 s"));
    assert!(at("  - Service time: 3.000 s") < at("\nService time\n"));
    assert!(at("\nService time\n") < at("\nLock summary\n"));

    let html = render_report(&report(), OutputFormat::Html, &opts);
    let at = |s: &str| html.find(s).unwrap_or_else(|| panic!("{s} in the HTML"));
    // before the figures, in the page and in its navigation
    assert!(at("<section id=\"t-at-a-glance\">") < at("<section id=\"figures\">"));
    assert!(at("<a href=\"#t-at-a-glance\">") < at("<a href=\"#figures\">"));
    assert!(at("<li>Lock wait: 80.00 ms") > at("<section id=\"t-at-a-glance\">"));

    // CSV keeps raw numbers: no formatted sentences
    let csv = render_report(&report(), OutputFormat::Csv, &opts);
    assert!(!csv.contains("at_a_glance"), "{csv}");
    let md = render_report(&report(), OutputFormat::Markdown, &opts);
    assert!(md.contains("Lock wait: 80.00 ms"), "{md}");
}

/// The lines of a program whose locks are futex words: the lock section
/// (registered first) has no lock events, only a join on the critical
/// path, so its line follows the service time's and the futex section's,
/// and the recording's cost comes last, as it does after lock lines; with
/// lock events the lock section leads again.
#[test]
fn a_lock_section_without_lock_events_follows_the_futex_lines() {
    let joins_only = LockReport {
        summary: LockSummary::default(),
        other_waits: vec![WaitKindRow {
            kind: "join".into(),
            events: 2,
            contended_events: 2,
            wait_ns: 20_000_000,
            critical_wait_ns: 20_000_000,
            timeouts: 0,
        }],
        by_lock: vec![lock(
            "thread 7",
            "join",
            20_000_000,
            20_000_000,
            "main (m.rs:9)",
        )],
        ..LockReport::default()
    };
    assert!(!joins_only.headlines().is_empty());
    let futex = FutexReport {
        summary: FutexSummary {
            events: 10,
            contended_events: 10,
            wait_ns: 50_000_000,
            max_wait_ns: 9_000_000,
            ..FutexSummary::default()
        },
        ..FutexReport::default()
    };
    let cost = recording_cost();
    let glance = |locks: LockReport| -> Vec<String> {
        let r = Report::new(RunInfo::default())
            .with(locks)
            .with(service(3.0, 1.75))
            .with(futex.clone())
            .with(cost.clone());
        let text = render_report(&r, OutputFormat::Text, &RenderOptions::default());
        text.lines()
            .skip_while(|l| *l != "At a glance")
            .take_while(|l| !l.is_empty())
            .filter_map(|l| l.strip_prefix("  - "))
            .map(|l| l.split(':').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        glance(joins_only),
        [
            "Service time",
            "Futex wait",
            "Waits on the critical path for joined threads",
            "Recording cost"
        ]
    );
    let firsts = glance(locks());
    assert_eq!(firsts.first().map(String::as_str), Some("Lock wait"));
    assert_eq!(firsts.last().map(String::as_str), Some("Recording cost"));
}

/// A comparison's "At a glance": the wall time and each section's
/// glance metrics, a value per run with its change relative to the first;
/// `–` where a run lacks the section, a metric 0 in every run left out.
#[test]
fn comparison_lines_up_the_main_figures_of_every_run() {
    use contend::compare::Comparison;
    let run = |wall_ns: u64, wait_ns: u64, cpu_s: Option<f64>| {
        let mut l = locks();
        l.summary.wait_ns = wait_ns;
        l.critical_path.wait_ns = 0;
        let mut r = Report::new(RunInfo {
            wall_ns,
            ..RunInfo::default()
        })
        .with(l);
        if let Some(cpu_s) = cpu_s {
            r.push(Box::new(service(cpu_s, 1.5)));
        }
        r
    };
    let c = Comparison::new(vec![
        ("a".into(), run(2_000_000_000, 80_000_000, Some(3.0))),
        ("b".into(), run(1_500_000_000, 20_000_000, None)),
        ("c".into(), run(1_000_000_000, 40_000_000, Some(1.5))),
    ]);
    let text =
        contend::render::render_comparison(&c, OutputFormat::Text, &RenderOptions::default());
    let glance: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "At a glance")
        .skip(2)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(
        glance,
        [
            "  - Wall time: 2.000 s → 1.500 s (-25.0 %) → 1.000 s (-50.0 %)",
            "  - Lock wait: 80.00 ms → 20.00 ms (-75.0 %) → 40.00 ms (-50.0 %)",
            "  - Contended acquisitions: 250 → 250 (+0.0 %) → 250 (+0.0 %)",
            "  - CPU time (service time): 3.000 s → – → 1.500 s (-50.0 %)",
            "  - Active threads: 1.50 → – → 1.50 (+0.0 %)",
        ],
        "the critical path's wait, 0 in every run, is left out:\n{text}"
    );
    // in HTML before the figures, as in a report
    let html =
        contend::render::render_comparison(&c, OutputFormat::Html, &RenderOptions::default());
    let at = |s: &str| html.find(s).unwrap_or_else(|| panic!("{s} in the HTML"));
    assert!(at("<section id=\"t-at-a-glance\">") < at("<section id=\"figures\">"));
}
