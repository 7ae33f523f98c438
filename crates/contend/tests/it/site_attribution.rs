//! Which caller a call site in system code moves to through a recorded
//! stack (`contend::locks::user_frame`): the first frame outside system
//! code, and only if it resolves at least as well as the site, so that
//! stacks never make a site worse (RocksDB's db_bench: a site in
//! `librocksdb.so` with symbols must not become `?? db_bench+0x…`).

use contend::locks::user_frame;
use contend::symbols::ResolvedSite;

fn site(
    function: Option<&str>,
    file: Option<&str>,
    module: &str,
    debug: &'static str,
) -> ResolvedSite {
    ResolvedSite {
        function: function.map(Into::into),
        file: file.map(Into::into),
        line: file.map(|_| 10),
        module: Some(module.into()),
        offset: 0x10,
        debug,
        display: function.unwrap_or("??").into(),
    }
}

#[test]
fn a_site_moves_to_the_first_user_frame_that_resolves_as_well() {
    // An -O0 std::mutex site in a libstdc++ header (dwarf).
    let header = site(
        Some("__gthread_mutex_lock"),
        Some("/usr/include/x86_64-linux-gnu/c++/12/bits/gthr-default.h"),
        "/tmp/app",
        "dwarf",
    );
    let lib = site(
        Some("std::mutex::lock"),
        None,
        "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
        "symbols",
    );
    let user = site(Some("worker"), Some("/src/app.c"), "/tmp/app", "dwarf");
    // The header frame and the library are skipped; the user's line is taken.
    assert_eq!(
        user_frame(
            &header,
            [
                (0x1, header.clone()),
                (0x2, lib.clone()),
                (0x3, user.clone())
            ]
        ),
        Some(0x3)
    );
    // No user frame at all: the site stays.
    assert_eq!(user_frame(&header, [(0x2, lib.clone())]), None);
}

#[test]
fn a_site_is_never_traded_for_a_worse_one() {
    // A site in a system library with symbols (no file): system code by
    // its module path, function known.
    let rocks = site(
        Some("rocksdb::port::Mutex::Lock()"),
        None,
        "/usr/lib/x86_64-linux-gnu/librocksdb.so.7",
        "symbols",
    );
    // The first caller outside /usr/lib is a program without symbols.
    let bare = site(None, None, "/opt/bin/db_bench", "none");
    assert_eq!(user_frame(&rocks, [(0x5, bare.clone())]), None);
    // A caller with symbols (or lines) is as good or better: taken.
    let named = site(Some("DBBench::Run"), None, "/opt/bin/db_bench", "symbols");
    assert_eq!(user_frame(&rocks, [(0x6, named)]), Some(0x6));
    // The first user frame decides: a worse one before a better one keeps
    // the site (the walk does not skip the caller that really called).
    let lined = site(
        Some("main"),
        Some("/src/db_bench.cc"),
        "/opt/bin/db_bench",
        "dwarf",
    );
    assert_eq!(user_frame(&rocks, [(0x5, bare), (0x7, lined)]), None);
}
