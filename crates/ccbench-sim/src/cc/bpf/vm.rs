//! The interpreter: eBPF instructions over the simulator's memory regions, with the
//! kernel's semantics (kernel/bpf/core.c, `___bpf_prog_run`) and the verifier's bounds.

use super::isa::{self, class, Insn, EXIT, PSEUDO_CALL, PSEUDO_KFUNC_CALL};
use super::object::{tag, Data, MapDef, MapKind, Object};
use super::view::{self, off, sample};
use std::collections::{BTreeMap, BTreeSet};

/// `MAX_BPF_STACK`: each frame's stack.
pub const STACK: usize = 512;
/// `MAX_CALL_FRAMES`.
pub const FRAMES: usize = 8;
/// `BPF_COMPLEXITY_LIMIT_INSNS`: no program the verifier accepts runs more instructions
/// than it may explore, so a call that runs longer loops without bound.
pub const BUDGET: u64 = 1_000_000;

/// A connection's own memory: its socket, the call's arguments and samples, the stack.
pub struct Conn {
    pub id: u64,
    pub sock: Vec<u8>,
    pub ctx: [u8; 40],
    pub ack: [u8; sample::ACK_SIZE],
    pub rs: [u8; sample::RS_SIZE],
    pub stack: Vec<u8>,
}

impl Conn {
    pub fn new(id: u64) -> Conn {
        Conn {
            id,
            sock: vec![0; off::BLOCK],
            ctx: [0; 40],
            ack: [0; sample::ACK_SIZE],
            rs: [0; sample::RS_SIZE],
            stack: vec![0; STACK * FRAMES],
        }
    }
}

/// A map's contents. Keys are kept in order so that iteration is deterministic.
pub enum MapStore {
    Array(Vec<u8>),
    Hash {
        slots: BTreeMap<Vec<u8>, usize>,
        free: BTreeSet<usize>,
        values: Vec<u8>,
    },
    /// Per-socket values: each connection's slot, and the slots freed for reuse.
    SkStorage {
        slots: BTreeMap<u64, usize>,
        values: Vec<u8>,
        free: BTreeSet<usize>,
    },
}

impl MapStore {
    /// A socket's storage goes when the socket does (`bpf_sk_storage_free`).
    pub fn forget_socket(&mut self, id: u64) -> bool {
        match self {
            MapStore::SkStorage { slots, free, .. } => slots.remove(&id).map(|s| free.insert(s)).is_some(),
            _ => false,
        }
    }
}

/// What every connection running one object shares, as the kernel shares one loaded
/// object's globals and maps among all sockets.
pub struct Shared {
    pub data: Vec<Data>,
    pub maps: Vec<(MapDef, MapStore)>,
}

impl Shared {
    pub fn new(obj: &Object) -> Shared {
        let maps = obj
            .maps
            .iter()
            .map(|m| {
                let store = match m.kind {
                    MapKind::Array => MapStore::Array(vec![0; m.value_size * m.max_entries]),
                    MapKind::Hash => MapStore::Hash {
                        slots: BTreeMap::new(),
                        free: (0..m.max_entries).collect(),
                        values: vec![0; m.value_size * m.max_entries],
                    },
                    MapKind::SkStorage => {
                        MapStore::SkStorage { slots: BTreeMap::new(), values: Vec::new(), free: BTreeSet::new() }
                    }
                };
                (m.clone(), store)
            })
            .collect();
        Shared { data: obj.data.clone(), maps }
    }
}

/// Memory as a running program sees it.
pub struct Mem<'a> {
    pub conn: &'a mut Conn,
    pub shared: &'a mut Shared,
    /// The end of the innermost frame: nothing above it is stack yet.
    pub stack_top: usize,
}

impl Mem<'_> {
    /// The bytes at `addr`, checked as the verifier checks each access.
    pub fn bytes(&mut self, addr: u64, len: usize, write: bool) -> Result<&mut [u8], String> {
        let (t, at) = (addr >> 32, (addr & 0xffff_ffff) as usize);
        let bad = || {
            format!(
                "{} {len} bytes at {addr:#x}, outside any object it may touch",
                if write { "writes" } else { "reads" }
            )
        };
        let region: &mut [u8] = match t {
            tag::CTX | tag::ACK_SAMPLE | tag::RATE_SAMPLE if write => {
                return Err(format!("writes its read-only arguments at {addr:#x}"))
            }
            tag::CTX => &mut self.conn.ctx,
            tag::ACK_SAMPLE => &mut self.conn.ack,
            tag::RATE_SAMPLE => &mut self.conn.rs,
            tag::STACK => &mut self.conn.stack[..self.stack_top],
            tag::SOCK => {
                if write && !view::writable(at, len) {
                    return Err(format!(
                        "writes {}, which the kernel lets no congestion control write",
                        view::field_at(&view::target(), at)
                    ));
                }
                &mut self.conn.sock
            }
            t if (tag::DATA..tag::MAP_VALUES).contains(&t) => {
                let d = self.shared.data.get_mut((t - tag::DATA) as usize).ok_or_else(bad)?;
                if write && !d.writable {
                    return Err(format!("writes its read-only section {}", d.name));
                }
                &mut d.bytes
            }
            t if (tag::MAP_VALUES..tag::MAP).contains(&t) => {
                match &mut self.shared.maps.get_mut((t - tag::MAP_VALUES) as usize).ok_or_else(bad)?.1 {
                    MapStore::Array(v) | MapStore::Hash { values: v, .. } | MapStore::SkStorage { values: v, .. } => v,
                }
            }
            _ => return Err(bad()),
        };
        let end = at.checked_add(len).ok_or_else(bad)?;
        region.get_mut(at..end).ok_or_else(bad)
    }

    pub fn load(&mut self, addr: u64, len: usize) -> Result<u64, String> {
        let b = self.bytes(addr, len, false)?;
        let mut raw = [0u8; 8];
        raw[..len].copy_from_slice(b);
        Ok(u64::from_le_bytes(raw))
    }

    pub fn store(&mut self, addr: u64, len: usize, v: u64) -> Result<(), String> {
        self.bytes(addr, len, true)?.copy_from_slice(&v.to_le_bytes()[..len]);
        Ok(())
    }

    pub fn read_vec(&mut self, addr: u64, len: usize) -> Result<Vec<u8>, String> {
        Ok(self.bytes(addr, len, false)?.to_vec())
    }
}

/// What a program calls out to: helpers and kfuncs, given the registers r1-r5.
pub trait Env {
    fn helper(&mut self, id: i32, args: [u64; 5], mem: &mut Mem) -> Result<u64, String>;
    fn kfunc(&mut self, index: usize, args: [u64; 5], mem: &mut Mem) -> Result<u64, String>;
}

#[derive(Clone, Copy, Default)]
struct Frame {
    ret: usize,
    saved: [u64; 4],
}

fn sx(v: u64, bits: u32) -> u64 {
    let s = 64 - bits;
    (((v << s) as i64) >> s) as u64
}

/// Run the program at `entry` with `ctx` as its argument array (r1 points at it).
pub fn run(obj: &Object, entry: usize, mem: &mut Mem, env: &mut dyn Env) -> Result<u64, String> {
    let insns: &[Insn] = &obj.insns;
    let mut r = [0u64; 11];
    r[1] = tag::addr(tag::CTX, 0);
    r[10] = tag::addr(tag::STACK, STACK as u64);
    mem.stack_top = STACK;
    // Caller frames, without allocating: calls are at most FRAMES deep.
    let mut frames = [Frame::default(); FRAMES];
    let mut depth = 0usize;
    let mut pc = entry;
    let mut steps = 0u64;
    loop {
        steps += 1;
        if steps > BUDGET {
            return Err(format!("ran {BUDGET} instructions in one call (the verifier's bound): it loops without end near instruction {pc}"));
        }
        if !obj.poisoned.is_empty() {
            if let Some(what) = obj.poisoned.get(&pc) {
                return Err(format!("reached an access to {what}, which the simulator's socket does not have"));
            }
        }
        // The verifier refuses code that can fall off its end; here it stops the run.
        let Some(&i) = insns.get(pc) else { return Err(format!("runs past the end of its code at instruction {pc}")) };
        let (d, s) = (i.dst as usize, i.src as usize);
        pc += 1;
        match class(i.op) {
            class::ALU64 | class::ALU => alu(&mut r, i),
            class::LD => {
                r[d] = isa::imm64(insns, pc - 1);
                pc += 1;
            }
            class::LDX => {
                let size = isa::mem_size(i.op);
                let v = mem.load(r[s].wrapping_add(i.off as i64 as u64), size)?;
                r[d] = if i.op & 0xe0 == isa::MODE_MEMSX { sx(v, size as u32 * 8) } else { v };
            }
            class::ST => mem.store(r[d].wrapping_add(i.off as i64 as u64), isa::mem_size(i.op), i.imm as i64 as u64)?,
            class::STX if i.op & 0xe0 == isa::MODE_ATOMIC => atomic(&mut r, i, mem)?,
            class::STX => mem.store(r[d].wrapping_add(i.off as i64 as u64), isa::mem_size(i.op), r[s])?,
            _ if i.op == isa::CALL => match i.src {
                PSEUDO_CALL => {
                    if depth + 1 >= FRAMES {
                        return Err(format!("calls deeper than {FRAMES} frames"));
                    }
                    frames[depth] = Frame { ret: pc, saved: [r[6], r[7], r[8], r[9]] };
                    depth += 1;
                    r[10] = tag::addr(tag::STACK, ((depth + 1) * STACK) as u64);
                    mem.stack_top = (depth + 1) * STACK;
                    pc = (pc as i64 + i.imm as i64) as usize;
                }
                PSEUDO_KFUNC_CALL => r[0] = env.kfunc(i.imm as usize, [r[1], r[2], r[3], r[4], r[5]], mem)?,
                _ => r[0] = env.helper(i.imm, [r[1], r[2], r[3], r[4], r[5]], mem)?,
            },
            _ if i.op == EXIT => {
                if depth == 0 {
                    return Ok(r[0]);
                }
                depth -= 1;
                let f = frames[depth];
                [r[6], r[7], r[8], r[9]] = f.saved;
                r[10] = tag::addr(tag::STACK, ((depth + 1) * STACK) as u64);
                mem.stack_top = (depth + 1) * STACK;
                pc = f.ret;
            }
            c => {
                if jump(&r, i, c == class::JMP32) {
                    let delta = if c == class::JMP32 && i.op & 0xf0 == 0 { i.imm as i64 } else { i.off as i64 };
                    pc = (pc as i64 + delta) as usize;
                }
            }
        }
    }
}

fn alu(r: &mut [u64; 11], i: Insn) {
    let wide = class(i.op) == class::ALU64;
    let d = i.dst as usize;
    let src = if i.op & 0x08 != 0 { r[i.src as usize] } else { i.imm as i64 as u64 };
    let (a, b) = if wide { (r[d], src) } else { (r[d] as u32 as u64, src as u32 as u64) };
    let bits = if wide { 64 } else { 32 };
    let signed = i.off == 1;
    let v = match i.op & 0xf0 {
        0x00 => a.wrapping_add(b),
        0x10 => a.wrapping_sub(b),
        0x20 => a.wrapping_mul(b),
        0x30 if b == 0 => 0,
        0x30 if signed && wide => (a as i64).wrapping_div(b as i64) as u64,
        0x30 if signed => (a as u32 as i32).wrapping_div(b as u32 as i32) as u32 as u64,
        0x30 => a / b,
        0x40 => a | b,
        0x50 => a & b,
        0x60 => a.wrapping_shl((b & (bits - 1)) as u32),
        0x70 => a.wrapping_shr((b & (bits - 1)) as u32),
        0x80 => a.wrapping_neg(),
        0x90 if b == 0 => a,
        0x90 if signed && wide => (a as i64).wrapping_rem(b as i64) as u64,
        0x90 if signed => (a as u32 as i32).wrapping_rem(b as u32 as i32) as u32 as u64,
        0x90 => a % b,
        0xa0 => a ^ b,
        0xb0 if i.off == 8 || i.off == 16 || i.off == 32 => sx(src, i.off as u32),
        0xb0 => b,
        0xc0 if wide => ((a as i64) >> (b & 63)) as u64,
        0xc0 => ((a as u32 as i32) >> (b & 31)) as u32 as u64,
        _ => endian(r[d], i, wide),
    };
    r[d] = if wide { v } else { v as u32 as u64 };
}

/// `BPF_END`: to little-endian is a truncation on this (little-endian) machine; to
/// big-endian and the 64-bit class's `bswap` swap bytes.
fn endian(v: u64, i: Insn, wide: bool) -> u64 {
    let swap = wide || i.op & 0x08 != 0;
    match (i.imm, swap) {
        (16, false) => v as u16 as u64,
        (32, false) => v as u32 as u64,
        (16, true) => (v as u16).swap_bytes() as u64,
        (32, true) => (v as u32).swap_bytes() as u64,
        (_, false) => v,
        (_, true) => v.swap_bytes(),
    }
}

fn jump(r: &[u64; 11], i: Insn, narrow: bool) -> bool {
    let a = r[i.dst as usize];
    let b = if i.op & 0x08 != 0 { r[i.src as usize] } else { i.imm as i64 as u64 };
    let (a, b) = if narrow { (a as u32 as u64, b as u32 as u64) } else { (a, b) };
    let (sa, sb) = if narrow { (a as u32 as i32 as i64, b as u32 as i32 as i64) } else { (a as i64, b as i64) };
    match i.op & 0xf0 {
        0x00 => true,
        0x10 => a == b,
        0x20 => a > b,
        0x30 => a >= b,
        0x40 => a & b != 0,
        0x50 => a != b,
        0x60 => sa > sb,
        0x70 => sa >= sb,
        0xa0 => a < b,
        0xb0 => a <= b,
        0xc0 => sa < sb,
        _ => sa <= sb,
    }
}

fn atomic(r: &mut [u64; 11], i: Insn, mem: &mut Mem) -> Result<(), String> {
    let size = isa::mem_size(i.op);
    let addr = r[i.dst as usize].wrapping_add(i.off as i64 as u64);
    let old = mem.load(addr, size)?;
    let val = r[i.src as usize];
    let trunc = |v: u64| if size == 4 { v as u32 as u64 } else { v };
    let new = match i.imm & !1 {
        0x00 => old.wrapping_add(val),
        0x40 => old | val,
        0x50 => old & val,
        0xa0 => old ^ val,
        0xe0 => val,
        _ => {
            // BPF_CMPXCHG: compare with r0, write if equal, r0 gets the old value.
            let new = if trunc(r[0]) == old { val } else { old };
            mem.store(addr, size, new)?;
            r[0] = old;
            return Ok(());
        }
    };
    mem.store(addr, size, new)?;
    if i.imm & 1 != 0 {
        r[i.src as usize] = old;
    }
    Ok(())
}
