//! Run a scenario given as resolved JSON and print the summary:
//! `cargo run --release --example run_json -- scenario.json [flows.csv]`.
//! With a second argument the per-flow time series is written there as CSV.

use ccbench_sim::observe::series::{Table, Values};
use std::io::Write;

fn write_csv(t: &Table, path: &str) -> std::io::Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    let names: Vec<&str> = t.columns.iter().map(|(n, _)| n.as_str()).collect();
    writeln!(f, "{}", names.join(","))?;
    for row in 0..t.rows() {
        let cells: Vec<String> = t
            .columns
            .iter()
            .map(|(_, v)| match v {
                Values::F64(v) => v[row].to_string(),
                Values::U32(v) => v[row].to_string(),
                Values::Str(v) => v[row].to_string(),
            })
            .collect();
        writeln!(f, "{}", cells.join(","))?;
    }
    Ok(())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: run_json SCENARIO.json [flows.csv]");
    let json = std::fs::read_to_string(&path).expect("read scenario");
    match ccbench_sim::run_json(&json) {
        Ok(out) => {
            println!("{}", serde_json::to_string_pretty(&out.summary).unwrap());
            if let Some(csv) = args.next() {
                write_csv(&out.series.flows, &csv).expect("write csv");
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
