//! Number formatting shared by the human-readable formats.

use super::TimeUnit;

/// Typography of one output format.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Style {
    /// Thousands separator.
    pub thousands: &'static str,
    /// Space between a number and its unit.
    pub space: &'static str,
    /// Microsecond symbol.
    pub micro: &'static str,
    /// Per-cent sign.
    pub percent: &'static str,
}

/// Text and Markdown.
pub(crate) const PLAIN: Style = Style {
    thousands: ",",
    space: " ",
    micro: "µs",
    percent: "%",
};

/// LaTeX (`991\,471`, `1.234~$\mu$s`, `25.36~\%`), as in the thesis's tables.
pub(crate) const LATEX: Style = Style {
    thousands: "\\,",
    space: "~",
    micro: "$\\mu$s",
    percent: "\\%",
};

/// `1234567` → `1,234,567`.
pub(crate) fn int(n: u64, st: &Style) -> String {
    let digits = n.to_string();
    let groups: Vec<String> = digits
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|g| g.iter().map(|&b| char::from(b)).collect())
        .collect();
    groups.join(st.thousands)
}

/// `n` grouped in plain typography (`1,234,567`), for counts in sentences.
pub(crate) fn int_plain(n: u64) -> String {
    int(n, &PLAIN)
}

/// `x` with `decimals` decimals and a grouped integer part (`x` ≥ 0).
fn decimal(x: f64, decimals: usize, st: &Style) -> String {
    let s = format!("{x:.decimals$}");
    let (whole, frac) = s.split_once('.').unwrap_or((&s, ""));
    let grouped = whole
        .parse::<u64>()
        .map(|w| int(w, st))
        .unwrap_or_else(|_| whole.to_string());
    if frac.is_empty() {
        grouped
    } else {
        format!("{grouped}.{frac}")
    }
}

/// A duration of `ns` nanoseconds in `unit`: `523 ns`, `1.234 ms`, `12.50 s`
/// for [`TimeUnit::Auto`] (4 significant digits); fixed units print
/// integers (ns) or 3 decimals.
/// `ns` in the most readable unit, plain typography (`1.024 µs`).
pub(crate) fn duration_plain(ns: u64) -> String {
    duration(ns as f64, TimeUnit::Auto, &PLAIN)
}

pub(crate) fn duration(ns: f64, unit: TimeUnit, st: &Style) -> String {
    let ns = ns.max(0.0);
    let (scale, name, decimals) = match unit {
        TimeUnit::Ns => (1.0, "ns", 0),
        TimeUnit::Us => (1e3, st.micro, 3),
        TimeUnit::Ms => (1e6, "ms", 3),
        TimeUnit::S => (1e9, "s", 3),
        TimeUnit::Auto => return auto_duration(ns, st),
    };
    format!("{}{}{name}", decimal(ns / scale, decimals, st), st.space)
}

fn auto_duration(ns: f64, st: &Style) -> String {
    const UNITS: [(f64, &str); 4] = [(1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s")];
    if ns < 1000.0 {
        return format!("{ns:.0}{}ns", st.space);
    }
    let mut u = UNITS
        .iter()
        .rposition(|(scale, _)| ns >= *scale)
        .unwrap_or(0);
    loop {
        let (scale, name) = UNITS[u];
        let v = ns / scale;
        let decimals = if v < 10.0 {
            3
        } else if v < 100.0 {
            2
        } else if v < 1000.0 {
            1
        } else {
            0
        };
        // 999.96 µs rounds to 1000.0 µs: show 1.000 ms instead.
        let rounded = format!("{v:.decimals$}").parse::<f64>().unwrap_or(v);
        if rounded >= 1000.0 && u + 1 < UNITS.len() {
            u += 1;
            continue;
        }
        let name = if name == "µs" { st.micro } else { name };
        return format!("{}{}{name}", decimal(v, decimals, st), st.space);
    }
}

/// A share in [0, 1] as a percentage with 2 decimals: `25.36 %`.
pub(crate) fn percent(fraction: f64, st: &Style) -> String {
    format!("{:.2}{}{}", fraction * 100.0, st.space, st.percent)
}

/// A per cent change with its sign, 1 decimal: `-25.0 %`, `+3.3 %`; `n/a`
/// when undefined (base 0).
pub(crate) fn change(pct: Option<f64>, st: &Style) -> String {
    match pct {
        Some(p) => format!("{p:+.1}{}{}", st.space, st.percent),
        None => "n/a".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_grouped() {
        assert_eq!(int(0, &PLAIN), "0");
        assert_eq!(int(999, &PLAIN), "999");
        assert_eq!(int(1000, &PLAIN), "1,000");
        assert_eq!(int(991_471, &LATEX), "991\\,471");
        assert_eq!(int(1_234_567, &PLAIN), "1,234,567");
    }

    #[test]
    fn durations_pick_a_readable_unit() {
        let d = |ns: f64| duration(ns, TimeUnit::Auto, &PLAIN);
        assert_eq!(d(0.0), "0 ns");
        assert_eq!(d(523.0), "523 ns");
        assert_eq!(d(1_234.0), "1.234 µs");
        assert_eq!(d(1_234_000.0), "1.234 ms");
        assert_eq!(d(12_500_000_000.0), "12.50 s");
        assert_eq!(d(999_960.0), "1.000 ms");
        assert_eq!(d(4_000_000_000_000.0), "4,000 s");
        assert_eq!(
            duration(38_502_123_456.0, TimeUnit::Ms, &PLAIN),
            "38,502.123 ms"
        );
        assert_eq!(duration(1_500.0, TimeUnit::Ns, &PLAIN), "1,500 ns");
        assert_eq!(duration(1_500.0, TimeUnit::Us, &LATEX), "1.500~$\\mu$s");
    }

    #[test]
    fn percentages() {
        assert_eq!(percent(0.2536, &PLAIN), "25.36 %");
        assert_eq!(change(Some(-25.0), &PLAIN), "-25.0 %");
        assert_eq!(change(Some(10.0), &LATEX), "+10.0~\\%");
        assert_eq!(change(None, &PLAIN), "n/a");
    }
}
