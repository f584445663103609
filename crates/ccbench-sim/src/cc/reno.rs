use super::*;
#[derive(Default)]
pub struct Reno;
impl CongestionControl for Reno {
    fn name(&self) -> &'static str { "reno" }
    fn ssthresh(&mut self, _c: &ConnInfo, w: &Window) -> u32 { (w.cwnd / 2).max(2) }
}
