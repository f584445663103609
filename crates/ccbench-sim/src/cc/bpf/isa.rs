//! The eBPF instruction set (Documentation/bpf/standardization/instruction-set.rst):
//! decoding, and the checks a loader makes before anything runs.

use super::Refusal;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    pub op: u8,
    pub dst: u8,
    pub src: u8,
    pub off: i16,
    pub imm: i32,
}

pub mod class {
    pub const LD: u8 = 0;
    pub const LDX: u8 = 1;
    pub const ST: u8 = 2;
    pub const STX: u8 = 3;
    pub const ALU: u8 = 4;
    pub const JMP: u8 = 5;
    pub const JMP32: u8 = 6;
    pub const ALU64: u8 = 7;
}

/// `BPF_LD | BPF_IMM | BPF_DW`: a 64-bit immediate over two slots.
pub const LD_IMM64: u8 = 0x18;
pub const CALL: u8 = 0x85;
pub const EXIT: u8 = 0x95;
/// `src_reg` of a call: a helper (0), a subprogram (1), a kfunc (2).
pub const PSEUDO_CALL: u8 = 1;
pub const PSEUDO_KFUNC_CALL: u8 = 2;

pub const MODE_MEM: u8 = 0x60;
pub const MODE_MEMSX: u8 = 0x80;
pub const MODE_ATOMIC: u8 = 0xc0;

pub fn class(op: u8) -> u8 {
    op & 7
}

/// A load or store of memory (not the 64-bit immediate).
pub fn is_mem(op: u8) -> bool {
    matches!(class(op), class::LDX | class::ST | class::STX)
}

/// The access size in bytes of a load or store.
pub fn mem_size(op: u8) -> usize {
    match op & 0x18 {
        0x00 => 4,
        0x08 => 2,
        0x10 => 1,
        _ => 8,
    }
}

/// The same load or store with another access size.
pub fn with_size(op: u8, size: usize) -> Option<u8> {
    let bits = match size {
        4 => 0x00,
        2 => 0x08,
        1 => 0x10,
        8 => 0x18,
        _ => return None,
    };
    Some(op & !0x18 | bits)
}

/// Set the value of the 64-bit immediate that starts at `at`.
pub fn set_imm64(insns: &mut [Insn], at: usize, v: u64) {
    insns[at].imm = v as u32 as i32;
    insns[at + 1].imm = (v >> 32) as u32 as i32;
    insns[at].src = 0;
}

pub fn imm64(insns: &[Insn], at: usize) -> u64 {
    (insns[at].imm as u32 as u64) | (insns[at + 1].imm as u32 as u64) << 32
}

/// Instructions from a section's bytes (little-endian).
pub fn decode(bytes: &[u8]) -> Result<Vec<Insn>, String> {
    if !bytes.len().is_multiple_of(8) {
        return Err(format!("its {} bytes are not whole instructions", bytes.len()));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|b| Insn {
            op: b[0],
            dst: b[1] & 0xf,
            src: b[1] >> 4,
            off: i16::from_le_bytes([b[2], b[3]]),
            imm: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        })
        .collect())
}

fn known(i: &Insn) -> bool {
    let code = i.op & 0xf0;
    match class(i.op) {
        class::LD => i.op == LD_IMM64,
        class::LDX => matches!(i.op & 0xe0, MODE_MEM | MODE_MEMSX),
        class::ST => i.op & 0xe0 == MODE_MEM,
        class::STX => match i.op & 0xe0 {
            MODE_MEM => true,
            MODE_ATOMIC => {
                matches!(mem_size(i.op), 4 | 8)
                    && matches!(i.imm, 0x00 | 0x01 | 0x40 | 0x41 | 0x50 | 0x51 | 0xa0 | 0xa1 | 0xe1 | 0xf1)
            }
            _ => false,
        },
        class::ALU | class::ALU64 => code <= 0xd0,
        _ => code <= 0xd0,
    }
}

/// What a loader checks before a run (the verifier's structural checks): every
/// instruction is one the interpreter knows, registers exist, jumps land inside the code
/// and not in the middle of a 64-bit immediate, and the code ends in an exit or a jump.
pub fn check(insns: &[Insn], programs: &BTreeMap<usize, String>) -> Result<(), Refusal> {
    let name = |pc: usize| programs.range(..=pc).next_back().map_or("the code".to_string(), |(_, n)| n.clone());
    let mut second_half = vec![false; insns.len()];
    for (pc, i) in insns.iter().enumerate() {
        if i.op == LD_IMM64 {
            if pc + 1 >= insns.len() {
                return Err(Refusal::new(format!("{}: a 64-bit load at instruction {pc} is cut short", name(pc))));
            }
            second_half[pc + 1] = true;
        }
    }
    for (pc, i) in insns.iter().enumerate() {
        if second_half[pc] {
            continue;
        }
        if !known(i) {
            return Err(Refusal::new(format!(
                "{}: instruction {pc} has opcode {:#04x}, which the simulator's interpreter does not run",
                name(pc),
                i.op
            )));
        }
        if i.dst > 10 || i.src > 10 && i.op != CALL {
            return Err(Refusal::new(format!("{}: instruction {pc} names a register beyond r10", name(pc))));
        }
        let jumps =
            matches!(class(i.op), class::JMP | class::JMP32) && i.op != EXIT && (i.op != CALL || i.src == PSEUDO_CALL);
        if jumps {
            let delta = if i.op == CALL || (class(i.op) == class::JMP32 && i.op & 0xf0 == 0) {
                i.imm as i64
            } else {
                i.off as i64
            };
            let target = pc as i64 + delta + 1;
            if target < 0 || target as usize >= insns.len() || second_half[target as usize] {
                return Err(Refusal::new(format!("{}: instruction {pc} jumps outside the code", name(pc))));
            }
        }
    }
    endless_loops(insns, &second_half).map_err(|pc| {
        Refusal::new(format!(
            "{}: the loop that jumps back at instruction {pc} can run forever: nothing in it changes what its exits test (the verifier's \"infinite loop detected\")",
            name(pc)
        ))
    })
}

/// The registers an instruction writes.
fn writes(i: &Insn) -> u16 {
    match class(i.op) {
        class::ALU | class::ALU64 | class::LD | class::LDX => 1 << i.dst,
        // A call clobbers r0-r5; an atomic fetch writes its source (cmpxchg: r0).
        _ if i.op == CALL => 0x3f,
        class::STX if i.op & 0xe0 == MODE_ATOMIC && i.imm & 1 != 0 => 1 << i.src | 1,
        _ => 0,
    }
}

/// Whether an instruction's write moves its register forward, as the verifier sees
/// progress: arithmetic, or reloading a value spilled to the stack. A value loaded from
/// other memory or returned by a call is a fresh unknown on every round: no progress.
fn advances(i: &Insn) -> bool {
    matches!(class(i.op), class::ALU | class::ALU64) || (class(i.op) == class::LDX && i.src == 10)
}

/// The registers a conditional jump compares.
fn tests(i: &Insn) -> u16 {
    1 << i.dst | if i.op & 0x08 != 0 { 1 << i.src } else { 0 }
}

fn conditional(i: &Insn) -> bool {
    matches!(class(i.op), class::JMP | class::JMP32) && !matches!(i.op & 0xf0, 0x00 | 0x80 | 0x90)
}

/// A loop whose exits test only registers that nothing in the loop advances runs
/// forever once it runs twice; the verifier finds it as a repeated state ("infinite loop
/// detected", kernel/bpf/verifier.c `is_state_visited`). Returns the pc of its backward
/// jump.
fn endless_loops(insns: &[Insn], second_half: &[bool]) -> Result<(), usize> {
    let target = |pc: usize, i: &Insn| {
        let delta = if class(i.op) == class::JMP32 && i.op & 0xf0 == 0 { i.imm as i64 } else { i.off as i64 };
        (pc as i64 + delta + 1) as usize
    };
    for (pc, i) in insns.iter().enumerate() {
        let jump = matches!(class(i.op), class::JMP | class::JMP32) && !matches!(i.op & 0xf0, 0x80 | 0x90);
        if second_half[pc] || !jump || target(pc, i) > pc {
            continue;
        }
        let (start, end) = (target(pc, i), pc);
        let real = |k: &usize| !second_half[*k];
        let inside = |k: usize| (start..=end).contains(&k);
        if (start..=end).filter(real).any(|k| insns[k].op == EXIT) {
            continue;
        }
        // Every way out: a jump from inside to outside, and the backward jump's own
        // fall-through when it is conditional.
        let exits: Vec<usize> = (start..=end)
            .filter(real)
            .filter(|&k| conditional(&insns[k]) && (k == end || !inside(target(k, &insns[k]))))
            .collect();
        let branchy = (start..end).filter(real).any(|k| conditional(&insns[k]) && inside(target(k, &insns[k])));
        let moves = |k: usize, reg: u8| {
            if branchy {
                // Paths inside the loop: any advance of the register may reach the test.
                return (start..=end).filter(real).any(|j| writes(&insns[j]) & 1 << reg != 0 && advances(&insns[j]));
            }
            // One path: the test sees the last write before it, going round the loop.
            let order = (start..k).rev().chain((k..=end).rev());
            order.filter(|j| real(j)).find(|&j| writes(&insns[j]) & 1 << reg != 0).is_some_and(|j| advances(&insns[j]))
        };
        let progress = exits.iter().any(|&k| (0..11u8).any(|r| tests(&insns[k]) & 1 << r != 0 && moves(k, r)));
        if !progress {
            return Err(pc);
        }
    }
    Ok(())
}
