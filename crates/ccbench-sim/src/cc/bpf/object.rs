//! Reading and linking a BPF object: its programs, its `tcp_congestion_ops` struct_ops
//! maps, its globals and maps, with every relocation resolved for the simulator the way
//! libbpf resolves it for the kernel (tools/lib/bpf/libbpf.c: `bpf_object__collect_relos`,
//! `bpf_object__relocate`, `bpf_object__collect_st_ops_relos`).

use super::btf::{self, Btf, Kind};
use super::isa::{self, Insn};
use super::Refusal;
use object::{Object as _, ObjectSection, ObjectSymbol, SectionKind};
use std::collections::{BTreeMap, BTreeSet};

/// Address tags (bits 32 and up of a pointer): where a pointer points.
pub mod tag {
    pub const CTX: u64 = 1;
    pub const STACK: u64 = 2;
    pub const SOCK: u64 = 3;
    pub const ACK_SAMPLE: u64 = 4;
    pub const RATE_SAMPLE: u64 = 5;
    /// Data section `i` is at `DATA + i`.
    pub const DATA: u64 = 16;
    /// Map `i`'s values are at `MAP_VALUES + i`.
    pub const MAP_VALUES: u64 = 64;
    /// Map `i` itself (a handle for helpers) is `MAP + i`.
    pub const MAP: u64 = 128;
    pub fn addr(tag: u64, offset: u64) -> u64 {
        tag << 32 | offset
    }
}

/// A data section: `.data`, `.rodata`, `.bss`, and the `.kconfig` values.
#[derive(Clone, Debug)]
pub struct Data {
    pub name: String,
    pub bytes: Vec<u8>,
    pub writable: bool,
}

/// A global variable a scenario may set.
#[derive(Clone, Debug)]
pub struct Global {
    pub name: String,
    pub section: usize,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    pub integer: bool,
}

/// The most memory one section or map may take: a map's values are allocated whole, so
/// a `max_entries` from the object cannot be allowed to ask for more than a run can hold.
pub const MAX_MEMORY: usize = 64 << 20;

/// `BPF_MAP_TYPE_*` the simulator provides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapKind {
    Hash,
    Array,
    SkStorage,
}

#[derive(Clone, Debug)]
pub struct MapDef {
    pub name: String,
    pub kind: MapKind,
    pub key_size: usize,
    pub value_size: usize,
    pub max_entries: usize,
}

/// One `tcp_congestion_ops` value.
#[derive(Clone, Debug)]
pub struct Ops {
    /// The variable's symbol (`cubic` in `struct tcp_congestion_ops cubic = {...}`).
    pub symbol: String,
    /// Its `.name`.
    pub name: String,
    pub flags: u32,
    /// Callback member name to the program's entry instruction and its symbol.
    pub callbacks: BTreeMap<String, (usize, String)>,
    /// `cong_control` takes (sk, ack, flag, rs) since Linux 6.10, (sk, rs) before.
    pub cong_control_args: usize,
    /// Where `.name` is in its section, for a loader that renames it.
    pub section: String,
    pub name_at: usize,
}

/// A linked object, ready to run.
pub struct Object {
    pub insns: Vec<Insn>,
    pub ops: Vec<Ops>,
    pub data: Vec<Data>,
    pub globals: Vec<Global>,
    pub maps: Vec<MapDef>,
    pub kfuncs: Vec<&'static str>,
    pub helpers: BTreeSet<i32>,
    pub kconfig: Vec<String>,
    /// The object's private CA struct (what `inet_csk_ca` points at), for plots.
    pub ca_fields: Vec<(String, usize, usize, bool)>,
    /// Fields that CO-RE could not find, by instruction, when the object also tests for
    /// them (`bpf_core_field_exists`): running one of these instructions is an error.
    pub poisoned: BTreeMap<usize, String>,
    /// Each program's writes to `sk_pacing_status` (BBR's `SK_PACING_NEEDED` in init).
    pub sets_pacing_status: BTreeSet<String>,
    /// Program symbols by entry instruction, for messages.
    pub programs: BTreeMap<usize, String>,
}

/// The callbacks of `tcp_congestion_ops` a program may fill (net/ipv4/bpf_tcp_ca.c).
pub const CALLBACKS: &[&str] = &[
    "init",
    "release",
    "ssthresh",
    "cong_avoid",
    "set_state",
    "cwnd_event",
    "in_ack_event",
    "pkts_acked",
    "min_tso_segs",
    "cong_control",
    "undo_cwnd",
    "sndbuf_expand",
];

pub(super) fn elf_error(e: object::read::Error) -> Refusal {
    Refusal::new(format!("is not a readable BPF ELF object ({e})"))
}

pub(super) struct Sections<'a> {
    /// Executable sections in order, each with its first instruction's index.
    pub text: Vec<(object::SectionIndex, usize, String)>,
    pub data: BTreeMap<usize, usize>,
    pub maps: Option<object::SectionIndex>,
    pub struct_ops: Option<object::SectionIndex>,
    /// Symbol addresses by (section, name): DATASEC offsets in an object file are zero
    /// until a loader fixes them up from these (libbpf's `btf_fixup_datasec`).
    pub symbols: BTreeMap<(String, String), u64>,
    pub file: &'a object::File<'a>,
}

impl Sections<'_> {
    /// A DATASEC variable's offset within its section.
    pub fn var_offset(&self, section: &str, var: &str) -> Result<u64, Refusal> {
        self.symbols
            .get(&(section.to_string(), var.to_string()))
            .copied()
            .ok_or_else(|| Refusal::new(format!("its BTF names {var} in {section}, which has no such symbol")))
    }
}

impl Object {
    /// Read and link `bytes`, refusing what the simulator cannot run.
    pub fn load(bytes: &[u8], params: &BTreeMap<String, f64>, hz: u32) -> Result<Object, Refusal> {
        Self::read(bytes, params, Some(hz))
    }

    /// Read what any loader needs (the struct_ops maps, the globals, `params` set in
    /// them) without the simulator's own checks: what the kernel engines take.
    pub fn inspect(bytes: &[u8], params: &BTreeMap<String, f64>) -> Result<Object, Refusal> {
        Self::read(bytes, params, None)
    }

    // One list of steps for both readings: `link` (the simulator's HZ) adds the
    // relocations, CO-RE and the checks before a run.
    fn read(bytes: &[u8], params: &BTreeMap<String, f64>, link: Option<u32>) -> Result<Object, Refusal> {
        let file = object::File::parse(bytes).map_err(elf_error)?;
        if file.architecture() != object::Architecture::Bpf {
            return Err(Refusal::new(format!("is not a BPF object (its machine is {:?})", file.architecture())));
        }
        let section_bytes = |name: &str| -> Result<Option<Vec<u8>>, Refusal> {
            match file.section_by_name(name) {
                Some(s) => Ok(Some(s.data().map_err(elf_error)?.to_vec())),
                None => Ok(None),
            }
        };
        let btf_bytes = section_bytes(".BTF")?.ok_or_else(|| Refusal::new("has no .BTF section (compile with -g)"))?;
        let btf = Btf::parse(&btf_bytes)?;
        let mut obj = Object::bare(Vec::new());
        obj.programs.clear();
        let secs = obj.collect_sections(&file)?;
        obj.collect_globals(&btf, &secs)?;
        if let Some(hz) = link {
            let relos = match section_bytes(".BTF.ext")? {
                Some(ext) => btf::core_relos(&ext, &btf_bytes)?,
                None => Vec::new(),
            };
            obj.collect_kconfig(&btf, hz)?;
            obj.collect_maps(&btf)?;
            obj.relocate(&secs)?;
            obj.apply_core(&btf, &relos, &secs)?;
        }
        obj.collect_ops(&btf, &secs)?;
        obj.ca_fields = super::link::ca_struct(&btf);
        obj.set_params(params)?;
        if link.is_some() {
            isa::check(&obj.insns, &obj.programs)?;
            obj.helpers = super::helpers::collect(&obj.insns, &obj.programs)?;
        }
        Ok(obj)
    }

    /// An object of bare instructions, one program at 0 (and the start of a read).
    pub fn bare(insns: Vec<Insn>) -> Object {
        Object {
            insns,
            ops: Vec::new(),
            data: Vec::new(),
            globals: Vec::new(),
            maps: Vec::new(),
            kfuncs: Vec::new(),
            helpers: BTreeSet::new(),
            kconfig: Vec::new(),
            ca_fields: Vec::new(),
            poisoned: BTreeMap::new(),
            sets_pacing_status: BTreeSet::new(),
            programs: BTreeMap::from([(0, "test".to_string())]),
        }
    }

    fn collect_sections<'a>(&mut self, file: &'a object::File<'a>) -> Result<Sections<'a>, Refusal> {
        let mut s = Sections {
            text: Vec::new(),
            data: BTreeMap::new(),
            maps: None,
            struct_ops: None,
            symbols: BTreeMap::new(),
            file,
        };
        for sec in file.sections() {
            let name = sec.name().map_err(elf_error)?.to_string();
            match (sec.kind(), name.as_str()) {
                (SectionKind::Text, _) => {
                    let bytes = sec.data().map_err(elf_error)?;
                    s.text.push((sec.index(), self.insns.len(), name.clone()));
                    self.insns.extend(isa::decode(bytes).map_err(|e| Refusal::new(format!("section {name}: {e}")))?);
                }
                (_, ".maps") => s.maps = Some(sec.index()),
                (_, ".struct_ops" | ".struct_ops.link") => s.struct_ops = Some(sec.index()),
                (_, n) if n.starts_with(".data") || n.starts_with(".rodata") || n.starts_with(".bss") => {
                    if sec.size() > MAX_MEMORY as u64 {
                        return Err(Refusal::new(format!(
                            "section {n} holds {} bytes; the simulator takes at most {MAX_MEMORY}",
                            sec.size()
                        )));
                    }
                    let bytes = if sec.kind() == SectionKind::UninitializedData {
                        vec![0; sec.size() as usize]
                    } else {
                        sec.data().map_err(elf_error)?.to_vec()
                    };
                    s.data.insert(sec.index().0, self.data.len());
                    self.data.push(Data { writable: !n.starts_with(".rodata"), name, bytes });
                }
                _ => {}
            }
        }
        if s.text.is_empty() {
            return Err(Refusal::new("has no programs"));
        }
        for sym in file.symbols() {
            if let (Some(si), Ok(name)) = (sym.section_index(), sym.name()) {
                let sec = file.section_by_index(si).and_then(|x| x.name().map(str::to_string)).unwrap_or_default();
                s.symbols.insert((sec, name.to_string()), sym.address());
            }
            if let (Some(si), object::SymbolKind::Text) = (sym.section_index(), sym.kind()) {
                if let Some(&(_, base, ref sec)) = s.text.iter().find(|(i, _, _)| *i == si) {
                    if sec != ".text" {
                        self.programs
                            .insert(base + sym.address() as usize / 8, sym.name().map_err(elf_error)?.to_string());
                    }
                }
            }
        }
        Ok(s)
    }

    /// The named variables of the data sections (their DATASEC in BTF).
    fn collect_globals(&mut self, btf: &Btf, secs: &Sections) -> Result<(), Refusal> {
        for t in btf.types.iter().filter(|t| t.kind == Kind::Datasec) {
            let Some(section) = self.data.iter().position(|d| d.name == t.name) else { continue };
            for v in &t.vars {
                let var = btf.get(v.var)?;
                let (_, ty) = btf.resolve(var.size_or_type)?;
                let integer = matches!(ty.kind, Kind::Int | Kind::Enum | Kind::Enum64);
                self.globals.push(Global {
                    name: var.name.clone(),
                    section,
                    offset: secs.var_offset(&t.name, &var.name)? as usize,
                    size: v.size as usize,
                    signed: ty.int_signed,
                    integer,
                });
            }
        }
        Ok(())
    }

    /// `.kconfig` externs: values the loader supplies. The simulator knows `CONFIG_HZ`.
    fn collect_kconfig(&mut self, btf: &Btf, hz: u32) -> Result<(), Refusal> {
        let Some(sec) = btf.types.iter().find(|t| t.kind == Kind::Datasec && t.name == ".kconfig") else {
            return Ok(());
        };
        let mut bytes = vec![0u8; sec.vars.len() * 8];
        for (i, v) in sec.vars.iter().enumerate() {
            let name = btf.get(v.var)?.name.clone();
            let value: u64 = match name.as_str() {
                "CONFIG_HZ" => hz as u64,
                other => {
                    return Err(Refusal::new(format!(
                        "reads the kconfig value {other}, which the simulator does not provide (it provides CONFIG_HZ)"
                    )))
                }
            };
            bytes[i * 8..i * 8 + 8].copy_from_slice(&value.to_le_bytes());
            self.kconfig.push(name);
        }
        self.data.push(Data { name: ".kconfig".into(), bytes, writable: false });
        Ok(())
    }

    /// BTF-defined maps in `.maps` (`__uint(type, ...)`, `__type(key, ...)`, ...).
    fn collect_maps(&mut self, btf: &Btf) -> Result<(), Refusal> {
        let Some(sec) = btf.types.iter().find(|t| t.kind == Kind::Datasec && t.name == ".maps") else { return Ok(()) };
        for v in &sec.vars {
            let var = btf.get(v.var)?;
            let (_, def) = btf.resolve(var.size_or_type)?;
            let mut vals: BTreeMap<&str, u64> = BTreeMap::new();
            for m in &def.members {
                let (_, ptr) = btf.resolve(m.ty)?;
                let value = match m.name.as_str() {
                    // `__uint(x, N)` is a pointer to an array of N; `__type(x, T)` a pointer to T.
                    "key" | "value" => btf.size_of(ptr.size_or_type)?,
                    _ => btf.resolve(ptr.size_or_type)?.1.nelems as u64,
                };
                vals.insert(m.name.as_str(), value);
            }
            let get = |k: &str, alt: &str| vals.get(k).or_else(|| vals.get(alt)).copied().unwrap_or(0) as usize;
            let kind = match vals.get("type").copied().unwrap_or(0) {
                1 | 5 => MapKind::Hash,
                2 | 6 => MapKind::Array,
                24 => MapKind::SkStorage,
                t => {
                    return Err(Refusal::new(format!(
                        "map {} has type {t}, which the simulator does not provide (hash, array, percpu hash and array, sk_storage)",
                        var.name
                    )))
                }
            };
            let max_entries = if kind == MapKind::SkStorage { 0 } else { get("max_entries", "max_entries") };
            let (key, value) = (get("key", "key_size"), get("value", "value_size"));
            if value == 0 || (kind != MapKind::SkStorage && max_entries == 0) {
                return Err(Refusal::new(format!("map {} has no value size or no entries", var.name)));
            }
            let bytes = value.saturating_mul(max_entries.max(1));
            if bytes > MAX_MEMORY || key > MAX_MEMORY {
                return Err(Refusal::new(format!(
                    "map {} needs {bytes} bytes; the simulator takes at most {MAX_MEMORY} per map",
                    var.name
                )));
            }
            self.maps.push(MapDef {
                name: var.name.clone(),
                kind,
                key_size: get("key", "key_size"),
                value_size: get("value", "value_size"),
                max_entries,
            });
        }
        Ok(())
    }
}

/// Each section's offset in the file, by name, for a loader that patches bytes.
pub fn section_file_offsets(bytes: &[u8]) -> Result<BTreeMap<String, usize>, Refusal> {
    let file = object::File::parse(bytes).map_err(elf_error)?;
    let mut out = BTreeMap::new();
    for s in file.sections() {
        if let (Ok(name), Some((at, _))) = (s.name(), s.file_range()) {
            out.insert(name.to_string(), at as usize);
        }
    }
    Ok(out)
}
