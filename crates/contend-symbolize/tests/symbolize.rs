//! Integration tests of `contend_symbolize` against small C and C++ programs
//! built with gcc/g++ at test time (fixtures in `tests/fixtures/symbolize/`).
//!
//! Each fixture prints the return address of a call site (as the collector
//! records it, via `__builtin_return_address(0)`), addresses of lock objects,
//! and its own `/proc/self/maps`; the test writes those maps as a recorded
//! `maps/<pid>.maps` file and symbolizes the addresses after the process has
//! exited. Tests that need gcc print a SKIP line and pass when it is missing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use contend_symbolize::{
    build_id, build_id_hex, CodeLocation, DebugInfoSource, ModuleInfo, ProcessMaps, SymbolizeError,
    Symbolizer, SymbolizerOptions,
};

const MUTEX_SIZE: u64 = 40; // sizeof(pthread_mutex_t) on x86_64 glibc

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/symbolize")
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Skips the calling test (returning early) when the compiler is missing.
macro_rules! require {
    ($tool:expr) => {
        if !have($tool) {
            eprintln!(
                "SKIP {}: `{}` not found, symbolize fixtures cannot be built",
                module_path!(),
                $tool
            );
            return;
        }
    };
}

/// Runs a tool and panics with its stderr on failure.
fn tool(prog: &str, args: &[&str], cwd: &Path) {
    let out = Command::new(prog)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {prog}: {e}"));
    assert!(
        out.status.success(),
        "{prog} {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compiles `src` (a fixture file name) into `dir/out` with extra flags.
fn compile(compiler: &str, dir: &Path, src: &str, out: &str, flags: &[&str]) -> PathBuf {
    let src = fixtures().join(src);
    let out_path = dir.join(out);
    let (s, o) = (src.to_str().unwrap(), out_path.to_str().unwrap());
    // Flags after the source, so that libraries (-l) link.
    let mut args: Vec<&str> = vec!["-O0", "-Wl,--build-id", "-pthread", "-o", o, s];
    args.extend_from_slice(flags);
    tool(compiler, &args, dir);
    out_path
}

/// What a fixture run printed.
struct Run {
    maps: String,
    code: HashMap<String, u64>,
    data: HashMap<String, u64>,
}

fn parse_hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16)
        .unwrap_or_else(|_| panic!("bad address {s:?}"))
}

fn run(exe: &Path) -> Run {
    let out = Command::new(exe).output().expect("run fixture");
    assert!(
        out.status.success(),
        "{} failed: {}",
        exe.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut r = Run {
        maps: String::new(),
        code: HashMap::new(),
        data: HashMap::new(),
    };
    let mut in_maps = false;
    for line in text.lines() {
        match line {
            "MAPS BEGIN" => in_maps = true,
            "MAPS END" => in_maps = false,
            l if in_maps => {
                r.maps.push_str(l);
                r.maps.push('\n');
            }
            l => {
                let w: Vec<&str> = l.split_whitespace().collect();
                match w.as_slice() {
                    ["code", name, addr] => {
                        r.code.insert(name.to_string(), parse_hex(addr));
                    }
                    ["data", name, addr] => {
                        r.data.insert(name.to_string(), parse_hex(addr));
                    }
                    _ => {}
                }
            }
        }
    }
    assert!(!r.maps.is_empty(), "fixture printed no maps");
    r
}

/// Writes the run's maps as a recorded file (`maps/<n>.maps`) behind an older
/// snapshot that maps every page of the fixture's own modules to a path that
/// does not exist, then reads it back: lookups must use the latest snapshot.
fn recorded_maps(dir: &Path, run: &Run, name: &str) -> ProcessMaps {
    let maps_dir = dir.join("maps");
    std::fs::create_dir_all(&maps_dir).unwrap();
    let mut stale = String::new();
    for line in run.maps.lines() {
        if line.contains(dir.to_str().unwrap()) {
            let range = line.split_whitespace().next().unwrap();
            stale.push_str(&format!(
                "{range} r-xp 00000000 08:01 1 /nonexistent/stale-module\n"
            ));
        }
    }
    let text = format!("# snapshot 0 1000\n{stale}# snapshot 1 2000\n{}", run.maps);
    let path = maps_dir.join(format!("{name}.maps"));
    std::fs::write(&path, text).unwrap();
    let maps = ProcessMaps::from_file(&path).expect("read recorded maps");
    assert!(maps.malformed.is_empty(), "{:?}", maps.malformed);
    assert_eq!(maps.snapshots.len(), 2);
    maps
}

/// 1-based line of the fixture source containing `SITE:<tag>`.
fn site_line(src: &str, tag: &str) -> u32 {
    let text = std::fs::read_to_string(fixtures().join(src)).unwrap();
    let marker = format!("SITE:{tag}");
    let i = text
        .lines()
        .position(|l| l.contains(&marker))
        .unwrap_or_else(|| panic!("{marker} not in {src}"));
    i as u32 + 1
}

/// Options that look nowhere outside the test's own directories.
fn isolated() -> SymbolizerOptions {
    SymbolizerOptions {
        debug_dirs: Vec::new(),
        debuginfod: false,
        debuginfod_urls: None,
        ..SymbolizerOptions::default()
    }
}

fn file_name(p: &Option<String>) -> Option<&str> {
    p.as_deref().map(|p| p.rsplit('/').next().unwrap())
}

/// Asserts a DWARF-resolved site in `function` at `src:SITE:tag`.
fn assert_dwarf_site(loc: &CodeLocation, function: &str, src: &str, tag: &str) {
    assert_eq!(loc.debug, DebugInfoSource::Dwarf, "{loc:?}");
    assert_eq!(loc.function.as_deref(), Some(function), "{loc:?}");
    assert_eq!(file_name(&loc.file), Some(src), "{loc:?}");
    assert_eq!(loc.line, Some(site_line(src, tag)), "{loc:?}");
}

#[test]
fn symbolizer_is_send() {
    fn assert_send<T: Send>() {}
    assert_send::<Symbolizer>();
    assert_send::<ProcessMaps>();
}

/// `sites.c` built as a PIE with DWARF in `dir`, run, and its maps
/// recorded as process 100.
fn pie_sites(dir: &Path) -> (PathBuf, Run, ProcessMaps) {
    let exe = compile("gcc", dir, "sites.c", "sites", &["-g", "-fPIE", "-pie"]);
    let r = run(&exe);
    let maps = recorded_maps(dir, &r, "100");
    (exe, r, maps)
}

#[test]
fn pie_executable_with_dwarf() {
    require!("gcc");
    let tmp = tempfile::tempdir().unwrap();
    let (exe, r, maps) = pie_sites(tmp.path());
    let mut sym = Symbolizer::with_options(isolated());

    let ra = r.code["worker"];
    let loc = sym.resolve_code(&maps, ra);
    assert_dwarf_site(&loc, "worker", "sites.c", "worker");
    assert_eq!(loc.address, ra);
    assert_eq!(loc.module.as_deref(), exe.to_str());
    assert!(loc.inlined_into.is_empty(), "{loc:?}");
    // PIE: the ELF virtual address is the offset from the load base, the
    // start of the mapping at file offset 0.
    let base = maps
        .snapshots
        .last()
        .unwrap()
        .mappings
        .iter()
        .find(|m| m.path.as_deref() == exe.to_str() && m.file_offset == 0)
        .unwrap()
        .start;
    assert_eq!(loc.module_offset, ra - base);
    assert!(loc.function_offset.unwrap() > 0);
    let line = site_line("sites.c", "worker");
    assert_eq!(loc.display_short(), format!("worker (sites.c:{line})"));

    // The call is the last instruction of its line: only `return address − 1`
    // lies on the call's line.
    let loc = sym.resolve_code(&maps, r.code["next_line"]);
    assert_dwarf_site(&loc, "worker_next_line", "sites.c", "next_line");

    // Inlined call site: innermost frame's function and line, enclosing frame
    // listed in inlined_into.
    let loc = sym.resolve_code(&maps, r.code["worker_inl"]);
    assert_dwarf_site(&loc, "inlined_helper", "sites.c", "inlined");
    assert_eq!(loc.inlined_into.len(), 1, "{loc:?}");
    let outer = &loc.inlined_into[0];
    assert_eq!(outer.function.as_deref(), Some("worker_inl"));
    assert_eq!(outer.line, Some(site_line("sites.c", "worker_inl")));
    assert_eq!(loc.outer_function(), Some("worker_inl"));

    // Data: .bss, .data, and .bss past the last file page (anonymous mapping).
    let d = sym
        .resolve_data(&maps, r.data["global_lock"])
        .expect("global_lock");
    assert_eq!(
        (d.name.as_str(), d.offset, d.size),
        ("global_lock", 0, MUTEX_SIZE)
    );
    // A lock variable keeps its plain name: its type is a system header's.
    assert_eq!(
        (d.display_short(), d.member.as_deref()),
        ("global_lock".into(), None)
    );
    assert_eq!(d.module, exe.to_str().unwrap());
    let d = sym
        .resolve_data(&maps, r.data["recursive_lock"])
        .expect("recursive_lock");
    assert_eq!((d.name.as_str(), d.offset), ("recursive_lock", 0));
    let d = sym
        .resolve_data(&maps, r.data["bss_locks_0"])
        .expect("bss_locks[0]");
    assert_eq!((d.name.as_str(), d.offset), ("bss_locks", 0));
    assert_eq!(d.display_short(), "bss_locks[0]");
    let far = r.data["bss_locks_8000"];
    assert_eq!(
        maps.find(far).and_then(|m| m.path.clone()),
        None,
        "bss_locks[8000] should lie in the anonymous mapping after the executable"
    );
    let d = sym.resolve_data(&maps, far).expect("bss_locks[8000]");
    assert_eq!(
        (d.name.as_str(), d.offset),
        ("bss_locks", 8000 * MUTEX_SIZE)
    );
    // The element, from the array's DWARF type (was `bss_locks+0x4e200`).
    assert_eq!(d.display_short(), "bss_locks[8000]");
    assert_eq!((d.member.as_deref(), d.member_offset), (Some("[8000]"), 0));

    // Heap and stack are not variables.
    assert_eq!(sym.resolve_data(&maps, r.data["heap"]), None);
    assert_eq!(sym.resolve_data(&maps, r.data["stack"]), None);

    assert!(
        sym.modules_without_debug_info().is_empty(),
        "{:?}",
        sym.modules()
    );
    let info = sym.modules();
    assert_eq!(info.len(), 1, "{info:?}");
    assert_eq!(info[0].debug, DebugInfoSource::Dwarf);
    assert_eq!(info[0].debug_file.as_deref(), Some(exe.as_path()));
    assert_eq!(info[0].build_id, build_id(&exe).map(|b| build_id_hex(&b)));
    assert!(!info[0].replaced);
    assert_eq!(info[0].code_lookups, 3);
    assert_eq!(info[0].dwarf_context_builds, 1);

    // Released debug information is not read again for an address resolved
    // before (the lock analysis resolves the trace's tables before pairing,
    // releases, and names the sites after: docs/architecture.md); the same
    // answer comes back. A new address builds the context again.
    let before = sym.resolve_code(&maps, r.code["worker"]);
    sym.release_debug_info();
    let again = sym.resolve_code(&maps, r.code["worker"]);
    assert_eq!(again, before);
    assert_eq!(sym.modules()[0].dwarf_context_builds, 1);
    // (One byte past a return address: the instruction after the call,
    // still in the same function.)
    let loc = sym.resolve_code(&maps, r.code["next_line"] + 1);
    assert_eq!(loc.function.as_deref(), Some("worker_next_line"), "{loc:?}");
    assert_eq!(sym.modules()[0].dwarf_context_builds, 2);
}

#[test]
fn non_pie_executable_with_dwarf() {
    require!("gcc");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let exe = compile(
        "gcc",
        dir,
        "sites.c",
        "sites_nopie",
        &["-g", "-fno-pie", "-no-pie"],
    );
    let r = run(&exe);
    let maps = recorded_maps(dir, &r, "101");
    let mut sym = Symbolizer::with_options(isolated());
    let loc = sym.resolve_code(&maps, r.code["worker"]);
    assert_dwarf_site(&loc, "worker", "sites.c", "worker");
    // Fixed-address executable: virtual address == runtime address.
    assert_eq!(loc.module_offset, r.code["worker"]);
    let d = sym
        .resolve_data(&maps, r.data["bss_locks_8000"])
        .expect("bss_locks[8000]");
    assert_eq!(
        (d.name.as_str(), d.offset),
        ("bss_locks", 8000 * MUTEX_SIZE)
    );
}

#[test]
fn shared_library_with_dwarf() {
    require!("gcc");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let lib = compile(
        "gcc",
        dir,
        "libsites.c",
        "libsites.so",
        &["-g", "-shared", "-fPIC"],
    );
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let libdir = format!("-L{}", dir.display());
    let exe = compile(
        "gcc",
        dir,
        "uselib.c",
        "uselib",
        &["-g", &libdir, "-lsites", &rpath],
    );
    let r = run(&exe);
    let maps = recorded_maps(dir, &r, "102");
    let mut sym = Symbolizer::with_options(isolated());

    let loc = sym.resolve_code(&maps, r.code["lib_worker"]);
    assert_dwarf_site(&loc, "lib_worker", "libsites.c", "lib_worker");
    assert_eq!(loc.module.as_deref(), lib.to_str());
    assert_eq!(loc.module_name(), Some("libsites.so"));

    let d = sym
        .resolve_data(&maps, r.data["lib_lock"])
        .expect("lib_lock");
    assert_eq!((d.name.as_str(), d.offset), ("lib_lock", 0));
    assert_eq!(d.module, lib.to_str().unwrap());
    let d = sym
        .resolve_data(&maps, r.data["lib_static_locks_4000"])
        .expect("lib_static_locks[4000]");
    assert_eq!(
        (d.name.as_str(), d.offset),
        ("lib_static_locks", 4000 * MUTEX_SIZE)
    );
}

#[test]
fn stripped_binaries_degrade() {
    require!("gcc");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let exe_sd = compile("gcc", dir, "sites.c", "sites_sd", &["-g", "-fPIE", "-pie"]);
    tool("strip", &["--strip-debug", "sites_sd"], dir);
    let exe_sa = compile("gcc", dir, "sites.c", "sites_sa", &["-g", "-fPIE", "-pie"]);
    tool("strip", &["--strip-all", "sites_sa"], dir);

    // --strip-debug: the symbol table remains.
    let r = run(&exe_sd);
    let maps = recorded_maps(dir, &r, "103");
    let mut sym = Symbolizer::with_options(isolated());
    let sd = sym.resolve_code(&maps, r.code["worker"]);
    assert_eq!(sd.debug, DebugInfoSource::SymbolTable, "{sd:?}");
    assert_eq!(sd.function.as_deref(), Some("worker"));
    assert_eq!((sd.file.as_deref(), sd.line), (None, None));
    let off = sd.function_offset.expect("offset into worker");
    assert_eq!(sd.display_short(), format!("sites_sd:worker+{off:#x}"));
    let d = sym
        .resolve_data(&maps, r.data["global_lock"])
        .expect("global_lock");
    assert_eq!(d.name, "global_lock");
    let d = sym
        .resolve_data(&maps, r.data["bss_locks_8000"])
        .expect("bss_locks");
    assert_eq!(
        (d.name.as_str(), d.offset),
        ("bss_locks", 8000 * MUTEX_SIZE)
    );
    assert_eq!(
        sym.modules_without_debug_info(),
        vec![exe_sd.to_str().unwrap().to_string()]
    );
    assert_eq!(sym.modules()[0].debug, DebugInfoSource::SymbolTable);

    // --strip-all: a PIE's .dynsym exports no functions of its own, so only
    // module+offset remains (the same offset as above: identical layout).
    let r = run(&exe_sa);
    let maps = recorded_maps(dir, &r, "104");
    let mut sym = Symbolizer::with_options(isolated());
    let sa = sym.resolve_code(&maps, r.code["worker"]);
    assert_eq!(sa.debug, DebugInfoSource::None, "{sa:?}");
    assert_eq!(sa.function, None);
    assert_eq!(sa.module.as_deref(), exe_sa.to_str());
    assert_eq!(sa.module_offset, sd.module_offset);
    assert_eq!(
        sa.display_short(),
        format!("sites_sa+{:#x}", sa.module_offset)
    );
    assert_eq!(sym.resolve_data(&maps, r.data["global_lock"]), None);
    assert_eq!(
        sym.modules_without_debug_info(),
        vec![exe_sa.to_str().unwrap().to_string()]
    );
    assert_eq!(sym.modules()[0].debug, DebugInfoSource::None);
    let problem = sym.modules()[0].problem.clone().unwrap();
    assert!(problem.contains("no separate debug file"), "{problem}");

    // A --strip-all shared library keeps its exported symbols in .dynsym.
    let lib = compile(
        "gcc",
        dir,
        "libsites.c",
        "libsites.so",
        &["-g", "-shared", "-fPIC"],
    );
    tool("strip", &["--strip-all", "libsites.so"], dir);
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let libdir = format!("-L{}", dir.display());
    let exe = compile(
        "gcc",
        dir,
        "uselib.c",
        "uselib",
        &["-g", &libdir, "-lsites", &rpath],
    );
    let r = run(&exe);
    let maps = recorded_maps(dir, &r, "105");
    let mut sym = Symbolizer::with_options(isolated());
    let loc = sym.resolve_code(&maps, r.code["lib_worker"]);
    assert_eq!(loc.debug, DebugInfoSource::SymbolTable, "{loc:?}");
    assert_eq!(loc.function.as_deref(), Some("lib_worker"));
    assert!(
        loc.display_short().starts_with("libsites.so:lib_worker+0x"),
        "{}",
        loc.display_short()
    );
    let d = sym
        .resolve_data(&maps, r.data["lib_lock"])
        .expect("exported lib_lock");
    assert_eq!(d.name, "lib_lock");
    assert_eq!(
        sym.resolve_data(&maps, r.data["lib_static_locks_4000"]),
        None
    );
    assert_eq!(
        sym.modules_without_debug_info(),
        vec![lib.to_str().unwrap().to_string()]
    );
}

/// Builds `sites` with -g, splits its DWARF into `sites.debug` and strips it.
fn split_debug(dir: &Path, name: &str) -> (PathBuf, PathBuf, Vec<u8>) {
    let exe = compile("gcc", dir, "sites.c", name, &["-g", "-fPIE", "-pie"]);
    let dbg = format!("{name}.debug");
    tool("objcopy", &["--only-keep-debug", name, &dbg], dir);
    tool("strip", &["--strip-all", name], dir);
    let id = build_id(&exe).expect("build id");
    assert_eq!(id.len(), 20);
    assert_eq!(build_id(dir.join(&dbg)), Some(id.clone()));
    (exe, dir.join(dbg), id)
}

#[test]
fn separate_debug_file_by_build_id() {
    require!("gcc");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (exe, dbg, id) = split_debug(dir, "sites_bid");
    let hex = build_id_hex(&id);
    let placed = dir
        .join("debugroot/.build-id")
        .join(&hex[..2])
        .join(format!("{}.debug", &hex[2..]));
    std::fs::create_dir_all(placed.parent().unwrap()).unwrap();
    std::fs::rename(&dbg, &placed).unwrap();

    let r = run(&exe);
    let maps = recorded_maps(dir, &r, "106");
    // Without the debug root: nothing.
    let mut sym = Symbolizer::with_options(isolated());
    assert_eq!(
        sym.resolve_code(&maps, r.code["worker"]).debug,
        DebugInfoSource::None
    );

    let mut sym = Symbolizer::with_options(SymbolizerOptions {
        debug_dirs: vec![PathBuf::from("/nonexistent"), dir.join("debugroot")],
        ..isolated()
    });
    let loc = sym.resolve_code(&maps, r.code["worker"]);
    assert_dwarf_site(&loc, "worker", "sites.c", "worker");
    assert_eq!(loc.module.as_deref(), exe.to_str());
    let info = &sym.modules()[0];
    assert_eq!(info.debug_file.as_deref(), Some(placed.as_path()));
    assert_eq!(info.build_id.as_deref(), Some(hex.as_str()));
    assert!(sym.modules_without_debug_info().is_empty());
    // The stripped executable has no .symtab; the debug file's is used.
    let d = sym
        .resolve_data(&maps, r.data["global_lock"])
        .expect("global_lock");
    assert_eq!(d.name, "global_lock");
}

#[test]
fn separate_debug_file_by_debuglink() {
    require!("gcc");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (exe, dbg, _) = split_debug(dir, "sites_dl");
    tool(
        "objcopy",
        &["--add-gnu-debuglink=sites_dl.debug", "sites_dl"],
        dir,
    );
    std::fs::create_dir_all(dir.join(".debug")).unwrap();
    let placed = dir.join(".debug/sites_dl.debug");
    std::fs::rename(&dbg, &placed).unwrap();

    let r = run(&exe);
    let maps = recorded_maps(dir, &r, "107");
    let mut sym = Symbolizer::with_options(isolated());
    let loc = sym.resolve_code(&maps, r.code["worker"]);
    assert_dwarf_site(&loc, "worker", "sites.c", "worker");
    assert_eq!(
        sym.modules()[0].debug_file.as_deref(),
        Some(placed.as_path())
    );

    // Also found under <debug_dir>/<directory of the module>/.
    let root = dir.join("dbgroot");
    let mirrored = root
        .join(dir.strip_prefix("/").unwrap())
        .join("sites_dl.debug");
    std::fs::create_dir_all(mirrored.parent().unwrap()).unwrap();
    std::fs::rename(&placed, &mirrored).unwrap();
    let mut sym = Symbolizer::with_options(SymbolizerOptions {
        debug_dirs: vec![root],
        ..isolated()
    });
    let loc = sym.resolve_code(&maps, r.code["worker"]);
    assert_dwarf_site(&loc, "worker", "sites.c", "worker");
    assert_eq!(
        sym.modules()[0].debug_file.as_deref(),
        Some(mirrored.as_path())
    );
}

#[test]
fn separate_debug_file_from_debuginfod() {
    require!("gcc");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (exe, dbg, id) = split_debug(dir, "sites_di");
    let hex = build_id_hex(&id);
    let r = run(&exe);
    let maps = recorded_maps(dir, &r, "108");

    // 1. The client cache: <cache>/<build-id>/debuginfo.
    let cache = dir.join("cache");
    std::fs::create_dir_all(cache.join(&hex)).unwrap();
    std::fs::copy(&dbg, cache.join(&hex).join("debuginfo")).unwrap();
    let mut sym = Symbolizer::with_options(SymbolizerOptions {
        debuginfod: true,
        debuginfod_cache: Some(cache.clone()),
        ..isolated()
    });
    let loc = sym.resolve_code(&maps, r.code["worker"]);
    assert_dwarf_site(&loc, "worker", "sites.c", "worker");

    // 2. debuginfod-find (a stand-in script), run only with URLs configured.
    let script = dir.join("fake-debuginfod-find");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n[ \"$1\" = debuginfo ] && [ \"$2\" = {hex} ] && [ -n \"$DEBUGINFOD_URLS\" ] || exit 1\necho {}\n",
            dbg.display()
        ),
    )
    .unwrap();
    tool("chmod", &["+x", script.to_str().unwrap()], dir);
    let empty_cache = dir.join("empty-cache");
    std::fs::create_dir_all(&empty_cache).unwrap();
    let opts = SymbolizerOptions {
        debuginfod: true,
        debuginfod_cache: Some(empty_cache),
        debuginfod_find: script.clone(),
        debuginfod_timeout: Duration::from_secs(10),
        ..isolated()
    };
    let mut sym = Symbolizer::with_options(opts.clone());
    assert_eq!(
        sym.resolve_code(&maps, r.code["worker"]).debug,
        DebugInfoSource::None
    );
    let mut sym = Symbolizer::with_options(SymbolizerOptions {
        debuginfod_urls: Some("http://127.0.0.1:9/".into()),
        ..opts.clone()
    });
    let loc = sym.resolve_code(&maps, r.code["worker"]);
    assert_dwarf_site(&loc, "worker", "sites.c", "worker");
    assert_eq!(sym.modules()[0].debug_file.as_deref(), Some(dbg.as_path()));

    // 3. A hanging debuginfod-find is cut off by the timeout.
    let slow = dir.join("slow-debuginfod-find");
    std::fs::write(&slow, "#!/bin/sh\nexec sleep 30\n").unwrap();
    tool("chmod", &["+x", slow.to_str().unwrap()], dir);
    let mut sym = Symbolizer::with_options(SymbolizerOptions {
        debuginfod_urls: Some("http://127.0.0.1:9/".into()),
        debuginfod_find: slow,
        debuginfod_timeout: Duration::from_millis(300),
        ..opts
    });
    let t = Instant::now();
    assert_eq!(
        sym.resolve_code(&maps, r.code["worker"]).debug,
        DebugInfoSource::None
    );
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

#[test]
fn compressed_debug_sections() {
    require!("gcc");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("probe.c"), "int main(void) { return 0; }\n").unwrap();
    let probe = Command::new("gcc")
        .args(["-g", "-gz=zlib", "-o", "probe", "probe.c"])
        .current_dir(dir)
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("SKIP compressed_debug_sections: gcc/ld cannot produce -gz=zlib output");
        return;
    }
    let exe = compile(
        "gcc",
        dir,
        "sites.c",
        "sites_gz",
        &["-g", "-gz=zlib", "-fPIE", "-pie"],
    );
    let r = run(&exe);
    let maps = recorded_maps(dir, &r, "109");
    let mut sym = Symbolizer::with_options(isolated());
    let loc = sym.resolve_code(&maps, r.code["worker"]);
    assert_dwarf_site(&loc, "worker", "sites.c", "worker");
    let loc = sym.resolve_code(&maps, r.code["worker_inl"]);
    assert_dwarf_site(&loc, "inlined_helper", "sites.c", "inlined");

    // Old GNU style: .zdebug_* sections.
    let exe = compile(
        "gcc",
        dir,
        "sites.c",
        "sites_zgnu",
        &["-g", "-fPIE", "-pie"],
    );
    let zgnu = Command::new("objcopy")
        .args(["--compress-debug-sections=zlib-gnu", "sites_zgnu"])
        .current_dir(dir)
        .output();
    if !zgnu.is_ok_and(|o| o.status.success()) {
        eprintln!("SKIP compressed_debug_sections (.zdebug): objcopy cannot write zlib-gnu");
        return;
    }
    let r = run(&exe);
    let maps = recorded_maps(dir, &r, "115");
    let loc = sym.resolve_code(&maps, r.code["worker"]);
    assert_dwarf_site(&loc, "worker", "sites.c", "worker");
}

#[test]
fn cxx_names_are_demangled() {
    require!("g++");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let exe = compile("g++", dir, "sites.cpp", "sites_cxx", &["-g"]);
    let r = run(&exe);
    let maps = recorded_maps(dir, &r, "110");
    let mut sym = Symbolizer::with_options(isolated());
    let loc = sym.resolve_code(&maps, r.code["push"]);
    assert_dwarf_site(
        &loc,
        "contend_fixture::Queue::push(int)",
        "sites.cpp",
        "push",
    );
    let d = sym
        .resolve_data(&maps, r.data["lock_"])
        .expect("Queue::lock_");
    assert_eq!(d.name, "contend_fixture::Queue::lock_");

    // Symbol-table names are demangled too.
    tool("strip", &["--strip-debug", "sites_cxx"], dir);
    let r = run(&exe);
    let maps = recorded_maps(dir, &r, "111");
    let mut sym = Symbolizer::with_options(isolated());
    let loc = sym.resolve_code(&maps, r.code["push"]);
    assert_eq!(loc.debug, DebugInfoSource::SymbolTable);
    assert_eq!(
        loc.function.as_deref(),
        Some("contend_fixture::Queue::push(int)")
    );
}

#[test]
fn maps_file_errors_name_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();

    let missing = dir.join("4242.maps");
    let e = ProcessMaps::from_file(&missing).unwrap_err();
    assert!(
        matches!(&e, SymbolizeError::MapsMissing { path } if *path == missing),
        "{e:?}"
    );
    assert!(e.to_string().contains(missing.to_str().unwrap()), "{e}");
    assert!(e.to_string().contains("missing"), "{e}");

    let garbage = dir.join("4243.maps");
    std::fs::write(&garbage, "# snapshot 0 1\nthis is not a maps line\n5555-\n").unwrap();
    let e = ProcessMaps::from_file(&garbage).unwrap_err();
    match &e {
        SymbolizeError::MapsMalformed {
            path,
            line,
            skipped,
            ..
        } => {
            assert_eq!(path, &garbage);
            assert_eq!((*line, *skipped), (2, 2));
        }
        other => panic!("expected MapsMalformed, got {other:?}"),
    }
    let msg = e.to_string();
    assert!(
        msg.contains(garbage.to_str().unwrap()) && msg.contains("malformed line 2"),
        "{msg}"
    );

    // A directory is not readable as a file.
    let e = ProcessMaps::from_file(dir).unwrap_err();
    assert!(matches!(e, SymbolizeError::MapsUnreadable { .. }), "{e:?}");
    assert!(e.to_string().contains(dir.to_str().unwrap()));

    // Partly malformed (e.g. truncated by a killed process): usable, with a count.
    let partial = dir.join("4244.maps");
    std::fs::write(
        &partial,
        "# snapshot 0 1\n7f0000000000-7f0000001000 r-xp 00001000 08:01 42 /nonexistent/libgone.so\n7f00000",
    )
    .unwrap();
    let maps = ProcessMaps::from_file(&partial).unwrap();
    assert_eq!(maps.mapping_count(), 1);
    assert_eq!(maps.malformed.len(), 1);
    assert_eq!(maps.malformed[0].line, 3);
    assert_eq!(maps.source.as_deref(), Some(partial.as_path()));
}

#[test]
fn unreadable_and_deleted_modules_degrade() {
    let maps = ProcessMaps::parse(
        "\
7f0000000000-7f0000001000 r-xp 00001000 08:01 42 /nonexistent/libgone.so
7f0000100000-7f0000101000 r-xp 00000000 08:01 43 /bin/sh (deleted)
7f0000200000-7f0000201000 r-xp 00000000 00:00 0 [vdso]
7f0000300000-7f0000301000 rw-p 00000000 00:00 0
7f0000400000-7f0000401000 r-xp 00000000 00:05 6 /dev/zero
",
    );
    let mut sym = Symbolizer::with_options(isolated());

    let loc = sym.resolve_code(&maps, 0x7f0000000010);
    assert_eq!(loc.debug, DebugInfoSource::None);
    assert_eq!(loc.module.as_deref(), Some("/nonexistent/libgone.so"));
    assert_eq!(
        loc.module_offset, 0x1010,
        "file offset when the module is unreadable"
    );
    assert_eq!(loc.display_short(), "libgone.so+0x1010");

    // A deleted file is not opened, even though something exists at the path.
    let loc = sym.resolve_code(&maps, 0x7f0000100010);
    assert_eq!((loc.debug, loc.function), (DebugInfoSource::None, None));
    assert_eq!(loc.module.as_deref(), Some("/bin/sh"));

    let loc = sym.resolve_code(&maps, 0x7f0000200010);
    assert_eq!(loc.module.as_deref(), Some("[vdso]"));
    assert_eq!(loc.display_short(), "[vdso]+0x10");

    // A device file is not read as a module.
    let loc = sym.resolve_code(&maps, 0x7f0000400010);
    assert_eq!(loc.display_short(), "zero+0x10");

    let loc = sym.resolve_code(&maps, 0x1234);
    assert_eq!(
        (loc.module.clone(), loc.display_short()),
        (None, "0x1234".to_string())
    );

    assert_eq!(sym.resolve_data(&maps, 0x7f0000300010), None);
    assert_eq!(sym.resolve_data(&maps, 0x7f0000000010), None);
    assert_eq!(
        sym.modules_without_debug_info(),
        vec!["/bin/sh (deleted)", "/dev/zero", "/nonexistent/libgone.so"]
    );
    let infos = sym.modules();
    assert!(infos
        .iter()
        .all(|m| m.problem.is_some() && m.debug == DebugInfoSource::None));
}

#[test]
fn many_lookups_are_cached_and_fast() {
    require!("gcc");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let exe = compile(
        "gcc",
        dir,
        "sites.c",
        "sites_many",
        &["-g", "-fPIE", "-pie"],
    );
    let r = run(&exe);
    let maps = recorded_maps(dir, &r, "112");
    let text = maps
        .snapshots
        .last()
        .unwrap()
        .mappings
        .iter()
        .find(|m| m.path.as_deref() == exe.to_str() && m.perms.exec)
        .unwrap()
        .clone();
    let mut sym = Symbolizer::with_options(isolated());
    let first = sym.resolve_code(&maps, r.code["worker"]);
    let t = Instant::now();
    let mut n = 0u64;
    for i in 0..100_000u64 {
        let a = if i % 2 == 0 {
            r.code["worker"]
        } else {
            text.start + (i * 7) % (text.end - text.start)
        };
        let loc = sym.resolve_code(&maps, a);
        n += u64::from(loc.line.is_some());
        if i % 2 == 0 {
            assert_eq!(loc, first);
        }
        let _ = sym.resolve_data(&maps, r.data["global_lock"]);
    }
    let elapsed = t.elapsed();
    assert!(n >= 50_000);
    assert!(
        elapsed < Duration::from_secs(20),
        "100k lookups took {elapsed:?}"
    );
    assert_eq!(sym.modules().len(), 1);
}

#[test]
fn dwz_supplementary_debug_file() {
    require!("g++");
    if !have("dwz") {
        eprintln!("SKIP dwz_supplementary_debug_file: `dwz` not found (apt-get install dwz)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // Two copies share their class DIEs; dwz moves those into common.debug,
    // and Queue::push's definition then names itself only through a
    // DW_AT_specification into that supplementary file.
    let a = compile("g++", dir, "sites.cpp", "cxx_a", &["-g"]);
    compile("g++", dir, "sites.cpp", "cxx_b", &["-g"]);
    let common = dir.join("common.debug");
    let common_s = common.to_str().unwrap();
    tool(
        "dwz",
        &["-m", common_s, "-M", common_s, "cxx_a", "cxx_b"],
        dir,
    );
    // No symbol table to fall back on: the name must come from DWARF.
    let keep = [
        "--keep-section=.debug_*",
        "--keep-section=.gnu_debugaltlink",
    ];
    tool("strip", &["--strip-all", keep[0], keep[1], "cxx_a"], dir);

    let r = run(&a);
    let maps = recorded_maps(dir, &r, "113");
    let mut sym = Symbolizer::with_options(isolated());
    let loc = sym.resolve_code(&maps, r.code["push"]);
    assert_dwarf_site(
        &loc,
        "contend_fixture::Queue::push(int)",
        "sites.cpp",
        "push",
    );

    // Without the supplementary file the line is still known, the name not.
    std::fs::remove_file(&common).unwrap();
    let mut sym = Symbolizer::with_options(isolated());
    let loc = sym.resolve_code(&maps, r.code["push"]);
    assert_eq!(loc.line, Some(site_line("sites.cpp", "push")), "{loc:?}");
    assert_eq!(loc.function, None, "{loc:?}");
    assert_eq!(
        loc.display_short(),
        format!("sites.cpp:{} (cxx_a)", loc.line.unwrap())
    );
}

#[test]
fn split_dwarf_dwo_files() {
    require!("gcc");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let split = |name: &str, version: &str| -> Option<PathBuf> {
        let flags = ["-g", version, "-gsplit-dwarf", "-fPIE", "-pie"];
        let exe = compile("gcc", dir, "sites.c", name, &flags);
        // gcc leaves <name>-sites.dwo in the compilation directory, named by
        // the skeleton unit.
        let dwo = dir.join(format!("{name}-sites.dwo"));
        if !dwo.exists() {
            return None;
        }
        // No symbol table to fall back on: names must come from the .dwo.
        let keep = ["--keep-section=.debug_*", "--keep-section=.gnu_debuglink"];
        tool("strip", &["--strip-all", keep[0], keep[1], name], dir);
        Some(exe)
    };

    // DWARF 4 (GNU split-DWARF extension): everything comes from the .dwo.
    let Some(exe) = split("sites_split4", "-gdwarf-4") else {
        eprintln!("SKIP split_dwarf_dwo_files: gcc wrote no .dwo file");
        return;
    };
    let r = run(&exe);
    let maps = recorded_maps(dir, &r, "116");
    let mut sym = Symbolizer::with_options(isolated());
    let loc = sym.resolve_code(&maps, r.code["worker"]);
    assert_dwarf_site(&loc, "worker", "sites.c", "worker");
    let loc = sym.resolve_code(&maps, r.code["worker_inl"]);
    assert_dwarf_site(&loc, "inlined_helper", "sites.c", "inlined");
    assert_eq!(loc.outer_function(), Some("worker_inl"));

    // DWARF 5 split units: addr2line 0.24 cannot read GCC 12's .dwo files;
    // the skeleton's line table still gives the exact line. (If a newer
    // addr2line reads them, the function name is there too.)
    let exe = split("sites_split5", "-gdwarf-5").expect(".dwo");
    let r = run(&exe);
    let maps = recorded_maps(dir, &r, "117");
    let loc = sym.resolve_code(&maps, r.code["worker"]);
    assert_eq!(loc.debug, DebugInfoSource::Dwarf, "{loc:?}");
    assert_eq!(file_name(&loc.file), Some("sites.c"), "{loc:?}");
    assert_eq!(loc.line, Some(site_line("sites.c", "worker")), "{loc:?}");
    assert!(
        matches!(loc.function.as_deref(), None | Some("worker")),
        "{loc:?}"
    );
}

/// Released debug information is built again on demand: lookups after
/// `release_debug_info` (a new code address, a data address with a member
/// name, an address resolved before) give what a symbolizer that never
/// released gives, and the module stays described.
#[test]
fn released_debug_info_is_built_again() {
    require!("gcc");
    let tmp = tempfile::tempdir().unwrap();
    let (_, r, maps) = pie_sites(tmp.path());
    let mut kept = Symbolizer::with_options(isolated());
    let mut released = Symbolizer::with_options(isolated());

    let first = released.resolve_code(&maps, r.code["worker"]);
    assert_dwarf_site(&first, "worker", "sites.c", "worker");
    assert_eq!(kept.resolve_code(&maps, r.code["worker"]), first);
    released.release_debug_info();
    for name in ["worker_inl", "next_line", "worker"] {
        let want = kept.resolve_code(&maps, r.code[name]);
        let got = released.resolve_code(&maps, r.code[name]);
        assert_eq!(got, want, "{name}");
        assert_eq!(got.debug, DebugInfoSource::Dwarf, "{name}");
        released.release_debug_info();
    }
    let far = r.data["bss_locks_8000"];
    let want = kept.resolve_data(&maps, far).expect("bss_locks[8000]");
    let got = released.resolve_data(&maps, far).expect("bss_locks[8000]");
    assert_eq!(got, want);
    assert_eq!(got.display_short(), "bss_locks[8000]");
    // The same description but for the builds of the DWARF context: two
    // new addresses after a release built it again (worker_inl,
    // next_line); `worker`, resolved before, did not.
    let without_builds = |s: &Symbolizer| {
        s.modules()
            .into_iter()
            .map(|m| {
                (
                    m.dwarf_context_builds,
                    ModuleInfo {
                        dwarf_context_builds: 0,
                        ..m
                    },
                )
            })
            .collect::<Vec<_>>()
    };
    let (released, kept) = (without_builds(&released), without_builds(&kept));
    assert_eq!(released.len(), 1);
    assert_eq!(released[0].1, kept[0].1);
    assert_eq!((released[0].0, kept[0].0), (3, 1));
}
