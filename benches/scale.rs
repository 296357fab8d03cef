//! Training scale: a store of 2,000 rollouts / 2 GB (the `training_store` shape).
//!
//! `cargo bench --bench scale` measures, in this process, what the explorer does:
//! - **cold open**: time until the first rollouts are on the list, until the whole list has
//!   its verdicts, and resident memory once loaded (the watcher and the app together, the UI
//!   drawn into a test backend as the event loop would: when its `FramePacer` says);
//! - **live**: a writer (a child process) continues the chains of 35 live rollouts whose
//!   records are about 100 KB a line, at 200 records/s in all, through the reference
//!   lifecycle (each call's intent, then its record, then the state's index rewritten by
//!   rename; each record the child of the one before); the CPU this process spends (watcher
//!   and UI, drawing as the event loop does: store changes at most every `STORE_FRAME`), the
//!   work the watcher did (records parsed, tokens hashed, builds made whole or extended), and
//!   the p99 from a record's fsync to a frame showing it, for 6 seconds
//!   (`TOKSCOPE_SCALE_LIVE_SECONDS=N` for N);
//!
//! - **compare mode** (`TOKSCOPE_SCALE_COMPARE=STORE_B`): the explorer on the store as A and
//!   STORE_B as B (`--compare`), until both runs' rollouts have verdicts and are paired.
//!
//! The store is written once into `target/scale-store-N` (N = `TOKSCOPE_SCALE_ROLLOUTS`,
//! default 2,000; ~2 GB), or taken from `TOKSCOPE_SCALE_STORE`.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokscope::app::{App, Message};
use tokscope::term::FramePacer;
use tokscope_core::live::StoreEvent;
use tokscope_core::live::watch::{WatchOptions, watch};
use tokscope_core::verdict::VerdictOptions;

const LIVE_ROLLOUTS: usize = 35;
/// The live rollouts' last lines are this long (bytes), as a training run's ~100 KB lines.
const LIVE_LINE: std::ops::Range<usize> = 80_000..130_000;
const APPENDS_PER_SECOND: u64 = 200;
/// Seconds the writer appends for (`TOKSCOPE_SCALE_LIVE_SECONDS`, default 6: longer runs show
/// whether memory keeps growing with the appends).
fn live_seconds() -> u64 {
    std::env::var("TOKSCOPE_SCALE_LIVE_SECONDS")
        .ok()
        .map(|s| {
            s.parse::<u64>()
                .unwrap_or_else(|_| panic!("TOKSCOPE_SCALE_LIVE_SECONDS={s}: a whole number"))
        })
        .unwrap_or(6)
        .max(1)
}

/// `VmRSS` and `VmHWM` of this process, in MB.
fn memory_mb() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 1024.0
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn store() -> PathBuf {
    if let Some(dir) = std::env::var_os("TOKSCOPE_SCALE_STORE") {
        return PathBuf::from(dir);
    }
    let rollouts: usize = std::env::var("TOKSCOPE_SCALE_ROLLOUTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("target/scale-store-{rollouts}"));
    if !dir.join(".complete").exists() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        eprintln!("writing {} ...", dir.display());
        tokscope_testkit::write_training_store(&dir, rollouts, 1_330_000).unwrap();
        std::fs::write(dir.join(".complete"), "").unwrap();
    }
    dir
}

/// Records of the rollout at `location` as the app knows them.
fn records_at(app: &App, location: &tokscope_core::store::RolloutLocation) -> usize {
    app.summary(location).map_or(0, |s| s.records)
}

/// The lines the writer appends to each live rollout, and their call ids: each record is a
/// child of the one before, as an agent goes on, its prompt the parent's cumulative sequence
/// plus new environment tokens (full prompts, lineage computed, as the reference writer
/// writes them).
fn live_lines(dir: &Path, ids: &[String]) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let per_rollout = (APPENDS_PER_SECOND * live_seconds()) as usize / ids.len() + 1;
    let mut rng = tokscope_testkit::Rng::new(99);
    let mut calls: Vec<Vec<String>> = Vec::new();
    let lines: Vec<Vec<String>> = ids
        .iter()
        .map(|id| {
            let text = std::fs::read_to_string(dir.join(format!("{id}.tokens.jsonl"))).unwrap();
            let last: serde_json::Value =
                serde_json::from_str(text.lines().last().unwrap()).unwrap();
            let ids_of = |key: &str| -> Vec<u64> {
                last[key]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t.as_u64().unwrap())
                    .collect()
            };
            let mut cumulative = ids_of("prompt_token_ids");
            cumulative.extend(ids_of("generation_token_ids"));
            let mut parent = last["model_call_id"].as_str().unwrap().to_owned();
            calls.push(
                (0..per_rollout)
                    .map(|k| format!("{id}-live{k:04}"))
                    .collect(),
            );
            let mut created = last["created_at"].as_f64().unwrap();
            (0..per_rollout)
                .map(|k| {
                    cumulative.extend(rng.tokens(30));
                    let generation = rng.tokens(30);
                    let call_id = format!("{id}-live{k:04}");
                    created += 1.0;
                    let call = tokscope_testkit::Call::child(
                        &call_id,
                        &parent,
                        cumulative.clone(),
                        generation.clone(),
                        created,
                    );
                    cumulative.extend(generation);
                    parent = call_id;
                    call.to_line(id)
                })
                .collect()
        })
        .collect();
    (lines, calls)
}

/// The appends in the order they are made, round-robin over the live rollouts: the
/// rollout's index, the record's position in it (1-based), its call id and its line.
fn appends(dir: &Path, ids: &[String]) -> Vec<(usize, usize, String, String)> {
    let (mut lines, mut calls) = live_lines(dir, ids);
    let total = (APPENDS_PER_SECOND * live_seconds()) as usize;
    (0..total)
        .map(|n| {
            let (r, k) = (n % ids.len(), n / ids.len());
            let line = std::mem::take(&mut lines[r][k]);
            (r, k + 1, std::mem::take(&mut calls[r][k]), line)
        })
        .collect()
}

/// The writer: continues each live rollout's chain ([`appends`]) at `APPENDS_PER_SECOND`,
/// through the reference lifecycle.
fn writer(dir: &Path, ids: &[String]) {
    let appends = appends(dir, ids);
    let lifecycle = tokscope_testkit::RunWriter::new(dir);
    let total = appends.len();
    let interval = Duration::from_secs(1) / APPENDS_PER_SECOND as u32;
    let start = Instant::now();
    let mut times = Vec::with_capacity(total);
    for (n, (r, count, call_id, line)) in appends.iter().enumerate() {
        if let Some(wait) = (interval * n as u32).checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
        lifecycle.begin_call(&ids[*r], call_id).unwrap();
        lifecycle.append_record_line(&ids[*r], line).unwrap();
        times.push((*r, *count, tokscope_testkit::unix_now()));
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for (r, count, time) in times {
        writeln!(out, "{r} {count} {time}").unwrap();
    }
}

fn main() {
    // As the binary does. SAFETY: first thing in main, before any thread is started.
    unsafe { tokscope_core::memory::keep_freed_memory() };
    let args: Vec<String> = std::env::args().collect();
    if let Some(position) = args.iter().position(|a| a == "--writer") {
        let dir = PathBuf::from(&args[position + 1]);
        writer(&dir, &args[position + 2..]);
        return;
    }
    let source = store();
    if let Some(other) = std::env::var_os("TOKSCOPE_SCALE_COMPARE") {
        compare_open(&source, Path::new(&other));
        return;
    }
    // The live phase appends: work on a copy of the live rollouts' files, hard-linking the rest.
    let work = tempfile::tempdir_in(source.parent().unwrap()).unwrap();
    let mut live_ids = Vec::new();
    let mut bytes = 0u64;
    let mut names: Vec<_> = std::fs::read_dir(&source)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains(".tokens."))
        .collect();
    names.sort();
    // First which rollouts will be written to, then their files copied (every one: the
    // writer appends to the intents and records, and the source must stay as it is) and
    // the others' hard-linked.
    for name in names.iter().filter(|n| n.ends_with(".tokens.jsonl")) {
        let from = source.join(name);
        let id = name.split(".tokens.").next().unwrap().to_owned();
        let state = std::fs::read_to_string(source.join(format!("{id}.tokens.state.json")))
            .unwrap_or_default();
        bytes += std::fs::metadata(&from).unwrap().len();
        // Live rollouts whose last record holds a full prompt (the writer continues it),
        // about 100 KB long.
        let last_is_full = || {
            std::fs::read_to_string(&from)
                .ok()
                .and_then(|t| {
                    t.lines().last().map(|l| {
                        l.contains("\"prompt_is_delta\":false") && LIVE_LINE.contains(&l.len())
                    })
                })
                .unwrap_or(false)
        };
        if live_ids.len() < LIVE_ROLLOUTS && state.contains("\"frozen\":false") && last_is_full() {
            live_ids.push(id);
        }
    }
    for name in &names {
        let (from, to) = (source.join(name), work.path().join(name));
        let id = name.split(".tokens.").next().unwrap();
        if live_ids.iter().any(|live| live == id) {
            std::fs::copy(&from, &to).unwrap();
        } else {
            std::fs::hard_link(&from, &to).unwrap();
        }
    }
    let rollouts = names
        .iter()
        .filter(|n| n.ends_with(".tokens.jsonl"))
        .count();
    println!(
        "store: {rollouts} rollouts, {:.2} GB of records",
        bytes as f64 / 1e9
    );
    // The live rollouts' states indexed as the reference writer leaves them (an entry a
    // call), before anything is measured: the writer's first append would otherwise index
    // each whole file inside the live figures.
    let lifecycle = tokscope_testkit::RunWriter::new(work.path());
    for id in &live_ids {
        lifecycle.index(id).unwrap();
    }
    // Warm the page cache, as a store being written is.
    for name in &names {
        let _ = std::fs::read(work.path().join(name));
    }

    if std::env::var_os("TOKSCOPE_SCALE_WATCHER").is_some() {
        watcher_alone(work.path(), &live_ids);
        return;
    }

    let started = Instant::now();
    let cold_work = tokscope_core::work::process_total();
    let (cold_cpu, cold_threads) = (
        tokscope_testkit::cpu_seconds(),
        tokscope_testkit::cpu_seconds_by_thread(),
    );
    let viewport = tokscope::ui::layout::viewport(ratatui::layout::Rect::new(0, 0, 160, 48));
    let mut app = App::new_live(
        vec![work.path().to_path_buf()],
        VerdictOptions::default(),
        viewport,
    );
    let mut terminal = Terminal::new(TestBackend::new(160, 48)).unwrap();
    let theme = tokscope::ui::Theme::from_env();
    let handle = watch(vec![work.path().to_path_buf()], WatchOptions::default());
    let mut first_rows = None;
    let mut first_view = None;
    let mut ready = None;
    let frames = std::cell::Cell::new(0usize);
    // Time the UI thread spends drawing (for the live figures).
    let drawing = std::cell::Cell::new(Duration::ZERO);
    // What the event loop does: draw when its pacer says (store changes at most every
    // `STORE_FRAME`), then hand the watcher the app's requests for the rollouts it looks at.
    let mut pacer = FramePacer::default();
    let draw = |app: &mut App, terminal: &mut Terminal<TestBackend>, pacer: &mut FramePacer| {
        let now = Instant::now();
        if !pacer.due(now) {
            return false;
        }
        let mut drawn = tokscope::ui::Drawn::default();
        terminal
            .draw(|frame| drawn = tokscope::ui::draw(frame, app, theme))
            .unwrap();
        drawing.set(drawing.get() + now.elapsed());
        pacer.drawn(now);
        frames.set(frames.get() + 1);
        for message in drawn.messages() {
            pacer.input(app.update(message));
        }
        if let Some(rollouts) = app.detail_requests() {
            handle.focus(rollouts);
        }
        true
    };
    pacer.input(true);
    draw(&mut app, &mut terminal, &mut pacer);
    let mut all_read = false;
    while ready.is_none() {
        let first = handle.events.recv_timeout(Duration::from_millis(30));
        let mut batch: Vec<StoreEvent> = first.into_iter().collect();
        batch.extend(handle.events.try_iter());
        all_read |= batch.iter().any(|e| matches!(e, StoreEvent::Ready));
        if !batch.is_empty() {
            let awaited = app.loading();
            pacer.store_events(batch, awaited, |events| app.update(Message::Store(events)));
        }
        // Figures are taken when a frame shows them.
        if draw(&mut app, &mut terminal, &mut pacer) {
            if first_rows.is_none() && !app.list.rows.is_empty() {
                first_rows = Some(started.elapsed());
            }
            if first_view.is_none() && app.view.is_some() {
                first_view = Some(started.elapsed());
            }
            if all_read {
                ready = Some(started.elapsed());
            }
        }
    }
    let (rss, peak) = memory_mb();
    println!(
        "cold open: first rollouts on the list after {:.2} s, the first rollout's panes after {:.2} s, all {} with verdicts after {:.2} s ({} frames)",
        first_rows.unwrap_or_default().as_secs_f64(),
        first_view.unwrap_or_default().as_secs_f64(),
        app.list.rows.len(),
        ready.unwrap_or_default().as_secs_f64(),
        frames.get(),
    );
    println!(
        "cold open CPU: {}",
        cpu_by_thread(cold_cpu, &cold_threads, |s| format!("{s:.2} s"))
    );
    let cold_work = tokscope_core::work::process_total() - cold_work;
    println!(
        "cold open work: {:.2} G tokens hashed, {:.0}% of them beside other digests",
        cold_work.tokens_hashed as f64 / 1e9,
        cold_work.tokens_hashed_together as f64 * 100.0 / cold_work.tokens_hashed.max(1) as f64,
    );
    println!("memory once loaded: {rss:.0} MB resident, {peak:.0} MB peak");
    // The timeline view over every rollout: opened (its series counted from the summaries,
    // the list filtered to its last bucket), drawn, moved once, closed.
    let opened = Instant::now();
    app.update(Message::Action(tokscope::app::Action::Timeline));
    terminal
        .draw(|frame| drop(tokscope::ui::draw(frame, &app, theme)))
        .unwrap();
    let open_s = opened.elapsed().as_secs_f64();
    let moved = Instant::now();
    app.update(Message::Action(tokscope::app::Action::Left));
    terminal
        .draw(|frame| drop(tokscope::ui::draw(frame, &app, theme)))
        .unwrap();
    println!(
        "timeline view: opened and drawn in {:.1} ms, a bucket moved and drawn in {:.1} ms",
        open_s * 1e3,
        moved.elapsed().as_secs_f64() * 1e3
    );
    app.update(Message::Action(tokscope::app::Action::Timeline));
    // `TOKSCOPE_SCALE_COLD_ONLY=1` stops here (to profile the cold open alone).
    if std::env::var_os("TOKSCOPE_SCALE_COLD_ONLY").is_some() {
        return;
    }

    // The first scan's workers may still be ending (the last verdicts sent, their work
    // dropped): what they spend is the cold open's, so the live figures start after them.
    let settling = Instant::now();
    while tokscope_testkit::cpu_seconds_by_thread()
        .keys()
        .any(|name| name.starts_with("tokscope-worker"))
        && settling.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    if settling.elapsed() >= Duration::from_secs(5) {
        println!("(the first scan's workers had not ended after 5 s: their work is counted)");
    }

    // Live: appends to 35 rollouts while the app follows.
    let cpu_before = tokscope_testkit::cpu_seconds();
    let faults_before = tokscope_testkit::minor_faults();
    let threads_before = tokscope_testkit::cpu_seconds_by_thread();
    let work_before = tokscope_core::work::process_total();
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .arg("--writer")
        .arg(work.path())
        .args(&live_ids)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Looked up at every frame: made once (what the bench does is counted as the explorer's).
    let live_locations: Vec<tokscope_core::store::RolloutLocation> = live_ids
        .iter()
        .map(|id| tokscope_core::store::RolloutLocation {
            dir: work.path().to_path_buf(),
            id: id.clone(),
        })
        .collect();
    let base: Vec<usize> = live_locations
        .iter()
        .map(|location| records_at(&app, location))
        .collect();
    let total = (APPENDS_PER_SECOND * live_seconds()) as usize;
    // Per live rollout, the record counts shown and when.
    let mut seen: Vec<Vec<(usize, f64)>> = vec![Vec::new(); live_ids.len()];
    let deadline = Instant::now() + Duration::from_secs(live_seconds() + 10);
    let mut shown = 0usize;
    let (frames_before, drawing_before) = (frames.get(), drawing.get());
    let (mut bursts, mut applying) = (0usize, Duration::ZERO);
    while shown < total && Instant::now() < deadline {
        // As the event loop: wait for input up to 30 ms, take what the watcher sent, draw
        // when the pacer says.
        std::thread::sleep(Duration::from_millis(30));
        let batch: Vec<StoreEvent> = handle.events.try_iter().collect();
        if !batch.is_empty() {
            let awaited = app.loading();
            let started = Instant::now();
            pacer.store_events(batch, awaited, |events| app.update(Message::Store(events)));
            applying += started.elapsed();
            bursts += 1;
        }
        if !draw(&mut app, &mut terminal, &mut pacer) {
            continue;
        }
        let at = tokscope_testkit::unix_now();
        shown = 0;
        for (at_rollout, location) in live_locations.iter().enumerate() {
            let count = records_at(&app, location) - base[at_rollout];
            shown += count;
            let list = &mut seen[at_rollout];
            if list.last().is_none_or(|(c, _)| *c < count) {
                list.push((count, at));
            }
        }
    }
    let cpu = tokscope_testkit::cpu_seconds() - cpu_before;
    let faults = tokscope_testkit::minor_faults() - faults_before;
    let threads = cpu_by_thread(cpu_before, &threads_before, |seconds| {
        format!("{:.1}%", seconds / live_seconds() as f64 * 100.0)
    });
    let work = tokscope_core::work::process_total() - work_before;
    let output = child.wait_with_output().unwrap();
    let mut latencies = Vec::new();
    for line in output.stdout.lines() {
        let line = line.unwrap();
        let mut parts = line.split(' ');
        let r: usize = parts.next().unwrap().parse().unwrap();
        let count: usize = parts.next().unwrap().parse().unwrap();
        let written: f64 = parts.next().unwrap().parse().unwrap();
        if let Some((_, at)) = seen
            .get(r)
            .and_then(|v| v.iter().find(|(c, _)| *c >= count))
        {
            latencies.push(((at - written) * 1000.0).max(0.0));
        }
    }
    latencies.sort_by(f64::total_cmp);
    let pick = |q: f64| latencies[((latencies.len().max(1) as f64 - 1.0) * q) as usize];
    let elapsed = live_seconds() as f64;
    println!(
        "live: {total} appends at {APPENDS_PER_SECOND}/s to {} rollouts: {:.0}% of a core ({:.0} µs per append); fsync → list p50 {:.0} ms, p99 {:.0} ms",
        live_ids.len(),
        cpu / elapsed * 100.0,
        cpu * 1e6 / total as f64,
        pick(0.5),
        pick(0.99),
    );
    println!(
        "live CPU by thread (of a core): {threads}; {:.1} fresh pages touched per append",
        faults as f64 / total as f64
    );
    let live_frames = frames.get() - frames_before;
    println!(
        "live UI: {live_frames} frames, {:.2} ms a frame; {bursts} batches of events applied, {:.2} ms a batch",
        (drawing.get() - drawing_before).as_secs_f64() * 1e3 / live_frames.max(1) as f64,
        applying.as_secs_f64() * 1e3 / bursts.max(1) as f64,
    );
    println!(
        "live work: {} records parsed, {:.0} tokens hashed per append ({:.0}% from one array, {:.0}% beside other digests, {:.0}% sixteen at once); {} builds extended, {} made whole; {:.2} rollout reads per append, {:.0} bytes read again per append, {:.2} chain steps projected, {:.2} response items checked per append",
        work.records_parsed,
        work.tokens_hashed as f64 / total as f64,
        work.tokens_hashed_contiguous as f64 * 100.0 / work.tokens_hashed.max(1) as f64,
        work.tokens_hashed_together as f64 * 100.0 / work.tokens_hashed.max(1) as f64,
        work.tokens_hashed_wide as f64 * 100.0 / work.tokens_hashed.max(1) as f64,
        work.extended_builds,
        work.full_builds,
        work.refreshes as f64 / total as f64,
        work.bytes_reread as f64 / total as f64,
        work.steps_projected as f64 / total as f64,
        work.items_checked as f64 / total as f64,
    );
    let (rss, peak) = memory_mb();
    println!("memory after the writer: {rss:.0} MB resident, {peak:.0} MB peak");
}

/// The CPU each thread spent since `before` (the whole process's then, and each thread's),
/// shown by `show`: the main thread is the UI's; threads that ended meanwhile (the first
/// scan's workers) are what the process spent beyond the threads still there.
fn cpu_by_thread(
    process_before: f64,
    before: &std::collections::BTreeMap<String, f64>,
    show: impl Fn(f64) -> String,
) -> String {
    let total = tokscope_testkit::cpu_seconds() - process_before;
    let mut accounted = 0.0;
    let mut parts: Vec<String> = tokscope_testkit::cpu_seconds_by_thread()
        .into_iter()
        .map(|(name, seconds)| {
            let spent = seconds - before.get(&name).copied().unwrap_or(0.0);
            // The main thread is named after the binary.
            let name = if name.starts_with("scale") {
                "ui".to_owned()
            } else {
                name
            };
            (name, spent)
        })
        .filter(|(_, spent)| *spent > 0.0)
        .map(|(name, spent)| {
            accounted += spent;
            format!("{name} {}", show(spent))
        })
        .collect();
    if total - accounted > 0.005 {
        parts.push(format!("threads ended {}", show(total - accounted)));
    }
    parts.join(", ")
}

/// The watcher's work alone: the writer's appends made in this thread, each followed by the
/// refresh a change event asks for, timed (no threads, no waiting, no drawing: what a
/// change costs the watcher, without the machine's wake-ups around it).
fn watcher_alone(dir: &Path, ids: &[String]) {
    let mut store =
        tokscope_core::live::LiveStore::new(vec![dir.to_path_buf()], VerdictOptions::default());
    store.first_scan(&mut |_| true, &mut || None).unwrap();
    let appends = appends(dir, ids);
    let lifecycle = tokscope_testkit::RunWriter::new(dir);
    let total = appends.len();
    let mut times = Vec::with_capacity(total);
    let work_before = tokscope_core::work::process_total();
    for (r, _, call_id, line) in &appends {
        lifecycle.begin_call(&ids[*r], call_id).unwrap();
        lifecycle.append_record_line(&ids[*r], line).unwrap();
        let location = tokscope_core::store::RolloutLocation {
            dir: dir.to_path_buf(),
            id: ids[*r].clone(),
        };
        let started = Instant::now();
        let events = store.refresh(&location);
        // As the watcher does once a burst's changes are sent.
        store.hash_ahead();
        times.push(started.elapsed().as_secs_f64() * 1e6);
        assert!(!events.is_empty(), "the append was seen");
    }
    let work = tokscope_core::work::process_total() - work_before;
    times.sort_by(f64::total_cmp);
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    println!(
        "watcher alone: {total} appends, a refresh takes {:.0} µs (median), {:.0} µs (p90), {mean:.0} µs (mean); {:.0} tokens hashed, {:.0} bytes read again, {:.2} chain steps projected, {:.2} response items checked per append",
        times[times.len() / 2],
        times[times.len() * 9 / 10],
        work.tokens_hashed as f64 / total as f64,
        work.bytes_reread as f64 / total as f64,
        work.steps_projected as f64 / total as f64,
        work.items_checked as f64 / total as f64,
    );
}

/// Compare mode's cold open: both stores read by the watcher, summaries paired as they come
/// (one pairing a batch), the UI drawn when its pacer says.
fn compare_open(a: &Path, b: &Path) {
    let stores = vec![a.to_path_buf(), b.to_path_buf()];
    let started = Instant::now();
    let viewport = tokscope::ui::layout::viewport(ratatui::layout::Rect::new(0, 0, 160, 48));
    let mut app = App::new_live(stores.clone(), VerdictOptions::default(), viewport);
    app.compare_stores();
    let mut terminal = Terminal::new(TestBackend::new(160, 48)).unwrap();
    let theme = tokscope::ui::Theme::from_env();
    let handle = watch(stores, WatchOptions::default());
    let mut pacer = FramePacer::default();
    let mut all_read = false;
    let mut frames = 0;
    loop {
        let first = handle.events.recv_timeout(Duration::from_millis(30));
        let mut batch: Vec<StoreEvent> = first.into_iter().collect();
        batch.extend(handle.events.try_iter());
        all_read |= batch.iter().any(|e| matches!(e, StoreEvent::Ready));
        if !batch.is_empty() {
            let awaited = app.loading();
            pacer.store_events(batch, awaited, |events| app.update(Message::Store(events)));
        }
        let now = Instant::now();
        if pacer.due(now) {
            terminal
                .draw(|frame| drop(tokscope::ui::draw(frame, &app, theme)))
                .unwrap();
            pacer.drawn(now);
            frames += 1;
            if all_read {
                break;
            }
        }
    }
    let (rss, peak) = memory_mb();
    let comparison = app.comparison.as_ref().unwrap();
    println!(
        "compare mode: {} rollouts of both runs judged and paired after {:.2} s ({} frames), \
         {} pairs, {} flips listed; {rss:.0} MB resident, {peak:.0} MB peak",
        app.rollouts.len(),
        started.elapsed().as_secs_f64(),
        frames,
        comparison.diff.pairs.len(),
        app.list.rows.len(),
    );
}
