//! `contend watch`: a live terminal view of a meters blackboard (after
//! RCRTool, Fowler et al. 2011): the meters with their short-term
//! statistics and trigger states, the lock meters of recorded processes
//! (top locks by wait per second) and the state programs publish, redrawn
//! at a human rate. Quits on `q`, Esc or Ctrl-C and restores the terminal.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use contend_meters::blackboard::{Freshness, MeterSnapshot, Reader};
use contend_meters::layout::{Scope, TriggerState};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Row, Table};
use ratatui::Frame;

#[derive(Args)]
pub struct WatchArgs {
    /// Blackboard name (/dev/shm/NAME) or path
    #[arg(long, value_name = "NAME")]
    blackboard: Option<String>,
    /// Time between redraws
    #[arg(long, value_name = "DURATION", value_parser = duration, default_value = "500ms")]
    refresh: Duration,
}

fn duration(s: &str) -> Result<Duration, contend::config::DurationError> {
    contend::config::parse_duration(s)
}

pub fn cmd_watch(a: WatchArgs) -> Result<ExitCode> {
    let name = a
        .blackboard
        .unwrap_or_else(|| contend_meters::DEFAULT_NAME.to_string());
    let path = contend_meters::path_of(&name);
    let mut reader = Reader::open(&path)?;
    if a.refresh < Duration::from_millis(50) {
        anyhow::bail!("--refresh {:?}: at least 50 ms", a.refresh);
    }
    let mut terminal = ratatui::try_init().context("cannot set up the terminal")?;
    let result = (|| -> Result<()> {
        loop {
            let fresh = reader.refresh();
            terminal.draw(|f| draw(f, &reader, fresh))?;
            if event::poll(a.refresh)? {
                if let Event::Key(k) = event::read()? {
                    let ctrl_c =
                        k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                    if k.kind == KeyEventKind::Press
                        && (matches!(k.code, KeyCode::Char('q') | KeyCode::Esc) || ctrl_c)
                    {
                        return Ok(());
                    }
                }
            }
        }
    })();
    ratatui::try_restore().context("cannot restore the terminal")?;
    result?;
    Ok(ExitCode::SUCCESS)
}

fn num(v: f64) -> String {
    let a = v.abs();
    if v.is_nan() {
        "-".into()
    } else if v == 0.0 {
        "0".into()
    } else if !(1e-3..1e6).contains(&a) {
        format!("{v:.3e}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

fn trigger_cell(t: TriggerState) -> (String, Style) {
    match t {
        TriggerState::High => (
            "HIGH".into(),
            Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
        ),
        TriggerState::Clear => ("clear".into(), Style::default().fg(Color::Green)),
        TriggerState::None => ("-".into(), Style::default()),
    }
}

fn meter_row(m: &MeterSnapshot) -> Row<'static> {
    let scope = if m.desc.label.is_empty() {
        m.desc.scope.label()
    } else {
        format!("{} {}", m.desc.scope.label(), m.desc.label)
    };
    let (t, style) = trigger_cell(m.trigger);
    let v = m.values.unwrap_or_default();
    let vals = if m.values.is_some() {
        [num(v.value), num(v.avg), num(v.min), num(v.max)]
    } else {
        ["-".into(), "-".into(), "-".into(), "-".into()]
    };
    let [value, avg, min, max] = vals;
    Row::new(vec![
        m.desc.name.clone(),
        scope,
        value,
        avg,
        min,
        max,
        m.desc.unit.clone(),
        t,
    ])
    .style(style)
}

fn draw(f: &mut Frame, r: &Reader, fresh: Freshness) {
    let meters = r.meters();
    let (mut system, mut locks): (Vec<&MeterSnapshot>, Vec<&MeterSnapshot>) = meters
        .iter()
        .filter(|m| !m.values.is_some_and(|v| v.ended))
        .partition(|m| !matches!(m.desc.scope, Scope::Process(_) | Scope::Lock(_)));
    system.sort_by_key(|m| (m.desc.scope, m.slot));
    locks.retain(|m| m.desc.name == "lock_wait_rate");
    locks.sort_by(|a, b| {
        let w = |m: &MeterSnapshot| m.values.map_or(0.0, |v| v.avg);
        w(b).total_cmp(&w(a))
    });
    let apps = r.apps();
    let state = match fresh {
        Freshness::Live => "live",
        Freshness::Reopened => "daemon restarted: reopened",
        Freshness::NoDaemon => "NO DAEMON (last values shown)",
    };
    let [head, top, bottom, app_area, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(6),
        Constraint::Length((locks.len().min(10) as u16) + 3),
        Constraint::Length((apps.len().min(5) as u16) + 2),
        Constraint::Length(1),
    ])
    .areas(f.area());
    f.render_widget(
        Paragraph::new(Line::from(format!(
            "contend watch — {} — daemon pid {} on {}, interval {} ms, window {} ms — {}",
            r.path().display(),
            r.writer_pid(),
            r.host(),
            r.interval_ns() as f64 / 1e6,
            r.window_ns() as f64 / 1e6,
            state
        ))),
        head,
    );
    let widths = [
        Constraint::Length(22),
        Constraint::Length(22),
        Constraint::Length(11),
        Constraint::Length(11),
        Constraint::Length(11),
        Constraint::Length(11),
        Constraint::Length(9),
        Constraint::Length(7),
    ];
    let header = Row::new(vec![
        "meter", "scope", "value", "avg", "min", "max", "unit", "trigger",
    ])
    .style(Style::default().add_modifier(Modifier::BOLD));
    f.render_widget(
        Table::new(system.iter().map(|m| meter_row(m)), widths)
            .header(header.clone())
            .block(Block::bordered().title(" meters ")),
        top,
    );
    f.render_widget(
        Table::new(locks.iter().take(10).map(|m| meter_row(m)), widths)
            .header(header)
            .block(Block::bordered().title(" lock waits of recorded processes (threads waiting) ")),
        bottom,
    );
    f.render_widget(
        Table::new(
            apps.iter().take(5).map(|a| {
                Row::new(vec![
                    a.pid.to_string(),
                    a.phase.clone(),
                    a.threads_running.to_string(),
                    a.threads_waiting.to_string(),
                ])
            }),
            [
                Constraint::Length(10),
                Constraint::Length(30),
                Constraint::Length(10),
                Constraint::Length(10),
            ],
        )
        .header(Row::new(vec!["pid", "phase", "running", "waiting"]))
        .block(Block::bordered().title(" applications ")),
        app_area,
    );
    f.render_widget(Paragraph::new("q: quit"), foot);
}
