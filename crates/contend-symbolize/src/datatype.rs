//! Members of global variables, from DWARF type information: a lock at
//! byte 240 of `pthread_mutex_t stripe_locks[8]` is `stripe_locks[6]`, one
//! at byte 8 of `struct { int count; pthread_mutex_t lock; } table` is
//! `table.lock`.
//!
//! The variables of a module (`DW_TAG_variable` with a `DW_OP_addr`
//! location, function-local statics included) are indexed by address once,
//! on the first lookup that needs them. From the variable's `DW_AT_type`
//! the walk descends through typedefs and qualifiers, struct, class and
//! union members (`DW_AT_data_member_location`; base classes add no name)
//! and array elements (element `DW_AT_byte_size`, every dimension's
//! `DW_TAG_subrange_type`), as long as the offset lies inside a member or
//! element. It stops at a type declared in a system header
//! (`pthread_mutex_t`, `std::mutex`: their insides are no user's name) and
//! at anything else it cannot look into; the offset left over stays a
//! `+0x…`. Types in `.debug_types` units (`-fdebug-types-section`) and in
//! split-DWARF `.dwo` files are not followed.

use std::collections::HashMap;

use gimli::{AttributeValue, DebugInfoOffset, Operation, Reader as _, UnitOffset};

use super::elf::Reader;

type Unit = gimli::Unit<Reader>;

/// Where a DIE is: in the main file or the dwz supplementary file, at this
/// `.debug_info` offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DieRef {
    sup: bool,
    offset: DebugInfoOffset,
}

/// The variables of one module by address, and the DWARF to walk their
/// types in.
pub(crate) struct TypeIndex {
    dwarf: gimli::Dwarf<Reader>,
    /// Variable address (ELF virtual address) → its type DIE.
    vars: HashMap<u64, DieRef>,
}

/// Longest path of members and elements followed (against cyclic or
/// absurd type graphs).
const MAX_DEPTH: usize = 32;

impl TypeIndex {
    /// Indexes every variable with a static address in `dwarf`.
    pub(crate) fn build(dwarf: gimli::Dwarf<Reader>) -> TypeIndex {
        let mut vars = HashMap::new();
        let mut headers = dwarf.units();
        while let Ok(Some(header)) = headers.next() {
            let Ok(unit) = dwarf.unit(header) else {
                continue;
            };
            let mut entries = unit.entries();
            while let Ok(Some((_, entry))) = entries.next_dfs() {
                if entry.tag() != gimli::DW_TAG_variable {
                    continue;
                }
                let Ok(Some(AttributeValue::Exprloc(expr))) =
                    entry.attr_value(gimli::DW_AT_location)
                else {
                    continue;
                };
                let mut ops = expr.operations(unit.encoding());
                let address = match ops.next() {
                    Ok(Some(Operation::Address { address })) => address,
                    Ok(Some(Operation::AddressIndex { index })) => {
                        match dwarf.address(&unit, index) {
                            Ok(a) => a,
                            Err(_) => continue,
                        }
                    }
                    _ => continue,
                };
                // Only a plain address: `DW_OP_addr X; DW_OP_GNU_push_tls_address`
                // is a thread-local variable, not at X.
                if !matches!(ops.next(), Ok(None)) || address == 0 {
                    continue;
                }
                if let Some(ty) = variable_type(&unit, entry.offset(), 0) {
                    vars.entry(address).or_insert(ty);
                }
            }
        }
        TypeIndex { dwarf, vars }
    }

    /// The member path (`[6]`, `.lock`, `.shards[2].mu`) of byte `offset`
    /// of the variable starting at `var_vaddr`, and the bytes left over
    /// inside the innermost member reached; `None` when the variable is
    /// not indexed or no member was entered.
    pub(crate) fn member(&self, var_vaddr: u64, offset: u64) -> Option<(String, u64)> {
        let mut at = *self.vars.get(&var_vaddr)?;
        let mut off = offset;
        let mut path = String::new();
        for _ in 0..MAX_DEPTH {
            let (dwarf, unit) = self.unit_of(at)?;
            let uoff = at.offset.to_unit_offset(&unit.header)?;
            let entry = unit.entry(uoff).ok()?;
            let tag = entry.tag();
            match tag {
                gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_restrict_type
                | gimli::DW_TAG_atomic_type => {
                    if tag == gimli::DW_TAG_typedef && is_opaque(dwarf, &unit, uoff) {
                        break;
                    }
                    at = type_ref(at.sup, &unit, uoff)?;
                }
                gimli::DW_TAG_structure_type
                | gimli::DW_TAG_class_type
                | gimli::DW_TAG_union_type => {
                    if is_opaque(dwarf, &unit, uoff) {
                        break;
                    }
                    let Some((name, loc, ty)) = member_at(dwarf, &unit, at.sup, uoff, off, self)
                    else {
                        break;
                    };
                    if let Some(n) = name {
                        path.push('.');
                        path.push_str(&n);
                    }
                    off -= loc;
                    at = ty;
                }
                gimli::DW_TAG_array_type => {
                    let elem = type_ref(at.sup, &unit, uoff)?;
                    let elem_size = self.byte_size(elem)?;
                    if elem_size == 0 {
                        break;
                    }
                    let dims = dimensions(&unit, uoff);
                    // Strides: the last dimension varies fastest.
                    let mut stride = elem_size;
                    let mut strides = vec![0u64; dims.len().max(1)];
                    for (i, d) in dims.iter().enumerate().rev() {
                        strides[i] = stride;
                        stride = stride.saturating_mul(d.unwrap_or(u64::MAX).max(1));
                    }
                    if dims.is_empty() {
                        strides[0] = elem_size;
                    }
                    let mut ok = true;
                    for (i, s) in strides.iter().enumerate() {
                        let idx = off / s;
                        if dims.get(i).copied().flatten().is_some_and(|n| idx >= n) {
                            ok = false;
                            break;
                        }
                        path.push_str(&format!("[{idx}]"));
                        off -= idx * s;
                    }
                    if !ok {
                        break;
                    }
                    at = elem;
                }
                _ => break,
            }
        }
        (!path.is_empty()).then_some((path, off))
    }

    /// The DWARF and the parsed unit holding `at`.
    fn unit_of(&self, at: DieRef) -> Option<(&gimli::Dwarf<Reader>, Unit)> {
        let dwarf = if at.sup {
            self.dwarf.sup()?
        } else {
            &self.dwarf
        };
        let header = unit_header_containing(dwarf, at.offset)?;
        Some((dwarf, dwarf.unit(header).ok()?))
    }

    /// `DW_AT_byte_size` of a type, through typedefs and qualifiers; an
    /// array's is its element's times its element count.
    fn byte_size(&self, mut at: DieRef) -> Option<u64> {
        for _ in 0..MAX_DEPTH {
            let (_, unit) = self.unit_of(at)?;
            let uoff = at.offset.to_unit_offset(&unit.header)?;
            let entry = unit.entry(uoff).ok()?;
            if let Ok(Some(size)) = entry.attr(gimli::DW_AT_byte_size) {
                if let Some(s) = size.udata_value() {
                    return Some(s);
                }
            }
            if entry.tag() == gimli::DW_TAG_array_type {
                let elem = type_ref(at.sup, &unit, uoff)?;
                let n: u64 = dimensions(&unit, uoff)
                    .into_iter()
                    .map(|d| d.unwrap_or(0))
                    .product();
                return Some(self.byte_size(elem)?.saturating_mul(n));
            }
            at = type_ref(at.sup, &unit, uoff)?;
        }
        None
    }
}

/// The `.debug_info` unit header whose range holds `offset`.
fn unit_header_containing(
    dwarf: &gimli::Dwarf<Reader>,
    offset: DebugInfoOffset,
) -> Option<gimli::UnitHeader<Reader>> {
    let mut headers = dwarf.units();
    while let Ok(Some(h)) = headers.next() {
        let start = h.offset().as_debug_info_offset()?;
        let end = start.0 + h.length_including_self();
        if start.0 <= offset.0 && offset.0 < end {
            return Some(h);
        }
        if start.0 > offset.0 {
            return None;
        }
    }
    None
}

/// The type of the variable DIE at `uoff` (through `DW_AT_specification`
/// and `DW_AT_abstract_origin` when the definition does not carry it).
fn variable_type(unit: &Unit, uoff: UnitOffset, depth: usize) -> Option<DieRef> {
    if depth > 4 {
        return None;
    }
    if let Some(t) = type_ref(false, unit, uoff) {
        return Some(t);
    }
    let entry = unit.entry(uoff).ok()?;
    for at in [gimli::DW_AT_specification, gimli::DW_AT_abstract_origin] {
        if let Ok(Some(AttributeValue::UnitRef(o))) = entry.attr_value(at) {
            return variable_type(unit, o, depth + 1);
        }
    }
    None
}

/// `DW_AT_type` of the DIE at `uoff` of `unit` (in the main file when
/// `sup` is false, else in the supplementary file).
fn type_ref(sup: bool, unit: &Unit, uoff: UnitOffset) -> Option<DieRef> {
    let entry = unit.entry(uoff).ok()?;
    match entry.attr_value(gimli::DW_AT_type).ok()?? {
        AttributeValue::UnitRef(o) => Some(DieRef {
            sup,
            offset: o.to_debug_info_offset(&unit.header)?,
        }),
        AttributeValue::DebugInfoRef(o) => Some(DieRef { sup, offset: o }),
        AttributeValue::DebugInfoRefSup(o) => Some(DieRef {
            sup: true,
            offset: o,
        }),
        _ => None,
    }
}

/// Element counts of the array DIE at `uoff`, one per dimension (`None`
/// for an unknown bound).
fn dimensions(unit: &Unit, uoff: UnitOffset) -> Vec<Option<u64>> {
    let mut out = Vec::new();
    let Ok(mut tree) = unit.entries_tree(Some(uoff)) else {
        return out;
    };
    let Ok(root) = tree.root() else { return out };
    let mut children = root.children();
    while let Ok(Some(child)) = children.next() {
        let e = child.entry();
        if e.tag() != gimli::DW_TAG_subrange_type {
            continue;
        }
        let count = e
            .attr(gimli::DW_AT_count)
            .ok()
            .flatten()
            .and_then(|a| a.udata_value())
            .or_else(|| {
                let upper = e.attr(gimli::DW_AT_upper_bound).ok()??.udata_value()?;
                let lower = e
                    .attr(gimli::DW_AT_lower_bound)
                    .ok()
                    .flatten()
                    .and_then(|a| a.udata_value())
                    .unwrap_or(0);
                upper.checked_add(1)?.checked_sub(lower)
            });
        out.push(count);
    }
    out
}

/// The member of the struct/class/union DIE at `uoff` holding byte `off`:
/// its name (`None` for a base class), its offset, its type.
fn member_at(
    dwarf: &gimli::Dwarf<Reader>,
    unit: &Unit,
    sup: bool,
    uoff: UnitOffset,
    off: u64,
    index: &TypeIndex,
) -> Option<(Option<String>, u64, DieRef)> {
    let mut tree = unit.entries_tree(Some(uoff)).ok()?;
    let root = tree.root().ok()?;
    let mut children = root.children();
    while let Ok(Some(child)) = children.next() {
        let e = child.entry();
        let base = e.tag() == gimli::DW_TAG_inheritance;
        if e.tag() != gimli::DW_TAG_member && !base {
            continue;
        }
        // Static members have no location: not part of the object.
        let Some(loc) = member_location(e, unit) else {
            continue;
        };
        let Some(ty) = type_ref(sup, unit, e.offset()) else {
            continue;
        };
        let Some(size) = index.byte_size(ty) else {
            continue;
        };
        if loc <= off && off < loc.saturating_add(size.max(1)) {
            let name = if base {
                None
            } else {
                e.attr_value(gimli::DW_AT_name)
                    .ok()
                    .flatten()
                    .and_then(|v| dwarf.attr_string(unit, v).ok())
                    .map(|s| {
                        s.to_string_lossy()
                            .map(|c| c.into_owned())
                            .unwrap_or_default()
                    })
            };
            return Some((name, loc, ty));
        }
    }
    None
}

/// `DW_AT_data_member_location` as a constant, or as the DWARF 2
/// expression `DW_OP_plus_uconst N`; 0 for a union member without one.
fn member_location(
    e: &gimli::DebuggingInformationEntry<'_, '_, Reader>,
    unit: &Unit,
) -> Option<u64> {
    match e.attr(gimli::DW_AT_data_member_location).ok()? {
        None => {
            // Union members (and bit-fields with DW_AT_data_bit_offset).
            if e.attr(gimli::DW_AT_data_bit_offset).ok()?.is_some() {
                None
            } else {
                Some(0)
            }
        }
        Some(a) => match a.value() {
            AttributeValue::Exprloc(expr) => {
                let mut ops = expr.operations(unit.encoding());
                match ops.next().ok()? {
                    Some(Operation::PlusConstant { value }) => Some(value),
                    _ => None,
                }
            }
            v => v.udata_value(),
        },
    }
}

/// True for a type whose insides are nobody's name: declared in a system
/// header (`pthread_mutex_t`, `std::mutex`, `sem_t`), or, without a
/// declaration file, named like a pthread type.
fn is_opaque(dwarf: &gimli::Dwarf<Reader>, unit: &Unit, uoff: UnitOffset) -> bool {
    let Ok(entry) = unit.entry(uoff) else {
        return true;
    };
    if let Some(file) = decl_file(dwarf, unit, &entry) {
        return is_system_path(&file);
    }
    let name = entry
        .attr_value(gimli::DW_AT_name)
        .ok()
        .flatten()
        .and_then(|v| dwarf.attr_string(unit, v).ok())
        .and_then(|s| s.to_string_lossy().ok().map(|c| c.into_owned()))
        .unwrap_or_default();
    name.starts_with("pthread_") || name.starts_with("__pthread") || name == "sem_t"
}

/// The file (directory joined) named by `DW_AT_decl_file`.
fn decl_file(
    dwarf: &gimli::Dwarf<Reader>,
    unit: &Unit,
    entry: &gimli::DebuggingInformationEntry<'_, '_, Reader>,
) -> Option<String> {
    let index = match entry.attr_value(gimli::DW_AT_decl_file).ok()?? {
        AttributeValue::FileIndex(i) => i,
        v => v.udata_value()?,
    };
    let header = unit.line_program.as_ref()?.header();
    let file = header.file(index)?;
    let string = |v| {
        dwarf
            .attr_string(unit, v)
            .ok()
            .and_then(|s| s.to_string_lossy().ok().map(|c| c.into_owned()))
    };
    let name = string(file.path_name())?;
    if name.starts_with('/') {
        return Some(name);
    }
    let dir = file.directory(header).and_then(string).unwrap_or_default();
    Some(format!("{dir}/{name}"))
}

/// Headers of the compiler and the C library (`/usr/include/…`,
/// `/usr/lib/gcc/…`, libstdc++'s `c++/` tree).
pub(crate) fn is_system_path(file: &str) -> bool {
    file.starts_with("/usr/include/")
        || file.starts_with("/usr/lib/gcc/")
        || file.starts_with("/usr/lib/llvm")
        || file.contains("/include/c++/")
}
