//! The kfuncs a BPF congestion control may call: the stack's Reno building blocks
//! (`tcp_ca_check_kfunc_ids`, net/ipv4/tcp_cong.c) and the exported callbacks of the
//! kernel's Cubic, DCTCP and BBR (`tcp_cubic_check_kfunc_ids` and its siblings). The
//! exported callbacks run the simulator's own model of that algorithm on the socket.

use crate::cc::{self, reno, AckSample, CaEvent, CaState, CongestionControl, ConnInfo, RateSample, Window};

/// Every kfunc the simulator provides, by the name an object's extern declares.
pub const NAMES: &[&str] = &[
    "tcp_slow_start",
    "tcp_cong_avoid_ai",
    "tcp_reno_cong_avoid",
    "tcp_reno_ssthresh",
    "tcp_reno_undo_cwnd",
    "cubictcp_init",
    "cubictcp_recalc_ssthresh",
    "cubictcp_cong_avoid",
    "cubictcp_state",
    "cubictcp_cwnd_event",
    "cubictcp_acked",
    "dctcp_init",
    "dctcp_update_alpha",
    "dctcp_cwnd_event",
    "dctcp_ssthresh",
    "dctcp_cwnd_undo",
    "dctcp_state",
    "bbr_init",
    "bbr_main",
    "bbr_sndbuf_expand",
    "bbr_undo_cwnd",
    "bbr_cwnd_event",
    "bbr_ssthresh",
    "bbr_min_tso_segs",
    "bbr_set_state",
];

pub fn index(name: &str) -> Option<usize> {
    NAMES.iter().position(|n| *n == name)
}

/// Which built-in algorithm an exported callback belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    Cubic,
    Dctcp,
    Bbr,
}

pub fn family(name: &str) -> Option<Family> {
    if name.starts_with("cubictcp_") {
        Some(Family::Cubic)
    } else if name.starts_with("dctcp_") {
        Some(Family::Dctcp)
    } else if name.starts_with("bbr_") {
        Some(Family::Bbr)
    } else {
        None
    }
}

pub fn build(f: Family, rng: crate::base::rng::Rng) -> Box<dyn CongestionControl> {
    let none = Default::default();
    let alg = match f {
        Family::Cubic => cc::Algorithm::Cubic,
        Family::Dctcp => cc::Algorithm::Dctcp,
        Family::Bbr => cc::Algorithm::Bbr,
    };
    alg.instance(&none, rng).expect("defaults are valid")
}

/// The kernel's `enum tcp_ca_event` number as the simulator's event; the ECN events
/// belong to a receiver, which the simulator models itself.
pub fn event(n: u64) -> Option<CaEvent> {
    Some(match n {
        0 => CaEvent::TxStart,
        1 => CaEvent::CwndRestart,
        2 => CaEvent::CompleteCwr,
        3 => CaEvent::Loss,
        _ => return None,
    })
}

pub fn event_number(e: CaEvent) -> Option<u64> {
    Some(match e {
        CaEvent::TxStart => 0,
        CaEvent::CwndRestart => 1,
        CaEvent::CompleteCwr => 2,
        CaEvent::Loss => 3,
        CaEvent::TlpRecovery => return None,
    })
}

pub fn state(n: u64) -> Result<CaState, String> {
    Ok(match n {
        0 => CaState::Open,
        1 => CaState::Disorder,
        2 => CaState::Cwr,
        3 => CaState::Recovery,
        4 => CaState::Loss,
        _ => return Err(format!("passed TCP CA state {n}, which does not exist")),
    })
}

/// What a kfunc call gets: its arguments, the connection as the stack sees it, the window
/// as the program left it, and the samples of the call in progress.
pub struct Call<'a> {
    pub args: [u64; 5],
    pub c: &'a ConnInfo,
    pub w: &'a mut Window,
    pub ack: Option<&'a AckSample>,
    pub rs: Option<&'a RateSample>,
}

/// The stack's own kfuncs (tcp_cong.c).
pub fn stack(name: &str, k: &mut Call) -> Result<u64, String> {
    let a = k.args;
    Ok(match name {
        "tcp_slow_start" => reno::slow_start(k.w, a[1] as u32) as u64,
        // The kernel would divide by zero.
        "tcp_cong_avoid_ai" if a[1] as u32 == 0 => return Err("calls tcp_cong_avoid_ai with w = 0".into()),
        "tcp_cong_avoid_ai" => {
            reno::cong_avoid_ai(k.w, a[1] as u32, a[2] as u32);
            0
        }
        "tcp_reno_cong_avoid" => {
            reno::Reno.cong_avoid(k.c, k.w, a[2] as u32);
            0
        }
        "tcp_reno_ssthresh" => reno::Reno.ssthresh(k.c, k.w) as u64,
        _ => reno::undo_cwnd(k.c, k.w) as u64,
    })
}

/// An exported callback of a built-in algorithm, on its own instance for this socket.
pub fn delegate(name: &str, cc: &mut dyn CongestionControl, k: &mut Call) -> Result<u64, String> {
    let op = name.split_once('_').map_or(name, |(_, op)| op);
    let a = k.args;
    Ok(match op {
        "init" => {
            cc.init(k.c, k.w);
            0
        }
        "recalc_ssthresh" | "ssthresh" => cc.ssthresh(k.c, k.w) as u64,
        "cong_avoid" => {
            cc.cong_avoid(k.c, k.w, a[2] as u32);
            0
        }
        "state" | "set_state" => {
            cc.set_state(k.c, k.w, state(a[1])?);
            0
        }
        "cwnd_event" => {
            if let Some(e) = event(a[1]) {
                cc.cwnd_event(k.c, k.w, e);
            }
            0
        }
        "acked" => {
            let s = k.ack.ok_or("calls cubictcp_acked outside pkts_acked")?;
            cc.pkts_acked(k.c, k.w, s);
            0
        }
        "update_alpha" => {
            cc.in_ack_event(k.c, k.w, a[1] as u32);
            0
        }
        "cwnd_undo" | "undo_cwnd" => cc.undo_cwnd(k.c, k.w) as u64,
        "main" => {
            let rs = k.rs.ok_or("calls bbr_main outside cong_control")?;
            cc.cong_control(k.c, k.w, rs);
            0
        }
        // `bbr_sndbuf_expand`: 3 (tcp_bbr.c).
        "sndbuf_expand" => 3,
        "min_tso_segs" => cc.min_tso_segs(k.w.pacing_rate) as u64,
        other => return Err(format!("kfunc {name} ({other}) is not bound")),
    })
}
