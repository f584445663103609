//! The sender end to end over loopback, without privileges: a listener in this process
//! reads and discards; `reno` is always built in and allowed to every user.

use std::io::Read;
use std::net::TcpListener;
use std::thread;

use ccbench_agent::clock::monotonic_ns;
use ccbench_agent::config::SendConfig;
use ccbench_agent::sender;

/// Accepts one connection and counts its bytes until the peer resets or closes it.
fn sink() -> (u16, thread::JoinHandle<u64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 1 << 18];
        let mut total = 0u64;
        while let Ok(n) = conn.read(&mut buf) {
            if n == 0 {
                break;
            }
            total += n as u64;
        }
        total
    });
    (port, handle)
}

fn config(port: u16, size: Option<u64>, start_ns: i64) -> SendConfig {
    let size = size.map_or("null".to_string(), |s| s.to_string());
    SendConfig::from_json(&format!(
        r#"{{"base_port": {port}, "duration_ns": 300000000, "interval_ns": 50000000,
            "flows": [{{"addr": "127.0.0.1", "cca": "reno", "start_ns": {start_ns}, "size": {size}}}]}}"#
    ))
    .unwrap()
}

#[test]
fn a_bulk_flow_sends_until_the_end_with_a_sample_per_interval() {
    let (port, received) = sink();
    let cfg = config(port, None, 20_000_000);
    let t0 = monotonic_ns();
    let result = sender::prepare(&cfg).unwrap().run(t0).unwrap();
    let got = received.join().unwrap();
    // 50, 100, ..., 250 ms, then the closing sample at 300 ms.
    let times: Vec<i64> = result.samples.iter().map(|row| row.0).collect();
    assert_eq!(times, [50, 100, 150, 200, 250, 300].map(|ms| ms * 1_000_000));
    assert!(result.samples.iter().all(|row| row.1 >= row.0 && row.2.len() == 1));
    assert!(result.end_ns >= 300_000_000 && result.done_ns == [None]);
    let last = &result.final_samples[0];
    assert_eq!(result.samples.last().unwrap().2[0], *last);
    assert!(last.bbr.is_none());
    // The reset at the end may discard what the sink had not read yet, so what it read
    // is only a lower bound of what was acknowledged.
    let acked = last.info.get("bytes_acked").unwrap();
    assert!(acked > 1_000_000 && got > 0, "acked {acked}, received {got}");
}

#[test]
fn a_sized_run_ends_when_its_bytes_are_acknowledged() {
    let size = 2_000_000;
    let (port, received) = sink();
    let t0 = monotonic_ns();
    let result = sender::prepare(&config(port, Some(size), 0)).unwrap().run(t0).unwrap();
    assert_eq!(received.join().unwrap(), size);
    let done = result.done_ns[0].expect("the flow completed");
    assert!(done < 300_000_000 && result.end_ns >= done);
    assert_eq!(result.samples.last().unwrap().0, done);
    let last = &result.final_samples[0].info;
    assert_eq!(last.get("unacked"), Some(0));
    assert!(last.get("bytes_acked").unwrap() >= size);
}

#[test]
fn an_unknown_algorithm_is_refused_before_connecting() {
    let cfg = SendConfig::from_json(
        r#"{"base_port": 9, "duration_ns": 1, "interval_ns": 1, "flows": [{"addr": "127.0.0.1", "cca": "nosuchcc"}]}"#,
    )
    .unwrap();
    let err = sender::prepare(&cfg).err().unwrap();
    assert!(err.starts_with("flows[0].cca: \"nosuchcc\" is not "), "{err}");
}
