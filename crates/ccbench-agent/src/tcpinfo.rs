//! `struct tcp_info` (`TCP_INFO`) and BBR's `struct tcp_bbr_info` (`TCP_CC_INFO`),
//! decoded into the same names and values as `python/ccbench/kernel/tcpinfo.py`.
//!
//! Fields follow `include/uapi/linux/tcp.h` in order. The kernel copies out as much of
//! the structure as it knows (`tcp_get_info`), so fields newer than the running kernel
//! are absent from the result, exactly as in the Python decoder.

use serde::ser::{Serialize, SerializeMap, Serializer};

/// `include/uapi/linux/tcp.h`
pub const TCP_INFO: libc::c_int = 11;
pub const TCP_CONGESTION: libc::c_int = 13;
pub const TCP_CC_INFO: libc::c_int = 26;
/// `include/uapi/asm-generic/socket.h`
pub const SO_MAX_PACING_RATE: libc::c_int = 47;
/// `TCP_INFINITE_SSTHRESH` in `include/net/tcp.h`.
pub const TCP_INFINITE_SSTHRESH: u64 = 0x7FFF_FFFF;

/// Two bytes of bitfields (`tcpi_snd_wscale:4, tcpi_rcv_wscale:4` and
/// `tcpi_delivery_rate_app_limited:1, tcpi_fastopen_client_fail:2`) are read raw under
/// these names and split when serialized.
const WSCALE: &str = "_wscale";
const FLAGS: &str = "_flags";

/// `struct tcp_info` in declaration order: (name, size in bytes). Every member is
/// naturally aligned, so a member's offset is the previous end rounded up to its size.
const FIELDS: &[(&str, usize)] = &[
    ("state", 1),
    ("ca_state", 1),
    ("retransmits", 1),
    ("probes", 1),
    ("backoff", 1),
    ("options", 1),
    (WSCALE, 1),
    (FLAGS, 1),
    ("rto", 4),
    ("ato", 4),
    ("snd_mss", 4),
    ("rcv_mss", 4),
    ("unacked", 4),
    ("sacked", 4),
    ("lost", 4),
    ("retrans", 4),
    ("fackets", 4),
    ("last_data_sent", 4),
    ("last_ack_sent", 4),
    ("last_data_recv", 4),
    ("last_ack_recv", 4),
    ("pmtu", 4),
    ("rcv_ssthresh", 4),
    ("rtt", 4),
    ("rttvar", 4),
    ("snd_ssthresh", 4),
    ("snd_cwnd", 4),
    ("advmss", 4),
    ("reordering", 4),
    ("rcv_rtt", 4),
    ("rcv_space", 4),
    ("total_retrans", 4),
    ("pacing_rate", 8),
    ("max_pacing_rate", 8),
    ("bytes_acked", 8),
    ("bytes_received", 8),
    ("segs_out", 4),
    ("segs_in", 4),
    ("notsent_bytes", 4),
    ("min_rtt", 4),
    ("data_segs_in", 4),
    ("data_segs_out", 4),
    ("delivery_rate", 8),
    ("busy_time", 8),
    ("rwnd_limited", 8),
    ("sndbuf_limited", 8),
    ("delivered", 4),
    ("delivered_ce", 4),
    ("bytes_sent", 8),
    ("bytes_retrans", 8),
    ("dsack_dups", 4),
    ("reord_seen", 4),
    ("rcv_ooopack", 4),
    ("snd_wnd", 4),
    ("rcv_wnd", 4),
    ("rehash", 4),
    ("total_rto", 2),
    ("total_rto_recoveries", 2),
    ("total_rto_time", 4),
];

const fn align_up(offset: usize, align: usize) -> usize {
    offset.div_ceil(align) * align
}

/// Byte offset of each field, as the C compiler lays the structure out.
const OFFSETS: [usize; FIELDS.len()] = {
    let mut out = [0; FIELDS.len()];
    let mut end = 0;
    let mut i = 0;
    while i < FIELDS.len() {
        out[i] = align_up(end, FIELDS[i].1);
        end = out[i] + FIELDS[i].1;
        i += 1;
    }
    out
};

/// Bytes asked of `getsockopt(TCP_INFO)`: up to the end of the last field known here.
pub const TCP_INFO_MAX: usize = OFFSETS[FIELDS.len() - 1] + FIELDS[FIELDS.len() - 1].1;

/// The decoded fields that the kernel returned, in declaration order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpInfo {
    fields: Vec<(&'static str, u64)>,
}

fn read_ne(raw: &[u8], offset: usize, size: usize) -> u64 {
    let b = &raw[offset..offset + size];
    match size {
        1 => u64::from(b[0]),
        2 => u64::from(u16::from_ne_bytes([b[0], b[1]])),
        4 => u64::from(u32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
        8 => u64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        _ => unreachable!("tcp_info has no {size}-byte members"),
    }
}

impl TcpInfo {
    /// The fields that fit entirely in `raw` (as returned by getsockopt).
    pub fn parse(raw: &[u8]) -> TcpInfo {
        let fields = FIELDS
            .iter()
            .zip(OFFSETS)
            .take_while(|((_, size), offset)| offset + size <= raw.len())
            .map(|(&(name, size), offset)| (name, read_ne(raw, offset, size)))
            .collect();
        TcpInfo { fields }
    }

    /// A field by its Python name (`snd_wscale`, `rcv_wscale` and
    /// `delivery_rate_app_limited` included); `None` if the kernel did not return it.
    pub fn get(&self, name: &str) -> Option<u64> {
        match name {
            "snd_wscale" => self.raw(WSCALE).map(|w| w & 0x0F),
            "rcv_wscale" => self.raw(WSCALE).map(|w| w >> 4),
            "delivery_rate_app_limited" => self.raw(FLAGS).map(|f| f & 1),
            _ if name.starts_with('_') => None,
            _ => self.raw(name),
        }
    }

    fn raw(&self, name: &str) -> Option<u64> {
        self.fields.iter().find(|(n, _)| *n == name).map(|&(_, v)| v)
    }

    /// (name, value) in the order `tcpinfo.parse_tcp_info` builds its dict: the plain
    /// fields in declaration order, then the split bitfields appended at the end.
    pub fn entries(&self) -> Vec<(&'static str, u64)> {
        let mut out: Vec<(&'static str, u64)> =
            self.fields.iter().copied().filter(|(n, _)| !n.starts_with('_')).collect();
        if let Some(w) = self.raw(WSCALE) {
            out.push(("snd_wscale", w & 0x0F));
            out.push(("rcv_wscale", w >> 4));
        }
        if let Some(f) = self.raw(FLAGS) {
            out.push(("delivery_rate_app_limited", f & 1));
        }
        out
    }

    /// A sized flow is done when everything written is acknowledged: nothing in flight
    /// and nothing left in the send queue (`notsent_bytes`, 0 when not reported).
    pub fn all_acked(&self) -> bool {
        self.get("unacked") == Some(0) && self.get("notsent_bytes").unwrap_or(0) == 0
    }
}

/// `struct tcp_bbr_info`: bandwidth estimate (bytes/s), min RTT (µs), gains (x256 in the
/// kernel, as ratios here).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct BbrInfo {
    pub bw_bytes_per_s: f64,
    pub min_rtt_us: f64,
    pub pacing_gain: f64,
    pub cwnd_gain: f64,
}

/// Size of `struct tcp_bbr_info` (five `__u32`).
pub const BBR_INFO_LEN: usize = 20;

impl BbrInfo {
    /// `None` when the kernel returned less than the whole structure (another
    /// algorithm's `TCP_CC_INFO`, or none).
    pub fn parse(raw: &[u8]) -> Option<BbrInfo> {
        if raw.len() < BBR_INFO_LEN {
            return None;
        }
        let word = |i: usize| read_ne(raw, 4 * i, 4);
        Some(BbrInfo {
            bw_bytes_per_s: (word(0) | word(1) << 32) as f64,
            min_rtt_us: word(2) as f64,
            pacing_gain: word(3) as f64 / 256.0,
            cwnd_gain: word(4) as f64 / 256.0,
        })
    }
}

/// `struct tcpvegas_info` (`get_info` of Vegas, and of Illinois): four `__u32`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct VegasInfo {
    pub enabled: u32,
    pub rttcnt: u32,
    /// Vegas reports its base RTT here, in µs.
    pub rtt_us: u32,
    pub minrtt_us: u32,
}

pub const VEGAS_INFO_LEN: usize = 16;

impl VegasInfo {
    pub fn parse(raw: &[u8]) -> Option<VegasInfo> {
        if raw.len() < VEGAS_INFO_LEN {
            return None;
        }
        let word = |i: usize| read_ne(raw, 4 * i, 4) as u32;
        Some(VegasInfo { enabled: word(0), rttcnt: word(1), rtt_us: word(2), minrtt_us: word(3) })
    }
}

/// `struct tcp_dctcp_info`: two `__u16`, then α (in 1/1024) and the bytes ACKed with and
/// without ECE in the current window.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct DctcpInfo {
    pub enabled: u32,
    pub ce_state: u32,
    pub alpha: u32,
    pub ab_ecn: u32,
    pub ab_tot: u32,
}

pub const DCTCP_INFO_LEN: usize = 16;

impl DctcpInfo {
    pub fn parse(raw: &[u8]) -> Option<DctcpInfo> {
        if raw.len() < DCTCP_INFO_LEN {
            return None;
        }
        let half = |at: usize| read_ne(raw, at, 2) as u32;
        let word = |at: usize| read_ne(raw, at, 4) as u32;
        Some(DctcpInfo { enabled: half(0), ce_state: half(2), alpha: word(4), ab_ecn: word(8), ab_tot: word(12) })
    }
}

/// What an algorithm's `TCP_CC_INFO` holds, by the structure its `get_info` fills.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum CcInfo {
    Bbr(BbrInfo),
    Vegas(VegasInfo),
    Dctcp(DctcpInfo),
}

impl CcInfo {
    /// The structure named `kind` (`bbr`, `vegas`, `dctcp`: the flow's `cc_info`), read
    /// from `raw`; `None` for a kind it does not know or a short answer.
    pub fn parse(kind: &str, raw: &[u8]) -> Option<CcInfo> {
        match kind {
            "bbr" => BbrInfo::parse(raw).map(CcInfo::Bbr),
            "vegas" => VegasInfo::parse(raw).map(CcInfo::Vegas),
            "dctcp" => DctcpInfo::parse(raw).map(CcInfo::Dctcp),
            _ => None,
        }
    }
}

/// The longest `TCP_CC_INFO` structure read.
pub const CC_INFO_MAX: usize = BBR_INFO_LEN;

/// One flow's sample as the Python sender writes it: the `TCP_INFO` fields, plus the
/// algorithm's `TCP_CC_INFO` under its kind (`bbr`, `vegas`, `dctcp`; null when the
/// kernel gave nothing) for the flows whose plan asks for it.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSample {
    pub info: TcpInfo,
    pub cc: Option<(String, Option<CcInfo>)>,
}

impl Serialize for FlowSample {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let entries = self.info.entries();
        let mut map = serializer.serialize_map(Some(entries.len() + usize::from(self.cc.is_some())))?;
        for (name, value) in entries {
            map.serialize_entry(name, &value)?;
        }
        if let Some((kind, cc)) = &self.cc {
            map.serialize_entry(kind, cc)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Offsets of `struct tcp_info` members in `include/uapi/linux/tcp.h` (x86-64),
    /// written out by hand from the header rather than computed.
    #[test]
    fn layout_matches_the_uapi_header() {
        let at = |name: &str| OFFSETS[FIELDS.iter().position(|(n, _)| *n == name).unwrap()];
        assert_eq!(at("rto"), 8);
        assert_eq!(at("total_retrans"), 100);
        assert_eq!(at("pacing_rate"), 104);
        assert_eq!(at("segs_out"), 136);
        assert_eq!(at("delivery_rate"), 160);
        assert_eq!(at("delivered"), 192);
        assert_eq!(at("bytes_sent"), 200);
        assert_eq!(at("snd_wnd"), 228);
        assert_eq!(at("rehash"), 236);
        assert_eq!(at("total_rto"), 240);
        assert_eq!(at("total_rto_recoveries"), 242);
        assert_eq!(at("total_rto_time"), 244);
        assert_eq!(TCP_INFO_MAX, 248);
    }

    /// A byte image with every field set to a distinct value, built field by field.
    fn image() -> Vec<u8> {
        let mut raw = vec![0u8; TCP_INFO_MAX];
        for (i, (&(_, size), offset)) in FIELDS.iter().zip(OFFSETS).enumerate() {
            let v = 0x0101_0101_0101_0101u64.wrapping_mul(i as u64 + 1) & (u64::MAX >> (64 - 8 * size));
            raw[offset..offset + size].copy_from_slice(&v.to_ne_bytes()[..size]);
        }
        raw
    }

    #[test]
    fn decodes_a_known_image() {
        let mut raw = image();
        raw[6] = 0x97; // rcv_wscale 9, snd_wscale 7
        raw[7] = 0x03; // app limited, plus fastopen_client_fail bits that are dropped
        let info = TcpInfo::parse(&raw);
        assert_eq!(info.get("state"), Some(0x01));
        assert_eq!(info.get("snd_wscale"), Some(7));
        assert_eq!(info.get("rcv_wscale"), Some(9));
        assert_eq!(info.get("delivery_rate_app_limited"), Some(1));
        assert_eq!(info.get("rto"), Some(0x0909_0909));
        assert_eq!(info.get("pacing_rate"), Some(0x2121_2121_2121_2121));
        assert_eq!(info.get("total_rto"), Some(0x3939));
        assert_eq!(info.get("total_rto_time"), Some(0x3b3b_3b3b));
        assert_eq!(info.get("_wscale"), None);
    }

    #[test]
    fn a_short_image_keeps_only_whole_fields() {
        let raw = image();
        // A structure cut one byte into tcpi_snd_wnd gives nothing of that field.
        let info = TcpInfo::parse(&raw[..229]);
        assert_eq!(info.get("rcv_ooopack"), Some(0x3535_3535));
        assert_eq!(info.get("snd_wnd"), None);
        assert_eq!(TcpInfo::parse(&raw[..6]).entries().len(), 6);
        assert_eq!(TcpInfo::parse(&raw[..7]).entries().len(), 8);
        assert!(TcpInfo::parse(&[]).entries().is_empty());
    }

    #[test]
    fn serializes_in_the_python_decoders_order() {
        let sample = FlowSample { info: TcpInfo::parse(&image()), cc: None };
        let text = serde_json::to_string(&sample).unwrap();
        let keys: Vec<String> = text
            .trim_matches(|c| c == '{' || c == '}')
            .split(',')
            .map(|kv| kv.split(':').next().unwrap().trim_matches('"').to_string())
            .collect();
        assert_eq!(keys.first().map(String::as_str), Some("state"));
        assert_eq!(&keys[keys.len() - 3..], ["snd_wscale", "rcv_wscale", "delivery_rate_app_limited"]);
        assert_eq!(keys.len(), FIELDS.len() - 2 + 3);
        assert!(text.starts_with(r#"{"state":1,"ca_state":2,"#));
    }

    /// The image above, with the bitfields set, decoded by `tcpinfo.parse_tcp_info` and
    /// printed by `json.dumps(..., separators=(",", ":"))`: whole, and cut where the
    /// structure of Linux 5.4 to 6.1 ends (after `tcpi_snd_wnd`).
    const PYTHON_FULL: &str = r#"{"state":1,"ca_state":2,"retransmits":3,"probes":4,"backoff":5,"options":6,"rto":151587081,"ato":168430090,"snd_mss":185273099,"rcv_mss":202116108,"unacked":218959117,"sacked":235802126,"lost":252645135,"retrans":269488144,"fackets":286331153,"last_data_sent":303174162,"last_ack_sent":320017171,"last_data_recv":336860180,"last_ack_recv":353703189,"pmtu":370546198,"rcv_ssthresh":387389207,"rtt":404232216,"rttvar":421075225,"snd_ssthresh":437918234,"snd_cwnd":454761243,"advmss":471604252,"reordering":488447261,"rcv_rtt":505290270,"rcv_space":522133279,"total_retrans":538976288,"pacing_rate":2387225703656530209,"max_pacing_rate":2459565876494606882,"bytes_acked":2531906049332683555,"bytes_received":2604246222170760228,"segs_out":623191333,"segs_in":640034342,"notsent_bytes":656877351,"min_rtt":673720360,"data_segs_in":690563369,"data_segs_out":707406378,"delivery_rate":3110627432037296939,"busy_time":3182967604875373612,"rwnd_limited":3255307777713450285,"sndbuf_limited":3327647950551526958,"delivered":791621423,"delivered_ce":808464432,"bytes_sent":3544668469065756977,"bytes_retrans":3617008641903833650,"dsack_dups":858993459,"reord_seen":875836468,"rcv_ooopack":892679477,"snd_wnd":909522486,"rcv_wnd":926365495,"rehash":943208504,"total_rto":14649,"total_rto_recoveries":14906,"total_rto_time":993737531,"snd_wscale":7,"rcv_wscale":9,"delivery_rate_app_limited":1}"#;
    const PYTHON_232: &str = r#"{"state":1,"ca_state":2,"retransmits":3,"probes":4,"backoff":5,"options":6,"rto":151587081,"ato":168430090,"snd_mss":185273099,"rcv_mss":202116108,"unacked":218959117,"sacked":235802126,"lost":252645135,"retrans":269488144,"fackets":286331153,"last_data_sent":303174162,"last_ack_sent":320017171,"last_data_recv":336860180,"last_ack_recv":353703189,"pmtu":370546198,"rcv_ssthresh":387389207,"rtt":404232216,"rttvar":421075225,"snd_ssthresh":437918234,"snd_cwnd":454761243,"advmss":471604252,"reordering":488447261,"rcv_rtt":505290270,"rcv_space":522133279,"total_retrans":538976288,"pacing_rate":2387225703656530209,"max_pacing_rate":2459565876494606882,"bytes_acked":2531906049332683555,"bytes_received":2604246222170760228,"segs_out":623191333,"segs_in":640034342,"notsent_bytes":656877351,"min_rtt":673720360,"data_segs_in":690563369,"data_segs_out":707406378,"delivery_rate":3110627432037296939,"busy_time":3182967604875373612,"rwnd_limited":3255307777713450285,"sndbuf_limited":3327647950551526958,"delivered":791621423,"delivered_ce":808464432,"bytes_sent":3544668469065756977,"bytes_retrans":3617008641903833650,"dsack_dups":858993459,"reord_seen":875836468,"rcv_ooopack":892679477,"snd_wnd":909522486,"snd_wscale":7,"rcv_wscale":9,"delivery_rate_app_limited":1}"#;

    #[test]
    fn matches_the_python_decoder_on_the_same_image() {
        let mut raw = image();
        raw[6] = 0x97;
        raw[7] = 0x03;
        let json =
            |len: usize| serde_json::to_string(&FlowSample { info: TcpInfo::parse(&raw[..len]), cc: None }).unwrap();
        assert_eq!(json(TCP_INFO_MAX), PYTHON_FULL);
        assert_eq!(json(232), PYTHON_232);
    }

    #[test]
    fn bbr_info_decodes_bandwidth_and_gains() {
        let mut raw = Vec::new();
        for w in [0x0000_0010u32, 0x1, 20_000, 739, 512] {
            raw.extend_from_slice(&w.to_ne_bytes());
        }
        let bbr = BbrInfo::parse(&raw).unwrap();
        assert_eq!(bbr.bw_bytes_per_s, (0x1_0000_0010u64) as f64);
        assert_eq!(bbr.min_rtt_us, 20_000.0);
        assert_eq!(bbr.pacing_gain, 739.0 / 256.0);
        assert_eq!(bbr.cwnd_gain, 2.0);
        assert_eq!(BbrInfo::parse(&raw[..19]), None);
        let with_null = FlowSample { info: TcpInfo::parse(&[1]), cc: Some(("bbr".into(), None)) };
        assert_eq!(serde_json::to_string(&with_null).unwrap(), r#"{"state":1,"bbr":null}"#);
        let with_bbr = FlowSample { info: TcpInfo::parse(&[]), cc: Some(("bbr".into(), Some(CcInfo::Bbr(bbr)))) };
        assert_eq!(
            serde_json::to_string(&with_bbr).unwrap(),
            r#"{"bbr":{"bw_bytes_per_s":4294967312.0,"min_rtt_us":20000.0,"pacing_gain":2.88671875,"cwnd_gain":2.0}}"#
        );
    }

    #[test]
    fn vegas_and_dctcp_info_decode_their_structures() {
        // struct tcpvegas_info: enabled 1, 12 RTTs counted, base RTT 40 ms, min RTT 41 ms.
        let raw: Vec<u8> = [1u32, 12, 40_000, 41_000].iter().flat_map(|w| w.to_ne_bytes()).collect();
        let v = CcInfo::parse("vegas", &raw).unwrap();
        assert_eq!(v, CcInfo::Vegas(VegasInfo { enabled: 1, rttcnt: 12, rtt_us: 40_000, minrtt_us: 41_000 }));
        assert_eq!(serde_json::to_string(&v).unwrap(), r#"{"enabled":1,"rttcnt":12,"rtt_us":40000,"minrtt_us":41000}"#);
        // struct tcp_dctcp_info: enabled 1, ce_state 0 (u16 each), alpha 256, 2896 and 28960 bytes.
        let mut raw = Vec::new();
        raw.extend_from_slice(&1u16.to_ne_bytes());
        raw.extend_from_slice(&0u16.to_ne_bytes());
        for w in [256u32, 2896, 28960] {
            raw.extend_from_slice(&w.to_ne_bytes());
        }
        let d = CcInfo::parse("dctcp", &raw).unwrap();
        assert_eq!(d, CcInfo::Dctcp(DctcpInfo { enabled: 1, ce_state: 0, alpha: 256, ab_ecn: 2896, ab_tot: 28960 }));
        assert_eq!(CcInfo::parse("dctcp", &raw[..15]), None);
        assert_eq!(CcInfo::parse("cubic", &raw), None);
    }
}
