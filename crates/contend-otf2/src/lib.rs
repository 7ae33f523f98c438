//! # contend-otf2
//!
//! Writes the OTF2 archive of a recording (`contend export --format
//! otf2`): [`contend::export::otf2::write`] lays out the definitions and
//! the per-location records; this crate hands them to libotf2 through a
//! small C shim (`src/shim.c`, built by `build.rs` against the installed
//! headers, so that every call is checked against the library's own
//! declarations).
//!
//! libotf2 is found at build time (`build.rs`: `$OTF2_ROOT`, `/usr`,
//! `/usr/local`). A build without it still compiles; [`fn@write`] then
//! returns [`Otf2Error::NotBuilt`], which says how to get it. The archive
//! is a directory: `DIR/traces.otf2` (the anchor file Vampir and Scalasca
//! open), `DIR/traces.def` and `DIR/traces/` (one event file per
//! location), as Score-P writes them.
#![deny(missing_docs)]

use std::path::{Path, PathBuf};

use contend::export::{ExportError, ExportOptions, ExportSummary};
use contend::Analysis;

/// The name of the anchor file inside the archive directory, without
/// `.otf2`.
pub const ARCHIVE_NAME: &str = "traces";

/// Errors writing an OTF2 archive. Messages name the directory.
#[derive(Debug, thiserror::Error)]
pub enum Otf2Error {
    /// This build has no libotf2.
    #[error("--format otf2: this contend was built without libotf2 (its headers were not found at build time); install it (Debian/Ubuntu: apt-get install libotf2-trace-dev; or set OTF2_ROOT to its prefix) and rebuild contend")]
    NotBuilt,
    /// The directory exists and is not an OTF2 archive, or exists without
    /// `--force`.
    #[error("{}: {why}", path.display())]
    Target {
        /// The directory.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// Creating or replacing the directory failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The content could not be laid out or libotf2 failed.
    #[error("{}: {source}", path.display())]
    Export {
        /// The directory.
        path: PathBuf,
        /// The error.
        source: ExportError,
    },
}

/// Writes the OTF2 archive of `analysis` into the directory `dir`
/// (created; an existing archive there is replaced only with `force`, and
/// a directory that is not an OTF2 archive never).
///
/// Errors: [`Otf2Error`]; a failed write removes the partial archive.
pub fn write(
    analysis: &Analysis<'_>,
    options: &ExportOptions,
    dir: &Path,
    force: bool,
) -> Result<ExportSummary, Otf2Error> {
    if !cfg!(has_otf2) {
        return Err(Otf2Error::NotBuilt);
    }
    let anchor = dir.join(format!("{ARCHIVE_NAME}.otf2"));
    if dir.exists() {
        if !anchor.exists() {
            return Err(Otf2Error::Target {
                path: dir.to_path_buf(),
                why: "exists and is not an OTF2 archive (no traces.otf2); choose another directory with -o".into(),
            });
        }
        if !force {
            return Err(Otf2Error::Target {
                path: dir.to_path_buf(),
                why: "already exists; choose another directory with -o, or replace it with --force"
                    .into(),
            });
        }
        remove_archive(dir).map_err(|source| Otf2Error::Io {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let result = backend::write(analysis, options, dir);
    if result.is_err() {
        let _ = remove_archive(dir);
    }
    result.map_err(|source| Otf2Error::Export {
        path: dir.to_path_buf(),
        source,
    })
}

/// Removes an archive written by [`write`]: its anchor, definitions and
/// event directory, then the directory if empty.
fn remove_archive(dir: &Path) -> std::io::Result<()> {
    for f in ["otf2", "def"] {
        let p = dir.join(format!("{ARCHIVE_NAME}.{f}"));
        if p.exists() {
            std::fs::remove_file(p)?;
        }
    }
    let events = dir.join(ARCHIVE_NAME);
    if events.exists() {
        std::fs::remove_dir_all(events)?;
    }
    match std::fs::remove_dir(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound && dir.exists() => Err(e),
        _ => Ok(()),
    }
}

#[cfg(has_otf2)]
mod backend {
    //! The sink over the C shim.

    use std::ffi::{c_char, c_int, CStr, CString};

    use contend::export::otf2::{Definitions, Event, Otf2Sink};

    use super::*;
    use contend::export::otf2::{GroupKind, Paradigm, RegionRole};

    /// The shim's code of a paradigm (`cotf2_region`, `cotf2_lock`).
    fn paradigm_code(p: Paradigm) -> c_int {
        match p {
            Paradigm::Mpi => 0,
            Paradigm::Pthread => 1,
            Paradigm::OpenMp => 2,
            Paradigm::Unknown => 3,
        }
    }

    #[repr(C)]
    struct Cotf2 {
        _opaque: [u8; 0],
    }

    extern "C" {
        fn cotf2_error_text(code: c_int) -> *const c_char;
        fn cotf2_open(dir: *const c_char, name: *const c_char, out: *mut *mut Cotf2) -> c_int;
        fn cotf2_begin_location(c: *mut Cotf2, location: u64) -> c_int;
        fn cotf2_end_location(c: *mut Cotf2) -> c_int;
        fn cotf2_enter(c: *mut Cotf2, t: u64, region: u32) -> c_int;
        fn cotf2_leave(c: *mut Cotf2, t: u64, region: u32) -> c_int;
        fn cotf2_mpi_send(c: *mut Cotf2, t: u64, to: u32, comm: u32, tag: u32, n: u64) -> c_int;
        fn cotf2_mpi_isend(
            c: *mut Cotf2,
            t: u64,
            to: u32,
            comm: u32,
            tag: u32,
            n: u64,
            req: u64,
        ) -> c_int;
        fn cotf2_mpi_isend_complete(c: *mut Cotf2, t: u64, req: u64) -> c_int;
        fn cotf2_mpi_irecv_request(c: *mut Cotf2, t: u64, req: u64) -> c_int;
        fn cotf2_mpi_recv(c: *mut Cotf2, t: u64, from: u32, comm: u32, tag: u32, n: u64) -> c_int;
        fn cotf2_mpi_irecv(
            c: *mut Cotf2,
            t: u64,
            from: u32,
            comm: u32,
            tag: u32,
            n: u64,
            req: u64,
        ) -> c_int;
        fn cotf2_collective_begin(c: *mut Cotf2, t: u64) -> c_int;
        fn cotf2_collective_end(
            c: *mut Cotf2,
            t: u64,
            op: u16,
            comm: u32,
            root: u32,
            sent: u64,
            received: u64,
        ) -> c_int;
        fn cotf2_lock(
            c: *mut Cotf2,
            t: u64,
            acquire: c_int,
            paradigm: c_int,
            lock: u32,
            order: u32,
        ) -> c_int;
        fn cotf2_begin_definitions(
            c: *mut Cotf2,
            locations: *const u64,
            n: usize,
            first: u64,
            last: u64,
        ) -> c_int;
        fn cotf2_string(c: *mut Cotf2, id: u32, s: *const c_char) -> c_int;
        fn cotf2_region(c: *mut Cotf2, id: u32, name: u32, role: c_int, paradigm: c_int) -> c_int;
        fn cotf2_system_tree_node(
            c: *mut Cotf2,
            id: u32,
            name: u32,
            class: u32,
            parent: u32,
        ) -> c_int;
        fn cotf2_location_group(c: *mut Cotf2, id: u32, name: u32, node: u32) -> c_int;
        fn cotf2_location(c: *mut Cotf2, id: u64, name: u32, events: u64, group: u32) -> c_int;
        fn cotf2_group(
            c: *mut Cotf2,
            id: u32,
            name: u32,
            kind: c_int,
            n: u32,
            members: *const u64,
        ) -> c_int;
        fn cotf2_comm(c: *mut Cotf2, id: u32, name: u32, group: u32) -> c_int;
        fn cotf2_close(c: *mut Cotf2) -> c_int;
    }

    /// An open archive.
    struct Archive {
        handle: *mut Cotf2,
    }

    /// `Ok` for 0, else libotf2's description of the code, naming `what`.
    fn check(code: c_int, what: &str) -> Result<(), String> {
        if code == 0 {
            return Ok(());
        }
        // SAFETY: cotf2_error_text returns libotf2's static description
        // string for any code (or NULL).
        let text = unsafe {
            let p = cotf2_error_text(code);
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        Err(format!("libotf2: {what}: {text} (error {code})"))
    }

    fn cstring(s: &str) -> CString {
        CString::new(s.replace('\0', " ")).unwrap_or_default()
    }

    impl Otf2Sink for Archive {
        fn begin_location(&mut self, id: u64) -> Result<(), String> {
            // SAFETY: `handle` is the open archive of this struct.
            check(
                unsafe { cotf2_begin_location(self.handle, id) },
                "event writer",
            )
        }

        fn event(&mut self, t: u64, e: &Event) -> Result<(), String> {
            let h = self.handle;
            // SAFETY: `h` is the open archive with a location's event
            // writer open (begin_location); arguments are plain values.
            let code = unsafe {
                match *e {
                    Event::Enter { region } => cotf2_enter(h, t, region),
                    Event::Leave { region } => cotf2_leave(h, t, region),
                    Event::MpiSend {
                        receiver,
                        comm,
                        tag,
                        bytes,
                    } => cotf2_mpi_send(h, t, receiver, comm, tag, bytes),
                    Event::MpiIsend {
                        receiver,
                        comm,
                        tag,
                        bytes,
                        request,
                    } => cotf2_mpi_isend(h, t, receiver, comm, tag, bytes, request),
                    Event::MpiIsendComplete { request } => cotf2_mpi_isend_complete(h, t, request),
                    Event::MpiIrecvRequest { request } => cotf2_mpi_irecv_request(h, t, request),
                    Event::MpiRecv {
                        sender,
                        comm,
                        tag,
                        bytes,
                    } => cotf2_mpi_recv(h, t, sender, comm, tag, bytes),
                    Event::MpiIrecv {
                        sender,
                        comm,
                        tag,
                        bytes,
                        request,
                    } => cotf2_mpi_irecv(h, t, sender, comm, tag, bytes, request),
                    Event::CollectiveBegin => cotf2_collective_begin(h, t),
                    Event::CollectiveEnd {
                        op,
                        comm,
                        root,
                        sent,
                        received,
                    } => cotf2_collective_end(
                        h,
                        t,
                        op as u16,
                        comm,
                        root.unwrap_or(u32::MAX),
                        sent,
                        received,
                    ),
                    Event::AcquireLock {
                        paradigm,
                        lock,
                        order,
                    } => cotf2_lock(h, t, 1, paradigm_code(paradigm), lock, order),
                    Event::ReleaseLock {
                        paradigm,
                        lock,
                        order,
                    } => cotf2_lock(h, t, 0, paradigm_code(paradigm), lock, order),
                }
            };
            check(code, "writing an event")
        }

        fn end_location(&mut self) -> Result<(), String> {
            // SAFETY: the open archive with an open event writer.
            check(
                unsafe { cotf2_end_location(self.handle) },
                "closing an event writer",
            )
        }

        fn definitions(&mut self, d: &Definitions) -> Result<(), String> {
            let h = self.handle;
            let locations: Vec<u64> = d.locations.iter().map(|l| l.id).collect();
            // SAFETY: `locations` outlives the call, which reads `len`
            // values; the other calls take plain values and NUL-terminated
            // strings that outlive them.
            unsafe {
                check(
                    cotf2_begin_definitions(
                        h,
                        locations.as_ptr(),
                        locations.len(),
                        d.first_ns,
                        d.last_ns,
                    ),
                    "definitions",
                )?;
                for (i, s) in d.strings.iter().enumerate() {
                    let c = cstring(s);
                    check(cotf2_string(h, i as u32, c.as_ptr()), "string")?;
                }
                for (i, n) in d.nodes.iter().enumerate() {
                    check(
                        cotf2_system_tree_node(
                            h,
                            i as u32,
                            n.name,
                            n.class,
                            n.parent.unwrap_or(u32::MAX),
                        ),
                        "system tree node",
                    )?;
                }
                for (i, g) in d.location_groups.iter().enumerate() {
                    check(
                        cotf2_location_group(h, i as u32, g.name, g.node),
                        "location group",
                    )?;
                }
                for l in &d.locations {
                    check(
                        cotf2_location(h, l.id, l.name, l.events, l.group),
                        "location",
                    )?;
                }
                for (i, r) in d.regions.iter().enumerate() {
                    let role = match r.role {
                        RegionRole::Function => 0,
                        RegionRole::PointToPoint => 1,
                        RegionRole::Barrier => 2,
                        RegionRole::OneToAll => 3,
                        RegionRole::AllToOne => 4,
                        RegionRole::AllToAll => 5,
                        RegionRole::OtherCollective => 6,
                        RegionRole::Critical => 7,
                        RegionRole::Atomic => 8,
                        RegionRole::Ordered => 9,
                        RegionRole::ImplicitBarrier => 10,
                        RegionRole::TaskWait => 11,
                    };
                    let paradigm = paradigm_code(r.paradigm);
                    check(cotf2_region(h, i as u32, r.name, role, paradigm), "region")?;
                }
                for (i, g) in d.groups.iter().enumerate() {
                    let kind = match g.kind {
                        GroupKind::CommLocations => 0,
                        GroupKind::CommGroup => 1,
                        GroupKind::CommSelf => 2,
                    };
                    check(
                        cotf2_group(
                            h,
                            i as u32,
                            g.name,
                            kind,
                            g.members.len() as u32,
                            g.members.as_ptr(),
                        ),
                        "group",
                    )?;
                }
                for (i, c) in d.comms.iter().enumerate() {
                    check(cotf2_comm(h, i as u32, c.name, c.group), "communicator")?;
                }
            }
            Ok(())
        }
    }

    impl Drop for Archive {
        fn drop(&mut self) {
            if !self.handle.is_null() {
                // SAFETY: closes and frees the handle once.
                unsafe { cotf2_close(self.handle) };
            }
        }
    }

    /// Writes the archive (module docs of the crate).
    pub(super) fn write(
        analysis: &Analysis<'_>,
        options: &ExportOptions,
        dir: &Path,
    ) -> Result<ExportSummary, ExportError> {
        let d = cstring(&dir.to_string_lossy());
        let name = cstring(ARCHIVE_NAME);
        let mut handle = std::ptr::null_mut();
        // SAFETY: both strings are NUL-terminated and outlive the call;
        // `handle` receives the archive.
        check(
            unsafe { cotf2_open(d.as_ptr(), name.as_ptr(), &mut handle) },
            "opening the archive",
        )
        .map_err(ExportError::Writer)?;
        let mut archive = Archive { handle };
        let summary = contend::export::otf2::write(analysis, options, &mut archive)?;
        let h = std::mem::replace(&mut archive.handle, std::ptr::null_mut());
        // SAFETY: closes the archive once (Drop sees null).
        check(unsafe { cotf2_close(h) }, "closing the archive").map_err(ExportError::Writer)?;
        Ok(summary)
    }
}

#[cfg(not(has_otf2))]
mod backend {
    //! Without libotf2: [`super::write`] returns `NotBuilt` before this.
    use super::*;

    pub(super) fn write(
        _analysis: &Analysis<'_>,
        _options: &ExportOptions,
        _dir: &Path,
    ) -> Result<ExportSummary, ExportError> {
        Err(ExportError::Unsupported(Otf2Error::NotBuilt.to_string()))
    }
}
