//! `tokscope replay`: the explorer replaying the stores from their first call.

use std::path::PathBuf;
use std::process::ExitCode;

use tokscope::app::{App, Message, Notice, Viewport};
use tokscope_core::live::StoreEvent;
use tokscope_core::live::replay::{Replay, record_times};
use tokscope_core::load::{analyze_in_order, locate};
use tokscope_core::verdict::VerdictOptions;

use super::explore::{Explore, Given, Start, open, with_demo_tokenizer};
use super::{load_config, read_rows};
use crate::cli::ReplayArgs;

/// Run `replay`.
pub fn run(args: ReplayArgs, rows: Vec<PathBuf>) -> anyhow::Result<ExitCode> {
    let given = Given {
        tokenizer: args.tokenizer,
        stores: !args.stores.is_empty(),
        poll: None,
        alarm: args.alarm,
        no_watch: false,
    };
    let options = Explore::resolve(given, load_config()?, rows);
    let (stores, options) = with_demo_tokenizer(args.stores, options);
    open(stores, options, Start::Replay, app).map(ExitCode::from)
}

/// An app holding every rollout's summary as it is now and a timeline of every call; a step
/// judges again only the rollouts it changes, read back from their files. With what the
/// rows files said, if anything.
fn app(
    stores: &[PathBuf],
    options: &VerdictOptions,
    args: &Explore,
    size: Viewport,
) -> anyhow::Result<(App, Option<Notice>)> {
    let rows = read_rows(stores, &args.rows);
    let locations = locate(stores, &[])?;
    let ids = locations.iter().map(|l| l.id.as_str()).collect();
    let notice = rows.message(&ids).map(Notice::Store);
    eprintln!("tokscope: reading {} rollouts for replay…", locations.len());
    let (mut summaries, mut times) = (Vec::new(), Vec::new());
    analyze_in_order(
        &locations,
        options,
        &rows,
        |analysis| {
            (
                StoreEvent::updated(&analysis),
                record_times(&analysis.capture),
            )
        },
        |(summary, record_times)| {
            summaries.push(summary);
            times.push(record_times);
        },
    );
    let mut app = App::new_live(stores.to_vec(), options.clone(), size);
    app.update(Message::Store(summaries));
    app.replay_on(
        Replay::from_times(locations, times, options.clone()).with_rows(std::sync::Arc::new(rows)),
    );
    Ok((app, notice))
}
