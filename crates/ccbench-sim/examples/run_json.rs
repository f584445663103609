//! Run a scenario given as resolved JSON and print the summary: `cargo run --release
//! --example run_json -- scenario.json`.

fn main() {
    let path = std::env::args().nth(1).expect("usage: run_json SCENARIO.json");
    let json = std::fs::read_to_string(&path).expect("read scenario");
    match ccbench_sim::run_json(&json) {
        Ok(out) => println!("{}", serde_json::to_string_pretty(&out.summary).unwrap()),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
