//! A congestion control written as a BPF `struct_ops` object (`cca = "bpf:PATH"`), run
//! in the simulator's own eBPF interpreter: the same `.bpf.o` that the kernel engine
//! registers with the real kernel.
//!
//! `object` reads and links the ELF, `core` resolves its CO-RE relocations against the
//! simulator's socket (`view`), `vm` runs its programs, `kfuncs` and `helpers` are what
//! it may call. Every hook marshals the sender's state into the socket block, runs the
//! program, and applies what the kernel lets a program write.

mod btf;
mod core;
mod helpers;
mod isa;
mod kfuncs;
mod link;
mod object;
mod view;
mod vm;

#[cfg(test)]
mod tests;

use crate::base::rng::Rng;
use crate::cc::{AckSample, CaEvent, CaState, CongestionControl, ConnInfo, Internals, RateSample, Window};
use kfuncs::Family;
use object::tag;
pub use object::Object;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// Why an object cannot run: one line, naming the thing.
#[derive(Clone, Debug)]
pub struct Refusal {
    /// A `params` name when the refusal is about one.
    pub param: Option<String>,
    pub message: String,
}

impl Refusal {
    pub fn new(message: impl Into<String>) -> Refusal {
        Refusal { param: None, message: message.into() }
    }
    pub fn param(name: &str, message: impl Into<String>) -> Refusal {
        Refusal { param: Some(name.to_string()), message: message.into() }
    }
}

/// A program that failed while running (an access the verifier would have refused, an
/// endless loop, a helper the simulator does not model). The run stops; the front end
/// reports it as one line.
#[derive(Clone, Debug)]
pub struct Fault {
    /// The scenario field: `flows[i].cca`.
    pub field: String,
    pub message: String,
}

/// What `cca = "bpf:..."` names: the object's path and, when it holds several
/// `tcp_congestion_ops`, which one (`bpf:PATH:MAP`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Spec {
    pub path: String,
    pub map: Option<String>,
}

pub const PREFIX: &str = "bpf:";

impl Spec {
    pub fn parse(cca: &str) -> Option<Spec> {
        let rest = cca.strip_prefix(PREFIX)?;
        if let Some((path, map)) = rest.rsplit_once(':') {
            let ident = !map.is_empty() && map.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if ident && path.ends_with(".o") {
                return Some(Spec { path: path.to_string(), map: Some(map.to_string()) });
            }
        }
        Some(Spec { path: rest.to_string(), map: None })
    }
}

/// A loaded object and the struct_ops map a flow runs.
pub struct Loaded {
    pub object: Object,
    pub ops: usize,
}

/// Read, link and check `spec`'s object with `params` set in its globals, for the
/// simulator.
pub fn load(spec: &Spec, params: &BTreeMap<String, f64>, hz: u32) -> Result<Loaded, Refusal> {
    let object = Object::load(&read(&spec.path)?, params, hz)?;
    let ops = choose(&object, spec)?;
    Ok(Loaded { object, ops })
}

/// What every engine checks before a run: the object reads, the struct_ops map it names
/// is there and has what the kernel requires, `params` name settable globals.
pub fn check(spec: &Spec, params: &BTreeMap<String, f64>) -> Result<(), Refusal> {
    choose(&Object::inspect(&read(&spec.path)?, params)?, spec).map(|_| ())
}

fn read(path: &str) -> Result<Vec<u8>, Refusal> {
    std::fs::read(path).map_err(|e| Refusal::new(format!("cannot read {path}: {e}")))
}

/// The struct_ops map `spec` runs.
fn choose(object: &Object, spec: &Spec) -> Result<usize, Refusal> {
    let names = || object.ops.iter().map(|o| o.symbol.as_str()).collect::<Vec<_>>().join(", ");
    let ops = match &spec.map {
        Some(m) => object
            .ops
            .iter()
            .position(|o| &o.symbol == m)
            .ok_or_else(|| Refusal::new(format!("has no struct_ops map {m}; it has {}", names())))?,
        None if object.ops.len() == 1 => 0,
        None => {
            return Err(Refusal::new(format!(
                "holds {} struct_ops maps ({}): name one as bpf:{}:MAP",
                object.ops.len(),
                names(),
                spec.path
            )))
        }
    };
    // tcp_validate_congestion_control: ssthresh, undo_cwnd, and cong_avoid or
    // cong_control are required.
    let o = &object.ops[ops];
    let has = |c: &str| o.callbacks.contains_key(c);
    if !has("ssthresh") || !has("undo_cwnd") || !(has("cong_avoid") || has("cong_control")) {
        return Err(Refusal::new(format!(
            "struct_ops map {} lacks ssthresh, undo_cwnd, or both of cong_avoid and cong_control, which the kernel requires",
            o.symbol
        )));
    }
    Ok(ops)
}

/// The objects of one run: each loaded once, its globals and maps shared by every
/// connection that runs it, as one registered object's are in the kernel.
/// A loaded object and the memory its connections share.
type Running = (Rc<Loaded>, Rc<RefCell<vm::Shared>>);

#[derive(Default)]
pub struct Objects {
    loaded: RefCell<BTreeMap<(Spec, String), Running>>,
    next_conn: RefCell<u64>,
}

impl Objects {
    /// A congestion control for one connection.
    pub fn instance(
        &self,
        flow: usize,
        spec: &Spec,
        params: &BTreeMap<String, f64>,
        hz: u32,
        rng: Rng,
    ) -> Result<Box<dyn CongestionControl>, Refusal> {
        let key = (spec.clone(), format!("{params:?}/{hz}"));
        let mut loaded = self.loaded.borrow_mut();
        if !loaded.contains_key(&key) {
            let l = Rc::new(load(spec, params, hz)?);
            let shared = Rc::new(RefCell::new(vm::Shared::new(&l.object)));
            loaded.insert(key.clone(), (l, shared));
        }
        let (l, shared) = loaded[&key].clone();
        let mut id = self.next_conn.borrow_mut();
        *id += 1;
        Ok(Box::new(BpfCc::new(l, shared, flow, *id, rng)))
    }
}

/// Names live as long as the process: `CongestionControl::name` is `&'static str`.
fn intern(name: &str) -> &'static str {
    use std::sync::Mutex;
    static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut names = NAMES.lock().expect("names");
    if let Some(n) = names.iter().find(|n| **n == name) {
        return n;
    }
    let n: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.push(n);
    n
}

/// One connection's run state.
struct State {
    conn: vm::Conn,
    delegates: BTreeMap<Family, Box<dyn CongestionControl>>,
    rng: Rng,
}

pub struct BpfCc {
    loaded: Rc<Loaded>,
    shared: Rc<RefCell<vm::Shared>>,
    name: &'static str,
    flow: usize,
    state: RefCell<State>,
}

/// A hook's arguments after the socket: values, or the samples it points at.
#[derive(Clone, Copy)]
enum Arg {
    Value(u64),
    Ack,
    Rate,
}

impl BpfCc {
    fn new(loaded: Rc<Loaded>, shared: Rc<RefCell<vm::Shared>>, flow: usize, id: u64, rng: Rng) -> BpfCc {
        let name = intern(&loaded.object.ops[loaded.ops].name);
        let state = State { conn: vm::Conn::new(id), delegates: BTreeMap::new(), rng };
        BpfCc { loaded, shared, name, flow, state: RefCell::new(state) }
    }

    fn has(&self, cb: &str) -> bool {
        self.loaded.object.ops[self.loaded.ops].callbacks.contains_key(cb)
    }

    /// Run callback `cb` on the connection; what it writes lands in `w`.
    fn call(
        &self,
        cb: &str,
        c: &ConnInfo,
        w: &mut Window,
        args: &[Arg],
        ack: Option<&AckSample>,
        rs: Option<&RateSample>,
    ) -> u64 {
        let ops = &self.loaded.object.ops[self.loaded.ops];
        let Some(&(entry, ref prog)) = ops.callbacks.get(cb) else { return 0 };
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        view::fill(&mut st.conn.sock, c, w);
        if let Some(s) = ack {
            view::fill_ack_sample(&mut st.conn.ack, s, c.mss);
        }
        if let Some(r) = rs {
            view::fill_rate_sample(&mut st.conn.rs, r);
        }
        // The context is the callback's arguments as u64s: the socket, then the rest.
        st.conn.ctx[..8].copy_from_slice(&tag::addr(tag::SOCK, 0).to_le_bytes());
        for (k, a) in args.iter().enumerate() {
            let v = match a {
                Arg::Value(v) => *v,
                Arg::Ack => tag::addr(tag::ACK_SAMPLE, 0),
                Arg::Rate => tag::addr(tag::RATE_SAMPLE, 0),
            };
            st.conn.ctx[8 + k * 8..16 + k * 8].copy_from_slice(&v.to_le_bytes());
        }
        let before = view::written(&st.conn.sock);
        let mut shared = self.shared.borrow_mut();
        let mut env = helpers::Env {
            c,
            w: w.clone(),
            ack,
            rs,
            delegates: &mut st.delegates,
            rng: &mut st.rng,
            ops_name: &ops.name,
        };
        let mut mem = vm::Mem { conn: &mut st.conn, shared: &mut shared, stack_top: 0 };
        let result = vm::run(&self.loaded.object, entry, &mut mem, &mut env);
        let r0 = result.unwrap_or_else(|e| self.fault(format!("bpf program {prog} ({cb}) {e}")));
        view::drain(&before, &view::written(&st.conn.sock), w);
        if w.cwnd == 0 {
            // tcp_snd_cwnd_set warns on it; the sender could never send again.
            self.fault(format!("bpf program {prog} ({cb}) set snd_cwnd to 0"));
        }
        r0
    }

    /// Stop the run: the program did what the kernel would not let it do.
    fn fault(&self, message: String) -> ! {
        std::panic::panic_any(Fault { field: format!("flows[{}].cca", self.flow), message })
    }

    /// Run a callback whose writes to the window the stack does not read back
    /// (`ssthresh`, `undo_cwnd`, `min_tso_segs`): a program that writes it anyway stops.
    fn call_pure(&self, cb: &str, c: &ConnInfo, w: &Window) -> u64 {
        let mut scratch = w.clone();
        let v = self.call(cb, c, &mut scratch, &[], None, None);
        let moved = (scratch.cwnd, scratch.ssthresh, scratch.cwnd_cnt) != (w.cwnd, w.ssthresh, w.cwnd_cnt);
        if moved {
            self.fault(format!("bpf {cb} changed snd_cwnd, snd_ssthresh or snd_cwnd_cnt; the stack sets those from {cb}'s return value"));
        }
        v
    }
}

impl Drop for BpfCc {
    /// The socket's storage in sk_storage maps goes with it, as the kernel frees it.
    fn drop(&mut self) {
        let id = self.state.borrow().conn.id;
        if let Ok(mut shared) = self.shared.try_borrow_mut() {
            for (_, store) in shared.maps.iter_mut() {
                store.forget_socket(id);
            }
        }
    }
}

impl CongestionControl for BpfCc {
    fn name(&self) -> &'static str {
        self.name
    }

    fn init(&mut self, c: &ConnInfo, w: &mut Window) {
        self.call("init", c, w, &[], None, None);
    }

    fn release(&mut self, c: &ConnInfo, w: &mut Window) {
        self.call("release", c, w, &[], None, None);
    }

    fn ssthresh(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        let t = self.call_pure("ssthresh", c, w) as u32;
        if t == 0 {
            // The reduction would end at a window of zero (tcp_snd_cwnd_set warns on it).
            self.fault("bpf ssthresh returned 0".into());
        }
        t
    }

    fn cong_avoid(&mut self, c: &ConnInfo, w: &mut Window, acked: u32) {
        let ack = c.snd_una as u32;
        self.call("cong_avoid", c, w, &[Arg::Value(ack as u64), Arg::Value(acked as u64)], None, None);
    }

    fn cong_control(&mut self, c: &ConnInfo, w: &mut Window, rs: &RateSample) -> bool {
        if !self.has("cong_control") {
            return false;
        }
        let ack = c.snd_una as u32;
        // Since Linux 6.10 cong_control also takes the ACK's sequence and flags.
        let args: &[Arg] = if self.loaded.object.ops[self.loaded.ops].cong_control_args >= 4 {
            &[Arg::Value(ack as u64), Arg::Value(0), Arg::Rate]
        } else {
            &[Arg::Rate]
        };
        self.call("cong_control", c, w, args, None, Some(rs));
        true
    }

    fn in_ack_event(&mut self, c: &ConnInfo, w: &mut Window, flags: u32) {
        self.call("in_ack_event", c, w, &[Arg::Value(flags as u64)], None, None);
    }

    fn has_in_ack_event(&self) -> bool {
        self.has("in_ack_event")
    }

    fn pkts_acked(&mut self, c: &ConnInfo, w: &mut Window, s: &AckSample) {
        self.call("pkts_acked", c, w, &[Arg::Ack], Some(s), None);
    }

    fn set_state(&mut self, c: &ConnInfo, w: &mut Window, new: CaState) {
        self.call("set_state", c, w, &[Arg::Value(view::ca_state_number(new) as u64)], None, None);
    }

    fn cwnd_event(&mut self, c: &ConnInfo, w: &mut Window, ev: CaEvent) {
        if let Some(n) = kfuncs::event_number(ev) {
            self.call("cwnd_event", c, w, &[Arg::Value(n)], None, None);
        }
    }

    fn undo_cwnd(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        self.call_pure("undo_cwnd", c, w) as u32
    }

    fn min_tso_segs(&self, pacing_rate: u64) -> u32 {
        if !self.has("min_tso_segs") {
            return 2;
        }
        let c = ConnInfo { pacing_rate, ..ConnInfo::default() };
        let w = Window { pacing_rate, ..Window::new(0) };
        self.call_pure("min_tso_segs", &c, &w) as u32
    }

    fn owns_cwnd(&self) -> bool {
        self.has("cong_control")
    }

    fn sndbuf_expand(&self, c: &ConnInfo) -> u32 {
        if !self.has("sndbuf_expand") {
            return 2;
        }
        self.call_pure("sndbuf_expand", c, &Window::new(0)) as u32
    }

    fn needs_ecn(&self) -> bool {
        // `TCP_CONG_NEEDS_ECN`.
        self.loaded.object.ops[self.loaded.ops].flags & 0x2 != 0
    }

    fn needs_pacing(&self) -> bool {
        // An init that sets `sk_pacing_status` asks for the stack's pacing, as BBR's does.
        let ops = &self.loaded.object.ops[self.loaded.ops];
        ops.callbacks.get("init").is_some_and(|(_, p)| self.loaded.object.sets_pacing_status.contains(p))
    }

    fn params(&self) -> serde_json::Value {
        let obj = &self.loaded.object;
        let shared = self.shared.borrow();
        let values = obj
            .globals
            .iter()
            .filter(|g| obj.settable(g))
            .map(|g| {
                (
                    g.name.clone(),
                    serde_json::json!(read_int(&shared.data[g.section].bytes[g.offset..g.offset + g.size], g.signed)),
                )
            })
            .collect();
        serde_json::Value::Object(values)
    }

    fn internals(&self) -> Internals {
        let obj = &self.loaded.object;
        let st = self.state.borrow();
        let priv_ = &st.conn.sock[view::off::ICSK_CA_PRIV..view::off::ICSK_CA_PRIV + view::off::ICSK_CA_PRIV_SIZE];
        let mut out = Internals::new();
        // The private area by the struct's field names when the object's BTF names it,
        // else as the u32 words it holds.
        if obj.ca_fields.is_empty() {
            for (k, w) in priv_.chunks_exact(4).enumerate() {
                out.insert(intern(&format!("ca_priv_u32_{k:02}")), read_int(w, false) as f64);
            }
        }
        for (name, at, size, signed) in obj.ca_fields.iter().filter(|(_, at, size, _)| at + size <= priv_.len()) {
            out.insert(intern(&format!("ca_{name}")), read_int(&priv_[*at..at + size], *signed) as f64);
        }
        let shared = self.shared.borrow();
        for g in obj.globals.iter().filter(|g| g.integer && g.size <= 8 && shared.data[g.section].writable) {
            let v = read_int(&shared.data[g.section].bytes[g.offset..g.offset + g.size], g.signed);
            out.insert(intern(&format!("global_{}", g.name)), v as f64);
        }
        out
    }
}

fn read_int(b: &[u8], signed: bool) -> i64 {
    let mut raw = [0u8; 8];
    raw[..b.len()].copy_from_slice(b);
    let v = u64::from_le_bytes(raw);
    let s = 64 - 8 * b.len() as u32;
    if signed && s < 64 {
        ((v << s) as i64) >> s
    } else {
        v as i64
    }
}

/// What the front end shows of an object: its struct_ops maps and settable globals, and
/// whether the simulator runs it (`simulator`: null, or why not, one line) with what it
/// calls.
pub fn describe(path: &str, hz: u32) -> Result<serde_json::Value, Refusal> {
    let bytes = read(path)?;
    let o = Object::inspect(&bytes, &BTreeMap::new())?;
    let ops: Vec<_> = o
        .ops
        .iter()
        .map(|m| serde_json::json!({"symbol": m.symbol, "name": m.name, "flags": m.flags, "callbacks": m.callbacks.keys().collect::<Vec<_>>()}))
        .collect();
    let globals: Vec<_> = o
        .globals
        .iter()
        .filter(|g| o.settable(g))
        .map(|g| serde_json::json!({"name": g.name, "section": o.data[g.section].name, "size": g.size, "value": read_int(&o.data[g.section].bytes[g.offset..g.offset + g.size], g.signed)}))
        .collect();
    let mut out = serde_json::json!({"maps": ops, "globals": globals, "ca_fields": o.ca_fields.iter().map(|f| &f.0).collect::<Vec<_>>()});
    match Object::load(&bytes, &BTreeMap::new(), hz) {
        Ok(l) => {
            out["simulator"] = serde_json::Value::Null;
            out["kfuncs"] = serde_json::json!(l.kfuncs);
            out["helpers"] = serde_json::json!(l.helpers.iter().map(|h| helpers::name(*h)).collect::<Vec<_>>());
            out["kconfig"] = serde_json::json!(l.kconfig);
        }
        Err(r) => out["simulator"] = serde_json::json!(r.message),
    }
    Ok(out)
}

/// Write a copy of the object at `path` to `out` for a kernel loader: every struct_ops
/// map renamed as `names` says (map symbol to new `.name`), and `params` written into
/// the globals' initial values.
pub fn prepare(
    path: &str,
    out: &str,
    names: &BTreeMap<String, String>,
    params: &BTreeMap<String, f64>,
) -> Result<(), Refusal> {
    let mut bytes = read(path)?;
    let o = Object::inspect(&bytes, params)?;
    let file_offsets = object::section_file_offsets(&bytes)?;
    for m in &o.ops {
        let Some(new) = names.get(&m.symbol) else { continue };
        if new.is_empty() || new.len() > 15 {
            return Err(Refusal::new(format!("a tcp_congestion_ops name is 1 to 15 bytes; '{new}' is not")));
        }
        let at = file_offsets[m.section.as_str()] + m.name_at;
        bytes[at..at + 16].fill(0);
        bytes[at..at + new.len()].copy_from_slice(new.as_bytes());
    }
    for g in o.globals.iter().filter(|g| params.contains_key(&g.name)) {
        let d = &o.data[g.section];
        let at = *file_offsets
            .get(d.name.as_str())
            .ok_or_else(|| Refusal::param(&g.name, "has no bytes in the file to set"))?
            + g.offset;
        bytes[at..at + g.size].copy_from_slice(&d.bytes[g.offset..g.offset + g.size]);
    }
    std::fs::write(out, &bytes).map_err(|e| Refusal::new(format!("cannot write {out}: {e}")))
}
