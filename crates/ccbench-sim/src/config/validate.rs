//! Checks of a resolved scenario: every value the core divides by, loops on or allocates
//! for is within what it can run (`limits`), with one `ConfigError` naming the field.

use super::*;
use crate::base::range::{first_out_of_range, Range, Unit};
use crate::tcp::config::Connect;

impl Scenario {
    pub fn from_json(json: &str) -> Result<Scenario, ConfigError> {
        let s: Scenario = serde_json::from_str(json).map_err(|e| err("scenario", e.to_string()))?;
        s.validate()?;
        Ok(s)
    }

    /// Bottleneck bandwidth-delay product in bytes.
    pub fn bdp_bytes(&self) -> u64 {
        (self.link.reference_rate_bps() as u128 * self.link.rtt_ns as u128 / 8 / 1_000_000_000) as u64
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        use limits::*;
        if self.duration_ns == 0 {
            return Err(err("duration", "must be positive"));
        }
        let max_duration = max_duration_ns(self.tcp.hz);
        if self.tcp.hz != 0 && self.duration_ns > max_duration {
            return Err(err(
                "duration",
                format!(
                    "must be at most {} (2^31 jiffies at tcp.hz = {}: the kernel's jiffy comparisons wrap beyond)",
                    fmt_ns(max_duration),
                    self.tcp.hz
                ),
            ));
        }
        if self.sample_interval_ns != 0 && self.sample_interval_ns < MIN_SAMPLE_INTERVAL_NS {
            return Err(err(
                "interval",
                format!("must be 0 (no time series) or at least {}", fmt_ns(MIN_SAMPLE_INTERVAL_NS)),
            ));
        }
        self.link.check()?;
        if self.flows.is_empty() && self.udp.is_empty() && self.arrivals.is_empty() {
            return Err(err("flows", "at least one flow (or UDP flow, or group of arrivals) is required"));
        }
        if self.flows.len() > MAX_FLOWS {
            return Err(err(
                "flows",
                format!("at most {MAX_FLOWS} flows in all (the capture's port numbers and the fq_codel flow hash)"),
            ));
        }
        if self.tcp.hz == 0 || 1_000_000 % self.tcp.hz != 0 {
            return Err(err("tcp.hz", "must divide 1000000, so that a jiffy is a whole number of microseconds (the unit of the RTT estimator's usecs_to_jiffies), e.g. 100, 250, 1000"));
        }
        if let Some((r, _)) = self.tcp.out_of_range() {
            return Err(err(format!("tcp.{}", r.key()), format!("must be {}", describe(r))));
        }
        let [min, default, max] = self.tcp.wmem;
        if !(1 <= min && min <= default && default <= max && max <= i32::MAX as u64) {
            return Err(err(
                "tcp.wmem",
                "must be [min, default, max] with 1 <= min <= default <= max <= 2147483647 bytes (INT_MAX)",
            ));
        }
        if let Some([min, default, max]) = self.tcp.rmem {
            if !(1 <= min && min <= default && default <= max && max <= i32::MAX as u64) {
                return Err(err(
                    "tcp.rmem",
                    "must be [min, default, max] with 1 <= min <= default <= max <= 2147483647 bytes (INT_MAX)",
                ));
            }
            // Half the buffer is advertised: less than a segment would never open.
            if default < 2 * self.tcp.mss as u64 {
                return Err(err("tcp.rmem", "default must be at least twice tcp.mss, a window of one segment"));
            }
        }
        for (i, f) in self.flows.iter().enumerate() {
            self.check_flow(&format!("flows[{i}]"), f)?;
        }
        for (k, a) in self.arrivals.iter().enumerate() {
            self.check_arrivals(k, a)?;
        }
        if self.udp.len() > MAX_FLOWS {
            return Err(err("udp", format!("at most {MAX_FLOWS} UDP flows")));
        }
        for (k, u) in self.udp.iter().enumerate() {
            self.check_udp(k, u)?;
        }
        match &self.host {
            Some(h) => super::host::check(h, max_duration),
            None => Ok(()),
        }
    }

    /// A flow's values, named under `at` (`flows[i]`, `arrivals[k]`).
    fn check_flow(&self, at: &str, f: &FlowConfig) -> Result<(), ConfigError> {
        use limits::*;
        if let Some(spec) = crate::cc::bpf::Spec::parse(&f.cca) {
            crate::cc::bpf::check(&spec, &f.params).map_err(|r| match r.param {
                Some(p) => err(format!("{at}.params.{p}"), r.message),
                None => err(format!("{at}.cca"), format!("{}: {}", spec.path, r.message)),
            })?;
        } else {
            let alg = crate::cc::Algorithm::from_name(&f.cca).ok_or_else(|| {
                let names: Vec<_> = crate::cc::Algorithm::ALL.iter().map(|a| a.name()).collect();
                err(
                    format!("{at}.cca"),
                    format!("unknown algorithm '{}'; allowed: {}, bpf:PATH", f.cca, names.join(", ")),
                )
            })?;
            alg.instance(&f.params, crate::base::rng::stream(0, "cc", 0))
                .map_err(|e| err(format!("{at}.params.{}", e.name), e.message))?;
        }
        if f.start_ns >= self.duration_ns {
            return Err(err(format!("{at}.start"), "must be before the end of the run"));
        }
        let path_rtt = (self.max_rtt_ns() as u128) + 2 * f.access_delay_ns as u128;
        if path_rtt > MAX_PATH_RTT_NS as u128 {
            return Err(err(
                format!("{at}.access_delay"),
                format!("the path's RTT (link.rtt + 2 x access_delay) must be at most {} (the kernel's srtt_us holds 8 x the RTT in 32 bits)", fmt_ns(MAX_PATH_RTT_NS)),
            ));
        }
        if f.size_bytes == Some(0) {
            return Err(err(format!("{at}.size"), "must be positive"));
        }
        if f.rwnd_bytes < self.tcp.mss as u64 || f.rwnd_bytes > MAX_WINDOW_BYTES {
            return Err(err(
                format!("{at}.rwnd"),
                format!("must be from one MSS to {MAX_WINDOW_BYTES} bytes (65535 << 14, TCP's largest window)"),
            ));
        }
        if let Some((r, _)) = first_out_of_range(f, FlowConfig::RANGES) {
            return Err(err(format!("{at}.{}", r.key()), format!("must be {}", describe(r))));
        }
        if f.repeat > 1 && f.size_bytes.is_none() {
            return Err(err(format!("{at}.repeat"), "repeats a download: give the flow a size"));
        }
        if f.fastopen && f.connect == Connect::Ahead {
            return Err(err(
                format!("{at}.fastopen"),
                "needs connect = \"sender\" or \"receiver\": Fast Open saves part of the handshake, which a connection made ahead does not count",
            ));
        }
        if let Some(r) = f.fixed_pacing_rate_bps {
            check_rate(&format!("{at}.fixed_pacing_rate"), r)?;
        }
        if f.direction == crate::tcp::config::Direction::Up && self.link.reverse_link().is_none() {
            return Err(err(
                format!("{at}.direction"),
                "\"up\" needs a reverse bottleneck: link.reverse (its rate or trace) or link.ack_trace",
            ));
        }
        Ok(())
    }

    /// Group `k` of arrivals, named as `arrivals[k]`; its connections' values as a flow's.
    fn check_arrivals(&self, k: usize, a: &crate::arrivals::ArrivalsConfig) -> Result<(), ConfigError> {
        let at = format!("arrivals[{k}]");
        let field = |name: &str| format!("{at}.{name}");
        if let Some(problem) = a.sizes.problem() {
            return Err(err(field("sizes"), problem));
        }
        self.check_flow(&at, &a.flow(1))?;
        match (a.rate_per_s, a.load, &a.times_ns) {
            (Some(r), None, None) if !(r.is_finite() && r > 0.0 && r <= limits::MAX_ARRIVAL_RATE) => {
                Err(err(field("rate"), "must be above 0 and at most 10,000,000 connections a second"))
            }
            (None, Some(l), None) if !(l.is_finite() && l > 0.0 && l <= 1.0) => {
                Err(err(field("load"), "must be above 0 and at most 1 (a fraction of the link's rate)"))
            }
            (None, None, Some(t)) if t.windows(2).any(|w| w[1] < w[0]) => {
                Err(err(field("times"), "must not go backwards (non-decreasing instants)"))
            }
            (Some(_), None, None) | (None, Some(_), None) | (None, None, Some(_)) => Ok(()),
            _ => Err(err(&at, "give one of rate, load or times")),
        }?;
        if a.stop_ns.is_some_and(|stop| stop <= a.start_ns) {
            return Err(err(field("stop"), "must be after its start"));
        }
        // A load of tiny transfers on a fast link can ask for more than a rate may.
        if a.load.is_some() && self.arrival_rate(k) > limits::MAX_ARRIVAL_RATE {
            return Err(err(
                field("load"),
                format!(
                    "asks for {:.0} connections a second with these sizes; at most 10,000,000",
                    self.arrival_rate(k)
                ),
            ));
        }
        if self.link.mtu_bytes.is_some() {
            return Err(err(
                "link.mtu",
                "cannot be combined with arrivals: their connections do not model the path MTU",
            ));
        }
        Ok(())
    }

    /// Group `k`'s Poisson rate in connections a second (0 for given times): its rate, or
    /// its load of its direction's link in payload over the sizes' mean.
    pub fn arrival_rate(&self, k: usize) -> f64 {
        let a = &self.arrivals[k];
        match (a.rate_per_s, a.load) {
            (Some(r), _) => r,
            (None, Some(load)) => {
                let link_bps = match a.direction {
                    crate::tcp::config::Direction::Down => self.link.reference_rate_bps(),
                    crate::tcp::config::Direction::Up => self.link.reverse_link().map_or(0, |r| r.reference_rate_bps()),
                };
                load * link_bps as f64 / (8.0 * a.sizes.sampler().mean())
            }
            (None, None) => 0.0,
        }
    }

    /// UDP flow `k`'s values, named as `udp[k]`.
    fn check_udp(&self, k: usize, u: &crate::udp::UdpFlowConfig) -> Result<(), ConfigError> {
        let field = |name: &str| format!("udp[{k}].{name}");
        check_rate(&field("rate"), u.rate_bps)?;
        if u.start_ns >= self.duration_ns {
            return Err(err(field("start"), "must be before the end of the run"));
        }
        if u.stop_ns.is_some_and(|stop| stop <= u.start_ns) {
            return Err(err(field("stop"), "must be after its start"));
        }
        // An IPv4 packet's length holds the 28 header bytes and the payload.
        if !(1..=u16::MAX as u32 - crate::udp::UDP_OVERHEAD).contains(&u.payload_bytes) {
            return Err(err(
                field("size"),
                "must be from 1 to 65507 bytes (an IPv4 packet's payload less UDP's header)",
            ));
        }
        if self.link.mtu_bytes.is_some_and(|mtu| u.wire_bytes() > mtu) {
            return Err(err(
                field("size"),
                "its IP packets (size + 28) must fit link.mtu (datagrams are not fragmented)",
            ));
        }
        if let Some(o) = u.on_off {
            // Each period is stepped through: shorter ones would cost time, not fidelity.
            if o.on_ns < limits::MIN_ON_OFF_NS || o.off_ns < limits::MIN_ON_OFF_NS {
                return Err(err(field("on_off"), "on and off periods must both be at least 1 ms"));
            }
        }
        let mut prev = 0;
        for (j, st) in u.rate_schedule.iter().enumerate() {
            if st.at_ns <= prev {
                return Err(err(
                    field(&format!("rate_schedule[{j}].at")),
                    "steps must be after 0 and in increasing order",
                ));
            }
            if st.rate_bps != 0 {
                check_rate(&field(&format!("rate_schedule[{j}].rate")), st.rate_bps)?;
            }
            prev = st.at_ns;
        }
        let path_rtt = (self.max_rtt_ns() as u128) + 2 * u.access_delay_ns as u128;
        if path_rtt > limits::MAX_PATH_RTT_NS as u128 {
            return Err(err(
                field("access_delay"),
                format!("link.rtt + 2 x access_delay must be at most {}", fmt_ns(limits::MAX_PATH_RTT_NS)),
            ));
        }
        if u.direction == crate::tcp::config::Direction::Up && self.link.reverse_link().is_none() {
            return Err(err(
                field("direction"),
                "\"up\" needs a reverse bottleneck: link.reverse (its rate or trace) or link.ack_trace",
            ));
        }
        Ok(())
    }

    /// Traces, schedules, the loss model and the AQM (the emulator checks these too).
    pub fn validate_link_models(&self) -> Result<(), ConfigError> {
        self.link.check_models()
    }

    /// The largest base RTT the link ever has (its RTT schedule included).
    pub fn max_rtt_ns(&self) -> u64 {
        self.link.rtt_schedule.iter().map(|s| s.rtt_ns).fold(self.link.rtt_ns, u64::max)
    }
}

/// A rate must be positive, and the bytes it carries over the run must fit the 64-bit
/// byte counters (and pacing's `bytes * NS_PER_SEC / rate` in `tcp/pacing.rs`).
pub(super) fn check_rate(field: &str, bps: u64) -> Result<(), ConfigError> {
    if bps == 0 || bps > limits::MAX_RATE_BPS {
        return Err(err(field, format!("must be from 1 bit/s to {}", fmt_bps(limits::MAX_RATE_BPS))));
    }
    Ok(())
}

/// What a setting's range allows, in its unit: "from 64 to 9000 bytes", "positive, at
/// most 120 s (TCP_RTO_MAX)", "at least 1 byte".
pub fn describe(r: &Range) -> String {
    let value = |v: u64| match r.unit {
        Unit::Nanoseconds => fmt_ns(v),
        Unit::Picoseconds => format!("{v} ps"),
        Unit::Bytes => format!("{v} byte{}", if v == 1 { "" } else { "s" }),
        Unit::Count(what) => {
            if what.is_empty() {
                v.to_string()
            } else {
                format!("{v} {what}")
            }
        }
    };
    let bare = |v: u64| match r.unit {
        Unit::Nanoseconds if v > 0 => fmt_ns(v),
        _ => v.to_string(),
    };
    let time = matches!(r.unit, Unit::Nanoseconds | Unit::Picoseconds);
    let range = if r.hi == u64::MAX {
        format!("at least {}", value(r.lo))
    } else if time && r.lo <= 1 {
        let positive = if r.lo == 1 { "positive, " } else { "" };
        format!("{positive}at most {}", value(r.hi))
    } else {
        format!("from {} to {}", bare(r.lo), value(r.hi))
    };
    if r.why.is_empty() {
        range
    } else {
        format!("{range} ({})", r.why)
    }
}

/// Formats nanoseconds for messages: "120 s", "1 ms", "536.871 s", "24.86 days".
pub fn fmt_ns(ns: u64) -> String {
    const DAY: u64 = 86_400 * NS_PER_SEC_U64;
    let units = [(DAY, "days"), (NS_PER_SEC_U64, "s"), (1_000_000, "ms"), (1_000, "us"), (1, "ns")];
    let &(unit, name) = units.iter().find(|(u, _)| ns >= *u).unwrap_or(&(1, "ns"));
    if ns.is_multiple_of(unit) {
        format!("{} {}", ns / unit, name)
    } else {
        let v = ns as f64 / unit as f64;
        format!("{} {}", format!("{v:.3}").trim_end_matches('0'), name)
    }
}

/// Formats a rate for messages: "10 Tbit/s", "1 bit/s".
pub fn fmt_bps(bps: u64) -> String {
    for (unit, name) in
        [(1_000_000_000_000, "Tbit/s"), (1_000_000_000, "Gbit/s"), (1_000_000, "Mbit/s"), (1_000, "kbit/s")]
    {
        if bps >= unit && bps.is_multiple_of(unit) {
            return format!("{} {}", bps / unit, name);
        }
    }
    format!("{bps} bit/s")
}

const NS_PER_SEC_U64: u64 = 1_000_000_000;

/// The ranges the simulator can run, each with the reason it ends where it does. The
/// checks in [`Scenario::validate`] and the generated table of `docs/input-ranges.md`
/// both come from these.
pub mod limits {
    /// The shortest on or off period of a UDP flow (1 ms).
    pub const MIN_ON_OFF_NS: u64 = 1_000_000;
    /// The most connections a group of arrivals may open a second.
    pub const MAX_ARRIVAL_RATE: f64 = 1e7;
    /// A jiffy is `NS_PER_SEC / hz`; the kernel compares jiffies with 32-bit signed
    /// differences (`after`, `before`), so a run lasts at most 2^31 of them.
    pub fn max_duration_ns(hz: u32) -> u64 {
        if hz == 0 {
            return 0;
        }
        (1u64 << 31) * (super::NS_PER_SEC_U64 / hz as u64)
    }
    /// The recorder keeps a row per flow per interval; below a millisecond the rows
    /// measure single packets rather than rates.
    pub const MIN_SAMPLE_INTERVAL_NS: u64 = 1_000_000;
    /// Link, NIC and fixed pacing rates: 10 Tbit/s keeps bits x 1e9 (ns) within u128
    /// and the bytes of a maximal run within the 64-bit counters.
    pub const MAX_RATE_BPS: u64 = 10_000_000_000_000;
    /// `link.buffer = "Nbdp"` and `link.ecn_threshold`: a million BDPs is unbounded in
    /// practice (and the conversion to bytes saturates at u64::MAX beyond).
    pub const MAX_BDP_MULTIPLE: f64 = 1e6;
    /// Flow indices become capture port offsets (`observe/capture.rs`, i % 20000): more
    /// flows would share port pairs in a pcap.
    pub const MAX_FLOWS: usize = 20_000;
    /// `srtt_us` is a u32 holding 8 x the smoothed RTT in microseconds.
    pub const MAX_PATH_RTT_NS: u64 = (u32::MAX as u64 >> 3) * 1_000;
    /// `65535 << TCP_MAX_WSCALE` (14): the largest window TCP can advertise.
    pub const MAX_WINDOW_BYTES: u64 = 65_535 << 14;
}
