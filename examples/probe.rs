use std::io::Write;
fn main() {
    let dir = std::path::PathBuf::from("/tmp/probe2");
    let mut store = tokscope::live::LiveStore::new(vec![dir.clone()], Default::default());
    store.first_scan(&mut |_| true, &mut || None).unwrap();
    let ids: Vec<String> = (0..60).map(|i| format!("train-{i:05}")).collect();
    let lasts: Vec<String> = ids
        .iter()
        .map(|id| {
            std::fs::read_to_string(dir.join(format!("{id}.tokens.jsonl")))
                .unwrap()
                .lines()
                .last()
                .unwrap()
                .to_owned()
        })
        .collect();
    let mut files: Vec<std::fs::File> = ids
        .iter()
        .map(|id| {
            std::fs::OpenOptions::new()
                .append(true)
                .open(dir.join(format!("{id}.tokens.jsonl")))
                .unwrap()
        })
        .collect();
    for round in 0..12 {
        let t = std::time::Instant::now();
        for k in 0..50 {
            let line = lasts[k].replace(
                "\"model_call_id\":\"",
                &format!("\"model_call_id\":\"p{round}-"),
            );
            files[k].write_all(format!("{line}\n").as_bytes()).unwrap();
            let loc = tokscope::store::RolloutLocation {
                dir: dir.clone(),
                id: ids[k].clone(),
            };
            std::hint::black_box(store.refresh_one(&loc));
        }
        println!(
            "round {round}: {:?} per append, hot {} resident {} MB",
            t.elapsed() / 50,
            store.hot_rollouts(),
            store.resident_bytes() >> 20
        );
    }
}
