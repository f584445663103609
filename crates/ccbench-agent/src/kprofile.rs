//! The kernel's own sampling profiler (`/proc/profile`, `kernel/profile.c`), there when
//! the kernel was booted with `profile=<shift>`: at every timer tick that interrupts the
//! kernel, the bucket of the interrupted instruction counts one. A bucket is 2^shift
//! bytes of kernel text from `_stext`; ticks in modules all count in the last bucket
//! (`profile_hit`). Cheap enough to leave on during a run, and in a guest whose vCPU is
//! held its ticks land where the vCPU's budget ran out, so it shows where the guest's
//! CPU time goes.

use std::collections::BTreeMap;

use serde::Serialize;

pub const PROFILE: &str = "/proc/profile";
pub const KALLSYMS: &str = "/proc/kallsyms";
/// Where the ticks of every module count (see above).
pub const MODULES: &str = "(modules)";

/// The ticks since the last reset, by function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelProfile {
    /// Bytes of kernel text per bucket.
    pub step: u32,
    pub ticks: u64,
    /// Ticks per kernel function (named from `/proc/kallsyms`; `_stext+0x...` where no
    /// symbol is known), and [`MODULES`].
    pub functions: BTreeMap<String, u64>,
}

/// Clears the profile (any write does, `write_profile`); false if there is none.
pub fn reset() -> bool {
    std::fs::write(PROFILE, b"0\n").is_ok()
}

/// The profile now, by function, if the kernel keeps one.
pub fn read() -> Option<KernelProfile> {
    let raw = std::fs::read(PROFILE).ok()?;
    let symbols = TextSymbols::parse(&std::fs::read_to_string(KALLSYMS).unwrap_or_default());
    by_function(&raw, &symbols)
}

/// The kernel's text symbols, by address (as `/proc/kallsyms` lists them: the addresses
/// KASLR chose, so only their offsets from `_stext` compare with the profile's).
#[derive(Debug, Default)]
pub struct TextSymbols {
    sorted: Vec<(u64, String)>,
    stext: Option<u64>,
}

impl TextSymbols {
    /// `address type name [module]` lines; text symbols (`t`, `T`) of the kernel itself.
    pub fn parse(kallsyms: &str) -> TextSymbols {
        let mut sorted: Vec<(u64, String)> = kallsyms
            .lines()
            .filter_map(|line| {
                let mut words = line.split_whitespace();
                let (address, kind, name) = (words.next()?, words.next()?, words.next()?);
                if !matches!(kind, "t" | "T") || words.next().is_some() {
                    return None;
                }
                Some((u64::from_str_radix(address, 16).ok()?, name.to_owned()))
            })
            .collect();
        sorted.sort();
        let stext = sorted.iter().find(|(_, name)| name == "_stext").map(|&(a, _)| a);
        TextSymbols { sorted, stext }
    }

    /// The function at `offset` bytes from `_stext`.
    fn name(&self, offset: u64) -> String {
        let found = self.stext.and_then(|stext| {
            let address = stext + offset;
            let i = self.sorted.partition_point(|(a, _)| *a <= address);
            i.checked_sub(1).map(|i| self.sorted[i].1.clone())
        });
        found.unwrap_or_else(|| format!("_stext+0x{offset:x}"))
    }
}

/// `/proc/profile`'s content (the bucket size as a native `unsigned int`, then one
/// native `unsigned int` count per bucket, `read_profile`) summed by function.
pub fn by_function(raw: &[u8], symbols: &TextSymbols) -> Option<KernelProfile> {
    let words: Vec<u32> = raw.chunks_exact(4).map(|w| u32::from_ne_bytes([w[0], w[1], w[2], w[3]])).collect();
    let (&step, counts) = words.split_first()?;
    let mut functions = BTreeMap::new();
    let mut ticks = 0;
    for (i, &count) in counts.iter().enumerate().filter(|(_, &c)| c > 0) {
        let name = if i + 1 == counts.len() { MODULES.to_owned() } else { symbols.name(i as u64 * u64::from(step)) };
        *functions.entry(name).or_insert(0) += u64::from(count);
        ticks += u64::from(count);
    }
    Some(KernelProfile { step, ticks, functions })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_ne_bytes()).collect()
    }

    const KALLSYMS: &str = "ffffffff9a000000 T _stext\nffffffff9a000000 T startup_64\n\
                            ffffffff9a000020 t tcp_ack\nffffffff9a000040 D some_data\n\
                            ffffffff9a000050 T tcp_sendmsg\nffffffffc0100000 t bbr_main\t[tcp_bbr]\n";

    #[test]
    fn sums_ticks_by_function_from_stext() {
        let symbols = TextSymbols::parse(KALLSYMS);
        // Buckets of 16 bytes: 0x00 startup_64, 0x20 and 0x30 tcp_ack, 0x40 (data)
        // still tcp_ack, 0x50 tcp_sendmsg; the last one is the modules'.
        let p = by_function(&raw(&[16, 1, 0, 2, 3, 4, 5, 9]), &symbols).unwrap();
        assert_eq!(p.step, 16);
        assert_eq!(p.ticks, 24);
        let want: BTreeMap<String, u64> = [("startup_64", 1), ("tcp_ack", 9), ("tcp_sendmsg", 5), (MODULES, 9)]
            .map(|(k, v)| (k.to_owned(), v))
            .into();
        assert_eq!(p.functions, want);
    }

    #[test]
    fn without_symbols_names_the_offset() {
        let p = by_function(&raw(&[16, 0, 3, 0]), &TextSymbols::default()).unwrap();
        assert_eq!(p.functions.keys().collect::<Vec<_>>(), vec!["_stext+0x10"]);
        assert_eq!(by_function(&[], &TextSymbols::default()), None);
    }
}
