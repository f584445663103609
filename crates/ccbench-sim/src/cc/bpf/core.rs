//! CO-RE: an object's field and type relocations resolved against the simulator's view
//! of the socket (`view.rs`), by name, as libbpf resolves them against the kernel's BTF
//! (tools/lib/bpf/relo_core.c, `bpf_core_calc_relo_insn`).

use super::btf::{Btf, CoreRelo, Kind};
use super::view::{TType, Target};
use super::Refusal;

/// `enum bpf_core_relo_kind`.
pub mod kind {
    pub const FIELD_BYTE_OFFSET: u32 = 0;
    pub const FIELD_BYTE_SIZE: u32 = 1;
    pub const FIELD_EXISTS: u32 = 2;
    pub const FIELD_SIGNED: u32 = 3;
    pub const FIELD_LSHIFT_U64: u32 = 4;
    pub const FIELD_RSHIFT_U64: u32 = 5;
    pub const TYPE_ID_LOCAL: u32 = 6;
    pub const TYPE_ID_TARGET: u32 = 7;
    pub const TYPE_EXISTS: u32 = 8;
    pub const TYPE_SIZE: u32 = 9;
    pub const ENUMVAL_EXISTS: u32 = 10;
    pub const ENUMVAL_VALUE: u32 = 11;
    pub const TYPE_MATCHES: u32 = 12;
}

/// A resolved field: where it is in the target, how wide, and its path for messages.
#[derive(Clone, Debug)]
pub struct Field {
    pub path: String,
    pub bit_offset: u64,
    pub bitfield_size: u32,
    pub size: u64,
    pub signed: bool,
    /// The size of the field in the object's own type, for the load it patches.
    pub local_size: u64,
}

/// What one relocation resolves to.
#[derive(Clone, Debug)]
pub enum Resolved {
    /// The value to patch into the instruction.
    Value(u64),
    /// A byte offset of a field, for a load or store that the instruction makes.
    Field(Field),
    /// The field or type is not in the target: `what` names it.
    Missing(String),
}

/// A local type's name without its `___flavor` suffix (libbpf's `bpf_core_essential_name_len`).
fn essential(name: &str) -> &str {
    name.find("___").map_or(name, |i| &name[..i])
}

/// Resolve one record.
pub fn resolve(btf: &Btf, target: &Target, r: &CoreRelo) -> Result<Resolved, Refusal> {
    let (local_id, local) = btf.resolve(r.type_id)?;
    let root = essential(&local.name).to_string();
    match r.kind {
        kind::FIELD_BYTE_OFFSET..=kind::FIELD_RSHIFT_U64 => field_relo(btf, target, local_id, &root, r),
        kind::TYPE_ID_LOCAL => Ok(Resolved::Value(r.type_id as u64)),
        kind::TYPE_ID_TARGET | kind::TYPE_EXISTS | kind::TYPE_SIZE | kind::TYPE_MATCHES => {
            let found = target.find(&root);
            Ok(Resolved::Value(match (r.kind, found) {
                (kind::TYPE_SIZE, Some(t)) => target.size_of(t),
                (kind::TYPE_SIZE, None) => return Ok(Resolved::Missing(format!("type {root}"))),
                (kind::TYPE_ID_TARGET, Some(t)) => t as u64 + 1,
                (_, f) => u64::from(f.is_some()),
            }))
        }
        kind::ENUMVAL_EXISTS | kind::ENUMVAL_VALUE => enum_relo(target, local, &root, r),
        k => Err(Refusal::new(format!("uses a CO-RE relocation of kind {k}, which the simulator does not resolve"))),
    }
}

fn enum_relo(target: &Target, local: &super::btf::Type, root: &str, r: &CoreRelo) -> Result<Resolved, Refusal> {
    let idx: usize = r.access.parse().map_err(|_| Refusal::new(format!("bad CO-RE access string '{}'", r.access)))?;
    let name = local
        .enumerators
        .get(idx)
        .map(|(n, _)| essential(n).to_string())
        .ok_or_else(|| Refusal::new(format!("CO-RE enum index {idx} out of range in {root}")))?;
    let value = target.find(root).and_then(|t| match &target.types[t] {
        TType::Enum { values, .. } => values.iter().find(|(n, _)| *n == name).map(|&(_, v)| v),
        _ => None,
    });
    Ok(match (r.kind, value) {
        (kind::ENUMVAL_EXISTS, v) => Resolved::Value(u64::from(v.is_some())),
        (_, Some(v)) => Resolved::Value(v as u64),
        (_, None) => Resolved::Missing(format!("enum {root}'s {name}")),
    })
}

fn field_relo(btf: &Btf, target: &Target, local_id: u32, root: &str, r: &CoreRelo) -> Result<Resolved, Refusal> {
    let spec: Vec<u64> = r
        .access
        .split(':')
        .map(|s| s.parse::<u64>())
        .collect::<Result<_, _>>()
        .map_err(|_| Refusal::new(format!("bad CO-RE access string '{}'", r.access)))?;
    let Some(mut t_ty) = target.find(root) else {
        return Ok(missing_or_absent(r.kind, format!("struct {root}")));
    };
    // The first index steps over whole roots (`p[i]`), the rest name members or elements.
    let mut bit_off = spec[0] * btf.size_of(local_id)? * 8;
    let (mut l_ty, mut path, mut bitfield) = (local_id, root.to_string(), 0u32);
    for &i in &spec[1..] {
        let (_, l) = btf.resolve(l_ty)?;
        match (l.kind, &target.types[t_ty]) {
            (Kind::Struct | Kind::Union, TType::Struct { members, .. }) => {
                let lm = l
                    .members
                    .get(i as usize)
                    .ok_or_else(|| Refusal::new(format!("CO-RE member {i} out of range in {path}")))?;
                path = format!("{path}.{}", lm.name);
                let Some(tm) = members.iter().find(|m| m.name == essential(&lm.name)) else {
                    return Ok(missing_or_absent(r.kind, path));
                };
                bit_off += tm.bit_offset as u64;
                bitfield = tm.bitfield_size;
                (l_ty, t_ty) = (lm.ty, tm.ty);
            }
            (Kind::Array, TType::Array { elem, n }) => {
                if i >= *n as u64 && *n > 0 {
                    return Ok(missing_or_absent(r.kind, format!("{path}[{i}]")));
                }
                path = format!("{path}[{i}]");
                bit_off += i * target.size_of(*elem) * 8;
                bitfield = 0;
                (l_ty, t_ty) = (l.elem, *elem);
            }
            _ => return Ok(missing_or_absent(r.kind, format!("{path} (a different kind of type here)"))),
        }
    }
    let (size, signed) = match &target.types[t_ty] {
        TType::Int { size, signed } => (*size as u64, *signed),
        _ => (target.size_of(t_ty), false),
    };
    let field =
        Field { path, bit_offset: bit_off, bitfield_size: bitfield, size, signed, local_size: btf.size_of(l_ty)? };
    Ok(match r.kind {
        kind::FIELD_BYTE_OFFSET => Resolved::Field(field),
        kind::FIELD_EXISTS => Resolved::Value(1),
        kind::FIELD_SIGNED => Resolved::Value(u64::from(field.signed)),
        k => Resolved::Value(bitfield_value(&field, k)),
    })
}

fn missing_or_absent(k: u32, what: String) -> Resolved {
    if k == kind::FIELD_EXISTS {
        Resolved::Value(0)
    } else {
        Resolved::Missing(what)
    }
}

/// The byte offset and size of the load that holds a field, and its shifts
/// (`bpf_core_calc_field_relo`, little-endian).
pub fn load_window(f: &Field) -> (u64, u64) {
    if f.bitfield_size == 0 {
        return (f.bit_offset / 8, f.size);
    }
    let mut byte_sz = f.size;
    let mut byte_off = f.bit_offset / 8 / byte_sz * byte_sz;
    while f.bit_offset + f.bitfield_size as u64 - byte_off * 8 > byte_sz * 8 {
        byte_sz *= 2;
        byte_off = f.bit_offset / 8 / byte_sz * byte_sz;
    }
    (byte_off, byte_sz)
}

fn bitfield_value(f: &Field, k: u32) -> u64 {
    let (byte_off, byte_sz) = load_window(f);
    let bit_sz = if f.bitfield_size == 0 { f.size * 8 } else { f.bitfield_size as u64 };
    match k {
        kind::FIELD_BYTE_SIZE => byte_sz,
        kind::FIELD_LSHIFT_U64 => 64 - (f.bit_offset + bit_sz - byte_off * 8),
        _ => 64 - bit_sz,
    }
}

/// The byte offset a `FIELD_BYTE_OFFSET` relocation patches in.
pub fn byte_offset(f: &Field) -> u64 {
    load_window(f).0
}
