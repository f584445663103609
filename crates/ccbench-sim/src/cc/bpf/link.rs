//! The relocations of a BPF object: calls to subprograms and kfuncs, references to maps,
//! globals and kconfig values (ELF `.rel*` sections), CO-RE (`.BTF.ext`), and the
//! struct_ops value (`.rel.struct_ops`), as libbpf applies them.

use super::btf::{self, Btf, Kind};
use super::core::{self, Resolved};
use super::isa::{self, class, Insn};
use super::object::{elf_error, tag, Object, Ops, Sections, CALLBACKS};
use super::view::{self, off};
use super::{kfuncs, Refusal};
use object::{Object as _, ObjectSection, ObjectSymbol, RelocationTarget};
use std::collections::BTreeMap;

/// `TCP_CONG_MASK`: the flags an ops value may carry (`TCP_CONG_NON_RESTRICTED`,
/// `TCP_CONG_NEEDS_ECN`).
const TCP_CONG_MASK: u32 = 0x3;

impl Object {
    /// ELF relocations of the executable sections.
    pub(super) fn relocate(&mut self, secs: &Sections) -> Result<(), Refusal> {
        let file = secs.file;
        for &(si, base, ref sec_name) in &secs.text {
            let sec = file.section_by_index(si).map_err(elf_error)?;
            for (offset, rel) in sec.relocations() {
                let at = base + offset as usize / 8;
                let RelocationTarget::Symbol(sym_i) = rel.target() else { continue };
                let sym = file.symbol_by_index(sym_i).map_err(elf_error)?;
                let name = sym.name().map_err(elf_error)?.to_string();
                let insn = *self
                    .insns
                    .get(at)
                    .ok_or_else(|| Refusal::new(format!("a relocation in {sec_name} points past its code")))?;
                if insn.op == isa::CALL {
                    self.link_call(secs, at, &sym, &name)?;
                } else if insn.op == isa::LD_IMM64 && at + 1 < self.insns.len() {
                    self.link_load(secs, at, &sym, &name)?;
                } else {
                    return Err(Refusal::new(format!(
                        "has a relocation against {name} on an instruction that is neither a call nor a 64-bit load"
                    )));
                }
            }
        }
        Ok(())
    }

    fn link_call(&mut self, secs: &Sections, at: usize, sym: &object::Symbol, name: &str) -> Result<(), Refusal> {
        if sym.is_undefined() {
            // An extern function: a kfunc, bound by name.
            let k = kfuncs::index(name).ok_or_else(|| {
                Refusal::new(format!(
                    "calls the kfunc {name}, which the simulator does not provide (it provides {})",
                    kfuncs::NAMES.join(", ")
                ))
            })?;
            if !self.kfuncs.contains(&kfuncs::NAMES[k]) {
                self.kfuncs.push(kfuncs::NAMES[k]);
            }
            self.insns[at].src = isa::PSEUDO_KFUNC_CALL;
            self.insns[at].imm = k as i32;
            return Ok(());
        }
        let si = sym.section_index().ok_or_else(|| Refusal::new(format!("calls {name}, which is in no section")))?;
        let &(_, base, _) = secs
            .text
            .iter()
            .find(|(i, _, _)| *i == si)
            .ok_or_else(|| Refusal::new(format!("calls {name}, which is not code")))?;
        // libbpf: the callee is at the symbol's offset plus imm + 1 instructions.
        let target = base as i64 + sym.address() as i64 / 8 + self.insns[at].imm as i64 + 1;
        self.insns[at].imm = (target - at as i64 - 1) as i32;
        Ok(())
    }

    fn link_load(&mut self, secs: &Sections, at: usize, sym: &object::Symbol, name: &str) -> Result<(), Refusal> {
        let addend = self.insns[at].imm as u32 as u64;
        let value = if sym.is_undefined() {
            let Some(i) = self.kconfig.iter().position(|k| k == name) else {
                return Err(Refusal::new(format!("refers to the extern {name}, which the simulator does not provide")));
            };
            let sec = self.data.iter().position(|d| d.name == ".kconfig").expect("kconfig section made with its names");
            tag::addr(tag::DATA + sec as u64, i as u64 * 8)
        } else {
            let si =
                sym.section_index().ok_or_else(|| Refusal::new(format!("refers to {name}, which is in no section")))?;
            if Some(si) == secs.maps {
                let i =
                    self.maps.iter().position(|m| m.name == name).ok_or_else(|| {
                        Refusal::new(format!("refers to the map {name}, which has no BTF definition"))
                    })?;
                tag::addr(tag::MAP + i as u64, 0)
            } else if let Some(&d) = secs.data.get(&si.0) {
                tag::addr(tag::DATA + d as u64, addend + sym.address())
            } else {
                return Err(Refusal::new(format!("loads the address of {name}, which the simulator does not support (only maps, globals and kconfig values)")));
            }
        };
        isa::set_imm64(&mut self.insns, at, value);
        Ok(())
    }

    /// CO-RE relocations, resolved against the simulator's socket.
    pub(super) fn apply_core(&mut self, btf: &Btf, relos: &[btf::CoreRelo], secs: &Sections) -> Result<(), Refusal> {
        let target = view::target();
        // Fields the object tests for with `bpf_core_field_exists`: a missing one is
        // poisoned (run-time error if reached), as libbpf poisons it, not refused.
        let tested: Vec<(u32, &str)> = relos
            .iter()
            .filter(|r| r.kind == core::kind::FIELD_EXISTS)
            .map(|r| (r.type_id, r.access.as_str()))
            .collect();
        for r in relos {
            let Some(&(_, base, _)) = secs.text.iter().find(|(_, _, n)| *n == r.section) else { continue };
            let at = base + r.insn_off as usize / 8;
            let insn = *self.insns.get(at).ok_or_else(|| Refusal::new("a CO-RE relocation points past its code"))?;
            match core::resolve(btf, &target, r)? {
                Resolved::Value(v) => patch_value(&mut self.insns, at, v)?,
                Resolved::Field(f) => {
                    let at_byte = core::byte_offset(&f);
                    if isa::is_mem(insn.op) {
                        self.patch_access(at, &f, at_byte, &target)?;
                    } else {
                        patch_value(&mut self.insns, at, at_byte)?;
                    }
                    if f.path.ends_with("sk_pacing_status") && isa::class(insn.op) != class::LDX {
                        if let Some((_, p)) = self.programs.range(..=at).next_back() {
                            self.sets_pacing_status.insert(p.clone());
                        }
                    }
                }
                Resolved::Missing(what) => {
                    if tested.iter().any(|&(t, a)| t == r.type_id && a == r.access) {
                        self.poisoned.insert(at, what);
                    } else {
                        return Err(Refusal::new(format!("reads {what}, which the simulator's socket does not have")));
                    }
                }
            }
        }
        Ok(())
    }

    /// A load or store through a CO-RE field offset: its new offset, its size made the
    /// target field's for loads, and a refusal for stores to what the kernel keeps
    /// read-only.
    fn patch_access(&mut self, at: usize, f: &core::Field, byte: u64, target: &view::Target) -> Result<(), Refusal> {
        let insn = &mut self.insns[at];
        let size = isa::mem_size(insn.op) as u64;
        let store = isa::class(insn.op) != class::LDX;
        let socket = f.path.starts_with("tcp_sock") || f.path.starts_with("sock") || f.path.starts_with("inet_");
        if socket && store && !view::writable(byte as usize, size as usize) {
            return Err(Refusal::new(format!(
                "writes {}, which the kernel lets no congestion control write (bpf_tcp_ca_btf_struct_access allows {})",
                view::field_at(target, byte as usize),
                view::WRITABLE.iter().map(|w| w.2).collect::<Vec<_>>().join(", ")
            )));
        }
        if f.bitfield_size == 0 && size != f.size && size == f.local_size {
            if store {
                return Err(Refusal::new(format!(
                    "stores {} bytes to {}, which is {} bytes in the simulator",
                    size, f.path, f.size
                )));
            }
            insn.op = isa::with_size(insn.op, f.size as usize)
                .ok_or_else(|| Refusal::new(format!("{} has a size no load has", f.path)))?;
        }
        insn.off = i16::try_from(byte).map_err(|_| Refusal::new(format!("{} is too far into its struct", f.path)))?;
        Ok(())
    }

    /// The `tcp_congestion_ops` values of `.struct_ops`: each callback bound to its
    /// program by the section's relocations, members matched by name.
    pub(super) fn collect_ops(&mut self, btf: &Btf, secs: &Sections) -> Result<(), Refusal> {
        let file = secs.file;
        let Some(si) = secs.struct_ops else {
            return Err(Refusal::new("has no struct_ops map (a SEC(\".struct_ops\") struct tcp_congestion_ops)"));
        };
        let sec = file.section_by_index(si).map_err(elf_error)?;
        let bytes = sec.data().map_err(elf_error)?;
        let mut slots: BTreeMap<u64, String> = BTreeMap::new();
        for (offset, rel) in sec.relocations() {
            if let RelocationTarget::Symbol(i) = rel.target() {
                let sym = file.symbol_by_index(i).map_err(elf_error)?;
                slots.insert(offset, sym.name().map_err(elf_error)?.to_string());
            }
        }
        let datasec = btf.types.iter().find(|t| t.kind == Kind::Datasec && t.name == sec.name().unwrap_or_default());
        let Some(datasec) = datasec else { return Err(Refusal::new("has a .struct_ops section without BTF")) };
        for v in &datasec.vars {
            let var = btf.get(v.var)?;
            let (_, ty) = btf.resolve(var.size_or_type)?;
            if ty.name != "tcp_congestion_ops" {
                return Err(Refusal::new(format!(
                    "struct_ops map {} is a {}, not a tcp_congestion_ops",
                    var.name, ty.name
                )));
            }
            let section = sec.name().unwrap_or_default().to_string();
            let base = secs.var_offset(&section, &var.name)?;
            let mut ops = Ops {
                symbol: var.name.clone(),
                name: String::new(),
                flags: 0,
                callbacks: BTreeMap::new(),
                cong_control_args: 4,
                section,
                name_at: 0,
            };
            for m in &ty.members {
                self.ops_member(btf, &mut ops, m, base + m.bit_offset as u64 / 8, bytes, &slots)?;
            }
            if ops.flags & !TCP_CONG_MASK != 0 {
                return Err(Refusal::new(format!(
                    "struct_ops map {} has flags {:#x}; the kernel allows only {TCP_CONG_MASK:#x}",
                    ops.symbol, ops.flags
                )));
            }
            self.ops.push(ops);
        }
        if self.ops.is_empty() {
            return Err(Refusal::new("has no struct_ops map (a SEC(\".struct_ops\") struct tcp_congestion_ops)"));
        }
        Ok(())
    }

    /// One member of a `tcp_congestion_ops` value at byte `at` of its section: its name,
    /// its flags, or a callback bound to a program by a relocation in `slots`.
    fn ops_member(
        &self,
        btf: &Btf,
        ops: &mut Ops,
        m: &btf::Member,
        at: u64,
        bytes: &[u8],
        slots: &BTreeMap<u64, String>,
    ) -> Result<(), Refusal> {
        let raw = |n: usize| {
            bytes.get(at as usize..at as usize + n).ok_or_else(|| Refusal::new("the .struct_ops section is truncated"))
        };
        match m.name.as_str() {
            "name" => {
                let raw = raw(16)?;
                ops.name = String::from_utf8_lossy(&raw[..raw.iter().position(|&b| b == 0).unwrap_or(16)]).into_owned();
                ops.name_at = at as usize;
            }
            "flags" => ops.flags = u32::from_le_bytes(raw(4)?.try_into().expect("4 bytes")),
            cb => {
                let Some(prog) = slots.get(&at) else { return Ok(()) };
                if !CALLBACKS.contains(&cb) {
                    return Err(Refusal::new(format!(
                        "fills tcp_congestion_ops.{cb}, which no BPF congestion control may implement"
                    )));
                }
                let entry = self.programs.iter().find(|(_, n)| *n == prog).map(|(&pc, _)| pc);
                let entry = entry
                    .ok_or_else(|| Refusal::new(format!("binds {cb} to {prog}, which is not a struct_ops program")))?;
                if cb == "cong_control" {
                    let (_, ptr) = btf.resolve(m.ty)?;
                    ops.cong_control_args = btf.resolve(ptr.size_or_type)?.1.members.len();
                }
                ops.callbacks.insert(cb.to_string(), (entry, prog.clone()));
            }
        }
        Ok(())
    }

    /// Set globals from a scenario's `params`.
    pub(super) fn set_params(&mut self, params: &BTreeMap<String, f64>) -> Result<(), Refusal> {
        for (name, &value) in params {
            let g = self.globals.iter().find(|g| &g.name == name).cloned().ok_or_else(|| {
                let names: Vec<_> = self.globals.iter().filter(|g| self.settable(g)).map(|g| g.name.as_str()).collect();
                Refusal::param(
                    name,
                    format!("is not a global variable of the object; its settable globals: {}", list_or_none(&names)),
                )
            })?;
            if !self.settable(&g) {
                return Err(Refusal::param(name, "is zero-initialised (.bss) or not an integer: give it an initial value in the source to make it a parameter"));
            }
            let bits = g.size as u32 * 8;
            let (lo, hi) = if g.signed {
                (-(2f64.powi(bits as i32 - 1)), 2f64.powi(bits as i32 - 1) - 1.0)
            } else {
                (0.0, 2f64.powi(bits as i32) - 1.0)
            };
            if value.fract() != 0.0 || value < lo || value > hi {
                return Err(Refusal::param(
                    name,
                    format!(
                        "must be an integer from {lo} to {hi} (the object's {bits}-bit {})",
                        if g.signed { "signed" } else { "unsigned" }
                    ),
                ));
            }
            let raw = (value as i128 as u64).to_le_bytes();
            self.data[g.section].bytes[g.offset..g.offset + g.size].copy_from_slice(&raw[..g.size]);
        }
        Ok(())
    }

    /// A global a scenario may set: an integer with an initial value in the file.
    pub fn settable(&self, g: &super::object::Global) -> bool {
        g.integer && !self.data[g.section].name.starts_with(".bss") && g.size <= 8
    }
}

fn list_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// Patch a CO-RE value into an instruction's immediate (a move, an ALU op or a 64-bit load).
fn patch_value(insns: &mut [Insn], at: usize, v: u64) -> Result<(), Refusal> {
    let insn = insns[at];
    if insn.op == isa::LD_IMM64 && at + 1 < insns.len() {
        isa::set_imm64(insns, at, v);
        return Ok(());
    }
    match isa::class(insn.op) {
        class::ALU | class::ALU64 => {
            insns[at].imm =
                i32::try_from(v as i64).map_err(|_| Refusal::new("a CO-RE value does not fit its instruction"))?;
            Ok(())
        }
        _ => Err(Refusal::new(format!(
            "has a CO-RE relocation on an instruction it cannot patch (opcode {:#x})",
            insn.op
        ))),
    }
}

/// The object's private CA struct, if one stands out: a struct of integers, at most
/// `ICSK_CA_PRIV_SIZE` bytes, that a function's parameter or a global points at or is,
/// and that the simulator's socket does not define. Its fields become plot-able internals.
/// (clang puts a type in BTF only if something emitted refers to it.)
pub fn ca_struct(btf: &Btf) -> Vec<(String, usize, usize, bool)> {
    let target = view::target();
    let mut found: Vec<u32> = Vec::new();
    let refs = btf.types.iter().flat_map(|t| match t.kind {
        Kind::FuncProto => t.members.iter().map(|m| m.ty).collect::<Vec<_>>(),
        Kind::Var => vec![t.size_or_type],
        _ => Vec::new(),
    });
    for r in refs {
        let Ok((_, mut t)) = btf.resolve(r) else { continue };
        if t.kind == Kind::Ptr {
            let Ok((_, p)) = btf.resolve(t.size_or_type) else { continue };
            t = p;
        }
        let Some(id) = btf.find(&t.name, Kind::Struct) else { continue };
        let small = (t.size_or_type as usize) <= off::ICSK_CA_PRIV_SIZE;
        if t.kind == Kind::Struct
            && small
            && !t.name.is_empty()
            && target.find(&t.name).is_none()
            && !found.contains(&id)
        {
            found.push(id);
        }
    }
    let [id] = found[..] else { return Vec::new() };
    let Ok(s) = btf.get(id) else { return Vec::new() };
    s.members
        .iter()
        .filter(|m| m.bitfield_size == 0 && !m.name.is_empty())
        .filter_map(|m| {
            let (_, t) = btf.resolve(m.ty).ok()?;
            (t.kind == Kind::Int)
                .then(|| (m.name.clone(), m.bit_offset as usize / 8, t.size_or_type as usize, t.int_signed))
        })
        .collect()
}
