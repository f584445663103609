//! The BPF helpers a congestion control may call (`bpf_base_func_proto` and
//! `bpf_tcp_ca_get_func_proto`), on the simulator's clock, maps and socket, and the
//! kfunc dispatch.

use super::kfuncs::{self, Call, Family};
use super::object::{tag, MapKind};
use super::view;
use super::vm::{self, MapStore, Mem};
use super::Refusal;
use crate::base::rng::Rng;
use crate::cc::{AckSample, CongestionControl, ConnInfo, RateSample, Window};
use rand::RngCore;
use std::collections::BTreeMap;

/// Helper numbers (`enum bpf_func_id`, include/uapi/linux/bpf.h) and names.
const HELPERS: &[(i32, &str)] = &[
    (1, "bpf_map_lookup_elem"),
    (2, "bpf_map_update_elem"),
    (3, "bpf_map_delete_elem"),
    (4, "bpf_probe_read"),
    (5, "bpf_ktime_get_ns"),
    (6, "bpf_trace_printk"),
    (7, "bpf_get_prandom_u32"),
    (8, "bpf_get_smp_processor_id"),
    (49, "bpf_setsockopt"),
    (57, "bpf_getsockopt"),
    (107, "bpf_sk_storage_get"),
    (108, "bpf_sk_storage_delete"),
    (113, "bpf_probe_read_kernel"),
    (116, "bpf_tcp_send_ack"),
    (118, "bpf_jiffies64"),
    (125, "bpf_ktime_get_boot_ns"),
    (160, "bpf_ktime_get_coarse_ns"),
];

pub fn name(id: i32) -> String {
    HELPERS.iter().find(|h| h.0 == id).map_or_else(|| format!("helper {id}"), |h| h.1.to_string())
}

/// Collect the helpers an object calls, refusing unknown ones.
pub fn collect(
    insns: &[super::isa::Insn],
    programs: &BTreeMap<usize, String>,
) -> Result<std::collections::BTreeSet<i32>, Refusal> {
    let mut used = std::collections::BTreeSet::new();
    for (pc, i) in insns.iter().enumerate() {
        if i.op == super::isa::CALL && i.src == 0 {
            if !HELPERS.iter().any(|h| h.0 == i.imm) {
                let prog = programs.range(..=pc).next_back().map_or("the code", |(_, n)| n.as_str());
                return Err(Refusal::new(format!(
                    "{prog} calls BPF helper {}, which the simulator does not provide (it provides {})",
                    i.imm,
                    HELPERS.iter().map(|h| h.1).collect::<Vec<_>>().join(", ")
                )));
            }
            used.insert(i.imm);
        }
    }
    Ok(used)
}

/// What helpers and kfuncs see of the call in progress.
pub struct Env<'a> {
    pub c: &'a ConnInfo,
    /// The window as the stack passed it; kfuncs read the rest from the socket.
    pub w: Window,
    pub ack: Option<&'a AckSample>,
    pub rs: Option<&'a RateSample>,
    pub delegates: &'a mut BTreeMap<Family, Box<dyn CongestionControl>>,
    pub rng: &'a mut Rng,
    pub ops_name: &'a str,
}

const ENOENT: i64 = -2;
const E2BIG: i64 = -7;
const EEXIST: i64 = -17;
const EFAULT: i64 = -14;
const SOL_TCP: u64 = 6;
const TCP_CONGESTION: u64 = 13;
/// `BPF_NOEXIST`, `BPF_EXIST`, `BPF_SK_STORAGE_GET_F_CREATE`.
const BPF_NOEXIST: u64 = 1;
const BPF_EXIST: u64 = 2;
const F_CREATE: u64 = 1;

fn neg(e: i64) -> u64 {
    e as u64
}

impl vm::Env for Env<'_> {
    fn helper(&mut self, id: i32, a: [u64; 5], mem: &mut Mem) -> Result<u64, String> {
        let now = self.c.now.0;
        Ok(match id {
            1 => map_lookup(mem, a[0], a[1])?,
            2 => map_update(mem, a[0], a[1], a[2], a[3])?,
            3 => map_delete(mem, a[0], a[1])?,
            4 | 113 => probe_read(mem, a[0], a[1] as usize, a[2])?,
            5 | 125 => now,
            // The coarse clock moves once a tick.
            160 => now / (1_000_000_000 / self.c.hz as u64) * (1_000_000_000 / self.c.hz as u64),
            // The format string is read and the output dropped.
            6 => {
                mem.read_vec(a[0], a[1] as usize)?;
                0
            }
            7 => self.rng.next_u32() as u64,
            8 => 0,
            118 => self.c.jiffies as u64,
            107 => sk_storage_get(mem, a[0], a[1], a[2], a[3])?,
            108 => sk_storage_delete(mem, a[0])?,
            57 if a[1] == SOL_TCP && a[2] == TCP_CONGESTION => {
                let len = a[4] as usize;
                let mut name = self.ops_name.as_bytes().to_vec();
                name.resize(len, 0);
                mem.bytes(a[3], len, true)?.copy_from_slice(&name);
                0
            }
            49 | 57 => return Err(format!("calls {}(level {}, option {}), which the simulator does not model", name(id), a[1], a[2])),
            116 => return Err("calls bpf_tcp_send_ack: the simulator's receiver sends its own ACKs (as tcp_dctcp.c's does), so a sender's program cannot".into()),
            other => return Err(format!("calls {}, which the simulator does not provide", name(other))),
        })
    }

    fn kfunc(&mut self, index: usize, args: [u64; 5], mem: &mut Mem) -> Result<u64, String> {
        let name = kfuncs::NAMES[index];
        if args[0] != tag::addr(tag::SOCK, 0) {
            return Err(format!("calls {name} with something other than its socket"));
        }
        // The kfunc sees the window as the program has left it in the socket.
        let b = view::written(&mem.conn.sock);
        let mut w = Window {
            cwnd: b.cwnd,
            ssthresh: b.ssthresh,
            cwnd_cnt: b.cwnd_cnt,
            pacing_rate: b.pacing_rate,
            ..self.w.clone()
        };
        let mut call = Call { args, c: self.c, w: &mut w, ack: self.ack, rs: self.rs };
        let r = match kfuncs::family(name) {
            None => kfuncs::stack(name, &mut call)?,
            Some(f) => {
                let rng = self.rng.clone();
                let cc = self.delegates.entry(f).or_insert_with(|| kfuncs::build(f, rng));
                kfuncs::delegate(name, cc.as_mut(), &mut call)?
            }
        };
        let sock = &mut mem.conn.sock;
        sock[view::off::SND_CWND..][..4].copy_from_slice(&w.cwnd.to_le_bytes());
        sock[view::off::SND_SSTHRESH..][..4].copy_from_slice(&w.ssthresh.to_le_bytes());
        sock[view::off::SND_CWND_CNT..][..4].copy_from_slice(&w.cwnd_cnt.to_le_bytes());
        sock[view::off::SK_PACING_RATE..][..8].copy_from_slice(&w.pacing_rate.to_le_bytes());
        Ok(r)
    }
}

fn map_index(mem: &Mem, handle: u64) -> Result<usize, String> {
    let t = handle >> 32;
    let i = t.wrapping_sub(tag::MAP) as usize;
    if handle & 0xffff_ffff != 0 || t < tag::MAP || i >= mem.shared.maps.len() {
        return Err(format!("passes {handle:#x} where a map belongs"));
    }
    Ok(i)
}

fn map_lookup(mem: &mut Mem, map: u64, key: u64) -> Result<u64, String> {
    let i = map_index(mem, map)?;
    let def = mem.shared.maps[i].0.clone();
    let k = mem.read_vec(key, def.key_size)?;
    let value = |slot: usize| tag::addr(tag::MAP_VALUES + i as u64, (slot * def.value_size) as u64);
    Ok(match &mem.shared.maps[i].1 {
        MapStore::Array(_) => {
            let idx = u32::from_le_bytes(k[..4].try_into().map_err(|_| "an array map's key is 4 bytes")?) as usize;
            if idx < def.max_entries {
                value(idx)
            } else {
                0
            }
        }
        MapStore::Hash { slots, .. } => slots.get(&k).map_or(0, |&s| value(s)),
        MapStore::SkStorage { .. } => return Err("looks up an sk_storage map with bpf_map_lookup_elem".into()),
    })
}

fn map_update(mem: &mut Mem, map: u64, key: u64, val: u64, flags: u64) -> Result<u64, String> {
    let i = map_index(mem, map)?;
    let def = mem.shared.maps[i].0.clone();
    let k = mem.read_vec(key, def.key_size)?;
    let v = mem.read_vec(val, def.value_size)?;
    let slot = match &mut mem.shared.maps[i].1 {
        MapStore::Array(_) => {
            let idx = u32::from_le_bytes(k[..4].try_into().map_err(|_| "an array map's key is 4 bytes")?) as usize;
            if idx >= def.max_entries {
                return Ok(neg(E2BIG));
            }
            if flags == BPF_NOEXIST {
                return Ok(neg(EEXIST));
            }
            idx
        }
        MapStore::Hash { slots, free, .. } => match slots.get(&k) {
            Some(_) if flags == BPF_NOEXIST => return Ok(neg(EEXIST)),
            Some(&s) => s,
            None if flags == BPF_EXIST => return Ok(neg(ENOENT)),
            None => {
                let Some(s) = free.pop_first() else { return Ok(neg(E2BIG)) };
                slots.insert(k, s);
                s
            }
        },
        MapStore::SkStorage { .. } => return Err("updates an sk_storage map with bpf_map_update_elem".into()),
    };
    mem.bytes(tag::addr(tag::MAP_VALUES + i as u64, (slot * def.value_size) as u64), def.value_size, true)?
        .copy_from_slice(&v);
    Ok(0)
}

fn map_delete(mem: &mut Mem, map: u64, key: u64) -> Result<u64, String> {
    let i = map_index(mem, map)?;
    let def = mem.shared.maps[i].0.clone();
    let k = mem.read_vec(key, def.key_size)?;
    Ok(match &mut mem.shared.maps[i].1 {
        MapStore::Hash { slots, free, .. } => match slots.remove(&k) {
            Some(s) => {
                free.insert(s);
                0
            }
            None => neg(ENOENT),
        },
        // Array elements cannot be deleted (-EINVAL).
        _ => neg(-22),
    })
}

fn probe_read(mem: &mut Mem, dst: u64, len: usize, src: u64) -> Result<u64, String> {
    // The destination is the program's own memory and bounds the length.
    mem.bytes(dst, len, true)?;
    // A bad source reads as zeros and -EFAULT, as copy_from_kernel_nofault fails.
    let (bytes, r) = match mem.read_vec(src, len) {
        Ok(b) => (b, 0),
        Err(_) => (vec![0; len], neg(EFAULT)),
    };
    mem.bytes(dst, len, true)?.copy_from_slice(&bytes);
    Ok(r)
}

fn sk_storage_get(mem: &mut Mem, map: u64, sk: u64, init: u64, flags: u64) -> Result<u64, String> {
    let i = map_index(mem, map)?;
    if sk >> 32 != tag::SOCK {
        return Ok(0);
    }
    let def = mem.shared.maps[i].0.clone();
    if def.kind != MapKind::SkStorage {
        return Err(format!("calls bpf_sk_storage_get on {}, which is not an sk_storage map", def.name));
    }
    let id = mem.conn.id;
    let start = match &mem.shared.maps[i].1 {
        MapStore::SkStorage { slots, .. } => slots.get(&id).copied(),
        _ => None,
    };
    let slot = match start {
        Some(s) => s,
        None if flags & F_CREATE == 0 => return Ok(0),
        None => {
            let v = if init != 0 { mem.read_vec(init, def.value_size)? } else { vec![0; def.value_size] };
            let MapStore::SkStorage { slots, values, free } = &mut mem.shared.maps[i].1 else { unreachable!() };
            let size = def.value_size;
            let s = match free.pop_first() {
                Some(s) => {
                    values[s * size..(s + 1) * size].copy_from_slice(&v);
                    s
                }
                None => {
                    values.extend_from_slice(&v);
                    values.len() / size.max(1) - 1
                }
            };
            slots.insert(id, s);
            s
        }
    };
    Ok(tag::addr(tag::MAP_VALUES + i as u64, (slot * def.value_size) as u64))
}

/// `bpf_sk_storage_delete`: the socket is always the connection's own (its `sk`).
fn sk_storage_delete(mem: &mut Mem, map: u64) -> Result<u64, String> {
    let i = map_index(mem, map)?;
    let id = mem.conn.id;
    Ok(match &mut mem.shared.maps[i].1 {
        m @ MapStore::SkStorage { .. } => {
            if m.forget_socket(id) {
                0
            } else {
                neg(ENOENT)
            }
        }
        _ => neg(-22),
    })
}
