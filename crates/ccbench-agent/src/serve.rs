//! `serve`: the command loop on the control channel.

use std::io;

use crate::clock::monotonic_ns;
use crate::config::SendConfig;
use crate::control::Channel;
use crate::hostinfo;
use crate::protocol::{Command, Reply};
use crate::route::{self, RouteMetrics};
use crate::sender::{self, Prepared};
use crate::sysctl;
use crate::warm;

/// Answers commands until `quit` or the end of input. The agent speaks only when
/// spoken to, so a host may repeat `info` until the first answer without ever meeting a
/// line it did not ask for.
pub fn serve(chan: &mut Channel) -> io::Result<()> {
    while let Some(line) = chan.read_line()? {
        let reply = match Command::parse(&line) {
            Err(what) => Reply::Error(what),
            Ok(Command::Info) => hostinfo::info().map_or_else(Reply::Error, Reply::Info),
            Ok(Command::Sysctl { set }) => sysctl::set_all(&set).map_or_else(Reply::Error, |()| Reply::Ok),
            Ok(Command::Route { dst, initcwnd, rto_min_ms, ecn }) => match dst.parse() {
                Ok(dst) => route::set_metrics(dst, &RouteMetrics { initcwnd, rto_min_ms, ecn })
                    .map_or_else(Reply::Error, |()| Reply::Ok),
                Err(_) => Reply::Error(format!("route: dst: a numeric IPv4 address, not {dst:?}")),
            },
            Ok(Command::Go) => Reply::Error("go: no run prepared (send a \"send\" command first)".into()),
            Ok(Command::Done(_)) => Reply::Error("done: no run under way".into()),
            Ok(Command::Quit) => {
                chan.write_line(&Reply::Ok.to_line())?;
                return Ok(());
            }
            Ok(Command::Send { config }) => {
                // The guest is warmed first: see `warm`.
                match SendConfig::from_value(config).and_then(|cfg| {
                    warm::up(&cfg);
                    sender::prepare(&cfg)
                }) {
                    Err(what) => Reply::Error(what),
                    Ok(prepared) => {
                        chan.write_line(&Reply::Ready.to_line())?;
                        match await_go(chan, prepared)? {
                            Some(reply) => reply,
                            None => return Ok(()),
                        }
                    }
                }
            }
        };
        chan.write_line(&reply.to_line())?;
    }
    Ok(())
}

/// After `ready`: `go` runs the flows from now; `quit` (or the end of input) ends the
/// agent (`None`); anything else abandons the prepared run, whose connections are reset.
fn await_go(chan: &mut Channel, prepared: Prepared) -> io::Result<Option<Reply>> {
    let Some(line) = chan.read_line()? else { return Ok(None) };
    match Command::parse(&line) {
        Ok(Command::Go) => {
            let t0 = monotonic_ns();
            Ok(Some(prepared.run(t0, chan).map_or_else(Reply::Error, |r| Reply::Result(Box::new(r)))))
        }
        Ok(Command::Quit) => {
            drop(prepared);
            chan.write_line(&Reply::Ok.to_line())?;
            Ok(None)
        }
        Ok(_) | Err(_) => {
            Ok(Some(Reply::Error(format!("go: expected {{\"cmd\": \"go\"}} after ready, got {line:?}; run abandoned"))))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::io::{Cursor, Write};
    use std::rc::Rc;

    use super::*;

    /// A writer whose bytes the test can read afterwards.
    #[derive(Clone, Default)]
    struct Shared(Rc<RefCell<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn converse(input: &str) -> Vec<serde_json::Value> {
        let out = Shared::default();
        let mut chan = Channel::from_parts(Box::new(Cursor::new(input.as_bytes().to_vec())), Box::new(out.clone()));
        serve(&mut chan).unwrap();
        let text = String::from_utf8(out.0.borrow().clone()).unwrap();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    #[test]
    fn answers_each_line_and_stops_at_quit() {
        let replies = converse(
            "{\"cmd\": \"info\"}\r\n\n{\"cmd\": \"go\"}\nnot json\n{\"cmd\": \"quit\"}\n{\"cmd\": \"info\"}\n",
        );
        assert_eq!(replies.len(), 4, "{replies:?}");
        assert_eq!(replies[0]["info"]["protocol"], 3);
        assert!(replies[0]["info"]["available_congestion_control"].is_array());
        assert!(replies[1]["error"].as_str().unwrap().starts_with("go: no run prepared"));
        assert!(replies[2]["error"].as_str().unwrap().starts_with("command: "));
        assert_eq!(replies[3], serde_json::json!({"ok": true}));
        let replies = converse("{\"cmd\": \"done\", \"flow\": 0, \"download\": 0, \"at_ns\": 1}\n");
        assert_eq!(replies, [serde_json::json!({"error": "done: no run under way"})]);
    }

    #[test]
    fn a_bad_send_config_is_an_error_line_and_the_loop_goes_on() {
        let send = r#"{"cmd": "send", "config": {"base_port": 5000, "duration_ns": 1, "interval_ns": 1, "flows": [{"addr": "localhost", "cca": "cubic"}]}}"#;
        let replies = converse(&format!("{send}\n{{\"cmd\": \"info\"}}\n"));
        assert_eq!(replies[0]["error"], "flows[0].addr: a numeric IPv4 address, not \"localhost\"");
        assert!(replies[1]["info"].is_object());
    }

    #[test]
    fn end_of_input_ends_the_loop_without_a_word() {
        assert!(converse("").is_empty());
    }
}
