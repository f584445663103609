//! The congestion-control interface, shaped like Linux's `struct tcp_congestion_ops`.
//!
//! The TCP sender (`tcp::sender`) owns the connection state and calls these hooks in
//! the kernel's order (`tcp_ack`, tcp_input.c). Classic algorithms (Reno, Cubic)
//! implement `ssthresh` + `cong_avoid` and let the stack run PRR and set the pacing
//! rate; model-based ones (BBR) implement `cong_control` and set cwnd and pacing
//! themselves, exactly as `tcp_cong_control` dispatches.

pub mod bbr;
pub mod bbr3;
pub mod bic;
pub mod bpf;
pub mod cdg;
pub mod cubic;
pub mod dctcp;
pub mod highspeed;
pub mod htcp;
pub mod hybla;
pub mod illinois;
pub mod lp;
pub mod nv;
pub mod params;
pub mod reno;
pub mod scalable;
pub mod transitions;
pub mod vegas;
pub mod veno;
pub mod westwood;
pub mod yeah;

use crate::time::Time;
use serde::Serialize;
use std::collections::BTreeMap;
pub use transitions::{Transition, Transitions};

/// The floor of ssthresh after a reduction: the `2U` of `tcp_reno_ssthresh` that every
/// module's `ssthresh` repeats (tcp_bic.c, tcp_cdg.c, tcp_cubic.c, tcp_dctcp.c, ...).
pub const MIN_SSTHRESH: u32 = 2;

/// `enum tcp_ca_state` (include/net/tcp.h).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum CaState {
    #[default]
    Open,
    Disorder,
    Cwr,
    Recovery,
    Loss,
}

/// `enum tcp_ca_event`: what the stack tells the algorithm outside of ACK processing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaEvent {
    /// First transmission when nothing was in flight (`CA_EVENT_TX_START`).
    TxStart,
    /// cwnd restarted after an idle period (`CA_EVENT_CWND_RESTART`).
    CwndRestart,
    /// End of a CWR/Recovery reduction (`CA_EVENT_COMPLETE_CWR`).
    CompleteCwr,
    /// RTO fired (`CA_EVENT_LOSS`).
    Loss,
    /// A tail loss probe's retransmission repaired a loss (`CA_EVENT_TLP_RECOVERY`,
    /// google/bbr tree).
    TlpRecovery,
}

/// Read-only view of the connection handed to every hook. Counts are in segments,
/// times as the kernel keeps them (µs for RTTs, jiffies for coarse timers).
#[derive(Clone, Debug, Default)]
pub struct ConnInfo {
    pub now: Time,
    /// `tcp_jiffies32` at `now` for the configured HZ.
    pub jiffies: u32,
    pub hz: u32,
    pub mss: u32,
    /// `tcp_packets_in_flight`.
    pub inflight: u32,
    /// `packets_out`: segments sent and not cumulatively acknowledged.
    pub packets_out: u32,
    /// `tp->delivered`, `tp->lost`.
    pub delivered: u64,
    pub lost: u64,
    /// Smoothed RTT in µs (0 before the first sample).
    pub srtt_us: u64,
    /// `tcp_min_rtt`: windowed min RTT in µs (u64::MAX before the first sample).
    pub min_rtt_us: u64,
    /// `tcp_is_cwnd_limited`.
    pub is_cwnd_limited: bool,
    pub ca_state: CaState,
    /// Sequence space, as stream offsets (bytes): `snd_una` and `snd_nxt`.
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// `sk_pacing_rate` in payload bytes per second (0 = unset).
    pub pacing_rate: u64,
    /// The flow is paced (`sk_pacing_status != SK_PACING_NONE`).
    pub paced: bool,
    /// `tp->app_limited != 0`.
    pub app_limited: bool,
    /// cwnd before the current reduction began (`tp->prior_cwnd`).
    pub prior_cwnd: u32,
    /// `tp->lsndtime`: when new data was last sent. On `CaEvent::TxStart` it must still
    /// hold the previous transmission's time (the kernel updates it after the event).
    pub lsndtime: Time,
    /// `tp->tcp_wstamp_ns`: earliest departure time of the next skb (EDT).
    pub wstamp: Time,
    /// `tp->delivered_ce`: delivered segments whose ACKs carried ECE.
    pub delivered_ce: u64,
    /// ECN is negotiated on a low-threshold marking route (`bbr_can_use_ecn`).
    pub ecn_low: bool,
    /// `tp->delivered_mstamp` in µs: when `delivered` last grew.
    pub delivered_us: u64,
    /// The data the last loss probe retransmitted was sent app-limited
    /// (`tp->tlp_orig_data_app_limited`, google/bbr tree).
    pub tlp_orig_data_app_limited: bool,
    /// The timestamp option of the ACK being processed (`tp->rx_opt.rcv_tsval`,
    /// `rcv_tsecr`): the peer's TSval clock (ms) and the echo of ours; 0 before any.
    pub rcv_tsval: u32,
    pub rcv_tsecr: u32,
    /// Scoreboard counts in segments (`sacked_out`, `lost_out`, `retrans_out`).
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,
    /// `srtt_us` and `mdev_us` as the kernel holds them: 8 and 4 times the value in µs.
    pub srtt_us8: u64,
    pub mdev_us4: u64,
    /// `max_packets_out` and the `is_cwnd_limited` bit of the last cwnd-use window
    /// (`tcp_cwnd_validate`; `is_cwnd_limited` above is what `tcp_is_cwnd_limited` makes
    /// of them).
    pub max_packets_out: u32,
    pub cwnd_limited_bit: bool,
    /// `total_retrans`.
    pub total_retrans: u32,
    /// The peer's window in bytes (`snd_wnd`).
    pub snd_wnd: u32,
    /// ECN was negotiated (`TCP_ECN_OK`).
    pub ecn_ok: bool,
}

/// `enum tcp_ca_ack_event_flags`: what `in_ack_event` is told of an ACK.
/// Not the header-predicted fast path of `tcp_rcv_established`.
pub const CA_ACK_SLOWPATH: u32 = 1 << 0;
/// The ACK moved the send window (`FLAG_WIN_UPDATE`: it acknowledged new data, or
/// opened the window).
pub const CA_ACK_WIN_UPDATE: u32 = 1 << 1;
/// The ACK carried ECN-Echo.
pub const CA_ACK_ECE: u32 = 1 << 2;

/// The window state an algorithm may change, as `tp->snd_cwnd` / `tp->snd_ssthresh`.
#[derive(Clone, Debug)]
pub struct Window {
    pub cwnd: u32,
    pub ssthresh: u32,
    /// `snd_cwnd_clamp`.
    pub cwnd_clamp: u32,
    /// `snd_cwnd_cnt`: ACKed segments accumulated toward the next +1 (Reno AI).
    pub cwnd_cnt: u32,
    /// `sk_pacing_rate` in payload bytes per second. Only `cong_control` algorithms set it;
    /// for the others the stack computes it after each ACK (`tcp_update_pacing_rate`).
    pub pacing_rate: u64,
    /// Set by the algorithm to mark the connection application-limited now, as BBR does
    /// in PROBE_RTT (`tp->app_limited = delivered + inflight`); the stack applies and
    /// clears it.
    pub mark_app_limited: bool,
    /// Set by the algorithm to start a CWR reduction now, as CDG's backoff calls
    /// `tcp_enter_cwr` from `cong_avoid`; the stack applies and clears it (asking the
    /// algorithm's `ssthresh` for the target).
    pub enter_cwr: bool,
}

/// `TCP_INFINITE_SSTHRESH`.
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

impl Window {
    pub fn new(init_cwnd: u32) -> Self {
        Window {
            cwnd: init_cwnd,
            ssthresh: INFINITE_SSTHRESH,
            cwnd_clamp: u32::MAX / 2,
            cwnd_cnt: 0,
            pacing_rate: 0,
            mark_app_limited: false,
            enter_cwr: false,
        }
    }
    /// `tcp_in_slow_start`.
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
}

/// A delivery-rate sample (`struct rate_sample`, tcp_rate.c), finalised once per ACK.
#[derive(Clone, Debug, Default)]
pub struct RateSample {
    /// `tp->delivered` when the newest delivered packet was sent.
    pub prior_delivered: u64,
    /// `prior_delivered_ce` (google/bbr tree).
    pub prior_delivered_ce: u64,
    /// Segments delivered over `interval_us`; -1 if the sample is invalid.
    pub delivered: i64,
    pub delivered_ce: i64,
    /// max(send phase, ack phase) in µs; -1 if invalid.
    pub interval_us: i64,
    /// RTT of the newest delivered packet (`ca_rtt`) in µs; -1 if none.
    pub rtt_us: i64,
    /// Segments newly marked lost while processing this ACK.
    pub losses: u32,
    /// Segments newly (S)ACKed by this ACK.
    pub acked_sacked: u32,
    /// `tcp_packets_in_flight` before this ACK changed anything.
    pub prior_in_flight: u32,
    /// The newest delivered packet was sent while app-limited.
    pub is_app_limited: bool,
    pub is_retrans: bool,
    /// `FLAG_ACK_MAYBE_DELAYED`: one small segment newly ACKed and nothing else.
    pub is_ack_delayed: bool,
    /// Inflight right after the newest delivered packet was sent (`tx.in_flight`).
    pub tx_in_flight: u32,
    /// Segments marked lost since the newest delivered packet was sent
    /// (`tp->lost - tx.lost`, google/bbr tree).
    pub lost: u64,
    /// The ACK carried ECN-Echo.
    pub ece: bool,
    /// The ACK reached `tlp_high_seq` without telling whether the original or the probe's
    /// retransmission arrived (`rs->is_acking_tlp_retrans_seq`, google/bbr tree).
    pub is_acking_tlp_retrans_seq: bool,
}

/// The send-time snapshot of a segment the stack has just marked lost, as the google/bbr
/// tree's `skb_marked_lost` hook sees it.
#[derive(Clone, Copy, Debug, Default)]
pub struct LostSegment {
    /// Inflight right after it was sent (`tx.in_flight`).
    pub tx_in_flight: u32,
    /// `tp->lost` when it was sent, and now (this loss included).
    pub lost_at_send: u64,
    pub lost_now: u64,
    pub is_app_limited: bool,
}

/// What `pkts_acked` receives (`struct ack_sample`).
#[derive(Clone, Copy, Debug, Default)]
pub struct AckSample {
    pub pkts_acked: u32,
    /// `ca_rtt` in µs, -1 if none.
    pub rtt_us: i64,
    /// Segments delivered while the newest one this ACK delivered was in flight
    /// (`tp->delivered - rs->prior_delivered`: the kernel passes it times `mss_cache`).
    pub in_flight: u32,
}

/// Algorithm internals published for time series and plots.
pub type Internals = BTreeMap<&'static str, f64>;

/// Linux's `tcp_congestion_ops`. Every hook has the kernel's default behaviour.
pub trait CongestionControl {
    fn name(&self) -> &'static str;

    /// `init`: called once before the first transmission.
    fn init(&mut self, _c: &ConnInfo, _w: &mut Window) {}

    /// `release`: the connection is closing (`tcp_cleanup_congestion_control`).
    fn release(&mut self, _c: &ConnInfo, _w: &mut Window) {}

    /// `ssthresh`: new slow-start threshold on entering Recovery, CWR or Loss.
    fn ssthresh(&mut self, c: &ConnInfo, w: &Window) -> u32;

    /// `cong_avoid`: grow cwnd on an ACK that advanced `snd_una` (classic algorithms).
    fn cong_avoid(&mut self, _c: &ConnInfo, _w: &mut Window, _acked: u32) {}

    /// `cong_control`: model-based algorithms own cwnd and pacing. Returns false for
    /// algorithms that leave control to the stack (then PRR/cong_avoid run).
    fn cong_control(&mut self, _c: &ConnInfo, _w: &mut Window, _rs: &RateSample) -> bool {
        false
    }

    /// `in_ack_event`: an acceptable ACK arrived (`tcp_in_ack_event`), with
    /// `CA_ACK_*` flags; called after `snd_una` moved and SACKs were tagged, before the
    /// acknowledged segments are counted delivered (Linux 6.1's `tcp_ack`).
    fn in_ack_event(&mut self, _c: &ConnInfo, _w: &mut Window, _flags: u32) {}

    /// The algorithm has an `in_ack_event` (the kernel tests the op for NULL, and so
    /// spares the others the call).
    fn has_in_ack_event(&self) -> bool {
        false
    }

    /// `pkts_acked`: per-ACK RTT and acked count, before loss handling finishes.
    fn pkts_acked(&mut self, _c: &ConnInfo, _w: &mut Window, _s: &AckSample) {}

    /// `skb_marked_lost` (google/bbr tree): the stack marked a segment lost.
    fn segment_lost(&mut self, _c: &ConnInfo, _w: &mut Window, _seg: &LostSegment) {}

    /// `set_state`: the CA state is about to change.
    fn set_state(&mut self, _c: &ConnInfo, _w: &mut Window, _new: CaState) {}

    /// `cwnd_event`.
    fn cwnd_event(&mut self, _c: &ConnInfo, _w: &mut Window, _ev: CaEvent) {}

    /// `undo_cwnd`: the cwnd to restore after a spurious reduction (`tcp_reno_undo_cwnd`).
    fn undo_cwnd(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        w.cwnd.max(c.prior_cwnd)
    }

    /// `min_tso_segs`: floor of the TSO burst in segments at this pacing rate (bytes/s;
    /// `tcp_min_tso_segs` = 2).
    fn min_tso_segs(&self, _pacing_rate: u64) -> u32 {
        2
    }

    /// `sndbuf_expand`: the send buffer autotunes to this many times cwnd's memory
    /// (`tcp_sndbuf_expand`; 2 without the callback, 3 for BBR).
    fn sndbuf_expand(&self, _c: &ConnInfo) -> u32 {
        2
    }

    /// The algorithm implements `cong_control` and so owns cwnd even at the end of a
    /// reduction (`tcp_end_cwnd_reduction` leaves it alone).
    fn owns_cwnd(&self) -> bool {
        false
    }

    /// The algorithm asks for ECN whatever the sysctl says (`TCP_CONG_NEEDS_ECN`): its
    /// flows negotiate it, with the per-segment echo of a receiver that runs it too.
    fn needs_ecn(&self) -> bool {
        false
    }

    /// The algorithm requires pacing (BBR sets `SK_PACING_NEEDED` in its init).
    fn needs_pacing(&self) -> bool {
        false
    }

    /// The full effective parameter set, recorded with the results.
    fn params(&self) -> serde_json::Value {
        serde_json::Value::Object(Default::default())
    }

    /// State variables to record in time series (e.g. Cubic's Wmax, BBR's mode).
    fn internals(&self) -> Internals {
        Internals::new()
    }

    /// The log of the algorithm's state-machine moves, if it has state machines.
    fn transitions(&mut self) -> Option<&mut Transitions> {
        None
    }
}

/// Every algorithm the simulator knows, in one place: Linux's, by their kernel names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Algorithm {
    Reno,
    Cubic,
    /// BBRv1, mainline `tcp_bbr.c`.
    Bbr,
    /// BBRv2, google/bbr `v2alpha` `tcp_bbr2.c`.
    Bbr2,
    /// BBRv3, google/bbr `v3`.
    Bbr3,
    /// BIC, `tcp_bic.c`.
    Bic,
    /// CAIA Delay-Gradient, `tcp_cdg.c`.
    Cdg,
    /// DCTCP, `tcp_dctcp.c`.
    Dctcp,
    /// HighSpeed TCP (RFC 3649), `tcp_highspeed.c`.
    HighSpeed,
    /// H-TCP, `tcp_htcp.c`.
    Htcp,
    /// TCP Hybla, `tcp_hybla.c`.
    Hybla,
    /// TCP Illinois, `tcp_illinois.c`.
    Illinois,
    /// TCP Low Priority, `tcp_lp.c`.
    Lp,
    /// TCP-NV (New Vegas), `tcp_nv.c`.
    Nv,
    /// Scalable TCP, `tcp_scalable.c`.
    Scalable,
    /// TCP Vegas, `tcp_vegas.c`.
    Vegas,
    /// TCP Veno, `tcp_veno.c`.
    Veno,
    /// TCP Westwood+, `tcp_westwood.c`.
    Westwood,
    /// YeAH-TCP, `tcp_yeah.c`.
    Yeah,
}

impl Algorithm {
    pub const ALL: &'static [Algorithm] = &[
        Algorithm::Reno,
        Algorithm::Cubic,
        Algorithm::Bbr,
        Algorithm::Bbr2,
        Algorithm::Bbr3,
        Algorithm::Bic,
        Algorithm::Cdg,
        Algorithm::Dctcp,
        Algorithm::HighSpeed,
        Algorithm::Htcp,
        Algorithm::Hybla,
        Algorithm::Illinois,
        Algorithm::Lp,
        Algorithm::Nv,
        Algorithm::Scalable,
        Algorithm::Vegas,
        Algorithm::Veno,
        Algorithm::Westwood,
        Algorithm::Yeah,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Reno => "reno",
            Algorithm::Cubic => "cubic",
            Algorithm::Bbr => "bbr",
            Algorithm::Bbr2 => "bbr2",
            Algorithm::Bbr3 => "bbr3",
            Algorithm::Bic => "bic",
            Algorithm::Cdg => "cdg",
            Algorithm::Dctcp => "dctcp",
            Algorithm::HighSpeed => "highspeed",
            Algorithm::Htcp => "htcp",
            Algorithm::Hybla => "hybla",
            Algorithm::Illinois => "illinois",
            Algorithm::Lp => "lp",
            Algorithm::Nv => "nv",
            Algorithm::Scalable => "scalable",
            Algorithm::Vegas => "vegas",
            Algorithm::Veno => "veno",
            Algorithm::Westwood => "westwood",
            Algorithm::Yeah => "yeah",
        }
    }

    pub fn from_name(name: &str) -> Option<Algorithm> {
        Algorithm::ALL.iter().copied().find(|a| a.name() == name)
    }

    /// An instance with parameter overrides by name (`params::apply`: unknown names and
    /// values out of range are errors) and its own random stream.
    pub fn instance(
        self,
        params: &BTreeMap<String, f64>,
        rng: crate::base::rng::Rng,
    ) -> Result<Box<dyn CongestionControl>, params::ParamError> {
        let name = self.name();
        Ok(match self {
            Algorithm::Reno => params::none(name, params).map(|_| Box::new(reno::Reno))?,
            Algorithm::Cubic => Box::new(cubic::Cubic::new(cubic::CubicParams::from_overrides(params)?)),
            Algorithm::Bbr => Box::new(bbr::Bbr::new(bbr::BbrParams::from_overrides(params)?, rng)),
            Algorithm::Bbr2 => {
                let v = bbr3::Version::V2;
                Box::new(bbr3::Bbr3::new(v, bbr3::Bbr3Params::from_overrides(v, params)?, rng))
            }
            Algorithm::Bbr3 => {
                let v = bbr3::Version::V3;
                Box::new(bbr3::Bbr3::new(v, bbr3::Bbr3Params::from_overrides(v, params)?, rng))
            }
            Algorithm::Bic => Box::new(bic::Bic::new(bic::BicParams::from_overrides(params)?)),
            Algorithm::Cdg => Box::new(cdg::Cdg::new(cdg::CdgParams::from_overrides(params)?, rng)),
            Algorithm::Dctcp => Box::new(dctcp::Dctcp::new(dctcp::DctcpParams::from_overrides(params)?)),
            Algorithm::HighSpeed => params::none(name, params).map(|_| Box::new(highspeed::HighSpeed::new()))?,
            Algorithm::Htcp => Box::new(htcp::Htcp::new(htcp::HtcpParams::from_overrides(params)?)),
            Algorithm::Hybla => Box::new(hybla::Hybla::new(hybla::HyblaParams::from_overrides(params)?)),
            Algorithm::Illinois => Box::new(illinois::Illinois::new(illinois::IllinoisParams::from_overrides(params)?)),
            Algorithm::Lp => params::none(name, params).map(|_| Box::new(lp::Lp::new(rng)))?,
            Algorithm::Nv => Box::new(nv::Nv::new(nv::NvParams::from_overrides(params)?, rng)),
            Algorithm::Scalable => params::none(name, params).map(|_| Box::new(scalable::Scalable))?,
            Algorithm::Vegas => Box::new(vegas::Vegas::new(vegas::VegasParams::from_overrides(params)?)),
            Algorithm::Veno => params::none(name, params).map(|_| Box::new(veno::Veno::new()))?,
            Algorithm::Westwood => params::none(name, params).map(|_| Box::new(westwood::Westwood::new()))?,
            Algorithm::Yeah => params::none(name, params).map(|_| Box::new(yeah::Yeah::new()))?,
        })
    }

    /// [`Algorithm::instance`] with the error as one line, `name: what is allowed`.
    pub fn build(
        self,
        params: &BTreeMap<String, f64>,
        rng: crate::base::rng::Rng,
    ) -> Result<Box<dyn CongestionControl>, String> {
        self.instance(params, rng).map_err(|e| e.to_string())
    }

    /// The parameters a scenario may override, each with its default, range, kernel
    /// name and meaning (none for an algorithm the kernel gives no module parameters).
    pub fn parameters(self) -> Vec<params::Description> {
        use params::describe;
        match self {
            Algorithm::Cubic => describe(cubic::CubicParams::TABLE, cubic::CubicParams::default()),
            Algorithm::Bbr => describe(bbr::BbrParams::TABLE, bbr::BbrParams::default()),
            Algorithm::Bbr2 => describe(bbr3::Bbr3Params::TABLE, bbr3::Bbr3Params::defaults(bbr3::Version::V2)),
            Algorithm::Bbr3 => describe(bbr3::Bbr3Params::TABLE, bbr3::Bbr3Params::defaults(bbr3::Version::V3)),
            Algorithm::Bic => describe(bic::BicParams::TABLE, bic::BicParams::default()),
            Algorithm::Cdg => describe(cdg::CdgParams::TABLE, cdg::CdgParams::default()),
            Algorithm::Dctcp => describe(dctcp::DctcpParams::TABLE, dctcp::DctcpParams::default()),
            Algorithm::Htcp => describe(htcp::HtcpParams::TABLE, htcp::HtcpParams::default()),
            Algorithm::Hybla => describe(hybla::HyblaParams::TABLE, hybla::HyblaParams::default()),
            Algorithm::Illinois => describe(illinois::IllinoisParams::TABLE, illinois::IllinoisParams::default()),
            Algorithm::Nv => describe(nv::NvParams::TABLE, nv::NvParams::default()),
            Algorithm::Vegas => describe(vegas::VegasParams::TABLE, vegas::VegasParams::default()),
            Algorithm::Reno
            | Algorithm::HighSpeed
            | Algorithm::Lp
            | Algorithm::Scalable
            | Algorithm::Veno
            | Algorithm::Westwood
            | Algorithm::Yeah => Vec::new(),
        }
    }
}

/// Every algorithm's parameters, `{algorithm: [{name, kind, default, min, max, kernel,
/// meaning}, ...]}`, for the front end and the docs.
pub fn parameters() -> BTreeMap<&'static str, Vec<params::Description>> {
    Algorithm::ALL.iter().map(|&a| (a.name(), a.parameters())).collect()
}
