//! Well-known runtime locks, named by what they are: a lock whose symbol
//! lies inside a runtime's own state is shown as the runtime's lock, its
//! symbol kept in parentheses (docs/usage.md, "Lock names").
//!
//! The table, one rule per runtime:
//!
//! | symbol | kinds | name |
//! |---|---|---|
//! | `_PyRuntime…` whose DWARF path has a `gil` component (`_PyRuntime.ceval.gil.cond`, 3.12's `_PyRuntime._main_interpreter._gil.mutex`) | any | `CPython GIL <kind> (<symbol>)` |
//! | `_PyRuntime+0x…` (symbol table only, e.g. Debian's `python3` without its dbgsym) | mutex, cond | `CPython GIL <kind> (<symbol>)` |
//! | other `_PyRuntime…` | any | `CPython runtime <kind> (<symbol>)` |
//!
//! Why `_PyRuntime+0x…` without DWARF is the GIL: in CPython 3.11 to 3.13
//! the only pthread mutexes and condition variables stored inside
//! `_PyRuntime` are the GIL's four (`mutex`, `cond`, `switch_mutex`,
//! `switch_cond` of `struct _gil_runtime_state`; in 3.12 and 3.13 inside
//! the main interpreter's state, which `_PyRuntime` embeds); every
//! `PyThread_type_lock` is allocated on the heap (a semaphore), and is
//! named by where it was created ([`super::creation`]).
//!
//! glibc's internal locks (stdio's `_IO_stdfile_1_lock`, malloc's
//! `main_arena` mutex, the dynamic loader's `_dl_load_lock`) are taken by
//! glibc itself with inline futex code, never through an interposable
//! `pthread_*` or `syscall()` call, so the collector does not see them and
//! they need no rule here.

/// `symbol` without its offset or member path: `_PyRuntime+0x188` and
/// `_PyRuntime.ceval.gil.cond` → `_PyRuntime`.
fn base(symbol: &str) -> &str {
    let end = symbol.find(['+', '.', '[']).unwrap_or(symbol.len());
    &symbol[..end]
}

/// The well-known name of a lock of kind `kind` (`mutex`, `cond`, …)
/// whose symbol is `symbol` (as the symbolizer names it), `None` when no
/// rule of the table above applies.
pub fn well_known_name(symbol: &str, kind: &str) -> Option<String> {
    if base(symbol) != "_PyRuntime" {
        return None;
    }
    let path_has_gil = symbol
        .split(['.', '['])
        .skip(1)
        .any(|part| part.trim_start_matches('_') == "gil");
    let offset_only = symbol.len() == "_PyRuntime".len() || symbol[10..].starts_with('+');
    let gil = path_has_gil || (offset_only && matches!(kind, "mutex" | "cond"));
    Some(if gil {
        format!("CPython GIL {kind} ({symbol})")
    } else {
        format!("CPython runtime {kind} ({symbol})")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpython_gil_by_dwarf_path_or_by_offset() {
        assert_eq!(
            well_known_name("_PyRuntime.ceval.gil.cond", "cond").as_deref(),
            Some("CPython GIL cond (_PyRuntime.ceval.gil.cond)")
        );
        assert_eq!(
            well_known_name("_PyRuntime._main_interpreter._gil.mutex", "mutex").as_deref(),
            Some("CPython GIL mutex (_PyRuntime._main_interpreter._gil.mutex)")
        );
        assert_eq!(
            well_known_name("_PyRuntime+0x188", "cond").as_deref(),
            Some("CPython GIL cond (_PyRuntime+0x188)")
        );
        // a semaphore in _PyRuntime is not one of the GIL's four objects
        assert_eq!(
            well_known_name("_PyRuntime+0x40", "semaphore").as_deref(),
            Some("CPython runtime semaphore (_PyRuntime+0x40)")
        );
        assert_eq!(
            well_known_name("_PyRuntime.interpreters.mutex", "mutex").as_deref(),
            Some("CPython runtime mutex (_PyRuntime.interpreters.mutex)")
        );
        assert_eq!(well_known_name("_PyRuntimeX", "mutex"), None);
        assert_eq!(well_known_name("queue_lock", "mutex"), None);
        assert_eq!(well_known_name("stripe_locks[6]", "mutex"), None);
    }
}
