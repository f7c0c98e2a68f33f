fn main() {
    let path = std::env::args().nth(1).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    match xaifbooster::xaif::read(&bytes, &path, &Default::default()) {
        Ok(out) => {
            for w in &out.warnings { eprintln!("{w}"); }
            let text = xaifbooster::xaif::write(&out.call_graph, &Default::default());
            std::io::Write::write_all(&mut std::io::stdout(), &text).unwrap();
        }
        Err(e) => { eprintln!("{e}"); std::process::exit(1); }
    }
}
