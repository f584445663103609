//! The sender end to end over loopback, without privileges: a listener in this process
//! reads and discards; `reno` is always built in and allowed to every user.

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::net::UnixDatagram;
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
    let result = sender::prepare(&cfg).unwrap().run(t0, &mut sender::NoNotices).unwrap();
    let got = received.join().unwrap();
    // 50, 100, ..., 250 ms, then the closing sample at 300 ms.
    let times: Vec<i64> = result.samples.iter().map(|row| row.0).collect();
    assert_eq!(times, [50, 100, 150, 200, 250, 300].map(|ms| ms * 1_000_000));
    assert!(result.samples.iter().all(|row| row.1 >= row.0 && row.2.len() == 1));
    assert!(result.end_ns >= 300_000_000 && result.done_ns == [None]);
    let last = &result.final_samples[0];
    assert_eq!(result.samples.last().unwrap().2[0], *last);
    assert!(last.cc.is_none());
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
    let result = sender::prepare(&config(port, Some(size), 0)).unwrap().run(t0, &mut sender::NoNotices).unwrap();
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

#[test]
fn a_repeating_flow_sends_each_download_on_a_connection_of_its_own_after_the_receivers_notice() {
    let (size, downloads, pause_ns) = (300_000u64, 3, 20_000_000i64);
    let dir = std::env::temp_dir().join(format!("ccbench-agent-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let done_path = dir.join("done.sock");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let cfg = SendConfig::from_json(&format!(
        r#"{{"base_port": {port}, "duration_ns": 3000000000, "interval_ns": 100000000, "done_path": {path:?},
            "flows": [{{"addr": "127.0.0.1", "cca": "reno", "size": {size}, "repeat": {downloads},
                        "pause_ns": {pause_ns}}}]}}"#,
        path = done_path.to_str().unwrap()
    ))
    .unwrap();
    let prepared = sender::prepare(&cfg).unwrap();
    let mut notices = sender::DoneSocket::bind(done_path.to_str().unwrap()).unwrap();
    let t0 = monotonic_ns();
    // The receiver: the k-th connection accepted carries download k; when all of it has
    // arrived, it says so, as the kernel engine's receiver does.
    let notify = done_path.clone();
    let receiver = thread::spawn(move || {
        let out = UnixDatagram::unbound().unwrap();
        let mut completed = Vec::new();
        for k in 0..downloads {
            let (mut conn, _) = listener.accept().unwrap();
            let mut got = 0u64;
            let mut buf = vec![0u8; 1 << 16];
            while got < size {
                got += conn.read(&mut buf).unwrap() as u64;
            }
            let at = monotonic_ns() - t0;
            completed.push(at);
            out.send_to(format!("0 {k} {at}").as_bytes(), &notify).unwrap();
        }
        completed
    });
    let result = prepared.run(t0, &mut notices).unwrap();
    let completed = receiver.join().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let conns = &result.downloads[0];
    assert_eq!(conns.len(), downloads as usize, "{conns:?}");
    let starts: Vec<i64> = conns.iter().map(|c| c["start_ns"].as_i64().unwrap()).collect();
    assert!(starts[0] < 5_000_000, "the first download starts at once: {starts:?}");
    for k in 1..downloads as usize {
        // Each later download starts its pause after the last one's notice.
        assert!(starts[k] >= completed[k - 1] + pause_ns, "{starts:?} {completed:?}");
        assert!(starts[k] < completed[k - 1] + pause_ns + 50_000_000, "{starts:?} {completed:?}");
    }
    let ports: std::collections::BTreeSet<u64> = conns.iter().map(|c| c["port"].as_u64().unwrap()).collect();
    assert_eq!(ports.len(), downloads as usize);
    assert!(conns.iter().all(|c| c["final"]["bytes_acked"].as_u64().unwrap() > size));
    let done = result.done_ns[0].expect("the last download completed");
    assert!(done >= completed[downloads as usize - 1] - 5_000_000 && done < 3_000_000_000);
}
