//! `contend report --format html` (and `compare`, and a scale directory)
//! opened in headless Chromium: the page renders (a screenshot that is not
//! blank), every chart the document has is in the DOM as an SVG, and the
//! browser logs no error. The page must load nothing from the network.
//! `--format svg --chart NAME` gives one chart alone.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{contend_bin, which};
use crate::golden::fixtures;

fn chromium() -> Option<PathBuf> {
    which("chromium").or_else(|| which("chromium-browser"))
}

/// Chromium, headless, with a fresh profile, on `page`, plus `args`;
/// (standard output, standard error).
fn browse(browser: &Path, profile: &Path, page: &Path, args: &[&str]) -> (String, String) {
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The chart names of an HTML page (`data-chart="…"`).
fn charts(html: &str) -> Vec<String> {
    html.split("data-chart=\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap().to_string())
        .collect()
}

#[test]
fn html_reports_render_in_chromium() {
    let Some(browser) = chromium() else {
        eprintln!("SKIP: chromium is not installed, so the HTML report cannot be opened");
        return;
    };
    let tmp = fixtures();
    let kinds: [(&str, &[&str], &[&str]); 4] = [
        (
            "locks",
            &["report", "sharequeue-two.data"],
            &[
                "lock-wait-histogram",
                "lock-wait-histogram-critical-path",
                "lock-wait-hold",
                "site-wait-hold",
                "lock-timeline",
                "service-over-time",
            ],
        ),
        (
            "mpi",
            &["report", "mpi-waits.data"],
            &[
                "mpi-wait-by-rank",
                "mpi-wait-by-pattern",
                "mpi-classes",
                "service-over-time",
            ],
        ),
        ("scale", &["report", "scaling.scale"], &["speedup-loss"]),
        (
            "compare",
            &["compare", "sharequeue-single.data", "sharequeue-two.data"],
            &["compare-locks-summary"],
        ),
    ];
    for (kind, args, expected) in kinds {
        let page = tmp.path().join(format!("{kind}.html"));
        let out = Command::new(contend_bin())
            .args(args)
            .args(["--format", "html", "-o"])
            .arg(&page)
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{kind}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let html = std::fs::read_to_string(&page).unwrap();
        // Self-contained: no external scripts, styles, images or fonts.
        for bad in ["<link", "src=", "@import", "url(", "href=\"http"] {
            assert!(!html.contains(bad), "{kind}: {bad} in the page");
        }
        let names = charts(&html);
        for want in expected {
            assert!(
                names.iter().any(|n| n == want),
                "{kind}: no chart {want} in {names:?}"
            );
        }
        // Units on every value axis: each chart's SVG names one in parentheses
        // or is a count of events.
        let profile = tmp.path().join(format!("profile-{kind}"));
        let (dom, log) = browse(&browser, &profile, &page, &["--dump-dom"]);
        for name in &names {
            let at = dom
                .find(&format!("data-chart=\"{name}\""))
                .unwrap_or_else(|| panic!("{kind}: chart {name} not in the DOM"));
            let figure = &dom[at..at + dom[at..].find("</figure>").unwrap()];
            assert!(figure.contains("<svg"), "{kind}: chart {name} has no SVG");
            assert!(
                figure.contains("<rect") || figure.contains("<polyline"),
                "{kind}: {name} draws nothing"
            );
        }
        // The sorting script ran without error: no uncaught exception, no
        // console error.
        for line in log.lines() {
            assert!(
                !(line.contains("Uncaught")
                    || (line.contains("CONSOLE") && line.contains("ERROR"))),
                "{kind}: {line}"
            );
        }
        // On a narrow window the page does not scroll sideways (a wide
        // table scrolls in its own box) and every navigation link is on
        // screen: a copy of the page with a script that measures the
        // layout and writes what it found into the DOM.
        let (width, outside) = narrow_layout(&browser, tmp.path(), kind, &html);
        assert!(
            width <= 900,
            "{kind}: the page is {width} px wide in a 900 px window"
        );
        assert_eq!(outside, "[]", "{kind}: navigation links off screen");
        let shot = tmp.path().join(format!("{kind}.png"));
        let profile = tmp.path().join(format!("profile-{kind}-shot"));
        browse(
            &browser,
            &profile,
            &page,
            &[
                "--window-size=1280,1600",
                &format!("--screenshot={}", shot.display()),
            ],
        );
        let png = std::fs::read(&shot).unwrap();
        assert_eq!(&png[1..4], b"PNG", "{kind}: a PNG");
        // A blank page compresses to a few kilobytes; charts and tables
        // do not.
        assert!(
            png.len() > 40_000,
            "{kind}: screenshot of {} bytes",
            png.len()
        );
    }
}

/// The page `html` laid out by Chromium in a window 900 px wide: the
/// document's width (px) and the texts of the navigation links whose right
/// edge lies past the window (a JSON list, `[]` when none).
fn narrow_layout(browser: &Path, dir: &Path, kind: &str, html: &str) -> (u64, String) {
    const PROBE: &str = r#"<script>
var w = window.innerWidth, outside = [];
document.querySelectorAll("nav a").forEach(function (a) {
  if (a.getBoundingClientRect().right > w + 0.5) outside.push(a.textContent);
});
var pre = document.createElement("pre");
pre.textContent = "layout width=" + document.documentElement.scrollWidth + " outside=" + JSON.stringify(outside) + " end";
document.body.appendChild(pre);
</script>"#;
    let probe = dir.join(format!("{kind}-layout.html"));
    std::fs::write(&probe, format!("{html}{PROBE}")).unwrap();
    let profile = dir.join(format!("profile-{kind}-layout"));
    let (dom, _) = browse(
        browser,
        &profile,
        &probe,
        &["--window-size=900,700", "--dump-dom"],
    );
    let found = dom
        .rsplit("layout width=")
        .next()
        .filter(|s| s.starts_with(|c: char| c.is_ascii_digit()))
        .unwrap_or_else(|| panic!("{kind}: the layout probe did not run"));
    let (width, rest) = found.split_once(" outside=").unwrap();
    let outside = rest.split(" end").next().unwrap();
    (width.parse().unwrap(), outside.to_string())
}

#[test]
fn one_chart_alone_as_svg() {
    let tmp = fixtures();
    let out = Command::new(contend_bin())
        .args([
            "report",
            "scaling.scale",
            "--format",
            "svg",
            "--chart",
            "speedup-loss",
        ])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = String::from_utf8(out.stdout).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    for label in [
        "P (useful)",
        "R (memory contention)",
        "D (other dependencies)",
        "Speed-up, measured",
        "Speed-up and its loss (threads)",
    ] {
        assert!(svg.contains(label), "{label}");
    }
    // Without --chart: the valid names.
    let out = Command::new(contend_bin())
        .args(["report", "scaling.scale", "--format", "svg"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("speedup-loss"));
    // LaTeX includes the charts it writes as SVG files.
    let out = Command::new(contend_bin())
        .args([
            "report",
            "mpi-waits.data",
            "--format",
            "latex",
            "--figures",
            "figs",
        ])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tex = String::from_utf8(out.stdout).unwrap();
    for chart in ["mpi-wait-by-rank", "mpi-wait-by-pattern", "mpi-classes"] {
        assert!(
            tex.contains(&format!("\\includesvg[width=\\linewidth]{{figs/{chart}}}")),
            "{chart}"
        );
        let svg = std::fs::read_to_string(tmp.path().join(format!("figs/{chart}.svg"))).unwrap();
        assert!(svg.starts_with("<svg"));
    }
    assert!(tex.contains("\\begin{table}"));
}
