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
//! glibc itself with inline futex code (`lll_lock`), never through an
//! interposable `pthread_*` or `syscall()` call, so the collector does not
//! see them; the kernel's futex tracepoints do (`record --futex-trace on`),
//! and [`runtime_futex_name`] names their futex words:
//!
//! | word's symbol, or the functions of its waits and wakes | name |
//! |---|---|
//! | `_IO_stdfile_0_lock`, `_1_`, `_2_` | `glibc stdio lock of stdin`, `stdout`, `stderr` |
//! | `list_all_lock` | `glibc stdio stream-list lock (list_all_lock)` |
//! | `main_arena…` | `glibc malloc arena lock (main_arena)` |
//! | `_dl_load_lock…`, `_dl_load_write_lock…`, `_rtld_global…` | `glibc dynamic loader lock (<symbol>)` |
//! | libstdc++'s `…emergency_pool…` | `libstdc++ emergency exception pool lock (<symbol>)` |
//! | libstdc++'s `…locale_mutex…` | `libstdc++ locale lock (<symbol>)` |
//! | `guard variable for X` | `C++ static initialisation guard of X` |
//! | no such symbol, `__cxa_guard_acquire`/`__cxa_guard_release` among the functions | `C++ static initialisation guard (<symbol or address>)` |
//! | no such symbol, `__lll_lock_wait_private`/`__lll_lock_wake_private` among the functions, and a stdio function (`_IO_…`, `printf`, `fputs`, …) | `glibc stdio lock (<symbol or address>)` |
//! | same, and a malloc function (`malloc`, `free`, `_int_malloc`, …) | `glibc malloc arena lock (<symbol or address>)` |
//! | same, neither | `glibc internal lock (<symbol or address>)` |
//!
//! The symbols of glibc's static variables come from its symbol table
//! (`.symtab`), which Debian ships in `libc6-dbg` (found by build ID);
//! without it the word has no symbol and the functions decide. The
//! functions are those of the call sites and of their recorded call
//! chains up to the user's frame (the tracepoints' user call chains are
//! walked by frame pointer, so through glibc they often end at its first
//! frame: `__lll_lock_wait_private` alone says "glibc internal lock").

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

/// glibc's stdio functions that take a stream's lock (and the internal
/// ones their waits are seen in).
fn is_stdio_function(f: &str) -> bool {
    const STDIO: &[&str] = &[
        "printf",
        "fprintf",
        "vprintf",
        "vfprintf",
        "dprintf",
        "puts",
        "fputs",
        "fputc",
        "putc",
        "putchar",
        "fwrite",
        "fread",
        "fgets",
        "fgetc",
        "getc",
        "getchar",
        "getline",
        "getdelim",
        "fflush",
        "fclose",
        "fopen",
        "fseek",
        "ftell",
        "rewind",
        "setvbuf",
        "ungetc",
        "scanf",
        "fscanf",
        "flockfile",
        "funlockfile",
        "ftrylockfile",
        "perror",
    ];
    let f = f.trim_start_matches('_');
    f.starts_with("IO_")
        || f.contains("vfprintf")
        || f.contains("vfscanf")
        || STDIO.contains(&f)
        || STDIO.iter().any(|s| f.strip_suffix("_unlocked") == Some(s))
}

/// glibc's malloc functions that take an arena's lock.
fn is_malloc_function(f: &str) -> bool {
    const MALLOC: &[&str] = &[
        "malloc",
        "free",
        "calloc",
        "realloc",
        "reallocarray",
        "memalign",
        "posix_memalign",
        "aligned_alloc",
        "valloc",
        "pvalloc",
        "malloc_trim",
        "malloc_stats",
        "malloc_info",
        "mallinfo",
        "mallinfo2",
        "int_malloc",
        "int_free",
        "int_realloc",
        "int_memalign",
        "libc_malloc",
        "libc_free",
        "libc_calloc",
        "libc_realloc",
        "libc_memalign",
        "arena_get2",
        "arena_get_retry",
        "get_free_list",
        "reused_arena",
        "tcache_init",
        "malloc_consolidate",
    ];
    MALLOC.contains(&f.trim_start_matches('_'))
}

/// The well-known name of a futex word of glibc or libstdc++ (the table
/// above): `symbol` is the word's name as the futex section has it (its
/// symbol, or its address when it has none), `functions` the function
/// names of its waits' and wakes' call sites and recorded call chains.
/// `None` when no rule applies (the word keeps its name).
pub fn runtime_futex_name<'a>(
    symbol: &str,
    functions: impl IntoIterator<Item = &'a str> + Clone,
) -> Option<String> {
    let b = base(symbol);
    let stdio_stream = match b {
        "_IO_stdfile_0_lock" => Some("stdin"),
        "_IO_stdfile_1_lock" => Some("stdout"),
        "_IO_stdfile_2_lock" => Some("stderr"),
        _ => None,
    };
    if let Some(stream) = stdio_stream {
        return Some(format!("glibc stdio lock of {stream} ({symbol})"));
    }
    match b {
        "list_all_lock" => return Some(format!("glibc stdio stream-list lock ({symbol})")),
        "main_arena" => return Some(format!("glibc malloc arena lock ({symbol})")),
        "_dl_load_lock" | "_dl_load_write_lock" | "_dl_load_tls_lock" | "_rtld_global" => {
            return Some(format!("glibc dynamic loader lock ({symbol})"))
        }
        _ => {}
    }
    if symbol.contains("emergency_pool") {
        return Some(format!(
            "libstdc++ emergency exception pool lock ({symbol})"
        ));
    }
    if symbol.contains("locale_mutex") {
        return Some(format!("libstdc++ locale lock ({symbol})"));
    }
    if let Some(object) = symbol.strip_prefix("guard variable for ") {
        return Some(format!("C++ static initialisation guard of {object}"));
    }
    let short = |f: &'a str| -> &'a str {
        // `libc.so.6:__lll_lock_wait_private+0x1b` → `__lll_lock_wait_private`
        let f = f.rsplit_once(':').map_or(f, |(_, n)| n);
        f.split(['+', ' ', '(']).next().unwrap_or(f)
    };
    let has = |pred: &dyn Fn(&str) -> bool| functions.clone().into_iter().any(|f| pred(short(f)));
    if has(&|f| f == "__cxa_guard_acquire" || f == "__cxa_guard_release") {
        return Some(format!("C++ static initialisation guard ({symbol})"));
    }
    if !has(&|f| f == "__lll_lock_wait_private" || f == "__lll_lock_wake_private") {
        return None;
    }
    Some(if has(&is_stdio_function) {
        format!("glibc stdio lock ({symbol})")
    } else if has(&is_malloc_function) {
        format!("glibc malloc arena lock ({symbol})")
    } else {
        format!("glibc internal lock ({symbol})")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glibc_and_libstdcxx_futex_words() {
        let none: [&str; 0] = [];
        assert_eq!(
            runtime_futex_name("_IO_stdfile_1_lock", none).as_deref(),
            Some("glibc stdio lock of stdout (_IO_stdfile_1_lock)")
        );
        assert_eq!(
            runtime_futex_name("_IO_stdfile_2_lock", none).as_deref(),
            Some("glibc stdio lock of stderr (_IO_stdfile_2_lock)")
        );
        assert_eq!(
            runtime_futex_name("main_arena", none).as_deref(),
            Some("glibc malloc arena lock (main_arena)")
        );
        assert_eq!(
            runtime_futex_name("_rtld_global+0x988", none).as_deref(),
            Some("glibc dynamic loader lock (_rtld_global+0x988)")
        );
        assert_eq!(
            runtime_futex_name("(anonymous namespace)::emergency_pool", none).as_deref(),
            Some("libstdc++ emergency exception pool lock ((anonymous namespace)::emergency_pool)")
        );
        assert_eq!(
            runtime_futex_name("guard variable for get_table()::table", none).as_deref(),
            Some("C++ static initialisation guard of get_table()::table")
        );
        // no symbol: the functions decide
        let stdio = ["__lll_lock_wait_private", "_IO_fputs", "main"];
        assert_eq!(
            runtime_futex_name("0x7f00001000", stdio).as_deref(),
            Some("glibc stdio lock (0x7f00001000)")
        );
        let malloc = ["libc.so.6:__lll_lock_wait_private+0x2b", "free"];
        assert_eq!(
            runtime_futex_name("0x7f00002000", malloc).as_deref(),
            Some("glibc malloc arena lock (0x7f00002000)")
        );
        assert_eq!(
            runtime_futex_name("0x7f00003000", ["__lll_lock_wait_private"]).as_deref(),
            Some("glibc internal lock (0x7f00003000)")
        );
        assert_eq!(
            runtime_futex_name("0x5500", ["__cxa_guard_acquire", "get_table"]).as_deref(),
            Some("C++ static initialisation guard (0x5500)")
        );
        // a program's own futex word keeps its name
        assert_eq!(runtime_futex_name("g_lock", ["lock_slow", "main"]), None);
        // free() alone (a program's futex wait inside a free hook) is not glibc's lock
        assert_eq!(runtime_futex_name("0x7f00004000", ["free"]), None);
    }

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
