use super::*;
#[derive(Default, Clone, Debug)]
pub struct CubicParams;
impl CubicParams {
    pub fn from_overrides(p: &BTreeMap<String, f64>) -> Result<Self, String> {
        match p.keys().next() { Some(k) => Err(format!("cubic has no parameter '{k}'")), None => Ok(CubicParams) }
    }
}
pub struct Cubic;
impl Cubic { pub fn new(_p: CubicParams) -> Self { Cubic } }
impl CongestionControl for Cubic {
    fn name(&self) -> &'static str { "cubic" }
    fn ssthresh(&mut self, _c: &ConnInfo, w: &Window) -> u32 { (w.cwnd * 717 / 1024).max(2) }
}
