//! The interpreter against the instruction set's definitions, written out independently
//! (Documentation/bpf/standardization/instruction-set.rst), and the loader's checks.

use super::isa::{self, Insn};
use super::object::{tag, Object};
use super::vm::{self, Conn, Mem, Shared};
use proptest::prelude::*;

fn insn(op: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn { op, dst, src, off, imm }
}

const EXIT: Insn = Insn { op: 0x95, dst: 0, src: 0, off: 0, imm: 0 };

/// `r0 = v` as a 64-bit immediate load (two slots).
fn ld64(dst: u8, v: u64) -> [Insn; 2] {
    [insn(0x18, dst, 0, 0, v as u32 as i32), insn(0, 0, 0, 0, (v >> 32) as u32 as i32)]
}

struct NoCalls;

impl vm::Env for NoCalls {
    fn helper(&mut self, id: i32, _: [u64; 5], _: &mut Mem) -> Result<u64, String> {
        Err(format!("helper {id}"))
    }
    fn kfunc(&mut self, k: usize, _: [u64; 5], _: &mut Mem) -> Result<u64, String> {
        Err(format!("kfunc {k}"))
    }
}

fn run(code: Vec<Insn>) -> Result<u64, String> {
    let obj = Object::bare(code);
    isa::check(&obj.insns, &obj.programs).map_err(|r| r.message)?;
    let mut shared = Shared::new(&obj);
    let mut conn = Conn::new(1);
    let mut mem = Mem { conn: &mut conn, shared: &mut shared, stack_top: 0 };
    vm::run(&obj, 0, &mut mem, &mut NoCalls)
}

/// The value of `a OP b` for an ALU operation, as the specification defines it.
fn reference(code: u8, wide: bool, a: u64, b: u64) -> u64 {
    let (m, sh) = if wide { (u64::MAX, 63) } else { (u32::MAX as u64, 31) };
    let (a, b) = (a & m, b & m);
    let v = match code {
        0x00 => a.wrapping_add(b),
        0x10 => a.wrapping_sub(b),
        0x20 => a.wrapping_mul(b),
        0x30 => a.checked_div(b).unwrap_or(0),
        0x40 => a | b,
        0x50 => a & b,
        0x60 => a << (b & sh),
        0x70 => a >> (b & sh),
        0x90 => a.checked_rem(b).unwrap_or(a),
        0xa0 => a ^ b,
        0xb0 => b,
        _ if wide => ((a as i64) >> (b & 63)) as u64,
        _ => ((a as u32 as i32) >> (b & 31)) as u32 as u64,
    };
    v & m
}

const CODES: &[u8] = &[0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x90, 0xa0, 0xb0, 0xc0];

proptest! {
    #[test]
    fn alu_with_a_register_matches_the_definition(a: u64, b: u64, k in 0..CODES.len(), wide: bool) {
        let class = if wide { 0x07 } else { 0x04 };
        let mut code = ld64(0, a).to_vec();
        code.extend(ld64(1, b));
        code.push(insn(CODES[k] | 0x08 | class, 0, 1, 0, 0));
        code.push(EXIT);
        prop_assert_eq!(run(code).unwrap(), reference(CODES[k], wide, a, b));
    }

    #[test]
    fn alu_with_an_immediate_sign_extends_it(a: u64, imm: i32, k in 0..CODES.len()) {
        let mut code = ld64(0, a).to_vec();
        code.push(insn(CODES[k] | 0x07, 0, 0, 0, imm));
        code.push(EXIT);
        prop_assert_eq!(run(code).unwrap(), reference(CODES[k], true, a, imm as i64 as u64));
    }

    #[test]
    fn conditional_jumps_compare_as_specified(a: u64, b: u64, narrow: bool) {
        type Holds = fn(u64, u64) -> bool;
        let conds: [(u8, Holds); 10] = [
            (0x10, |a, b| a == b), (0x20, |a, b| a > b), (0x30, |a, b| a >= b), (0x40, |a, b| a & b != 0),
            (0x50, |a, b| a != b), (0xa0, |a, b| a < b), (0xb0, |a, b| a <= b),
            (0x60, |a, b| (a as i64) > (b as i64)), (0xc0, |a, b| (a as i64) < (b as i64)), (0xd0, |a, b| (a as i64) <= (b as i64)),
        ];
        for (op, holds) in conds {
            let (x, y) = if narrow { (a as u32 as i32 as i64 as u64, b as u32 as i32 as i64 as u64) } else { (a, b) };
            let expect = if op >= 0x60 && op != 0xa0 && op != 0xb0 { holds(x, y) } else if narrow { holds(a as u32 as u64, b as u32 as u64) } else { holds(a, b) };
            let mut code = ld64(1, a).to_vec();
            code.extend(ld64(2, b));
            code.push(insn(0xb7, 0, 0, 0, 0));
            code.push(insn(op | 0x08 | if narrow { 0x06 } else { 0x05 }, 1, 2, 1, 0));
            code.push(EXIT);
            code.push(insn(0xb7, 0, 0, 0, 1));
            code.push(EXIT);
            prop_assert_eq!(run(code).unwrap() == 1, expect, "op {:#x} narrow {}", op, narrow);
        }
    }
}

#[test]
fn division_by_zero_gives_zero_and_modulo_keeps_the_dividend() {
    let code = |op| vec![insn(0xb7, 0, 0, 0, 7), insn(0xb7, 1, 0, 0, 0), insn(op, 0, 1, 0, 0), EXIT];
    assert_eq!(run(code(0x3f)).unwrap(), 0);
    assert_eq!(run(code(0x9f)).unwrap(), 7);
}

#[test]
fn the_stack_holds_each_width_and_signed_loads_extend() {
    // *(u32 *)(r10 - 8) = -2; r0 = *(s32 *)(r10 - 8) (cpu v4's BPF_MEMSX); r1 = *(u16 *)(r10 - 8)
    let code = vec![
        insn(0x62, 10, 0, -8, -2),
        insn(0x81, 0, 10, -8, 0),
        insn(0x69, 1, 10, -8, 0),
        insn(0x0f, 0, 1, 0, 0),
        EXIT,
    ];
    assert_eq!(run(code).unwrap(), (-2i64 as u64).wrapping_add(0xfffe));
}

#[test]
fn a_subprogram_call_keeps_the_callers_saved_registers() {
    // r6 = 5; call +3; r0 += r6; exit; (callee) r6 = 100; r0 = 1; exit
    let code = vec![
        insn(0xb7, 6, 0, 0, 5),
        insn(0x85, 0, isa::PSEUDO_CALL, 0, 2),
        insn(0x0f, 0, 6, 0, 0),
        EXIT,
        insn(0xb7, 6, 0, 0, 100),
        insn(0xb7, 0, 0, 0, 1),
        EXIT,
    ];
    assert_eq!(run(code).unwrap(), 6);
}

#[test]
fn atomics_fetch_and_compare_exchange() {
    // *(u64 *)(r10-8) = 10; r1 = 5; lock fetch_add r1 -> r1 = 10, mem = 15;
    // r0 = 15; r2 = 99; cmpxchg -> mem = 99, r0 = 15; r0 = *(r10-8) + r1
    let code = vec![
        insn(0x7a, 10, 0, -8, 10),
        insn(0xb7, 1, 0, 0, 5),
        insn(0xdb, 10, 1, -8, 0x01),
        insn(0xb7, 0, 0, 0, 15),
        insn(0xb7, 2, 0, 0, 99),
        insn(0xdb, 10, 2, -8, 0xf1),
        insn(0x79, 0, 10, -8, 0),
        insn(0x0f, 0, 1, 0, 0),
        EXIT,
    ];
    assert_eq!(run(code).unwrap(), 109);
}

#[test]
fn a_loop_that_changes_nothing_it_tests_is_refused_before_running() {
    // r1 = 7; loop: r0 += 1; if r1 != 0 goto loop (r1 never changes).
    let code = vec![insn(0xb7, 1, 0, 0, 7), insn(0x07, 0, 0, 0, 1), insn(0x55, 1, 0, -2, 0), EXIT];
    let e = run(code).unwrap_err();
    assert!(e.contains("can run forever"), "{e}");
    assert!(run(vec![insn(0x05, 0, 0, -1, 0), EXIT]).unwrap_err().contains("can run forever"));
}

#[test]
fn a_loop_that_runs_too_long_stops_at_the_verifiers_bound() {
    // r1 = 0; loop: r1 += 1; if r1 != 0 goto loop: 2^64 rounds.
    let code = vec![insn(0xb7, 1, 0, 0, 0), insn(0x07, 1, 0, 0, 1), insn(0x55, 1, 0, -2, 0), EXIT];
    let e = run(code).unwrap_err();
    assert!(e.contains("1000000 instructions"), "{e}");
}

#[test]
fn a_bounded_loop_runs() {
    // r1 = 10; loop: r0 += 2; r1 -= 1; if r1 != 0 goto loop.
    let code = vec![
        insn(0xb7, 0, 0, 0, 0),
        insn(0xb7, 1, 0, 0, 10),
        insn(0x07, 0, 0, 0, 2),
        insn(0x17, 1, 0, 0, 1),
        insn(0x55, 1, 0, -3, 0),
        EXIT,
    ];
    assert_eq!(run(code).unwrap(), 20);
}

#[test]
fn writes_outside_the_writable_fields_are_refused() {
    let sock = tag::addr(tag::SOCK, 0);
    let write = |at: i16| {
        let mut code = ld64(1, sock).to_vec();
        code.extend([insn(0x62, 1, 0, at, 1), insn(0xb7, 0, 0, 0, 0), EXIT]);
        run(code)
    };
    assert!(write(super::view::off::SND_CWND as i16).is_ok());
    let e = write(super::view::off::SRTT_US as i16).unwrap_err();
    assert!(e.contains("tcp_sock.srtt_us"), "{e}");
}

#[test]
fn reads_past_an_object_and_stray_pointers_are_refused() {
    let e = run(vec![insn(0x79, 0, 10, 8, 0), EXIT]).unwrap_err();
    assert!(e.contains("outside any object"), "{e}");
    let mut code = ld64(1, 0xdead_0000_0000).to_vec();
    code.extend([insn(0x79, 0, 1, 0, 0), EXIT]);
    assert!(run(code).unwrap_err().contains("outside any object"));
}

#[test]
fn jumps_out_of_the_code_are_refused_before_running() {
    let e = run(vec![insn(0x05, 0, 0, 5, 0), EXIT]).unwrap_err();
    assert!(e.contains("jumps outside the code"), "{e}");
    let e = run(vec![insn(0xe7, 0, 0, 0, 0), EXIT]).unwrap_err();
    assert!(e.contains("opcode 0xe7"), "{e}");
}

#[test]
fn bpf_names_parse_with_and_without_a_map() {
    use super::Spec;
    assert_eq!(
        Spec::parse("bpf:/a/x.bpf.o:dctcp"),
        Some(Spec { path: "/a/x.bpf.o".into(), map: Some("dctcp".into()) })
    );
    assert_eq!(Spec::parse("bpf:/a/x.bpf.o"), Some(Spec { path: "/a/x.bpf.o".into(), map: None }));
    assert_eq!(Spec::parse("bpf:/a:b/x.c"), Some(Spec { path: "/a:b/x.c".into(), map: None }));
    assert_eq!(Spec::parse("cubic"), None);
}

#[test]
fn code_that_falls_off_its_end_stops_with_an_error() {
    let e = run(vec![insn(0xb7, 0, 0, 0, 1)]).unwrap_err();
    assert!(e.contains("runs past the end of its code"), "{e}");
}

#[test]
fn a_read_of_an_impossible_length_is_refused_not_allocated() {
    let mut mem_conn = Conn::new(1);
    let obj = Object::bare(vec![EXIT]);
    let mut shared = Shared::new(&obj);
    let mut mem = Mem { conn: &mut mem_conn, shared: &mut shared, stack_top: vm::STACK };
    assert!(mem.bytes(tag::addr(tag::STACK, 8), usize::MAX, false).is_err());
}
