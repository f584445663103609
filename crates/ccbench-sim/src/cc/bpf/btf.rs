//! BPF Type Format: the `.BTF` types of an object and the CO-RE relocation records of its
//! `.BTF.ext` (include/uapi/linux/btf.h, Documentation/bpf/btf.rst).

use super::Refusal;

/// `BTF_KIND_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Void,
    Int,
    Ptr,
    Array,
    Struct,
    Union,
    Enum,
    Fwd,
    Typedef,
    Volatile,
    Const,
    Restrict,
    Func,
    FuncProto,
    Var,
    Datasec,
    Float,
    DeclTag,
    TypeTag,
    Enum64,
}

/// A struct or union member: name, type, and offset in bits (with its width when it is a
/// bitfield).
#[derive(Clone, Debug)]
pub struct Member {
    pub name: String,
    pub ty: u32,
    pub bit_offset: u32,
    pub bitfield_size: u32,
}

/// A DATASEC entry: a variable's type id and size. (Its offset is zero in an object
/// file until a loader fixes it up from the symbol table, as `Sections::var_offset` does.)
#[derive(Clone, Debug)]
pub struct SecVar {
    pub var: u32,
    pub size: u32,
}

#[derive(Clone, Debug)]
pub struct Type {
    pub kind: Kind,
    pub name: String,
    /// Byte size (int, struct, union, enum, datasec) or the referenced type id.
    pub size_or_type: u32,
    /// Int: bits and signedness.
    pub int_bits: u32,
    pub int_signed: bool,
    /// Array: element type and count.
    pub elem: u32,
    pub nelems: u32,
    /// Struct, union, func_proto (params as members with offset 0).
    pub members: Vec<Member>,
    /// Enum values by name.
    pub enumerators: Vec<(String, i64)>,
    /// Datasec entries.
    pub vars: Vec<SecVar>,
}

/// The types of one object, indexed by id (0 is void).
pub struct Btf {
    pub types: Vec<Type>,
}

/// One CO-RE relocation (`struct bpf_core_relo`).
#[derive(Clone, Debug)]
pub struct CoreRelo {
    pub section: String,
    /// Byte offset of the instruction within its section.
    pub insn_off: u32,
    pub type_id: u32,
    pub access: String,
    pub kind: u32,
}

struct Reader<'a> {
    bytes: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn u32(&self, at: usize) -> Result<u32, Refusal> {
        self.bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| Refusal::new(format!("{} is truncated", self.what)))
    }
    fn u16(&self, at: usize) -> Result<u16, Refusal> {
        self.bytes
            .get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .ok_or_else(|| Refusal::new(format!("{} is truncated", self.what)))
    }
    fn str(&self, strings: usize, off: u32) -> Result<String, Refusal> {
        let start = strings + off as usize;
        let rest =
            self.bytes.get(start..).ok_or_else(|| Refusal::new(format!("{}: string out of range", self.what)))?;
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        Ok(String::from_utf8_lossy(&rest[..end]).into_owned())
    }
}

const MAGIC: u16 = 0xeb9f;

impl Btf {
    pub fn parse(bytes: &[u8]) -> Result<Btf, Refusal> {
        let r = Reader { bytes, what: "the .BTF section" };
        if r.u16(0)? != MAGIC {
            return Err(Refusal::new("the .BTF section has no BTF magic (only little-endian BPF objects are read)"));
        }
        let hdr_len = r.u32(4)? as usize;
        let (type_off, type_len) = (r.u32(8)? as usize, r.u32(12)? as usize);
        let str_off = r.u32(16)? as usize;
        let (types_at, strings) = (hdr_len + type_off, hdr_len + str_off);
        let mut types = vec![Type::void()];
        let mut at = types_at;
        while at < types_at + type_len {
            let (t, next) = Self::parse_type(&r, at, strings)?;
            types.push(t);
            at = next;
        }
        Ok(Btf { types })
    }

    // One arm per BTF_KIND, in include/uapi/linux/btf.h's order: the format's own table,
    // read whole rather than split across functions.
    fn parse_type(r: &Reader, at: usize, strings: usize) -> Result<(Type, usize), Refusal> {
        let name = r.str(strings, r.u32(at)?)?;
        let info = r.u32(at + 4)?;
        let size_or_type = r.u32(at + 8)?;
        let vlen = (info & 0xffff) as usize;
        let kind_flag = info >> 31 == 1;
        let mut t = Type { name, size_or_type, ..Type::void() };
        let body = at + 12;
        let next = match (info >> 24) & 0x1f {
            1 => {
                let enc = r.u32(body)?;
                t.kind = Kind::Int;
                t.int_bits = enc & 0xff;
                t.int_signed = (enc >> 24) & 1 == 1;
                body + 4
            }
            2 => Self::plain(&mut t, Kind::Ptr, body),
            3 => {
                t.kind = Kind::Array;
                t.elem = r.u32(body)?;
                t.nelems = r.u32(body + 8)?;
                body + 12
            }
            k @ (4 | 5) => {
                t.kind = if k == 4 { Kind::Struct } else { Kind::Union };
                for i in 0..vlen {
                    let m = body + 12 * i;
                    let off = r.u32(m + 8)?;
                    let (bit_offset, bitfield_size) = if kind_flag { (off & 0xff_ffff, off >> 24) } else { (off, 0) };
                    t.members.push(Member {
                        name: r.str(strings, r.u32(m)?)?,
                        ty: r.u32(m + 4)?,
                        bit_offset,
                        bitfield_size,
                    });
                }
                body + 12 * vlen
            }
            6 => {
                t.kind = Kind::Enum;
                for i in 0..vlen {
                    let e = body + 8 * i;
                    t.enumerators.push((r.str(strings, r.u32(e)?)?, r.u32(e + 4)? as i32 as i64));
                }
                body + 8 * vlen
            }
            7 => Self::plain(&mut t, Kind::Fwd, body),
            8 => Self::plain(&mut t, Kind::Typedef, body),
            9 => Self::plain(&mut t, Kind::Volatile, body),
            10 => Self::plain(&mut t, Kind::Const, body),
            11 => Self::plain(&mut t, Kind::Restrict, body),
            12 => Self::plain(&mut t, Kind::Func, body),
            13 => {
                t.kind = Kind::FuncProto;
                for i in 0..vlen {
                    let p = body + 8 * i;
                    t.members.push(Member {
                        name: r.str(strings, r.u32(p)?)?,
                        ty: r.u32(p + 4)?,
                        bit_offset: 0,
                        bitfield_size: 0,
                    });
                }
                body + 8 * vlen
            }
            14 => {
                t.kind = Kind::Var;
                body + 4
            }
            15 => {
                t.kind = Kind::Datasec;
                for i in 0..vlen {
                    let v = body + 12 * i;
                    t.vars.push(SecVar { var: r.u32(v)?, size: r.u32(v + 8)? });
                }
                body + 12 * vlen
            }
            16 => Self::plain(&mut t, Kind::Float, body),
            17 => {
                t.kind = Kind::DeclTag;
                body + 4
            }
            18 => Self::plain(&mut t, Kind::TypeTag, body),
            19 => {
                t.kind = Kind::Enum64;
                for i in 0..vlen {
                    let e = body + 12 * i;
                    let v = (r.u32(e + 8)? as u64) << 32 | r.u32(e + 4)? as u64;
                    t.enumerators.push((r.str(strings, r.u32(e)?)?, v as i64));
                }
                body + 12 * vlen
            }
            k => return Err(Refusal::new(format!("the .BTF section has a type of unknown kind {k}"))),
        };
        Ok((t, next))
    }

    fn plain(t: &mut Type, kind: Kind, body: usize) -> usize {
        t.kind = kind;
        body
    }

    pub fn get(&self, id: u32) -> Result<&Type, Refusal> {
        self.types.get(id as usize).ok_or_else(|| Refusal::new(format!("BTF type id {id} does not exist")))
    }

    /// The type behind typedefs and qualifiers.
    pub fn resolve(&self, mut id: u32) -> Result<(u32, &Type), Refusal> {
        for _ in 0..64 {
            let t = self.get(id)?;
            match t.kind {
                Kind::Typedef | Kind::Volatile | Kind::Const | Kind::Restrict | Kind::TypeTag => id = t.size_or_type,
                _ => return Ok((id, t)),
            }
        }
        Err(Refusal::new("BTF typedef chain is too long"))
    }

    /// A type's size in bytes (`btf__resolve_size`).
    pub fn size_of(&self, id: u32) -> Result<u64, Refusal> {
        let (_, t) = self.resolve(id)?;
        Ok(match t.kind {
            Kind::Int | Kind::Struct | Kind::Union | Kind::Enum | Kind::Enum64 | Kind::Float | Kind::Datasec => {
                t.size_or_type as u64
            }
            Kind::Ptr => 8,
            Kind::Array => self.size_of(t.elem)? * t.nelems as u64,
            _ => return Err(Refusal::new(format!("BTF type '{}' has no size", t.name))),
        })
    }

    /// The first type of `kind` named `name`.
    pub fn find(&self, name: &str, kind: Kind) -> Option<u32> {
        self.types.iter().position(|t| t.kind == kind && t.name == name).map(|i| i as u32)
    }
}

impl Type {
    fn void() -> Type {
        Type {
            kind: Kind::Void,
            name: String::new(),
            size_or_type: 0,
            int_bits: 0,
            int_signed: false,
            elem: 0,
            nelems: 0,
            members: Vec::new(),
            enumerators: Vec::new(),
            vars: Vec::new(),
        }
    }
}

/// The CO-RE relocation records of a `.BTF.ext` section (`struct btf_ext_header`), with
/// their section names resolved through the object's `.BTF` strings.
pub fn core_relos(ext: &[u8], btf: &[u8]) -> Result<Vec<CoreRelo>, Refusal> {
    let r = Reader { bytes: ext, what: "the .BTF.ext section" };
    let b = Reader { bytes: btf, what: "the .BTF section" };
    if r.u16(0)? != MAGIC {
        return Err(Refusal::new("the .BTF.ext section has no BTF magic"));
    }
    let hdr_len = r.u32(4)? as usize;
    // The CO-RE part is in headers of 32 bytes and more (`core_relo_off`, `core_relo_len`).
    if hdr_len < 32 {
        return Ok(Vec::new());
    }
    let strings = b.u32(4)? as usize + b.u32(16)? as usize;
    let (off, len) = (r.u32(24)? as usize, r.u32(28)? as usize);
    let start = hdr_len + off;
    if len == 0 {
        return Ok(Vec::new());
    }
    let rec_size = r.u32(start)? as usize;
    if rec_size < 16 {
        return Err(Refusal::new("the .BTF.ext section's CO-RE records are too small"));
    }
    let mut out = Vec::new();
    let mut at = start + 4;
    while at < start + len {
        let section = b.str(strings, r.u32(at)?)?;
        let n = r.u32(at + 4)? as usize;
        at += 8;
        for _ in 0..n {
            out.push(CoreRelo {
                section: section.clone(),
                insn_off: r.u32(at)?,
                type_id: r.u32(at + 4)?,
                access: b.str(strings, r.u32(at + 8)?)?,
                kind: r.u32(at + 12)?,
            });
            at += rec_size;
        }
    }
    Ok(out)
}
